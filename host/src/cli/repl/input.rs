//! How `runbox repl` cuts what is typed into blocks, each one call, by the runtime's
//! statements: SQL runs at the `;` that ends a statement (a `.command` at once); the
//! others run a line as soon as it is entered unless it opens a block (it ends with `:`,
//! `{`, `(`, `[`, `,`, `\`, ` do`, or, for the shell, ` then`, `else`, ` in`, `|`, `&&`,
//! `||`), and then at the first empty line. Python's blocks are also opened by a decorator
//! line (`@cache`, which waits for its `def`), and a triple-quoted string left open
//! continues the block over any lines, empty ones too, as in python3's own REPL.

/// How a runtime's input ends a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statements {
    /// SQL: a statement ends with `;` (outside quotes); a line starting with `.` is a
    /// shell command of its own.
    Sql,
    /// Lines, and blocks that an opening line starts and an empty line ends.
    Lines,
    /// [`Statements::Lines`], and a decorator opens a block, and an open `"""`/`'''`
    /// string goes on over empty lines.
    Python,
}

impl Statements {
    pub fn of(runtime: &str, language: &str) -> Statements {
        if runtime == "sqlite" || language.eq_ignore_ascii_case("sql") {
            Statements::Sql
        } else if language.eq_ignore_ascii_case("python") {
            Statements::Python
        } else {
            Statements::Lines
        }
    }

    /// How a block ends, for the banner and `:help`.
    pub fn describe(self) -> &'static str {
        match self {
            Statements::Sql => {
                "a statement runs when a `;` ends it (it may span lines); a `.command` runs at once"
            }
            Statements::Lines => {
                "a line runs when entered, unless it opens a block (ends with `:`, `{`, `(`, \
                 `[`, `,`, `\\`, `do`, `then`, `else`, `in`, `|`, `&&` or `||`): then an \
                 empty line runs the block"
            }
            Statements::Python => {
                "a line runs when entered, unless it opens a block (ends with `:`, `(`, `[`, \
                 `{`, `,` or `\\`, is a decorator, or leaves a triple-quoted string open): \
                 then an empty line runs the block (a string's own empty lines do not)"
            }
        }
    }
}

/// Whether `line` leaves a block open, so more lines follow before it runs.
pub fn opens_block(line: &str) -> bool {
    let line = line.trim_end();
    let last_word = line.rsplit(|c: char| c.is_whitespace() || c == ';').next();
    ['{', '(', '[', ':', ',', '\\']
        .iter()
        .any(|c| line.ends_with(*c))
        // Ruby's and the shell's `do`; the shell's `if … then`, `else`, `case … in`.
        || matches!(last_word, Some("do" | "then" | "else" | "in"))
        // Ruby's `do |x|`; a shell pipeline or list (`|`, `||`, `&&`) going on below.
        || line.ends_with('|')
        || line.ends_with("&&")
}

/// Whether Python `text` ends inside a triple-quoted string (`"""` or `'''`), counting
/// the quotes outside comments and one-line strings. Escapes are honoured; f-strings and
/// raw strings are read as plain ones, which only their escapes could tell apart.
fn python_string_open(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    // The quote that opened the string we are in, and whether it is tripled.
    let mut open: Option<(char, bool)> = None;
    while i < chars.len() {
        let c = chars[i];
        let tripled = |q: char| chars.get(i..i + 3) == Some(&[q, q, q][..]);
        match open {
            Some(_) if c == '\\' => i += 1,
            Some((q, true)) if tripled(q) => {
                open = None;
                i += 2;
            }
            Some((q, false)) if c == q || c == '\n' => open = None,
            Some(_) => {}
            None if c == '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            None if c == '"' || c == '\'' => {
                if tripled(c) {
                    open = Some((c, true));
                    i += 2;
                } else {
                    open = Some((c, false));
                }
            }
            None => {}
        }
        i += 1;
    }
    matches!(open, Some((_, true)))
}

/// Whether `line` is a Python decorator, which the `def` or `class` below completes.
fn is_decorator(line: &str) -> bool {
    line.trim_start()
        .strip_prefix('@')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_alphabetic() || c == '_'))
}

/// Whether SQL `text` ends with a `;` outside quotes and comments.
fn sql_complete(text: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut last = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' | '`' => {
                    quote = Some(c);
                    last = Some(c);
                }
                '-' if chars.peek() == Some(&'-') => {
                    // A comment to the end of the line.
                    for c in chars.by_ref() {
                        if c == '\n' {
                            break;
                        }
                    }
                }
                c if c.is_whitespace() => {}
                c => last = Some(c),
            },
        }
    }
    quote.is_none() && last == Some(';')
}

/// Gathers lines into the blocks the REPL runs.
pub struct Blocks {
    statements: Statements,
    pending: Vec<String>,
}

impl Blocks {
    pub fn new(statements: Statements) -> Blocks {
        Blocks {
            statements,
            pending: Vec::new(),
        }
    }

    /// Whether lines are gathering (for the prompt).
    pub fn is_open(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Drops what is gathering (Ctrl-C at the prompt).
    pub fn clear(&mut self) {
        self.pending.clear();
    }

    /// Takes one line; returns a block once one is complete.
    pub fn push(&mut self, line: &str) -> Option<String> {
        let line = line.trim_end_matches(['\n', '\r']);
        match self.statements {
            Statements::Sql => {
                if self.pending.is_empty() {
                    if line.trim().is_empty() {
                        return None;
                    }
                    if line.trim_start().starts_with('.') {
                        return Some(line.to_string() + "\n");
                    }
                }
                self.pending.push(line.to_string());
                let text = self.pending.join("\n");
                sql_complete(&text).then(|| {
                    self.pending.clear();
                    text + "\n"
                })
            }
            Statements::Lines => {
                if self.pending.is_empty() {
                    if line.trim().is_empty() {
                        return None;
                    }
                    if !opens_block(line) {
                        return Some(line.to_string());
                    }
                    self.pending.push(line.to_string());
                    return None;
                }
                if line.trim().is_empty() {
                    return self.finish();
                }
                self.pending.push(line.to_string());
                None
            }
            Statements::Python => {
                if self.pending.is_empty() {
                    if line.trim().is_empty() {
                        return None;
                    }
                    if !opens_block(line) && !is_decorator(line) && !python_string_open(line) {
                        return Some(line.to_string());
                    }
                    self.pending.push(line.to_string());
                    return None;
                }
                let was_open = python_string_open(&self.pending.join("\n"));
                if line.trim().is_empty() && !was_open {
                    return self.finish();
                }
                self.pending.push(line.to_string());
                // A string that was all that held the block open (`s = """…`) runs as
                // soon as it closes, unless its last line opens a block of its own.
                let first = &self.pending[0];
                let string_only = !opens_block(first) && !is_decorator(first);
                if was_open
                    && string_only
                    && !python_string_open(&self.pending.join("\n"))
                    && !opens_block(line)
                {
                    return self.finish();
                }
                None
            }
        }
    }

    /// What is still gathering, at the end of input.
    pub fn finish(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.pending).join("\n") + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_run_at_once_and_blocks_at_an_empty_line() {
        let mut b = Blocks::new(Statements::Lines);
        assert_eq!(b.push("x = 1\n"), Some("x = 1".into()));
        assert_eq!(b.push(""), None);
        assert_eq!(b.push("def f(a):"), None);
        assert!(b.is_open());
        assert_eq!(b.push("    return a"), None);
        assert_eq!(b.push(""), Some("def f(a):\n    return a\n".into()));
        assert_eq!(b.push("function g() {"), None);
        assert_eq!(b.finish(), Some("function g() {\n".into()));
        assert!(!b.is_open());
    }

    #[test]
    fn what_opens_a_block() {
        for open in [
            "if x:",
            "f(",
            "[1,",
            "do",
            "xs.each do |x|",
            "a \\",
            "int main() {",
            "for f in *.csv; do",
            "if [ -f x ]; then",
            "else",
            "case $x in",
            "cat data.csv |",
            "make &&",
        ] {
            assert!(opens_block(open), "{open}");
        }
        for line in [
            "print(1)",
            "x = [1]",
            "puts 'do'",
            "done",
            "fi",
            "echo then done",
            "ls | wc -l",
            "x in y",
        ] {
            assert!(!opens_block(line), "{line}");
        }
    }

    /// Python: a decorator waits for its `def`; a triple-quoted string goes on over empty
    /// lines and, when it was all that held the block open, runs as it closes.
    #[test]
    fn python_decorators_and_triple_quoted_strings() {
        let mut b = Blocks::new(Statements::Python);
        assert_eq!(b.push("@functools.cache"), None);
        assert_eq!(b.push("def f(n):"), None);
        assert_eq!(b.push("    return n"), None);
        assert_eq!(
            b.push(""),
            Some("@functools.cache\ndef f(n):\n    return n\n".into())
        );
        assert_eq!(b.push("s = \"\"\"first"), None);
        assert_eq!(b.push(""), None, "an empty line inside the string");
        assert_eq!(
            b.push("last\"\"\""),
            Some("s = \"\"\"first\n\nlast\"\"\"\n".into())
        );
        assert_eq!(b.push("def g():"), None);
        assert_eq!(b.push("    '''Doc."), None);
        assert_eq!(b.push(""), None);
        assert_eq!(
            b.push("    More.'''"),
            None,
            "the def's block is still open"
        );
        assert_eq!(b.push("    return 1"), None);
        assert_eq!(
            b.push(""),
            Some("def g():\n    '''Doc.\n\n    More.'''\n    return 1\n".into())
        );
        for closed in [
            "s = '''one line'''",
            "x = \"a\" + '''b'''  # \"\"\" in a comment",
            "print('\"\"\"')",
            "m = a @ b",
            "@",
        ] {
            assert_eq!(b.push(closed), Some(closed.to_string()), "{closed}");
        }
        assert!(python_string_open("x = f'''{y}"));
        assert!(!python_string_open("x = '''a\\''' '''"), "an escaped quote");
        // Not python: `@x` is Ruby's instance variable, `\"\"\"` nothing special.
        let mut ruby = Blocks::new(Statements::Lines);
        assert_eq!(ruby.push("@count = 1"), Some("@count = 1".into()));
        assert_eq!(Statements::of("python", "Python"), Statements::Python);
        assert_eq!(Statements::of("ruby", "Ruby"), Statements::Lines);
    }

    #[test]
    fn sql_runs_at_the_semicolon_that_ends_a_statement() {
        let mut b = Blocks::new(Statements::Sql);
        assert_eq!(b.push("select"), None);
        assert!(b.is_open());
        assert_eq!(b.push("  1 + 1;"), Some("select\n  1 + 1;\n".into()));
        assert_eq!(b.push("select 'a;b'"), None, "a `;` in quotes ends nothing");
        assert_eq!(b.push(";"), Some("select 'a;b'\n;\n".into()));
        assert_eq!(
            b.push("select 1; -- done"),
            Some("select 1; -- done\n".into())
        );
        assert_eq!(b.push(".headers on"), Some(".headers on\n".into()));
        assert_eq!(b.push(""), None);
        b.push("select 2");
        b.clear();
        assert!(!b.is_open());
    }
}
