//! Tab in `runbox repl`, as in python3's REPL: at the start of a line (or after only
//! whitespace) it indents by four spaces; elsewhere it completes the word before the
//! cursor. In `python` the words are the interpreter's own: the session's `__main__`
//! globals, the builtins and the keywords, and after a dot the attributes of what comes
//! before it (`math.sq` → `math.sqrt`), asked of the session by a small program of one
//! statement that runs in its own namespace, shows nothing and sets no `_`. Other
//! runtimes complete from the words typed in this REPL (its history and the line). One
//! match completes; several complete their common prefix, and a second Tab lists them
//! (rustyline's `CompletionType::List`, readline's way).
//!
//! The line editor runs on a thread of its own (see `command.rs`); a Tab that needs the
//! interpreter sends an [`Ask`] to the REPL's loop, which runs the program in the session
//! and answers.

use std::collections::BTreeSet;
use std::sync::mpsc;
use std::time::Duration;

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::{History, SearchDirection};
use rustyline::validate::Validator;
use rustyline::Context;

/// What Tab inserts at the start of a line, or after only whitespace.
pub const INDENT: &str = "    ";

/// The longest a Tab waits for the interpreter's names (the REPL's loop stops the lookup
/// before that, see `command.rs`).
const ANSWER_TIME: Duration = Duration::from_secs(20);

/// A Tab's question to the REPL's loop: what `word` (`pri`, `math.sq`) may complete to.
pub struct Ask {
    pub word: String,
    pub reply: mpsc::Sender<Vec<String>>,
}

/// Where completions come from.
pub enum Words {
    /// The session's interpreter, through the REPL's loop (python).
    Interpreter(tokio::sync::mpsc::UnboundedSender<Ask>),
    /// The words typed in this REPL: its history and the line being edited.
    Typed,
}

/// The line editor's helper: Tab's indentation and completion, nothing else.
pub struct Helper {
    pub words: Words,
}

impl Completer for Helper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        if before.trim().is_empty() {
            return Ok((pos, vec![pair(INDENT.to_string())]));
        }
        let (start, names) = match &self.words {
            Words::Interpreter(asks) => {
                let Some(word) = python_word(before) else {
                    return Ok((pos, Vec::new()));
                };
                let (reply, answer) = mpsc::channel();
                let asked = asks.send(Ask {
                    word: word.to_string(),
                    reply,
                });
                let names = match asked {
                    Ok(()) => answer.recv_timeout(ANSWER_TIME).unwrap_or_default(),
                    Err(_) => Vec::new(),
                };
                (pos - word.len(), names)
            }
            Words::Typed => {
                let start = word_start(before, is_word_char);
                let word = &before[start..];
                if word.is_empty() {
                    return Ok((pos, Vec::new()));
                }
                let others = [&line[..start], &line[pos..]];
                (start, typed_words(ctx.history(), &others, word))
            }
        };
        Ok((start, names.into_iter().map(pair).collect()))
    }
}

fn pair(text: String) -> Pair {
    Pair {
        display: text.clone(),
        replacement: text,
    }
}

impl Hinter for Helper {
    type Hint = String;
}

impl Highlighter for Helper {}

impl Validator for Helper {}

impl rustyline::Helper for Helper {}

/// Where the run of characters that `part` accepts, ending at the end of `text`, starts.
fn word_start(text: &str, part: impl Fn(char) -> bool) -> usize {
    text.char_indices()
        .rev()
        .take_while(|(_, c)| part(*c))
        .last()
        .map_or(text.len(), |(i, _)| i)
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The Python name or dotted name before the cursor (`pri`, `math.sq`, `np.`), when
/// there is one to complete: not a number (`1.5`), not `.x` or `a..b`.
pub fn python_word(before: &str) -> Option<&str> {
    let word = &before[word_start(before, |c| is_word_char(c) || c == '.')..];
    let starts_name = |part: &str| {
        part.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
    };
    let mut parts: Vec<&str> = word.split('.').collect();
    let last = parts.pop()?;
    let named = parts.iter().all(|p| starts_name(p));
    let last_ok = last.is_empty() || starts_name(last);
    (named && last_ok && starts_name(word)).then_some(word)
}

/// The words of the history and of `others` (the rest of the line) that start with
/// `word` (itself too, as readline offers it), each once, in order.
fn typed_words(history: &dyn History, others: &[&str], word: &str) -> Vec<String> {
    let mut found = BTreeSet::new();
    let mut take = |text: &str| {
        for w in text.split(|c: char| !is_word_char(c)) {
            if w.starts_with(word) {
                found.insert(w.to_string());
            }
        }
    };
    for text in others {
        take(text);
    }
    for index in 0..history.len() {
        if let Ok(Some(entry)) = history.get(index, SearchDirection::Forward) {
            take(&entry.entry);
        }
    }
    found.into_iter().collect()
}

/// The program that prints, one a line, the names `expr` has: with `expr` empty, the
/// session's `__main__` globals, the builtins and the keywords; else the attributes of
/// the object `expr` names (a dotted name, looked up without calling anything but its
/// attributes' getters). It is one statement ending with `;` (so no value is shown and
/// `_` stays), runs in a namespace of its own (the session's gains no name), and prints
/// nothing else, whatever fails.
pub fn python_program(expr: &str) -> String {
    const FIND: &str = r#"import builtins, keyword, os, sys
def names(e):
    g = sys.modules["__main__"].__dict__
    if not e:
        return [*g, *dir(builtins), *keyword.kwlist, *keyword.softkwlist]
    head, *rest = e.split(".")
    o = g[head] if head in g else getattr(builtins, head)
    for a in rest:
        o = getattr(o, a)
    found = set(dir(o))
    found.discard("__builtins__")
    if hasattr(o, "__class__"):
        found.add("__class__")
    return found
try:
    found = sorted({n for n in names(e) if isinstance(n, str) and n.isidentifier()})
except BaseException:
    found = []
out = memoryview("".join(n + "\n" for n in found).encode())
while out:
    out = out[os.write(1, out):]
"#;
    let quoted = |s: &str| serde_json::to_string(s).expect("a string serializes");
    format!(
        "__import__(\"builtins\").exec({}, {{\"e\": {}}});\n",
        quoted(FIND),
        quoted(expr)
    )
}

/// The names a lookup printed.
pub fn parse_names(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Splits a Python word into the expression its attributes come from ("" for the
/// globals) and the start of the name typed.
pub fn split_python_word(word: &str) -> (&str, &str) {
    match word.rfind('.') {
        Some(i) => (&word[..i], &word[i + 1..]),
        None => ("", word),
    }
}

/// The completions of `word` among `names` (those of its expression): the names it
/// starts, as whole words (`math.sqrt`). As rlcompleter does, an attribute starting with
/// `_` is offered only when `_` is typed, and one starting with `__` only when `__` is.
pub fn python_matches(names: &[String], word: &str) -> Vec<String> {
    let (expr, typed) = split_python_word(word);
    let hidden = match typed {
        "" if !expr.is_empty() => Some("_"),
        "_" if !expr.is_empty() => Some("__"),
        _ => None,
    };
    names
        .iter()
        .filter(|n| n.starts_with(typed) && !hidden.is_some_and(|h| n.starts_with(h)))
        .map(|n| match expr {
            "" => n.clone(),
            _ => format!("{expr}.{n}"),
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustyline::history::{DefaultHistory, History};

    #[test]
    fn the_python_word_before_the_cursor() {
        assert_eq!(python_word("print(math.sq"), Some("math.sq"));
        assert_eq!(python_word("x = np."), Some("np."));
        assert_eq!(python_word("pri"), Some("pri"));
        assert_eq!(python_word("a.b.c_d"), Some("a.b.c_d"));
        assert_eq!(python_word("__na"), Some("__na"));
        assert_eq!(python_word("café"), Some("café"));
        for none in ["x = 1.5", "f(", "a..b", "x[0].ap", "2x", "(", "s = 'a' ."] {
            assert_eq!(python_word(none), None, "{none}");
        }
    }

    #[test]
    fn matches_are_whole_words_and_hide_private_attributes() {
        let names: Vec<String> = ["sqrt", "sin", "_private", "__doc__", "pi"]
            .map(String::from)
            .to_vec();
        assert_eq!(python_matches(&names, "math.sq"), ["math.sqrt"]);
        assert_eq!(python_matches(&names, "math.s"), ["math.sin", "math.sqrt"]);
        assert_eq!(
            python_matches(&names, "math."),
            ["math.pi", "math.sin", "math.sqrt"]
        );
        assert_eq!(python_matches(&names, "m._"), ["m._private"]);
        assert_eq!(python_matches(&names, "m.__"), ["m.__doc__"]);
        assert_eq!(python_matches(&names, "_"), ["__doc__", "_private"]);
        assert_eq!(python_matches(&names, "p"), ["pi"]);
    }

    #[test]
    fn the_program_quotes_what_it_is_given() {
        let program = python_program("a\"b\\c\n");
        assert!(program.starts_with("__import__(\"builtins\").exec(\""));
        assert!(program.ends_with(", {\"e\": \"a\\\"b\\\\c\\n\"});\n"));
        assert_eq!(program.lines().count(), 1, "one statement: {program}");
        assert_eq!(parse_names("a\nb\n\n"), ["a", "b"]);
    }

    #[test]
    fn typed_words_come_from_the_history_and_the_line() {
        let mut history = DefaultHistory::new();
        history.add("total_count = 3").unwrap();
        history.add("echo $total; totally").unwrap();
        assert_eq!(
            typed_words(&history, &["tot_here + ", ""], "tot"),
            ["tot_here", "total", "total_count", "totally"]
        );
        assert_eq!(typed_words(&history, &[], "total_c"), ["total_count"]);
    }

    #[test]
    fn tab_indents_at_the_start_of_a_line() {
        let helper = Helper {
            words: Words::Typed,
        };
        let history = DefaultHistory::new();
        let ctx = Context::new(&history);
        let (start, found) = helper.complete("  ", 2, &ctx).unwrap();
        assert_eq!((start, found[0].replacement.as_str()), (2, INDENT));
        let (_, found) = helper.complete("x = 1", 5, &ctx).unwrap();
        assert!(found.is_empty());
    }
}
