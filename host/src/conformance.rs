//! The WIT-level conformance suite `runbox plugins test` runs against any plugin, through
//! its `runtime` (and `session`) exports, not through MCP. It checks the guarantees a
//! user relies on, with the samples the plugins.toml entry declares (docs/plugins.md,
//! "The conformance suite"): `describe` agrees with the entry; hello, stdin, exit-code
//! and uncaught-error give their declared results; a busy loop ends at the deadline; an
//! allocation is stopped by the memory cap; a file probe cannot read a host canary; no
//! state survives between runs (and, for a runtime that keeps session state, state does
//! survive inside a session and not across sessions); a flood is cut at the output cap.
//! A missing required sample fails its check.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::service::LimitOverrides;
use crate::service::{PluginSpec, SampleSpec};
use crate::service::{RunOutcome, RunStatus};
use crate::service::{RunRequest, Runbox};

/// The required samples that check an output: what a program prints, reads and exits
/// with.
pub const OUTPUT_SAMPLES: [&str; 4] = ["hello", "stdin", "exit-code", "uncaught-error"];

/// The required samples that check a guarantee rather than an output: they run into a
/// limit, or only mean something in pairs.
pub const GUARANTEE_SAMPLES: [&str; 6] = [
    "busy-loop",
    "allocation",
    "file-probe",
    "state-set",
    "state-get",
    "flood",
];

/// Whether every entry must declare the sample `name` (an output or a guarantee one).
pub fn is_required(name: &str) -> bool {
    OUTPUT_SAMPLES.contains(&name) || GUARANTEE_SAMPLES.contains(&name)
}

/// The busy loop's deadline (a compiled language compiles first, on its own budget).
const BUSY_LOOP_DEADLINE: Duration = Duration::from_secs(5);
/// What the file probe's code says instead of the canary's path.
pub const CANARY_PLACEHOLDER: &str = "{canary}";

/// One check of one plugin.
#[derive(Debug, Clone)]
pub struct Check {
    pub plugin: String,
    pub name: String,
    /// `None` when it passed; what was wrong otherwise.
    pub failure: Option<String>,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

/// Runs the suite against one loaded plugin.
pub async fn check_plugin(runbox: &Runbox, spec: &PluginSpec) -> Vec<Check> {
    let suite = Suite { runbox, spec };
    let loaded = runbox.preparation_failure(&spec.name);
    let failed_to_load = loaded.is_some();
    let mut checks = vec![suite.check("loads", loaded)];
    if failed_to_load {
        return checks;
    }
    checks.push(suite.check("describe", suite.describe().await));
    let sample = |name: &str| spec.samples.iter().find(|s| s.name == name);
    let missing = |name: &str| {
        Some(format!(
            "the entry has no sample named `{name}` ([[plugins.{}.samples]]); see docs/plugins.md",
            spec.name
        ))
    };
    for (check, sample_name) in [
        ("hello", "hello"),
        ("stdin", "stdin"),
        ("exit code", "exit-code"),
        ("uncaught error", "uncaught-error"),
    ] {
        let failure = match sample(sample_name) {
            Some(s) => suite.declared(s).await,
            None => missing(sample_name),
        };
        checks.push(suite.check(check, failure));
    }
    let failure = match sample("busy-loop") {
        Some(s) => suite.busy_loop(s).await,
        None => missing("busy-loop"),
    };
    checks.push(suite.check("busy loop ends at the deadline", failure));
    let failure = match sample("allocation") {
        Some(s) => suite.allocation(s).await,
        None => missing("allocation"),
    };
    checks.push(suite.check("allocation stopped by the memory cap", failure));
    let failure = match sample("file-probe") {
        Some(s) => suite.file_probe(s).await,
        None => missing("file-probe"),
    };
    checks.push(suite.check("host files unreadable", failure));
    let (set, get) = (sample("state-set"), sample("state-get"));
    let failure = match (set, get) {
        (Some(set), Some(get)) => suite.no_state_between_runs(set, get).await,
        (None, _) => missing("state-set"),
        (_, None) => missing("state-get"),
    };
    checks.push(suite.check("no state between runs", failure));
    if spec.session_state {
        let failure = match (set, get) {
            (Some(set), Some(get)) => suite.state_in_sessions(set, get).await,
            (None, _) => missing("state-set"),
            (_, None) => missing("state-get"),
        };
        checks.push(suite.check("state kept in a session, not across", failure));
    }
    let failure = match sample("flood") {
        Some(s) => suite.flood(s).await,
        None => missing("flood"),
    };
    checks.push(suite.check("output cut at the cap", failure));
    for other in spec.samples.iter().filter(|s| !is_required(&s.name)) {
        checks.push(suite.check(
            &format!("sample `{}`", other.name),
            suite.declared(other).await,
        ));
    }
    checks
}

struct Suite<'a> {
    runbox: &'a Runbox,
    spec: &'a PluginSpec,
}

impl Suite<'_> {
    fn check(&self, name: &str, failure: Option<String>) -> Check {
        Check {
            plugin: self.spec.name.clone(),
            name: name.to_string(),
            failure,
        }
    }

    async fn run(
        &self,
        code: &str,
        stdin: Option<&str>,
        timeout: Option<Duration>,
        session: Option<&str>,
    ) -> Result<RunOutcome, String> {
        let request = RunRequest {
            runtime: self.spec.name.clone(),
            code: code.to_string(),
            stdin: stdin.map(|s| s.as_bytes().to_vec()),
            limits: LimitOverrides {
                timeout: Some(timeout.unwrap_or(Duration::from_secs(60))),
                memory_bytes: None,
                max_timeout: None,
            },
            session_id: session.map(str::to_string),
            ..RunRequest::default()
        };
        self.runbox
            .run(request, CancellationToken::new())
            .await
            .map_err(|e| e.to_string())
    }

    async fn describe(&self) -> Option<String> {
        let info = match self.runbox.describe(&self.spec.name).await {
            Ok(info) => info,
            Err(e) => return Some(e.to_string()),
        };
        let spec = self.spec;
        let mut problems: Vec<String> = [
            ("name", &info.name, &spec.name),
            ("language", &info.language, &spec.language),
            ("version", &info.version, &spec.version),
            ("extension", &info.extension, &spec.extension),
        ]
        .into_iter()
        .filter(|(_, got, want)| got != want)
        .map(|(field, got, want)| {
            format!("{field}: the plugin says {got:?}, plugins.toml says {want:?}")
        })
        .collect();
        if info.session_state != spec.session_state {
            problems.push(format!(
                "session-state: the plugin says {}, plugins.toml says {}",
                info.session_state, spec.session_state
            ));
        }
        (!problems.is_empty()).then(|| problems.join("; "))
    }

    /// A sample's declared results, and what its kind requires it to declare.
    async fn declared(&self, sample: &SampleSpec) -> Option<String> {
        let shape = match sample.name.as_str() {
            "hello" if sample.stdout.is_none() || sample.exit_code != 0 => {
                Some("`hello` must declare its stdout and exit 0")
            }
            "stdin" if sample.stdin.is_none() || sample.stdout.is_none() => {
                Some("`stdin` must declare its stdin and the stdout it makes of it")
            }
            "exit-code" if sample.exit_code == 0 => {
                Some("`exit-code` must declare a non-zero exit code")
            }
            "uncaught-error" if sample.exit_code == 0 || sample.stderr_contains.is_none() => {
                Some("`uncaught-error` must declare a non-zero exit code and stderr-contains")
            }
            _ => None,
        };
        if let Some(shape) = shape {
            return Some(shape.to_string());
        }
        match self
            .run(&sample.code, sample.stdin.as_deref(), None, None)
            .await
        {
            Ok(outcome) => sample_failure(sample, &outcome),
            Err(e) => Some(e),
        }
    }

    async fn busy_loop(&self, sample: &SampleSpec) -> Option<String> {
        let out = match self
            .run(&sample.code, None, Some(BUSY_LOOP_DEADLINE), None)
            .await
        {
            Ok(out) => out,
            Err(e) => return Some(e),
        };
        if out.status != RunStatus::Timeout {
            return Some(format!(
                "it ended {} instead of running into the {} s deadline",
                describe_end(&out),
                BUSY_LOOP_DEADLINE.as_secs()
            ));
        }
        // The deadline is the program's: compiling it (its own budget) comes first.
        let ran = out.duration.saturating_sub(out.build_time);
        let late = BUSY_LOOP_DEADLINE + Duration::from_secs(1);
        (ran < BUSY_LOOP_DEADLINE || ran > late).then(|| {
            format!(
                "timed out after {:.2} s (besides {:.2} s of compiling), not within a second \
                 of the {} s deadline",
                ran.as_secs_f64(),
                out.build_time.as_secs_f64(),
                BUSY_LOOP_DEADLINE.as_secs()
            )
        })
    }

    async fn allocation(&self, sample: &SampleSpec) -> Option<String> {
        let out = match self.run(&sample.code, None, None, None).await {
            Ok(out) => out,
            Err(e) => return Some(e),
        };
        if !out.memory_refused {
            return Some(format!(
                "the memory cap never refused it: it ended {}; the sample must allocate past \
                 the cap",
                describe_end(&out)
            ));
        }
        (out.status == RunStatus::Timeout).then(|| {
            "the memory cap refused it, but it then ran into the deadline instead of ending"
                .to_string()
        })
    }

    async fn file_probe(&self, sample: &SampleSpec) -> Option<String> {
        if !sample.code.contains(CANARY_PLACEHOLDER) {
            return Some(format!(
                "the `file-probe` sample must try to read `{CANARY_PLACEHOLDER}` (the host path \
                 of a canary file)"
            ));
        }
        let dir = match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(e) => return Some(format!("cannot make the canary: {e}")),
        };
        let secret = format!("canary-{}", std::process::id() as u64 * 7919 + 17);
        let canary = dir.path().join("canary.txt");
        if let Err(e) = std::fs::write(&canary, &secret) {
            return Some(format!("cannot make the canary: {e}"));
        }
        let code = sample
            .code
            .replace(CANARY_PLACEHOLDER, &canary.display().to_string());
        let out = match self.run(&code, None, None, None).await {
            Ok(out) => out,
            Err(e) => return Some(e),
        };
        let seen = [
            out.stdout().into_owned(),
            out.stderr().into_owned(),
            out.tty(),
        ]
        .iter()
        .any(|s| s.contains(&secret));
        seen.then(|| "the program read the host canary file".to_string())
    }

    async fn no_state_between_runs(&self, set: &SampleSpec, get: &SampleSpec) -> Option<String> {
        let Some(kept) = &get.stdout else {
            return Some(
                "`state-get` must declare the stdout it prints when the state is there".into(),
            );
        };
        if let Err(e) = self.expect_completed(set, None).await {
            return Some(e);
        }
        match self.run(&get.code, None, None, None).await {
            Ok(out) if out.stdout() == kept.as_str() => {
                Some("a second run saw what the first one left".to_string())
            }
            Ok(_) => None,
            Err(e) => Some(e),
        }
    }

    async fn state_in_sessions(&self, set: &SampleSpec, get: &SampleSpec) -> Option<String> {
        let kept = get.stdout.as_deref().unwrap_or_default();
        let first = match self.runbox.create_session(&self.spec.name).await {
            Ok(s) => s.session_id,
            Err(e) => return Some(e.to_string()),
        };
        let other = match self.runbox.create_session(&self.spec.name).await {
            Ok(s) => s.session_id,
            Err(e) => return Some(e.to_string()),
        };
        let failure = async {
            self.expect_completed(set, Some(&first)).await?;
            let got = self.run(&get.code, None, None, Some(&first)).await?;
            if got.stdout() != kept {
                return Err(format!(
                    "inside a session, `state-get` printed {:?}, not {kept:?}",
                    got.stdout()
                ));
            }
            let other = self.run(&get.code, None, None, Some(&other)).await?;
            if other.stdout() == kept {
                return Err("another session saw the first one's state".into());
            }
            Ok(())
        }
        .await
        .err();
        let _ = self.runbox.close_session(&first);
        let _ = self.runbox.close_session(&other);
        failure
    }

    async fn expect_completed(
        &self,
        sample: &SampleSpec,
        session: Option<&str>,
    ) -> Result<(), String> {
        let out = self.run(&sample.code, None, None, session).await?;
        if out.status != RunStatus::Completed || out.exit_code != Some(0) {
            return Err(format!("`{}` ended {}", sample.name, describe_end(&out)));
        }
        Ok(())
    }

    async fn flood(&self, sample: &SampleSpec) -> Option<String> {
        let out = match self.run(&sample.code, None, None, None).await {
            Ok(out) => out,
            Err(e) => return Some(e),
        };
        (out.status != RunStatus::Terminated || !out.truncated).then(|| {
            format!(
                "it ended {} (truncated: {}) instead of being stopped at the output cap",
                describe_end(&out),
                out.truncated
            )
        })
    }
}

/// How a run ended, in a few words.
fn describe_end(out: &RunOutcome) -> String {
    match (out.status, out.exit_code, &out.error) {
        (RunStatus::Completed, Some(code), _) => format!("completed with exit code {code}"),
        (status, _, Some(error)) => format!("{} ({error})", status.as_str()),
        (status, _, None) => status.as_str().to_string(),
    }
}

/// What differs between a sample's expectations and its outcome, if anything.
pub fn sample_failure(sample: &SampleSpec, out: &RunOutcome) -> Option<String> {
    let mut problems = Vec::new();
    if out.status != RunStatus::Completed {
        problems.push(format!(
            "status {} ({})",
            out.status.as_str(),
            out.error.as_deref().unwrap_or("no error")
        ));
    } else if out.exit_code != Some(sample.exit_code) {
        problems.push(format!(
            "exit code {:?}, expected {}",
            out.exit_code, sample.exit_code
        ));
    }
    if let Some(want) = &sample.stdout {
        if out.stdout() != want.as_str() {
            problems.push(format!("stdout {:?}, expected {want:?}", out.stdout()));
        }
    }
    if let Some(needle) = &sample.stderr_contains {
        if !out.stderr().contains(needle.as_str()) {
            problems.push(format!("stderr {:?} lacks {needle:?}", out.stderr()));
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: RunStatus, code: Option<i32>, stdout: &str, stderr: &str) -> RunOutcome {
        RunOutcome {
            status,
            exit_code: code,
            output: crate::service::CapturedOutput {
                stdout: stdout.into(),
                stderr: stderr.into(),
                ..Default::default()
            },
            ..RunOutcome::default()
        }
    }

    fn sample() -> SampleSpec {
        SampleSpec {
            name: "s".into(),
            code: String::new(),
            stdin: None,
            stdout: Some("hi\n".into()),
            stderr_contains: Some("warn".into()),
            exit_code: 0,
        }
    }

    #[test]
    fn matching_outcome_passes() {
        let out = outcome(RunStatus::Completed, Some(0), "hi\n", "a warning");
        assert_eq!(sample_failure(&sample(), &out), None);
    }

    #[test]
    fn every_difference_is_reported() {
        let out = outcome(RunStatus::Completed, Some(2), "ho\n", "");
        let failure = sample_failure(&sample(), &out).unwrap();
        assert!(failure.contains("exit code"), "{failure}");
        assert!(failure.contains("stdout"), "{failure}");
        assert!(failure.contains("stderr"), "{failure}");
        let out = outcome(RunStatus::Timeout, None, "hi\n", "warn");
        assert!(sample_failure(&sample(), &out).unwrap().contains("timeout"));
    }
}
