//! The WIT-level conformance suite `runbox plugins test` runs against any plugin:
//! `describe` must agree with the plugins.toml entry, and every sample program must
//! give exactly its expected output and exit code.

use tokio_util::sync::CancellationToken;

use crate::manifest::{PluginSpec, SampleSpec};
use crate::outcome::{RunOutcome, RunStatus};
use crate::service::{RunRequest, Runbox};

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
    let check = |name: &str, failure: Option<String>| Check {
        plugin: spec.name.clone(),
        name: name.to_string(),
        failure,
    };
    let mut checks = vec![check("describe", describe_failure(runbox, spec).await)];
    if spec.samples.is_empty() {
        checks.push(check(
            "samples",
            Some("the entry has no [[plugins.NAME.samples]]; add at least a hello world".into()),
        ));
    }
    for sample in &spec.samples {
        let request = RunRequest {
            runtime: spec.name.clone(),
            code: sample.code.clone(),
            stdin: sample.stdin.as_ref().map(|s| s.as_bytes().to_vec()),
            ..RunRequest::default()
        };
        let failure = match runbox.run(request, CancellationToken::new()).await {
            Ok(outcome) => sample_failure(sample, &outcome),
            Err(e) => Some(e.to_string()),
        };
        checks.push(check(&format!("sample `{}`", sample.name), failure));
    }
    checks
}

async fn describe_failure(runbox: &Runbox, spec: &PluginSpec) -> Option<String> {
    let info = match runbox.describe(&spec.name).await {
        Ok(info) => info,
        Err(e) => return Some(e.to_string()),
    };
    let mismatches: Vec<String> = [
        ("name", &info.name, &spec.name),
        ("language", &info.language, &spec.language),
        ("version", &info.version, &spec.version),
        ("extension", &info.extension, &spec.extension),
    ]
    .into_iter()
    .filter(|(_, got, want)| got != want)
    .map(|(field, got, want)| format!("{field}: plugin says {got:?}, plugins.toml says {want:?}"))
    .collect();
    (!mismatches.is_empty()).then(|| mismatches.join("; "))
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
        if &out.stdout != want {
            problems.push(format!("stdout {:?}, expected {want:?}", out.stdout));
        }
    }
    if let Some(needle) = &sample.stderr_contains {
        if !out.stderr.contains(needle.as_str()) {
            problems.push(format!("stderr {:?} lacks {needle:?}", out.stderr));
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn outcome(status: RunStatus, code: Option<i32>, stdout: &str, stderr: &str) -> RunOutcome {
        RunOutcome {
            status,
            exit_code: code,
            stdout: stdout.into(),
            stderr: stderr.into(),
            tty: String::new(),
            error: None,
            truncated: false,
            duration: Duration::ZERO,
            raw: Default::default(),
            files: Vec::new(),
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
