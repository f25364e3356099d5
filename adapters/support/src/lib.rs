//! What runbox's built-in adapters share, as an ordinary library (tested natively): the
//! settings as `runbox:plugin/config` hands them over and the helpers that read them,
//! paths kept inside the scratch directory, writing files there, the fields `describe`
//! answers with, and [`guest_glue!`], the few functions over each adapter's own
//! `runbox:plugin` bindings (each adapter generates them for its own world).

use std::fs;
use std::io::Write;
use std::path::Path;

pub mod device;
pub mod tools;

/// The plugin's settings as `runbox:plugin/config` hands them over: every value a list.
pub type Settings = [(String, Vec<String>)];

/// All values of the setting `key`, if it is set.
pub fn values<'a>(settings: &'a Settings, key: &str) -> Option<&'a [String]> {
    settings
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_slice())
}

/// Checks that `path` stays inside the scratch directory and returns it normalized
/// (`/`-separated, without empty or `.` components), still relative.
pub fn scratch_path(path: &str) -> Result<String, String> {
    if path.starts_with('/') {
        return Err(format!(
            "`{path}` is absolute; give a path relative to the scratch directory"
        ));
    }
    if path.ends_with('/') {
        return Err(format!("`{path}` names a directory, not a file"));
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if parts.contains(&"..") {
        return Err(format!(
            "`{path}` contains `..`; paths must stay inside the scratch directory"
        ));
    }
    if parts.is_empty() {
        return Err(format!("`{path}` does not name a file"));
    }
    Ok(parts.join("/"))
}

/// Replaces each `{KEY}` in `item` for which `lookup` has a value, in one pass (values
/// are not expanded again). Unknown placeholders and lone braces stay as written.
pub fn substitute<'a>(item: &str, lookup: impl Fn(&str) -> Option<&'a str>) -> String {
    let mut out = String::with_capacity(item.len());
    let mut rest = item;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            // No closing brace anywhere: the rest is plain text.
            rest = &rest[open..];
            break;
        };
        let key = &after[..close];
        if key.contains('{') {
            // `{{KEY}`: this brace is plain text; the next one may open a placeholder.
            out.push('{');
            rest = after;
            continue;
        }
        match lookup(key) {
            Some(value) => out.push_str(value),
            None => out.push_str(&rest[open..open + close + 2]),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Parses the `env` setting's `KEY=VALUE` items (the value may contain `=`).
pub fn parse_env(items: &[String]) -> Result<Vec<(String, String)>, String> {
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
            _ => Err(format!(
                "setting `env`: `{item}` is not of the form KEY=VALUE"
            )),
        })
        .collect()
}

/// Writes `contents` to the absolute sandbox path `path`, creating its parent directories.
pub fn write_file(path: &str, contents: &[u8]) -> std::io::Result<()> {
    match Path::new(path).parent() {
        Some(parent) if parent != Path::new("/") => fs::create_dir_all(parent)?,
        _ => {}
    }
    fs::write(path, contents)
}

/// Writes a request's extra files (path relative to scratch, contents) into the scratch
/// directory.
pub fn write_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Result<(), String> {
    for (path, contents) in files {
        let relative = scratch_path(path).map_err(|e| format!("file `{path}`: {e}"))?;
        write_file(&format!("/{relative}"), contents)
            .map_err(|e| format!("cannot write file `{path}`: {e}"))?;
    }
    Ok(())
}

/// What `describe()` answers, from the settings the host fills in from the plugins.toml
/// entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    pub name: String,
    pub language: String,
    pub version: String,
    pub extension: String,
    pub session_state: bool,
}

impl Description {
    pub fn from_settings(settings: &Settings) -> Description {
        // The host always sets these; an empty string would only show a host bug.
        let field = |key: &str| {
            values(settings, key)
                .and_then(|v| v.first().cloned())
                .unwrap_or_default()
        };
        Description {
            name: field("name"),
            language: field("language"),
            version: field("version"),
            extension: field("extension"),
            session_state: field("session-state") == "true",
        }
    }
}

/// Why the host could not start `program`, for the user.
pub fn not_found(program: &str, detail: &str) -> String {
    format!(
        "cannot start `{program}`: no such tool is declared for this runtime, or the file is missing ({detail})"
    )
}

/// Why `program` is not something the host can run, for the user.
pub fn not_runnable(program: &str, detail: &str) -> String {
    format!("cannot start `{program}`: not a runnable WebAssembly program ({detail})")
}

/// Writes all of `bytes` at `offset`. In WebAssembly through `pwrite`: wasi-libc's
/// `write` goes through a stream, where every failure reads as EIO, while `pwrite` writes
/// through the file's descriptor and keeps the error's code (ENOSPC when the scratch
/// directory is full).
pub fn write_all_at(
    file: &std::fs::File,
    mut bytes: &[u8],
    mut offset: u64,
) -> std::io::Result<()> {
    while !bytes.is_empty() {
        // A MiB at a time: one host call may move only so much (its hostcall fuel).
        let written = pwrite(file, &bytes[..bytes.len().min(1 << 20)], offset)?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        bytes = &bytes[written..];
        offset += written as u64;
    }
    Ok(())
}

#[cfg(target_arch = "wasm32")]
fn pwrite(file: &std::fs::File, bytes: &[u8], offset: u64) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let offset = i64::try_from(offset).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    // SAFETY: the pointer and length are those of `bytes`, alive for the call.
    let n = unsafe { libc::pwrite(file.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), offset) };
    usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
}

#[cfg(not(target_arch = "wasm32"))]
fn pwrite(file: &std::fs::File, bytes: &[u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::write_at(file, bytes, offset)
}

/// Writes `bytes` to standard output at once (flushed), so that the host sees stdout and
/// stderr in the order they were written. A closed stream (the host stopped reading) is
/// not the program's error.
pub fn write_stdout(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

/// [`write_stdout`] for standard error.
pub fn write_stderr(bytes: &[u8]) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(bytes).and_then(|()| err.flush());
}

/// Takes now what an instance holds between calls (the filesystem's preopens, the
/// standard streams), which would otherwise be taken at first use: every session must
/// hold the same from its start for a copy of one to be written into another.
pub fn take_what_a_session_holds() {
    use std::os::fd::FromRawFd;
    let _ = std::fs::metadata("/");
    // An empty write on each output descriptor itself (std's buffered handles would
    // skip it): the C library takes its stream at the first write, not before.
    for fd in [1, 2] {
        // SAFETY: descriptors 1 and 2 are open for the instance's life; the file is
        // never dropped, so never closed.
        let file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        let _ = (&*file).write(&[]);
    }
}

/// What a native component's session keeps: one interpreter for all its calls, made when
/// the session is, so the first call does not wait for it (a failure to make it shows at
/// each call).
///
/// `run_once` (an ordinary run the host prepared a session for ahead of time) uses the
/// interpreter still fresh, and uses it up; after `run` it makes a new one for itself.
pub struct KeptInterpreter<I> {
    slot: std::cell::RefCell<Result<I, String>>,
    /// Whether `run` has put programs into the interpreter.
    used: std::cell::Cell<bool>,
    make: fn() -> Result<I, String>,
}

impl<I> KeptInterpreter<I> {
    pub fn new(make: fn() -> Result<I, String>) -> Self {
        take_what_a_session_holds();
        KeptInterpreter {
            slot: std::cell::RefCell::new(make()),
            used: std::cell::Cell::new(false),
            make,
        }
    }

    /// `call` on a fresh interpreter: the kept one if nothing ran in it, which it uses up.
    pub fn run_once<R>(&self, call: impl FnOnce(&mut I) -> Result<R, String>) -> Result<R, String> {
        if self.used.get() {
            // The kept one has programs in it: a new one, and the kept one stays.
            return call(&mut (self.make)()?);
        }
        let fresh = std::mem::replace(
            &mut *self.slot.borrow_mut(),
            Err("this session's interpreter was used up by `run-once`".into()),
        );
        let mut interpreter = match fresh {
            Ok(interpreter) => interpreter,
            Err(_) => (self.make)()?,
        };
        call(&mut interpreter)
    }

    /// `call` on the kept interpreter, after the programs before it.
    pub fn run<R>(&self, call: impl FnOnce(&mut I) -> Result<R, String>) -> Result<R, String> {
        self.used.set(true);
        let mut slot = self.slot.borrow_mut();
        let interpreter = slot.as_mut().map_err(|e| e.clone())?;
        call(interpreter)
    }
}

/// The functions every adapter's glue needs over its own bindings: invoked in a module
/// where `config`, `process`, `File` and `Info` (of the adapter's `runbox:plugin`
/// bindings) are in scope, it defines `describe_from_settings()`, `write_files(files)`,
/// `write_file(path, contents)`, `spawn(command)`, `spawn_build(command)` and
/// `spawn_error(program, error)` there.
#[macro_export]
macro_rules! guest_glue {
    () => {
        /// `describe()` from the settings the host fills in from the plugins.toml entry.
        pub fn describe_from_settings() -> Info {
            let d = $crate::Description::from_settings(&config::settings());
            Info {
                name: d.name,
                language: d.language,
                version: d.version,
                extension: d.extension,
                session_state: d.session_state,
            }
        }

        /// Runs `command` to completion through the host and returns its exit code.
        pub fn spawn(command: process::Command) -> Result<i32, String> {
            process::spawn(&command).map_err(|e| spawn_error(&command.program, e))
        }

        /// Runs a build step (a compiler, a linker) to completion through the host, on
        /// the run's build budget rather than the program's time limit.
        #[allow(dead_code)]
        pub fn spawn_build(command: process::Command) -> Result<i32, String> {
            process::spawn_build(&command).map_err(|e| spawn_error(&command.program, e))
        }

        /// Writes the request's extra files into the scratch directory.
        pub fn write_files(files: &[File]) -> Result<(), String> {
            $crate::write_files(
                files
                    .iter()
                    .map(|f| (f.path.as_str(), f.contents.as_slice())),
            )
        }

        pub use $crate::write_file;

        /// Why `program` could not be started, for the user.
        pub fn spawn_error(program: &str, e: process::SpawnError) -> String {
            match e {
                process::SpawnError::NotFound(detail) => $crate::not_found(program, &detail),
                process::SpawnError::InvalidProgram(detail) => {
                    $crate::not_runnable(program, &detail)
                }
            }
        }
    };
}

/// The exports of a native component (an interpreter compiled into the component, one
/// per run, kept by a session): invoked where `Adapter`, `Guest`, `SessionGuest`,
/// `GuestSession`, `RunRequest`, `Info` and `guest_io` (the [`guest_glue!`] module) are in
/// scope, with the interpreter's type, the function that makes one and the function that
/// runs a request in one. Defines `Session` and implements both interfaces.
#[macro_export]
macro_rules! native_component {
    ($interpreter:ty, $make:path, $run:path) => {
        impl Guest for Adapter {
            fn describe() -> Info {
                guest_io::describe_from_settings()
            }

            fn run(request: RunRequest) -> Result<i32, String> {
                $run(&mut $make()?, &request)
            }
        }

        impl SessionGuest for Adapter {
            type Session = Session;
        }

        /// A session: one interpreter for all its calls, so what a call defines carries
        /// over to the next.
        pub struct Session($crate::KeptInterpreter<$interpreter>);

        impl GuestSession for Session {
            fn new() -> Self {
                Session($crate::KeptInterpreter::new($make))
            }

            fn run_once(&self, request: RunRequest) -> Result<i32, String> {
                self.0.run_once(|interpreter| $run(interpreter, &request))
            }

            fn run(&self, request: RunRequest) -> Result<i32, String> {
                self.0.run(|interpreter| $run(interpreter, &request))
            }
        }
    };
}

/// Building settings in tests (every adapter's).
pub mod test_support {
    pub fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    pub fn settings(pairs: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), strings(v)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::settings;
    use super::*;

    #[test]
    fn scratch_paths_stay_inside() {
        assert_eq!(scratch_path("a/./b").unwrap(), "a/b");
        for bad in ["/etc/passwd", "../x", "a/../../b", "dir/", "", "."] {
            assert!(scratch_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn settings_are_read_and_substituted() {
        let s = settings(&[("name", &["py"]), ("env", &["A=1", "B=x=y"])]);
        assert_eq!(values(&s, "name"), Some(&["py".to_string()][..]));
        assert_eq!(values(&s, "missing"), None);
        assert_eq!(
            parse_env(values(&s, "env").unwrap()).unwrap(),
            [("A".into(), "1".into()), ("B".into(), "x=y".into())]
        );
        assert!(parse_env(&["=1".to_string()]).is_err());
        let lookup = |k: &str| (k == "name").then_some("py");
        assert_eq!(substitute("{name}-{x}-{", lookup), "py-{x}-{");
        let d = Description::from_settings(&settings(&[
            ("name", &["py"]),
            ("session-state", &["true"]),
        ]));
        assert_eq!(
            (d.name.as_str(), d.session_state, d.version.as_str()),
            ("py", true, "")
        );
    }

    #[test]
    fn a_kept_interpreter_serves_run_once_fresh_and_run_in_order() {
        use super::KeptInterpreter;
        use std::sync::atomic::{AtomicUsize, Ordering};
        static MADE: AtomicUsize = AtomicUsize::new(0);
        fn make() -> Result<Vec<&'static str>, String> {
            MADE.fetch_add(1, Ordering::SeqCst);
            Ok(Vec::new())
        }
        let kept = KeptInterpreter::new(make);
        // The fresh interpreter made with the session serves `run-once` and is used up.
        assert_eq!(kept.run_once(|i| Ok(i.len())), Ok(0));
        assert_eq!(MADE.load(Ordering::SeqCst), 1);
        assert!(kept.run(|i| Ok(i.len())).unwrap_err().contains("used up"));

        let kept = KeptInterpreter::new(make);
        kept.run(|i| {
            i.push("a");
            Ok(())
        })
        .unwrap();
        assert_eq!(kept.run(|i| Ok(i.join(","))), Ok("a".to_string()));
        // After `run`, `run-once` gets a new interpreter and the kept one stays.
        assert_eq!(kept.run_once(|i| Ok(i.len())), Ok(0));
        assert_eq!(kept.run(|i| Ok(i.len())), Ok(1));
        assert_eq!(MADE.load(Ordering::SeqCst), 3);
    }
}
