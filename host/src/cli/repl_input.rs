//! How `runbox repl` cuts what is typed into blocks, each one call, by the runtime's
//! statements: SQL runs at the `;` that ends a statement (a `.command` at once); the
//! others run a line as soon as it is entered unless it opens a block (it ends with `:`,
//! `{`, `(`, `[`, `,`, `\`, ` do`, or, for the shell, ` then`, `else`, ` in`, `|`, `&&`,
//! `||`), and then at the first empty line.

/// How a runtime's input ends a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statements {
    /// SQL: a statement ends with `;` (outside quotes); a line starting with `.` is a
    /// shell command of its own.
    Sql,
    /// Lines, and blocks that an opening line starts and an empty line ends.
    Lines,
}

impl Statements {
    pub fn of(runtime: &str, language: &str) -> Statements {
        if runtime == "sqlite" || language.eq_ignore_ascii_case("sql") {
            Statements::Sql
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
