//! Command-line options the GNU way, as `curl` and `wget` read them: `--name`,
//! `--name=value` and `--name value`; clusters of short options (`-sSL`), where one that
//! takes a value takes the rest of the cluster (`-XPOST`) or the next argument; `--`
//! ends the options, and `-` alone is an operand. What each option means, and how a
//! mistake is worded, is the command's own ([`Command`]).

/// A mistake in the options, for the command to word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// `--name` that the command does not know (as written, up to any `=` the command
    /// splits at).
    UnknownLong(String),
    /// `-c` that the command does not know.
    UnknownShort(char),
    /// `--name` last, without its value.
    LongWithoutValue(String),
    /// `-c` last, without its value.
    ShortWithoutValue(char),
}

/// One command's options.
pub trait Command {
    type Error;

    /// Whether the long option `name` takes a value; `None` when it is unknown.
    fn takes_value(name: &str) -> Option<bool>;
    /// The long name of the short option `c`.
    fn short(c: char) -> Option<&'static str>;
    /// Whether `--name=value` splits at `=` only when `name` takes a value (curl: the
    /// whole text is then the name), or always, a flag given a value being unknown (wget).
    const SPLITS_ONLY_VALUED: bool;
    /// The long name of a whole argument that looks like a cluster but is one option
    /// (wget's `-nv`).
    fn word(_arg: &str) -> Option<&'static str> {
        None
    }

    /// The option `name` (its long name), with its value if it takes one.
    fn set(&mut self, name: &str, value: Option<String>) -> Result<(), Self::Error>;
    /// An argument that is not an option (a URL).
    fn operand(&mut self, arg: &str);
    /// A mistake; the command may take it after all (curl's `--no-FLAG`).
    fn problem(&mut self, problem: Problem) -> Result<(), Self::Error>;
}

/// Reads `args` into `command`.
pub fn parse<C: Command>(command: &mut C, args: &[String]) -> Result<(), C::Error> {
    let mut rest = args.iter();
    let mut only_operands = false;
    while let Some(arg) = rest.next() {
        if only_operands || arg == "-" || !arg.starts_with('-') {
            command.operand(arg);
        } else if arg == "--" {
            only_operands = true;
        } else if let Some(spec) = arg.strip_prefix("--") {
            let (name, inline) = match spec.split_once('=') {
                Some((name, value))
                    if !C::SPLITS_ONLY_VALUED || C::takes_value(name) == Some(true) =>
                {
                    (name, Some(value))
                }
                _ => (spec, None),
            };
            match C::takes_value(name) {
                Some(true) => {
                    let value = match inline {
                        Some(value) => value.to_string(),
                        None => match rest.next() {
                            Some(value) => value.clone(),
                            None => {
                                command.problem(Problem::LongWithoutValue(name.to_string()))?;
                                continue;
                            }
                        },
                    };
                    command.set(name, Some(value))?;
                }
                Some(false) if inline.is_none() => command.set(name, None)?,
                _ => command.problem(Problem::UnknownLong(name.to_string()))?,
            }
        } else if let Some(name) = C::word(arg) {
            command.set(name, None)?;
        } else {
            let cluster = &arg[1..];
            for (i, c) in cluster.char_indices() {
                let Some(name) = C::short(c) else {
                    command.problem(Problem::UnknownShort(c))?;
                    continue;
                };
                if C::takes_value(name) == Some(true) {
                    let attached = &cluster[i + c.len_utf8()..];
                    if !attached.is_empty() {
                        command.set(name, Some(attached.to_string()))?;
                    } else if let Some(value) = rest.next() {
                        command.set(name, Some(value.clone()))?;
                    } else {
                        command.problem(Problem::ShortWithoutValue(c))?;
                    }
                    break;
                }
                command.set(name, None)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command with `-o/--output` (a value), `-s/--silent` (a flag) and wget's words.
    #[derive(Default, Debug, PartialEq)]
    struct Seen {
        set: Vec<(String, Option<String>)>,
        operands: Vec<String>,
        problems: Vec<Problem>,
    }

    impl Command for Seen {
        type Error = ();
        const SPLITS_ONLY_VALUED: bool = true;
        fn takes_value(name: &str) -> Option<bool> {
            match name {
                "output" => Some(true),
                "silent" => Some(false),
                _ => None,
            }
        }
        fn short(c: char) -> Option<&'static str> {
            match c {
                'o' => Some("output"),
                's' => Some("silent"),
                _ => None,
            }
        }
        fn word(arg: &str) -> Option<&'static str> {
            (arg == "-nv").then_some("silent")
        }
        fn set(&mut self, name: &str, value: Option<String>) -> Result<(), ()> {
            self.set.push((name.to_string(), value));
            Ok(())
        }
        fn operand(&mut self, arg: &str) {
            self.operands.push(arg.to_string());
        }
        fn problem(&mut self, problem: Problem) -> Result<(), ()> {
            self.problems.push(problem);
            Ok(())
        }
    }

    fn seen(args: &[&str]) -> Seen {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let mut seen = Seen::default();
        parse(&mut seen, &args).unwrap();
        seen
    }

    fn set(name: &str, value: Option<&str>) -> (String, Option<String>) {
        (name.to_string(), value.map(str::to_string))
    }

    #[test]
    fn long_short_clusters_and_operands() {
        let s = seen(&[
            "-so",
            "a",
            "--output=b",
            "--output",
            "c",
            "-oD",
            "u",
            "-",
            "--",
            "-s",
            "-nv",
        ]);
        assert_eq!(
            s.set,
            [
                set("silent", None),
                set("output", Some("a")),
                set("output", Some("b")),
                set("output", Some("c")),
                set("output", Some("D")),
            ]
        );
        assert_eq!(s.operands, ["u", "-", "-s", "-nv"]);
        assert!(s.problems.is_empty());
        assert_eq!(seen(&["-nv"]).set, [set("silent", None)]);
    }

    #[test]
    fn mistakes_are_handed_to_the_command() {
        let s = seen(&["--silent=1", "--nope", "-x", "--output"]);
        assert_eq!(
            s.problems,
            [
                Problem::UnknownLong("silent=1".into()),
                Problem::UnknownLong("nope".into()),
                Problem::UnknownShort('x'),
                Problem::LongWithoutValue("output".into()),
            ]
        );
        assert_eq!(seen(&["-o"]).problems, [Problem::ShortWithoutValue('o')]);
    }
}
