//! TypeScript into JavaScript, inside the component: oxc's parser, transformer and code
//! generator (types removed; enums, namespaces and parameter properties compiled; nothing
//! type-checked), as `tsc --noCheck` or Node.js's type stripping would.
//!
//! The JavaScript the engine runs has other line numbers than the program; the source map
//! of the code generator turns the positions an uncaught error's stack shows back into the
//! program's own ([`Transpiled::restore_positions`]).

use std::path::Path;

use oxc_allocator::Allocator;
use oxc_codegen::{Codegen, CodegenOptions};
use oxc_diagnostics::OxcDiagnostic;
use oxc_parser::Parser;
use oxc_semantic::SemanticBuilder;
use oxc_sourcemap::SourceMap;
use oxc_span::SourceType;
use oxc_transformer::{TransformOptions, Transformer};

/// A TypeScript program as JavaScript, with the way back to its own positions.
pub struct Transpiled {
    pub code: String,
    map: Option<SourceMap<'static>>,
}

/// Why a program could not be transpiled: its first syntax error, at its 1-based line and
/// column in the program.
#[derive(Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub message: String,
    pub line: u32,
    pub column: u32,
}

impl SyntaxError {
    /// oxc's `diagnostic` about `source`, at its first label.
    fn at(source: &str, diagnostic: &OxcDiagnostic) -> SyntaxError {
        let offset = diagnostic.labels.first().map_or(0, |label| label.offset());
        let (line, column) = line_and_column(source, offset as usize);
        SyntaxError {
            message: diagnostic.message.to_string(),
            line,
            column,
        }
    }
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SyntaxError: {} at line {}, col {}",
            self.message, self.line, self.column
        )
    }
}

/// Transpiles `source`, which is run under the name `path` (in stack traces).
pub fn transpile(source: &str, path: &str) -> Result<Transpiled, SyntaxError> {
    let allocator = Allocator::default();
    // A program is a module when it has `import`/`export` (or top-level `await`), a
    // script otherwise, as the engine decides after us.
    let source_type = SourceType::ts().with_unambiguous(true);
    let parsed = Parser::new(&allocator, source, source_type).parse();
    if let Some(error) = parsed.diagnostics.first() {
        return Err(SyntaxError::at(source, error));
    }
    let mut program = parsed.program;
    let scoping = SemanticBuilder::new()
        .with_enum_eval(true)
        .build(&program)
        .semantic
        .into_scoping();
    let options = TransformOptions::default();
    let transformed = Transformer::new(&allocator, Path::new(path), &options)
        .build_with_scoping(scoping, &mut program);
    if let Some(error) = transformed.diagnostics.first() {
        return Err(SyntaxError::at(source, error));
    }
    let generated = Codegen::new()
        .with_options(CodegenOptions {
            source_map_path: Some(path.into()),
            ..CodegenOptions::default()
        })
        .build(&program);
    Ok(Transpiled {
        code: generated.code,
        map: generated.map.map(SourceMap::into_owned),
    })
}

impl Transpiled {
    /// `text` (an error's message and stack) with each `PATH:LINE:COLUMN` of the generated
    /// code replaced by the program's own line and column.
    pub fn restore_positions(&self, text: &str, path: &str) -> String {
        let Some(map) = &self.map else {
            return text.to_owned();
        };
        let table = map.generate_lookup_table();
        let needle = format!("{path}:");
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(&needle) {
            let after = at + needle.len();
            out.push_str(&rest[..after]);
            rest = &rest[after..];
            let Some((line, column, used)) = position(rest) else {
                continue;
            };
            // Boa counts lines from 1 and columns from 1; source maps from 0.
            match map.lookup_token(&table, line.saturating_sub(1), column.saturating_sub(1)) {
                Some(token) => out.push_str(&format!(
                    "{}:{}",
                    token.get_src_line() + 1,
                    token.get_src_col() + 1
                )),
                None => out.push_str(&rest[..used]),
            }
            rest = &rest[used..];
        }
        out.push_str(rest);
        out
    }
}

/// `LINE:COLUMN` at the start of `text`, and how many bytes it takes.
fn position(text: &str) -> Option<(u32, u32, usize)> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let line_len = digits(text);
    let line = text[..line_len].parse().ok()?;
    let rest = text[line_len..].strip_prefix(':')?;
    let column_len = digits(rest);
    let column = rest[..column_len].parse().ok()?;
    Some((line, column, line_len + 1 + column_len))
}

/// The 1-based line and column (in characters) of byte `offset` in `source`.
fn line_and_column(source: &str, offset: usize) -> (u32, u32) {
    let before = &source[..source.floor_char_boundary(offset.min(source.len()))];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line as u32, column as u32)
}
