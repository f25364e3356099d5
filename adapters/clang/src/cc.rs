//! `cc`/`c++` as commands of the shell (`runbox:plugin/command`): a gcc-style command line
//! (`cc -O2 p.c -o p`, `g++ -c a.cpp`, `cc a.o b.o -o prog -lm`) turned into the
//! runtime's own `compile` and `link` steps. Pure functions, tested natively.
//!
//! Each source is compiled with the `compile` setting, the command's own flags placed just
//! before the source (later flags win: `-O0` over the setting's `-O2`); the objects are
//! linked with the `link` setting into the output (`a.out` unless `-o`), which then gets
//! [`PROGRAM_HEADER`] before its WebAssembly so the shell runs it by its path. Relative
//! paths are taken from the caller's working directory (every step runs at `/`).

use runbox_adapter_support::{substitute, values};

use crate::plan::Step;
pub use runbox_adapter_support::Settings;

/// The first line of a program made here (see the host's `sandbox/commands.rs`).
pub const PROGRAM_HEADER: &[u8] = b"#!/usr/bin/env runbox-wasm\n";

/// Where the objects of a compile-and-link go meanwhile (removed after).
pub const TEMP_DIR: &str = "/.runbox-cc";

/// What one `cc` command does.
#[derive(Debug, PartialEq, Eq)]
pub struct CcPlan {
    /// One compile per source.
    pub compiles: Vec<Step>,
    /// The link, unless `-c` (or `-E`/`-S`/`-M`, which stop before it).
    pub link: Option<Link>,
}

/// The link step, and where its program goes.
#[derive(Debug, PartialEq, Eq)]
pub struct Link {
    pub step: Step,
    /// What the linker writes (a temporary file).
    pub linked: String,
    /// Where the program goes, with its header (`/a.out`).
    pub output: String,
}

const SOURCE_EXTENSIONS: &[&str] = &["c", "cc", "cpp", "cxx", "c++", "C", "i", "ii"];

/// The usage error text.
pub fn usage(name: &str) -> String {
    format!(
        "usage: {name} [-c] [-o OUTPUT] [-O LEVEL] [-std=STD] [-D/-I/-W/-f flags] FILES... \
         [-l LIB]\n(the program it makes runs as ./OUTPUT; -E, -S and -M print or write \
         what clang makes)"
    )
}

/// Works out the steps for `args`, called as `name` from the directory `cwd`.
pub fn plan(settings: &Settings, name: &str, args: &[String], cwd: &str) -> Result<CcPlan, String> {
    let line = CommandLine::parse(args, cwd)?;
    if line.sources.is_empty() && line.objects.is_empty() && !line.info_only() {
        return Err(format!("{name}: no input files\n{}", usage(name)));
    }
    let stops_early = line.compile_only || line.stop_before_link;
    if stops_early && line.output.is_some() && line.sources.len() > 1 {
        return Err(format!(
            "{name}: cannot specify -o with -c, -S or -E with multiple files"
        ));
    }
    let compile_argv = values(settings, "compile").ok_or("missing setting `compile`")?;
    let env = runbox_adapter_support::parse_env(values(settings, "tool-env").unwrap_or_default())?;
    let mut compiles = Vec::new();
    let mut objects = Vec::new();
    for (i, source) in line.sources.iter().enumerate() {
        let object = match (&line.output, stops_early) {
            (Some(out), true) => Some(out.clone()),
            (None, true) if line.compile_only => Some(object_name(cwd, source)),
            // -E/-S/-M without -o: clang's own default (stdout, or the `.s` beside it).
            (None, _) if line.stop_before_link => None,
            _ => Some(format!("{TEMP_DIR}/{i}.o")),
        };
        compiles.push(compile_step(
            settings,
            compile_argv,
            &line.flags,
            source,
            object.as_deref(),
            line.stop_before_link,
            env.clone(),
        )?);
        if !stops_early {
            objects.extend(object);
        }
    }
    if line.info_only() && compiles.is_empty() {
        // `cc --version`: the compile step with nothing to compile.
        let mut step = compile_step(settings, compile_argv, &line.flags, "", None, true, env)?;
        step.args.retain(|a| !a.is_empty());
        compiles.push(step);
        return Ok(CcPlan {
            compiles,
            link: None,
        });
    }
    if stops_early {
        return Ok(CcPlan {
            compiles,
            link: None,
        });
    }
    objects.extend(line.objects.iter().cloned());
    let link_argv = values(settings, "link").ok_or("this runtime has no `link` setting")?;
    let output = line
        .output
        .clone()
        .unwrap_or_else(|| absolute(cwd, "a.out"));
    let linked = format!("{TEMP_DIR}/linked.wasm");
    let mut link_args = Vec::new();
    for item in link_argv {
        if item == "{object}" {
            link_args.extend(objects.iter().cloned());
            link_args.extend(line.link_flags.iter().cloned());
        } else {
            link_args.push(substitute(item, |key| match key {
                "program" => Some(linked.as_str()),
                _ => single(settings, key),
            }));
        }
    }
    let (program, args) = split_program(link_args, "link")?;
    Ok(CcPlan {
        compiles,
        link: Some(Link {
            step: Step { program, args, env },
            linked,
            output,
        }),
    })
}

/// The compile of `source` into `object` (none: clang's default output).
fn compile_step(
    settings: &Settings,
    argv: &[String],
    flags: &[String],
    source: &str,
    object: Option<&str>,
    stop_before_link: bool,
    env: Vec<(String, String)>,
) -> Result<Step, String> {
    let keep_pch = !flags.iter().any(|f| changes_the_headers(f));
    let mut out = Vec::new();
    let mut items = argv.iter().peekable();
    while let Some(item) = items.next() {
        match item.as_str() {
            // The precompiled standard headers were made with the setting's flags: a
            // command that changes the language or the code they make compiles without.
            "-include-pch" if !keep_pch => {
                items.next();
            }
            // -E, -S and -M replace -c; -o goes with its output.
            "-c" if stop_before_link => {}
            "-o" if object.is_none() => {
                items.next();
            }
            "{source}" => {
                out.extend(flags.iter().cloned());
                out.push(source.to_string());
            }
            _ => out.push(substitute(item, |key| match key {
                "object" => object,
                _ => single(settings, key),
            })),
        }
    }
    let (program, args) = split_program(out, "compile")?;
    Ok(Step { program, args, env })
}

/// Whether a command's flag makes the precompiled headers unusable (clang refuses a PCH
/// made with another language standard, optimisation level or code generation flags).
fn changes_the_headers(flag: &str) -> bool {
    flag.starts_with("-std=")
        || (flag.starts_with("-O") && flag != "-O2")
        || flag.starts_with("-f")
        || flag.starts_with("-m")
        || flag == "-ansi"
}

fn split_program(mut argv: Vec<String>, key: &str) -> Result<(String, Vec<String>), String> {
    if argv.is_empty() {
        return Err(format!("setting `{key}` is empty"));
    }
    let program = argv.remove(0);
    Ok((program, argv))
}

fn single<'a>(settings: &'a Settings, key: &str) -> Option<&'a str> {
    match values(settings, key) {
        Some([one]) => Some(one.as_str()),
        _ => None,
    }
}

/// `dir/x.c` → `x.o` in the working directory `cwd`, as gcc names it.
fn object_name(cwd: &str, source: &str) -> String {
    let file = source.rsplit('/').next().unwrap_or(source);
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    absolute(cwd, &format!("{stem}.o"))
}

/// `path` from `cwd`, absolute (the steps run at `/`).
fn absolute(cwd: &str, path: &str) -> String {
    if path.starts_with('/') || cwd == "/" || cwd.is_empty() {
        path.to_string()
    } else {
        format!("{}/{path}", cwd.trim_end_matches('/'))
    }
}

/// A gcc-style command line, sorted into what goes where.
#[derive(Debug, Default)]
struct CommandLine {
    sources: Vec<String>,
    /// Objects and archives to link.
    objects: Vec<String>,
    output: Option<String>,
    compile_only: bool,
    /// -E, -S or -M: clang prints or writes something else instead of an object.
    stop_before_link: bool,
    /// Flags for every compile.
    flags: Vec<String>,
    /// `-l`, `-L` and `-Wl,` flags for the link.
    link_flags: Vec<String>,
}

impl CommandLine {
    fn parse(args: &[String], cwd: &str) -> Result<CommandLine, String> {
        let mut line = CommandLine::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            let mut value = |flag: &str| {
                args.next()
                    .cloned()
                    .ok_or_else(|| format!("argument to '{flag}' is missing"))
            };
            match arg.as_str() {
                "-o" => line.output = Some(absolute(cwd, &value("-o")?)),
                "-c" => line.compile_only = true,
                "-E" | "-S" | "-M" | "-MM" => {
                    line.stop_before_link = true;
                    line.flags.push(arg.clone());
                }
                "-I" | "-D" | "-U" | "-include" | "-isystem" | "-x" => {
                    let v = value(arg)?;
                    let v = if matches!(arg.as_str(), "-I" | "-include" | "-isystem") {
                        absolute(cwd, &v)
                    } else {
                        v
                    };
                    line.flags.push(arg.clone());
                    line.flags.push(v);
                }
                "-l" | "-L" => {
                    let v = value(arg)?;
                    line.link_flags.push(format!("{arg}{v}"));
                }
                // Threads are not in the sandbox; gcc's defaults need nothing.
                "-pthread" | "-static" | "-pipe" | "-s" => {}
                a if a.starts_with("-o") => line.output = Some(absolute(cwd, &a[2..])),
                a if a.starts_with("-I") => {
                    line.flags.push(format!("-I{}", absolute(cwd, &a[2..])))
                }
                a if a.starts_with("-l") || a.starts_with("-L") || a.starts_with("-Wl,") => {
                    line.link_flags.push(a.to_string())
                }
                a if a.starts_with('-') && a.len() > 1 => line.flags.push(a.to_string()),
                file => {
                    let path = absolute(cwd, file);
                    let extension = file.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
                    if SOURCE_EXTENSIONS.contains(&extension) {
                        line.sources.push(path);
                    } else {
                        line.objects.push(path);
                    }
                }
            }
        }
        Ok(line)
    }

    /// `--version`, `-v` or `--help` alone: clang answers without compiling anything.
    fn info_only(&self) -> bool {
        self.sources.is_empty()
            && self.objects.is_empty()
            && self
                .flags
                .iter()
                .any(|f| matches!(f.as_str(), "--version" | "-v" | "--help" | "-dumpversion"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runbox_adapter_support::test_support::{settings, strings};

    fn clang() -> Vec<(String, Vec<String>)> {
        settings(&[
            (
                "compile",
                &[
                    "llvm",
                    "clang",
                    "-std=gnu17",
                    "-O2",
                    "-include-pch",
                    "/pch/x.pch",
                    "-c",
                    "{source}",
                    "-o",
                    "{object}",
                ],
            ),
            (
                "link",
                &["llvm", "wasm-ld", "{object}", "-lc", "-o", "{program}"],
            ),
            ("tool-env", &["TMPDIR=/"]),
        ])
    }

    #[test]
    fn compile_and_link_into_the_output() {
        let plan = plan(
            &clang(),
            "cc",
            &strings(&["-O0", "p.c", "-o", "p", "-lm"]),
            "/",
        )
        .unwrap();
        assert_eq!(plan.compiles.len(), 1);
        assert_eq!(
            plan.compiles[0].args,
            // -O0 changes what the precompiled headers were made with: they go.
            strings(&[
                "clang",
                "-std=gnu17",
                "-O2",
                "-c",
                "-O0",
                "p.c",
                "-o",
                "/.runbox-cc/0.o"
            ])
        );
        let link = plan.link.unwrap();
        assert_eq!(
            link.step.args,
            strings(&[
                "wasm-ld",
                "/.runbox-cc/0.o",
                "-lm",
                "-lc",
                "-o",
                "/.runbox-cc/linked.wasm"
            ])
        );
        assert_eq!(link.output, "p");
        assert_eq!(link.step.env, vec![("TMPDIR".to_string(), "/".to_string())]);
    }

    #[test]
    fn compile_only_names_objects_as_gcc_does() {
        let plan = plan(
            &clang(),
            "cc",
            &strings(&["-c", "src/a.c", "b.c", "-Wall"]),
            "/w",
        )
        .unwrap();
        assert!(plan.link.is_none());
        let outputs: Vec<_> = plan
            .compiles
            .iter()
            .map(|c| c.args.last().unwrap().clone())
            .collect();
        assert_eq!(outputs, strings(&["/w/a.o", "/w/b.o"]));
        // The pch stays: -Wall does not change the headers.
        assert!(plan.compiles[0].args.contains(&"/w/src/a.c".to_string()));
        assert!(plan.compiles[0].args.contains(&"-include-pch".to_string()));
    }

    #[test]
    fn the_working_directory_and_defaults() {
        let plan = plan(&clang(), "cc", &strings(&["x.c", "y.o", "-Iinc"]), "/src").unwrap();
        let link = plan.link.unwrap();
        assert_eq!(link.output, "/src/a.out");
        assert!(link.step.args.contains(&"/src/y.o".to_string()));
        assert!(plan.compiles[0].args.contains(&"-I/src/inc".to_string()));
    }

    #[test]
    fn bad_command_lines_say_why() {
        let err = |args: &[&str]| plan(&clang(), "cc", &strings(args), "/").unwrap_err();
        assert!(err(&[]).contains("no input files"));
        assert!(err(&["-c", "a.c", "b.c", "-o", "x.o"]).contains("multiple files"));
        assert!(err(&["a.c", "-o"]).contains("'-o' is missing"));
        // -E prints to stdout: no -o, no link.
        let e = plan(&clang(), "cc", &strings(&["-E", "a.c"]), "/").unwrap();
        assert!(e.link.is_none() && !e.compiles[0].args.contains(&"-o".to_string()));
        let v = plan(&clang(), "cc", &strings(&["--version"]), "/").unwrap();
        assert!(v.compiles[0].args.contains(&"--version".to_string()));
    }
}
