//! The component's side of `runbox:plugin`: reads the settings, writes the source, and
//! spawns the compiler, the linker and the program. The logic is in [`crate::plan`].

use crate::cc::{self, PROGRAM_HEADER, TEMP_DIR};
use crate::plan::{self, Step};

wit_bindgen::generate!({ path: "../../wit", world: "command-only-plugin" });

use exports::runbox::plugin::command::Guest as CommandGuest;
use exports::runbox::plugin::runtime::{File, Guest, Info, RunRequest};
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
        let build = plan::build(&config::settings(), &request.args)?;
        guest_io::write_files(&request.files)?;
        guest_io::write_file(&build.source, request.code.as_bytes())
            .map_err(|e| format!("cannot write the program to `{}`: {e}", build.source))?;
        // A failed compile or link is the run's result: its diagnostics are on stderr.
        // Both run on the build budget, not on the program's time.
        for step in std::iter::once(build.compile).chain(build.link) {
            let code = guest_io::spawn_build(command(step, None))?;
            if code != 0 {
                return Ok(code);
            }
        }
        guest_io::spawn(command(build.run, request.stdin))
    }
}

/// `cc`/`c++` in the shell: compile, link, and the program into its file with its header.
impl CommandGuest for Adapter {
    fn run_command(invocation: CommandLine) -> Result<i32, String> {
        let name = &invocation.name;
        let plan = match cc::plan(&config::settings(), name, &invocation.args, &invocation.cwd) {
            Ok(plan) => plan,
            Err(usage) => {
                eprintln!("{usage}");
                return Ok(2);
            }
        };
        let _ = std::fs::create_dir_all(TEMP_DIR);
        let code = build(plan);
        let _ = std::fs::remove_dir_all(TEMP_DIR);
        code
    }
}

fn build(plan: cc::CcPlan) -> Result<i32, String> {
    for step in plan.compiles {
        let code = guest_io::spawn_build(command(step, None))?;
        if code != 0 {
            return Ok(code);
        }
    }
    let Some(link) = plan.link else {
        return Ok(0);
    };
    let code = guest_io::spawn_build(command(link.step, None))?;
    if code != 0 {
        return Ok(code);
    }
    let module = std::fs::read(&link.linked)
        .map_err(|e| format!("cannot read what the linker wrote: {e}"))?;
    let mut program = Vec::with_capacity(PROGRAM_HEADER.len() + module.len());
    program.extend_from_slice(PROGRAM_HEADER);
    program.extend_from_slice(&module);
    guest_io::write_file(&link.output, &program)
        .map_err(|e| format!("cannot write `{}`: {e}", link.output))?;
    Ok(0)
}

/// The host's command for one step.
fn command(step: Step, stdin: Option<Vec<u8>>) -> process::Command {
    process::Command {
        program: step.program,
        args: step.args,
        env: step.env,
        stdin,
    }
}
