//! `node`/`tsx` as commands of the shell (`runbox:plugin/command`): which program a
//! Node-style command line runs, and with which arguments. Pure, tested natively.

/// Where the program comes from.
#[derive(Debug, PartialEq, Eq)]
pub enum Source {
    /// A file (an absolute path in the sandbox).
    File(String),
    /// `-e CODE`.
    Code(String),
    /// `-p CODE`: CODE, its value printed as `console.log` prints it.
    Print(String),
    /// No file: the program is the standard input (`node < x.js`, `node -`).
    Stdin,
    /// `--version`: print it.
    Version,
}

/// A parsed command line: the program and its own arguments.
#[derive(Debug, PartialEq, Eq)]
pub struct CommandLine {
    pub source: Source,
    pub args: Vec<String>,
}

/// Parses `args` (after the command's name), relative paths taken from `cwd`. `Err` is
/// the message for stderr (exit 9, Node's for a bad option).
pub fn parse(name: &str, args: &[String], cwd: &str) -> Result<CommandLine, String> {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let source = match arg.as_str() {
            "-e" | "--eval" => Source::Code(
                rest.next()
                    .cloned()
                    .ok_or_else(|| format!("{name}: {arg} requires an argument"))?,
            ),
            "-p" | "--print" => Source::Print(
                rest.next()
                    .cloned()
                    .ok_or_else(|| format!("{name}: {arg} requires an argument"))?,
            ),
            "-v" | "--version" => Source::Version,
            "-" => Source::Stdin,
            // Options that change nothing here (modules are recognised by their syntax).
            a if a.starts_with("--input-type")
                || a.starts_with("--experimental")
                || a.starts_with("--no-warnings")
                || a.starts_with("--enable-source-maps")
                || a.starts_with("--stack-size") =>
            {
                continue
            }
            a if a.starts_with('-') => {
                return Err(format!(
                    "{name}: bad option: {a} (this runtime's command takes FILE, -e CODE, \
                     -p CODE, - or the program on standard input, and --version)"
                ))
            }
            file => Source::File(absolute(cwd, file)),
        };
        return Ok(CommandLine {
            source,
            args: rest.cloned().collect(),
        });
    }
    Ok(CommandLine {
        source: Source::Stdin,
        args: Vec::new(),
    })
}

/// The program `node -p CODE` runs: CODE evaluated as a script in the global scope, its
/// value printed.
pub fn printing(code: &str) -> String {
    let mut literal = String::with_capacity(code.len() + 2);
    literal.push('"');
    for c in code.chars() {
        match c {
            '"' => literal.push_str("\\\""),
            '\\' => literal.push_str("\\\\"),
            '\n' => literal.push_str("\\n"),
            '\r' => literal.push_str("\\r"),
            '\u{2028}' => literal.push_str("\\u2028"),
            '\u{2029}' => literal.push_str("\\u2029"),
            c if (c as u32) < 0x20 => literal.push_str(&format!("\\u{:04x}", c as u32)),
            c => literal.push(c),
        }
    }
    literal.push('"');
    format!("console.log((0, eval)({literal}));\n")
}

fn absolute(cwd: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{}/{path}", cwd.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn node_command_lines() {
        let p = |args: &[&str], cwd| parse("node", &strings(args), cwd);
        assert_eq!(
            p(&["x.js", "a", "-e"], "/src").unwrap(),
            CommandLine {
                source: Source::File("/src/x.js".into()),
                args: strings(&["a", "-e"])
            }
        );
        assert_eq!(
            p(&["-e", "1", "b"], "/").unwrap().source,
            Source::Code("1".into())
        );
        assert_eq!(
            p(&["--no-warnings", "/x.js"], "/").unwrap().source,
            Source::File("/x.js".into())
        );
        assert_eq!(p(&[], "/").unwrap().source, Source::Stdin);
        assert_eq!(p(&["-"], "/").unwrap().source, Source::Stdin);
        assert_eq!(p(&["--version"], "/").unwrap().source, Source::Version);
        assert!(p(&["--inspect", "x.js"], "/")
            .unwrap_err()
            .contains("bad option: --inspect"));
        assert!(p(&["-e"], "/")
            .unwrap_err()
            .contains("requires an argument"));
        assert_eq!(
            p(&["-p", "1 + 1", "x"], "/").unwrap(),
            CommandLine {
                source: Source::Print("1 + 1".into()),
                args: strings(&["x"])
            }
        );
    }

    #[test]
    fn print_evaluates_the_code_as_it_was_given() {
        assert_eq!(
            printing("'a\"b'\n+ \"\\\""),
            "console.log((0, eval)(\"'a\\\"b'\\n+ \\\"\\\\\\\"\"));\n"
        );
    }
}
