//! From settings and a run request to the build and run steps: pure functions, tested
//! natively.

use runbox_adapter_support::{parse_env, scratch_path, substitute, values};

pub use runbox_adapter_support::Settings;

/// One program to spawn.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    /// A declared tool's name, or the absolute path of a program in scratch.
    pub program: String,
    pub args: Vec<String>,
    /// The program's whole environment.
    pub env: Vec<(String, String)>,
}

/// What the adapter does for one run.
#[derive(Debug, PartialEq, Eq)]
pub struct Build {
    /// The absolute path in the sandbox the program text is written to, e.g. `/main.c`.
    pub source: String,
    /// Compiles `source`.
    pub compile: Step,
    /// Links the compiler's output into the program, if the compiler does not.
    pub link: Option<Step>,
    /// Runs the program with the request's arguments.
    pub run: Step,
}

/// Works out the steps for a run with the program arguments `run_args`.
pub fn build(settings: &Settings, run_args: &[String]) -> Result<Build, String> {
    let source = file_setting(settings, "source", "main.c")?;
    let object = file_setting(settings, "object", "main.o")?;
    let program = file_setting(settings, "program", "main.wasm")?;
    let files = [
        ("source", source.as_str()),
        ("object", object.as_str()),
        ("program", program.as_str()),
    ];
    let tool_env = parse_setting_env(settings, "tool-env")?;
    let step = |key: &str, example: &str| -> Result<Option<Step>, String> {
        let Some(argv) = values(settings, key) else {
            return Ok(None);
        };
        let mut argv = argv
            .iter()
            .map(|item| substitute(item, |k| placeholder(settings, &files, k)));
        let program = argv.next().ok_or(format!(
            "setting `{key}` is empty; its first item must be the tool's name, e.g. {example}"
        ))?;
        Ok(Some(Step {
            program,
            args: argv.collect(),
            env: tool_env.clone(),
        }))
    };
    let compile_example = "[\"llvm\", \"clang\", \"-c\", \"{source}\", \"-o\", \"{object}\"]";
    let compile = step("compile", compile_example)?.ok_or(format!(
        "missing setting `compile` (the compiler's name, then its arguments, e.g. {compile_example})"
    ))?;
    let link = step(
        "link",
        "[\"llvm\", \"wasm-ld\", \"{object}\", \"-lc\", \"-o\", \"{program}\"]",
    )?;
    Ok(Build {
        source: format!("/{source}"),
        compile,
        link,
        run: Step {
            program: format!("/{program}"),
            args: run_args.to_vec(),
            env: parse_setting_env(settings, "env")?,
        },
    })
}

/// A file setting: one path inside the scratch directory, normalized and relative.
fn file_setting(settings: &Settings, key: &str, example: &str) -> Result<String, String> {
    let value = values(settings, key).ok_or(format!(
        "missing setting `{key}` (a file in the scratch directory, e.g. \"{example}\")"
    ))?;
    let [value] = value else {
        return Err(format!("setting `{key}` must be one file name, not a list"));
    };
    scratch_path(value).map_err(|e| format!("setting `{key}`: {e}"))
}

/// The `KEY=VALUE` items of the setting `key`, none if it is not set.
fn parse_setting_env(settings: &Settings, key: &str) -> Result<Vec<(String, String)>, String> {
    parse_env(values(settings, key).unwrap_or_default())
        .map_err(|e| e.replacen("setting `env`", &format!("setting `{key}`"), 1))
}

/// The value of `{key}`: a file's relative path, or a single-valued setting's value.
fn placeholder<'a>(
    settings: &'a Settings,
    files: &[(&str, &'a str)],
    key: &str,
) -> Option<&'a str> {
    if let Some((_, path)) = files.iter().find(|(k, _)| *k == key) {
        return Some(path);
    }
    match values(settings, key) {
        Some([one]) => Some(one.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runbox_adapter_support::test_support::{settings, strings};

    fn clang() -> Vec<(String, Vec<String>)> {
        settings(&[
            ("name", &["clang"]),
            ("source", &["./src//main.c"]),
            ("object", &["main.o"]),
            ("program", &["main.wasm"]),
            ("std", &["gnu17"]),
            (
                "compile",
                &[
                    "llvm",
                    "clang",
                    "-std={std}",
                    "-c",
                    "{source}",
                    "-o",
                    "{object}",
                ],
            ),
            ("link", &["llvm", "wasm-ld", "{object}", "-o", "/{program}"]),
            ("tool-env", &["TMPDIR=/"]),
            ("env", &["HOME=/"]),
        ])
    }

    #[test]
    fn builds_the_three_steps() {
        let build = build(&clang(), &strings(&["a", "{source}"])).unwrap();
        let tool_env = vec![("TMPDIR".to_string(), "/".to_string())];
        assert_eq!(
            build,
            Build {
                source: "/src/main.c".into(),
                compile: Step {
                    program: "llvm".into(),
                    // Relative paths, so diagnostics name `src/main.c`.
                    args: strings(&["clang", "-std=gnu17", "-c", "src/main.c", "-o", "main.o"]),
                    env: tool_env.clone(),
                },
                link: Some(Step {
                    program: "llvm".into(),
                    args: strings(&["wasm-ld", "main.o", "-o", "/main.wasm"]),
                    env: tool_env,
                }),
                run: Step {
                    program: "/main.wasm".into(),
                    // Program arguments are passed on as given, never expanded.
                    args: strings(&["a", "{source}"]),
                    env: vec![("HOME".into(), "/".into())],
                },
            }
        );
    }

    #[test]
    fn link_and_environments_are_optional() {
        let s: Vec<_> = clang()
            .into_iter()
            .filter(|(k, _)| !["link", "tool-env", "env"].contains(&k.as_str()))
            .collect();
        let build = build(&s, &[]).unwrap();
        assert_eq!(build.link, None);
        assert!(build.compile.env.is_empty() && build.run.env.is_empty());
    }

    #[test]
    fn missing_or_bad_settings_name_the_setting() {
        let with = |key: &str, value: &[&str]| -> Vec<(String, Vec<String>)> {
            let mut s: Vec<_> = clang().into_iter().filter(|(k, _)| k != key).collect();
            s.push((key.to_string(), strings(value)));
            s
        };
        let without = |key: &str| -> Vec<(String, Vec<String>)> {
            clang().into_iter().filter(|(k, _)| k != key).collect()
        };
        let err = |s: &Settings| build(s, &[]).unwrap_err();
        for key in ["source", "object", "program", "compile"] {
            assert!(err(&without(key)).contains(&format!("`{key}`")), "{key}");
        }
        assert!(err(&with("compile", &[])).contains("`compile` is empty"));
        assert!(err(&with("link", &[])).contains("`link` is empty"));
        assert!(err(&with("source", &["../main.c"])).contains("`source`"));
        assert!(err(&with("program", &["/main.wasm"])).contains("`program`"));
        assert!(err(&with("object", &["a.o", "b.o"])).contains("not a list"));
        let e = err(&with("tool-env", &["TMPDIR"]));
        assert!(e.contains("`tool-env`") && e.contains("`TMPDIR`"), "{e}");
        assert!(err(&with("env", &["=x"])).contains("`env`"));
    }
}
