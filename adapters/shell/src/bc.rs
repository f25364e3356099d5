//! `bc`: runbox's own POSIX calculator, in place of bashkit's (which computes in binary
//! floating point and rounds: `scale=3; 22/7` gave 3.143 where bc prints 3.142).
//!
//! ```text
//! bc [-l] [-q] [FILE]...       reads each FILE, then standard input
//! ```
//!
//! Numbers are exact decimals ([`number`]); `/` truncates to `scale` digits, `*` keeps
//! min(a+b, max(scale, a, b)) of them, as POSIX says. The language is POSIX bc with GNU
//! bc's extensions that scripts use (`else`, `for(;;)`, `++`, `+=`, `&& || !`, `print`,
//! `#` comments, long names, `define void`, `last`, `halt`); `-l` loads the math library
//! (`s c a l e j`, scale 20). Output is GNU bc's: `.5` and `-.5` without a leading zero,
//! lines broken at 70 characters with `\`, errors on stderr (`(standard_in) 3: syntax
//! error`, `Runtime error (func=f): Divide by zero`) after which bc goes on with the next
//! line, and status 0 unless a file is missing or an option is wrong.
//!
//! It is bounded: a number has at most [`number::MAX_DIGITS`] digits and `scale` is at
//! most [`number::MAX_SCALE`] (`2^99999999` is an error at once, not a hung run), programs
//! nest at most [`parser::MAX_NESTING`] levels, functions call each other at most
//! [`eval::MAX_CALLS`] deep and the evaluator's recursion is capped below the end of the
//! stack; output past 32 MiB is an error.
//!
//! Departures from GNU bc 1.07: a last line without a newline is read (GNU reports a
//! syntax error); `define` may start anywhere a statement may and `else` may follow
//! newlines; the math library prints the true digits, truncated, where GNU's is sometimes
//! off in the last ones (`scale=2; c(10)`: -.83, GNU -.84); a power that truncates to
//! zero prints `0`, not GNU's `-0`; runtime errors name no byte-code address; `read()`
//! and arrays passed by reference (`*a[]`) are not supported.

mod ast;
mod eval;
mod lexer;
mod mathlib;
mod number;
mod parser;

use std::path::Path;

use bashkit::{async_trait, vfs_join, Builtin, BuiltinContext, ExecResult};

use eval::Interp;
use parser::{Parser, Unit};

/// The `bc` builtin.
pub struct BcCommand;

#[async_trait]
impl Builtin for BcCommand {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let options = match Options::parse(ctx.args) {
            Ok(options) => options,
            Err(outcome) => return Ok(outcome.into()),
        };
        let mut inputs = Vec::new();
        for file in &options.files {
            let path = if Path::new(file).is_absolute() {
                file.into()
            } else {
                vfs_join(ctx.cwd, file)
            };
            let text = ctx.fs.read_file(&path).await.ok();
            inputs.push(Input {
                name: file.clone(),
                text: text.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
            });
        }
        if let Some(stdin) = ctx.stdin {
            inputs.push(Input {
                name: "(standard_in)".into(),
                text: Some(stdin.text_lossy().into_owned()),
            });
        }
        Ok(run(options.library, &inputs).into())
    }
}

/// One source of program text: a file (None when it could not be read) or stdin.
pub struct Input {
    pub name: String,
    pub text: Option<String>,
}

/// What bc printed and its exit status.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub stdout: String,
    pub stderr: String,
    pub status: i32,
}

impl From<Outcome> for ExecResult {
    fn from(outcome: Outcome) -> ExecResult {
        ExecResult {
            stdout: outcome.stdout.into(),
            stderr: outcome.stderr.into(),
            exit_code: outcome.status,
            ..ExecResult::default()
        }
    }
}

const USAGE: &str = "usage: bc [options] [file ...]
  -h  --help         print this usage and exit
  -i  --interactive  force interactive mode
  -l  --mathlib      use the predefined math routines
  -q  --quiet        don't print initial banner
  -s  --standard     non-standard bc constructs are errors
  -w  --warn         warn about non-standard bc constructs
  -v  --version      print version information and exit
";

#[derive(Debug, Default)]
struct Options {
    library: bool,
    files: Vec<String>,
}

impl Options {
    /// bc's options, anywhere among the files as getopt allows; `-i -q -s -w` change
    /// nothing here.
    fn parse(args: &[String]) -> Result<Options, Outcome> {
        let mut options = Options::default();
        let mut only_files = false;
        for arg in args {
            if only_files || arg == "-" || !arg.starts_with('-') {
                options.files.push(arg.clone());
            } else if arg == "--" {
                only_files = true;
            } else if let Some(long) = arg.strip_prefix("--") {
                options.long(long)?;
            } else {
                for flag in arg[1..].chars() {
                    options.short(flag)?;
                }
            }
        }
        Ok(options)
    }

    fn short(&mut self, flag: char) -> Result<(), Outcome> {
        match flag {
            'l' => self.library = true,
            'i' | 'q' | 's' | 'w' => {}
            'h' => return Err(usage(0, String::new())),
            'v' => return Err(version()),
            _ => return Err(usage(1, format!("bc: invalid option -- '{flag}'\n"))),
        }
        Ok(())
    }

    fn long(&mut self, name: &str) -> Result<(), Outcome> {
        match name {
            "mathlib" => self.library = true,
            "interactive" | "quiet" | "standard" | "warn" => {}
            "help" => return Err(usage(0, String::new())),
            "version" => return Err(version()),
            _ => return Err(usage(1, format!("bc: unrecognized option '--{name}'\n"))),
        }
        Ok(())
    }
}

/// The usage text: on stdout for `--help`, after `complaint` on stderr for a wrong option.
fn usage(status: i32, complaint: String) -> Outcome {
    let (stdout, stderr) = if status == 0 {
        (USAGE.to_string(), complaint)
    } else {
        (String::new(), complaint + USAGE)
    };
    Outcome {
        stdout,
        stderr,
        status,
    }
}

fn version() -> Outcome {
    Outcome {
        stdout: "bc (runbox): POSIX bc with GNU bc 1.07's extensions\n".into(),
        ..Outcome::default()
    }
}

/// Runs the inputs in order on one interpreter, as `bc [-l] FILE... < stdin` does.
pub fn run(library: bool, inputs: &[Input]) -> Outcome {
    let mut interp = Interp::new(library);
    let mut status = 0;
    for input in inputs {
        let Some(text) = &input.text else {
            interp
                .err
                .push_str(&format!("File {} is unavailable.\n", input.name));
            status = 1;
            break;
        };
        if !run_source(&mut interp, &input.name, text) {
            break;
        }
    }
    Outcome {
        stdout: std::mem::take(&mut interp.out.text),
        stderr: std::mem::take(&mut interp.err),
        status,
    }
}

/// Runs one source line by line; false when bc is to stop (`quit` or `halt`).
fn run_source(interp: &mut Interp, name: &str, text: &str) -> bool {
    let mut parser = Parser::new(text);
    loop {
        match parser.next_unit() {
            Ok(Unit::Items(items)) => {
                if !interp.run(items) {
                    return false;
                }
            }
            Ok(Unit::Quit) => return false,
            Ok(Unit::End) => return true,
            Err(e) => interp
                .err
                .push_str(&format!("{name} {}: {}\n", e.line, e.message)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// stdout, stderr and status of `bc [-l]` with `program` on stdin.
    fn bc(library: bool, program: &str) -> (String, String, i32) {
        let input = Input {
            name: "(standard_in)".into(),
            text: Some(program.into()),
        };
        let outcome = run(library, &[input]);
        (outcome.stdout, outcome.stderr, outcome.status)
    }

    fn out(program: &str) -> String {
        let (stdout, stderr, _) = bc(false, program);
        assert_eq!(stderr, "", "{program}");
        stdout
    }

    #[test]
    fn the_issue() {
        assert_eq!(out("scale=3; 22/7\n"), "3.142\n");
        assert_eq!(out("scale=4; 2/3\n"), ".6666\n");
        assert_eq!(bc(true, "4*a(1)\n").0, "3.14159265358979323844\n");
    }

    #[test]
    fn errors_go_on_with_the_next_line() {
        let (stdout, stderr, status) = bc(false, "1/0; 5\n6\n1 +\n7\nfoo(1)\n");
        assert_eq!(stdout, "6\n7\n");
        assert_eq!(
            stderr,
            "Runtime error (func=(main)): Divide by zero\n(standard_in) 3: syntax error\nRuntime error (func=(main)): Function foo not defined.\n"
        );
        assert_eq!(status, 0);
    }

    #[test]
    fn functions_scope_and_recursion() {
        let program = "define f(n) { if (n <= 1) return (1); return (n * f(n-1)); }\nf(20)\nx = 2\ndefine g() { return x }\ndefine h(x) { return g() }\nh(5); x\n";
        assert_eq!(out(program), "2432902008176640000\n5\n2\n");
        let (_, stderr, _) = bc(false, "define f(n) { return f(n+1) }\nf(1)\n");
        assert!(stderr.contains("nested too deeply"), "{stderr}");
    }

    #[test]
    fn hostile_input_fails_fast() {
        let (stdout, stderr, _) = bc(false, "2^99999999\nscale=999999999\n1\n");
        assert_eq!(stdout, "1\n");
        assert!(
            stderr.contains("too long") && stderr.contains("scale too large"),
            "{stderr}"
        );
    }

    #[test]
    fn missing_files_and_options() {
        let missing = Input {
            name: "nope.bc".into(),
            text: None,
        };
        let outcome = run(false, &[missing]);
        assert_eq!(
            (outcome.stderr.as_str(), outcome.status),
            ("File nope.bc is unavailable.\n", 1)
        );
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(Options::parse(&args(&["-lq", "f.bc"])).is_ok_and(|o| o.library));
        assert!(Options::parse(&args(&["-z"])).is_err_and(|o| o.status == 1));
    }
}
