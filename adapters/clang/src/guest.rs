//! The component's side of `runbox:plugin`: reads the settings, writes the source, and
//! spawns the compiler, the linker and the program. The logic is in [`crate::plan`].

use crate::plan::{self, Step};

wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

use exports::runbox::plugin::runtime::{File, Guest, Info, RunRequest};
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

/// The host's command for one step.
fn command(step: Step, stdin: Option<Vec<u8>>) -> process::Command {
    process::Command {
        program: step.program,
        args: step.args,
        env: step.env,
        stdin,
    }
}
