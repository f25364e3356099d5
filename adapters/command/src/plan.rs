//! From settings and a run request to a command line: pure functions, tested natively.

pub use runbox_adapter_support::Settings;
use runbox_adapter_support::{parse_env, scratch_path, substitute, values};

/// Where a session's driver reads the current call's standard input.
pub const SESSION_STDIN: &str = "/.runbox/stdin";
/// Where a session's driver writes the current call's exit status.
pub const SESSION_STATUS: &str = "/.runbox/status";

/// What the adapter does for one run.
#[derive(Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The absolute path in the sandbox the program text is written to, e.g. `/main.py`.
    pub entry: String,
    /// The tool to spawn (`argv[0]` after expansion).
    pub program: String,
    /// The tool's arguments.
    pub args: Vec<String>,
    /// The tool's whole environment.
    pub env: Vec<(String, String)>,
    /// Where the request's stdin is also written as a file (`stdin-file`), for runtimes
    /// that cannot read their standard input.
    pub stdin_file: Option<String>,
    /// Files the settings ask for (`"file:NAME" = "contents"`): absolute path, contents.
    pub files: Vec<(String, String)>,
    /// The session driver (`session-argv`), when the runtime keeps state in sessions.
    pub driver: Option<Driver>,
}

/// A session's driver: the program kept alive between calls (see `guest.rs`).
#[derive(Debug, PartialEq, Eq)]
pub struct Driver {
    pub program: String,
    pub args: Vec<String>,
}

/// Works out the invocation for a run with the program arguments `run_args`.
pub fn invocation(settings: &Settings, run_args: &[String]) -> Result<Invocation, String> {
    let entry = entry_path(settings)?;
    let argv = values(settings, "argv").ok_or(
        "missing setting `argv` (the tool's name, then its arguments, e.g. [\"python\", \"{entry}\", \"{args}\"])",
    )?;
    let mut argv = expand_argv(argv, settings, &entry, run_args).into_iter();
    let program = argv
        .next()
        .ok_or("setting `argv` is empty; its first item must be the tool's name")?;
    let env = parse_env(values(settings, "env").unwrap_or_default())?;
    let stdin_file = stdin_file(settings)?;
    let driver = match values(settings, "session-argv") {
        None => None,
        Some(items) => {
            let mut items = items
                .iter()
                .map(|item| substitute(item, |key| session_placeholder(settings, &entry, key)));
            let program = items
                .next()
                .ok_or("setting `session-argv` is empty; its first item must be the tool's name")?;
            Some(Driver {
                program,
                args: items.collect(),
            })
        }
    };
    Ok(Invocation {
        entry,
        program,
        args: argv.collect(),
        env,
        stdin_file,
        files: setting_files(settings)?,
        driver,
    })
}

/// What the adapter spawns to run the runtime as a command (`python gen.py 3` in the
/// shell): the `command-argv` setting with the command line's arguments in it.
#[derive(Debug, PartialEq, Eq)]
pub struct CommandRun {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// The settings' files (`"file:NAME"`), which the tool may need (a prelude).
    pub files: Vec<(String, String)>,
    /// Where the standard input is also written (`stdin-file`).
    pub stdin_file: Option<String>,
}

/// Works out the command run for the arguments `args`, called from the directory `cwd`.
/// In `command-argv`, an item that is exactly `{command-args}` becomes the arguments;
/// `{command-args-json}` is them as a JSON array (see [`json_strings`]), `{command-cwd}`
/// the directory and `{command-cwd-json}` it as a JSON string; other placeholders are
/// `argv`'s.
pub fn command(settings: &Settings, args: &[String], cwd: &str) -> Result<CommandRun, String> {
    let argv = values(settings, "command-argv")
        .ok_or("this runtime has no `command-argv` setting: it cannot be run as a command")?;
    let entry = entry_path(settings).unwrap_or_default();
    let mut files = setting_files(settings)?;
    let inlined = inline_code(settings, args)?;
    let args: &[String] = match &inlined {
        Some((file, args)) => {
            files.push(file.clone());
            args
        }
        None => args,
    };
    let args_json = json_strings(args);
    let cwd_json = json_strings(&[cwd.to_string()]);
    let cwd_json = &cwd_json[1..cwd_json.len() - 1];
    let mut expanded = Vec::with_capacity(argv.len() + args.len());
    for item in argv {
        if item == "{command-args}" {
            expanded.extend(args.iter().cloned());
        } else {
            expanded.push(substitute(item, |key| match key {
                "command-args-json" => Some(args_json.as_str()),
                "command-cwd" => Some(cwd),
                "command-cwd-json" => Some(cwd_json),
                _ => placeholder(settings, &entry, key),
            }));
        }
    }
    let mut expanded = expanded.into_iter();
    let program = expanded
        .next()
        .ok_or("setting `command-argv` is empty; its first item must be the tool's name")?;
    Ok(CommandRun {
        program,
        args: expanded.collect(),
        env: parse_env(values(settings, "env").unwrap_or_default())?,
        files,
        stdin_file: stdin_file(settings)?,
    })
}

/// A program put into a file, `(FILE, PREFIX then CODE)`, and the arguments after it.
type InlineCode = ((String, String), Vec<String>);

/// The `command-inline` setting, `[FLAG, FILE, PREFIX]`: a tool that cannot take a
/// program on its command line (php-cgi has no `-r`) gets `FLAG CODE ARGS…` as the file
/// FILE holding PREFIX then CODE, and `FILE ARGS…`. `None` when the command line does
/// not start with FLAG.
fn inline_code(settings: &Settings, args: &[String]) -> Result<Option<InlineCode>, String> {
    let Some(setting) = values(settings, "command-inline") else {
        return Ok(None);
    };
    let [flag, file, prefix] = setting else {
        return Err("setting `command-inline` must be [FLAG, FILE, PREFIX]".into());
    };
    if args.first() != Some(flag) {
        return Ok(None);
    }
    let code = args
        .get(1)
        .ok_or_else(|| format!("option {flag} needs the program as its argument"))?;
    let path = absolute(file).map_err(|e| format!("setting `command-inline`: {e}"))?;
    let mut rest = vec![path.clone()];
    rest.extend(args[2..].iter().cloned());
    Ok(Some(((path, format!("{prefix}{code}")), rest)))
}

/// The `stdin-file` setting's path, if it has one.
fn stdin_file(settings: &Settings) -> Result<Option<String>, String> {
    match values(settings, "stdin-file") {
        None => Ok(None),
        Some([path]) => Ok(Some(
            absolute(path).map_err(|e| format!("setting `stdin-file`: {e}"))?,
        )),
        Some(_) => Err("setting `stdin-file` must be one file name, not a list".into()),
    }
}

/// `{session-stdin}` and `{session-status}` in `session-argv`, besides what `argv` has.
fn session_placeholder<'a>(settings: &'a Settings, entry: &'a str, key: &str) -> Option<&'a str> {
    match key {
        "session-stdin" => Some(SESSION_STDIN),
        "session-status" => Some(SESSION_STATUS),
        _ => placeholder(settings, entry, key),
    }
}

/// The files of `"file:NAME"` settings; a list value is joined with newlines.
fn setting_files(settings: &Settings) -> Result<Vec<(String, String)>, String> {
    settings
        .iter()
        .filter_map(|(key, value)| Some((key.strip_prefix("file:")?, value)))
        .map(|(name, value)| {
            let path = absolute(name).map_err(|e| format!("setting `file:{name}`: {e}"))?;
            Ok((path, value.join("\n")))
        })
        .collect()
}

/// `/` + a checked relative path in scratch.
fn absolute(path: &str) -> Result<String, String> {
    Ok(format!("/{}", scratch_path(path)?))
}

/// The absolute path of the entry file: `/` + the `entry` setting, checked.
fn entry_path(settings: &Settings) -> Result<String, String> {
    let entry = values(settings, "entry")
        .ok_or("missing setting `entry` (the file the program is written to, e.g. \"main.py\")")?;
    let [entry] = entry else {
        return Err("setting `entry` must be one file name, not a list".into());
    };
    absolute(entry).map_err(|e| format!("setting `entry`: {e}"))
}

/// Expands the `argv` setting: an item that is exactly `{args}` becomes `run_args`; in
/// every other item each known `{KEY}` is replaced (see [`placeholder`]).
pub fn expand_argv(
    argv: &[String],
    settings: &Settings,
    entry: &str,
    run_args: &[String],
) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len() + run_args.len());
    let args_json = json_strings(run_args);
    for item in argv {
        if item == "{args}" {
            out.extend(run_args.iter().cloned());
        } else {
            out.push(substitute(item, |key| match key {
                "args-json" => Some(args_json.as_str()),
                _ => placeholder(settings, entry, key),
            }));
        }
    }
    out
}

/// `items` as a JSON array of strings: `{args-json}`, for a tool that takes its program
/// text as an argument and can read its arguments only from that text (python's reactor
/// build). It is also a Python list literal and a JavaScript array literal.
pub fn json_strings(items: &[String]) -> String {
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('"');
        for c in item.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c if (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{2028}' || c == '\u{2029}' => {
                    out.push_str(&format!("\\u{:04x}", c as u32))
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push(']');
    out
}

/// The value of `{key}`: `entry` is the entry file's absolute path, any other key the
/// value of a single-valued setting. `args` (only a whole item) and lists have none.
fn placeholder<'a>(settings: &'a Settings, entry: &'a str, key: &str) -> Option<&'a str> {
    match key {
        "entry" => Some(entry),
        "args" => None,
        _ => match values(settings, key) {
            Some([one]) => Some(one.as_str()),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runbox_adapter_support::test_support::{settings, strings};

    #[test]
    fn an_inline_program_becomes_a_file_for_a_tool_that_takes_none() {
        let php = settings(&[
            ("entry", &["main.php"]),
            ("command-argv", &["php-cgi", "-q", "{command-args}"]),
            ("command-inline", &["-r", ".runbox-r.php", "<?php "]),
        ]);
        let run = command(&php, &strings(&["-r", "echo 1;", "a", "b"]), "/").unwrap();
        assert_eq!(run.args, strings(&["-q", "/.runbox-r.php", "a", "b"]));
        assert_eq!(
            run.files,
            vec![("/.runbox-r.php".to_string(), "<?php echo 1;".to_string())]
        );
        let run = command(&php, &strings(&["x.php", "-r"]), "/").unwrap();
        assert_eq!(
            run.args,
            strings(&["-q", "x.php", "-r"]),
            "only as the first option"
        );
        let e = command(&php, &strings(&["-r"]), "/").unwrap_err();
        assert!(e.contains("needs the program"), "{e}");
    }

    #[test]
    fn a_command_line_goes_into_command_argv() {
        let s = settings(&[
            ("entry", &["main.rb"]),
            ("argv", &["ruby", "{entry}"]),
            (
                "command-argv",
                &["ruby", "-C", "{command-cwd}", "{command-args}", "{name}"],
            ),
            ("name", &["ruby"]),
            ("env", &["HOME=/"]),
            ("file:.prelude.rb", &["x = 1"]),
        ]);
        let run = command(&s, &strings(&["-e", "puts 1"]), "/src").unwrap();
        assert_eq!(run.program, "ruby");
        assert_eq!(run.args, strings(&["-C", "/src", "-e", "puts 1", "ruby"]));
        assert_eq!(run.env, vec![("HOME".to_string(), "/".to_string())]);
        assert_eq!(run.files.len(), 1);

        let py = settings(&[(
            "command-argv",
            &["python", "run({command-cwd-json}, {command-args-json})"],
        )]);
        let run = command(&py, &strings(&["a \"b\""]), "/d\"ir").unwrap();
        assert_eq!(run.args, strings(&["run(\"/d\\\"ir\", [\"a \\\"b\\\"\"])"]));

        let without = settings(&[("entry", &["main.rb"]), ("argv", &["ruby"])]);
        assert!(command(&without, &[], "/")
            .unwrap_err()
            .contains("command-argv"));
    }

    #[test]
    fn stdin_file_and_setting_files() {
        let s = settings(&[
            ("entry", &["main.php"]),
            ("argv", &["php", "{entry}"]),
            ("stdin-file", &[".stdin"]),
            ("file:.prelude.php", &["<?php", "echo 1;"]),
        ]);
        let inv = invocation(&s, &[]).unwrap();
        assert_eq!(inv.stdin_file.as_deref(), Some("/.stdin"));
        assert_eq!(
            inv.files,
            vec![("/.prelude.php".to_string(), "<?php\necho 1;".to_string())]
        );
        let bad = settings(&[
            ("entry", &["main.php"]),
            ("argv", &["php"]),
            ("file:../escape", &["x"]),
        ]);
        assert!(invocation(&bad, &[])
            .unwrap_err()
            .contains("file:../escape"));
        let bad = settings(&[
            ("entry", &["m"]),
            ("argv", &["p"]),
            ("stdin-file", &["/abs"]),
        ]);
        assert!(invocation(&bad, &[]).unwrap_err().contains("stdin-file"));
    }

    fn python() -> Vec<(String, Vec<String>)> {
        settings(&[
            ("name", &["python"]),
            ("version", &["3.11.3"]),
            ("entry", &["main.py"]),
            (
                "argv",
                &["python", "-X", "v={version}", "{entry}", "{args}"],
            ),
            ("env", &["HOME=/", "A=b=c"]),
            ("flags", &["-a", "-b"]),
        ])
    }

    #[test]
    fn builds_the_python_invocation() {
        let inv = invocation(&python(), &strings(&["x", "{entry}"])).unwrap();
        assert_eq!(
            inv,
            Invocation {
                entry: "/main.py".into(),
                program: "python".into(),
                // Program arguments are passed on as given, never expanded.
                args: strings(&["-X", "v=3.11.3", "/main.py", "x", "{entry}"]),
                env: vec![("HOME".into(), "/".into()), ("A".into(), "b=c".into())],
                stdin_file: None,
                files: vec![],
                driver: None,
            }
        );
    }

    #[test]
    fn a_session_driver_gets_its_paths() {
        let mut s = python();
        s.push((
            "session-argv".into(),
            strings(&[
                "python",
                "serve('{entry}', '{session-stdin}', '{session-status}')",
            ]),
        ));
        let inv = invocation(&s, &[]).unwrap();
        assert_eq!(
            inv.driver,
            Some(Driver {
                program: "python".into(),
                args: strings(&["serve('/main.py', '/.runbox/stdin', '/.runbox/status')"]),
            })
        );
        let mut empty = python();
        empty.push(("session-argv".into(), vec![]));
        assert!(invocation(&empty, &[])
            .unwrap_err()
            .contains("session-argv"));
    }

    #[test]
    fn args_expands_only_as_a_whole_item() {
        let s = python();
        let argv = strings(&["{args}", "--{args}", "{args}"]);
        assert_eq!(
            expand_argv(&argv, &s, "/main.py", &strings(&["1", "2"])),
            strings(&["1", "2", "--{args}", "1", "2"])
        );
        assert_eq!(
            expand_argv(&argv, &s, "/main.py", &[]),
            strings(&["--{args}"])
        );
    }

    #[test]
    fn substitutes_inside_items_and_keeps_unknown_text() {
        let s = python();
        let sub = |item: &str| substitute(item, |k| placeholder(&s, "/main.py", k));
        assert_eq!(sub("--file={entry}"), "--file=/main.py");
        assert_eq!(sub("{name}-{version}"), "python-3.11.3");
        // Unknown keys, list settings, lone and doubled braces stay as written.
        assert_eq!(sub("{nope} {flags}"), "{nope} {flags}");
        assert_eq!(sub("{ {entry"), "{ {entry");
        assert_eq!(sub("{{entry}}"), "{/main.py}");
        assert_eq!(sub("{}"), "{}");
        assert_eq!(sub("}{"), "}{");
    }

    #[test]
    fn args_json_is_a_safe_literal_of_the_arguments() {
        let s = python();
        let args = strings(&["a b", "say \"hi\"", "back\\slash", "new\nline", "é"]);
        let argv = expand_argv(&strings(&["x", "main({args-json})"]), &s, "/e", &args);
        assert_eq!(
            argv[1],
            r#"main(["a b", "say \"hi\"", "back\\slash", "new\u000aline", "é"])"#
        );
        assert_eq!(json_strings(&[]), "[]");
    }

    #[test]
    fn substituted_values_are_not_expanded_again() {
        let s = settings(&[("a", &["{b}"]), ("b", &["no"])]);
        assert_eq!(substitute("{a}", |k| placeholder(&s, "/e", k)), "{b}");
    }

    #[test]
    fn missing_or_bad_settings_name_the_setting() {
        let without = |key: &str| -> Vec<(String, Vec<String>)> {
            python().into_iter().filter(|(k, _)| k != key).collect()
        };
        let err = |s: &Settings| invocation(s, &[]).unwrap_err();
        assert!(err(&without("entry")).contains("`entry`"));
        assert!(err(&without("argv")).contains("`argv`"));
        assert!(invocation(&without("env"), &[]).unwrap().env.is_empty());

        let mut s = without("argv");
        s.push(("argv".into(), vec![]));
        assert!(err(&s).contains("`argv` is empty"));

        let mut s = without("entry");
        s.push(("entry".into(), strings(&["../x.py"])));
        assert!(err(&s).contains("`entry`"));

        let mut s = without("env");
        s.push(("env".into(), strings(&["HOME"])));
        assert!(err(&s).contains("`env`") && err(&s).contains("`HOME`"));
    }

    #[test]
    fn scratch_paths_stay_inside() {
        assert_eq!(scratch_path("a/b.txt").unwrap(), "a/b.txt");
        assert_eq!(scratch_path("./a//b").unwrap(), "a/b");
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a/..",
            "",
            ".",
            "./",
            "a/",
        ] {
            assert!(scratch_path(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn env_values_may_be_empty() {
        assert_eq!(
            parse_env(&strings(&["A="])).unwrap(),
            vec![("A".to_string(), String::new())]
        );
        assert!(parse_env(&strings(&["=x"])).is_err());
    }
}
