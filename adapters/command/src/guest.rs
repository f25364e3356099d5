//! The component's side of `runbox:plugin`: reads the settings, prepares the scratch
//! directory and spawns the tool, once per run or, in a session, as a resident driver.
//! The command-line logic is in [`crate::plan`].

use std::cell::RefCell;

use crate::plan::{self, Driver, Invocation, SESSION_STATUS, SESSION_STDIN};

wit_bindgen::generate!({ path: "../../wit", world: "command-plugin" });

use exports::runbox::plugin::command::Guest as CommandGuest;
use exports::runbox::plugin::runtime::{File, Guest, Info, RunRequest};
use exports::runbox::plugin::session::{Guest as SessionGuest, GuestSession};
use runbox::plugin::command_line::Invocation as CommandLine;
use runbox::plugin::{config, process};

mod guest_io {
    #[allow(unused_imports)]
    use super::{config, process, File, Info};
    runbox_adapter_support::guest_glue!();
}

struct Adapter;

export!(Adapter);

impl Guest for Adapter {
    fn describe() -> Info {
        guest_io::describe_from_settings()
    }

    fn run(request: RunRequest) -> Result<i32, String> {
        let invocation = plan::invocation(&config::settings(), &request.args)?;
        prepare(&invocation, &request)?;
        if let Some(path) = &invocation.stdin_file {
            guest_io::write_file(path, request.stdin.as_deref().unwrap_or_default())
                .map_err(|e| format!("cannot write the standard input to `{path}`: {e}"))?;
        }
        guest_io::spawn(process::Command {
            program: invocation.program,
            args: invocation.args,
            env: invocation.env,
            stdin: request.stdin,
        })
    }
}

/// The runtime as a command of another plugin's run (the shell's `python gen.py`): the
/// `command-argv` setting with the command line's arguments; no program text is written,
/// the tool reads the files the arguments name itself.
impl CommandGuest for Adapter {
    fn run_command(invocation: CommandLine) -> Result<i32, String> {
        let run = plan::command(&config::settings(), &invocation.args, &invocation.cwd)?;
        for (path, contents) in &run.files {
            guest_io::write_file(path, contents.as_bytes())
                .map_err(|e| format!("cannot write `{path}`: {e}"))?;
        }
        if let Some(path) = &run.stdin_file {
            guest_io::write_file(path, invocation.stdin.as_deref().unwrap_or_default())
                .map_err(|e| format!("cannot write the standard input to `{path}`: {e}"))?;
        }
        guest_io::spawn(process::Command {
            program: run.program,
            args: run.args,
            env: run.env,
            stdin: invocation.stdin,
        })
    }
}

/// Writes what every run needs into scratch: the request's files, the settings' files,
/// and the program text.
fn prepare(invocation: &Invocation, request: &RunRequest) -> Result<(), String> {
    guest_io::write_files(&request.files)?;
    write_setting_files(invocation)?;
    guest_io::write_file(&invocation.entry, request.code.as_bytes())
        .map_err(|e| format!("cannot write the program to `{}`: {e}", invocation.entry))
}

/// The files of the `"file:NAME"` settings.
fn write_setting_files(invocation: &Invocation) -> Result<(), String> {
    for (path, contents) in &invocation.files {
        guest_io::write_file(path, contents.as_bytes())
            .map_err(|e| format!("cannot write `{path}`: {e}"))?;
    }
    Ok(())
}

impl SessionGuest for Adapter {
    type Session = Session;
}

/// A session. With a `session-argv` setting the runtime keeps state: a driver program
/// stays alive between calls. For each call the adapter writes the program to `entry`
/// and its standard input to `/.runbox/stdin`, then feeds the driver one line (`run`);
/// the driver runs the program in the namespace of the calls before it, writes its exit
/// status (a decimal number) to `/.runbox/status`, and reads its next line. Without
/// `session-argv`, each call runs the tool anew (the files stay).
///
/// `run-once` (a pre-started ordinary run) feeds the line `once`: the driver runs the
/// program with its own standard input as the program's (fed after that line, then the
/// end of input), as the tool would run it, and exits with the program's exit code.
pub struct Session {
    driver: RefCell<Option<process::Resident>>,
}

impl GuestSession for Session {
    fn new() -> Self {
        runbox_adapter_support::take_what_a_session_holds();
        // Started now, so the first call does not wait for the interpreter; if that
        // fails, the first call tries again and reports why.
        // The settings' files first: the driver may read them as it starts (quickjs's
        // `-I` script).
        let driver = plan::invocation(&config::settings(), &[])
            .ok()
            .filter(|invocation| write_setting_files(invocation).is_ok())
            .and_then(|invocation| invocation.driver)
            .and_then(|driver| start(&driver, &invocation_env()).ok());
        Session {
            driver: RefCell::new(driver),
        }
    }

    fn run_once(&self, request: RunRequest) -> Result<i32, String> {
        self.once(request)
    }

    fn run(&self, request: RunRequest) -> Result<i32, String> {
        let invocation = plan::invocation(&config::settings(), &request.args)?;
        let Some(driver) = &invocation.driver else {
            return Adapter::run(request);
        };
        prepare(&invocation, &request)?;
        guest_io::write_file(SESSION_STDIN, request.stdin.as_deref().unwrap_or_default())
            .map_err(|e| format!("cannot write the standard input to `{SESSION_STDIN}`: {e}"))?;
        let _ = std::fs::remove_file(SESSION_STATUS);
        let mut slot = self.driver.borrow_mut();
        let resident = match slot.take() {
            Some(resident) => resident,
            None => start(driver, &invocation.env)?,
        };
        match resident.feed(b"run\n", false) {
            None => {
                *slot = Some(resident);
                let status = std::fs::read_to_string(SESSION_STATUS).map_err(|e| {
                    format!(
                        "the session's driver reported no exit status in `{SESSION_STATUS}`: {e}"
                    )
                })?;
                status.trim().parse().map_err(|_| {
                    format!(
                        "the session's driver wrote `{}` as the exit status, not a number",
                        status.trim()
                    )
                })
            }
            Some(code) => {
                // The interpreter itself ended (the program exited it): the next call
                // starts a new one.
                eprintln!(
                    "runbox: the interpreter exited with {code}; the next call starts a new one, without the state of earlier calls"
                );
                Ok(code)
            }
        }
    }
}

impl Session {
    /// `run-once`: see the type's documentation.
    fn once(&self, request: RunRequest) -> Result<i32, String> {
        let invocation = plan::invocation(&config::settings(), &request.args)?;
        let Some(driver) = &invocation.driver else {
            return Adapter::run(request);
        };
        prepare(&invocation, &request)?;
        let resident = match self.driver.borrow_mut().take() {
            Some(resident) => resident,
            None => start(driver, &invocation.env)?,
        };
        if let Some(code) = resident.feed(b"once\n", false) {
            return Ok(code);
        }
        // The program reads its standard input: all of it, then the end.
        resident
            .feed(request.stdin.as_deref().unwrap_or_default(), true)
            .ok_or_else(|| "the session's driver waited for input after its end".to_string())
    }
}

fn invocation_env() -> Vec<(String, String)> {
    plan::invocation(&config::settings(), &[])
        .map(|i| i.env)
        .unwrap_or_default()
}

/// Starts the session's driver; it runs until it first waits for a request.
fn start(driver: &Driver, env: &[(String, String)]) -> Result<process::Resident, String> {
    process::Resident::start(&process::Command {
        program: driver.program.clone(),
        args: driver.args.clone(),
        env: env.to_vec(),
        stdin: None,
    })
    .map_err(|e| guest_io::spawn_error(&driver.program, e))
}
