//! The operator's `--tools-config` file: which upstream MCP servers runbox connects to,
//! how, and which of their tools programs may call (docs/tools.md has the format).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Deserialize;

/// Why a tools config cannot be used (runbox does not start with it).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the tools config {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the tools config {path} is not valid: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// Every upstream server, in the file's order.
#[derive(Debug, Clone, Default)]
pub struct ToolsConfig {
    pub servers: Vec<ServerConfig>,
}

/// One upstream server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// What programs call it by.
    pub name: String,
    pub transport: TransportConfig,
    pub allow: Allow,
}

/// How runbox reaches a server. Values may hold `${VAR}`, read from runbox's own
/// environment when the server is started (never shown to programs).
#[derive(Debug, Clone)]
pub enum TransportConfig {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// The child's whole environment (plus `PATH` and `HOME` from runbox's, so
        /// that `npx` and the like work).
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    },
    /// The streamable-HTTP transport at `url`.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// Which tools of a server programs may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allow {
    All,
    Only(BTreeSet<String>),
}

impl Allow {
    pub fn allows(&self, tool: &str) -> bool {
        match self {
            Allow::All => true,
            Allow::Only(names) => names.contains(tool),
        }
    }

    /// The list as an error message shows it.
    pub fn describe(&self) -> String {
        match self {
            Allow::All => "every tool (\"*\")".into(),
            Allow::Only(names) if names.is_empty() => {
                "no tool (the config's `allow` is empty)".into()
            }
            Allow::Only(names) => names.iter().cloned().collect::<Vec<_>>().join(", "),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    servers: IndexMap<String, FileServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: IndexMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: IndexMap<String, String>,
    #[serde(default)]
    allow: FileAllow,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum FileAllow {
    Star(String),
    List(Vec<String>),
}

impl Default for FileAllow {
    fn default() -> Self {
        FileAllow::List(Vec::new())
    }
}

impl ToolsConfig {
    pub fn load(path: &Path) -> Result<ToolsConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_owned(),
            error,
        })?;
        ToolsConfig::parse(&text, path.parent().unwrap_or(Path::new("."))).map_err(|message| {
            ConfigError::Invalid {
                path: path.to_owned(),
                message,
            }
        })
    }

    /// Parses a config's text; a relative `cwd` is taken from `base`.
    pub fn parse(text: &str, base: &Path) -> Result<ToolsConfig, String> {
        let file: FileConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut servers = Vec::new();
        for (name, entry) in file.servers {
            servers.push(server(name, entry, base)?);
        }
        Ok(ToolsConfig { servers })
    }
}

/// A server's name is part of a program's source (`tools.NAME`, `tool NAME …`).
fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if first_ok && rest_ok && name.len() <= 32 {
        Ok(())
    } else {
        Err(format!(
            "server name `{name}`: use a lowercase letter, then up to 31 lowercase letters, digits or `_`"
        ))
    }
}

fn server(name: String, entry: FileServer, base: &Path) -> Result<ServerConfig, String> {
    check_name(&name)?;
    let transport = match (entry.command, entry.url) {
        (Some(command), None) => {
            if !entry.headers.is_empty() {
                return Err(format!("[servers.{name}]: `headers` are for a `url` server"));
            }
            TransportConfig::Stdio {
                command,
                args: entry.args,
                env: entry.env.into_iter().collect(),
                cwd: entry.cwd.map(|c| base.join(c)),
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("[servers.{name}]: `url` must be an http:// or https:// URL"));
            }
            if !entry.args.is_empty() || !entry.env.is_empty() || entry.cwd.is_some() {
                return Err(format!(
                    "[servers.{name}]: `args`, `env` and `cwd` are for a `command` server"
                ));
            }
            TransportConfig::Http {
                url,
                headers: entry.headers.into_iter().collect(),
            }
        }
        _ => {
            return Err(format!(
                "[servers.{name}]: give exactly one of `command` (a stdio server) or `url` (streamable HTTP)"
            ))
        }
    };
    let allow = match entry.allow {
        FileAllow::Star(s) if s == "*" => Allow::All,
        FileAllow::Star(s) => {
            return Err(format!(
                "[servers.{name}]: `allow` is \"*\" or a list of tool names, not \"{s}\""
            ))
        }
        FileAllow::List(list) => {
            if list.iter().any(|t| t == "*") {
                Allow::All
            } else {
                Allow::Only(list.into_iter().collect())
            }
        }
    };
    Ok(ServerConfig {
        name,
        transport,
        allow,
    })
}

/// `value` with each `${VAR}` replaced by runbox's environment variable VAR.
pub fn expand_env(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("an unclosed `${{` in `{value}`"))?;
        let var = &after[..end];
        let found =
            std::env::var(var).map_err(|_| format!("the environment variable {var} is not set"))?;
        out.push_str(&found);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_with_both_kinds_of_server() {
        let c = ToolsConfig::parse(
            r#"
            [servers.everything]
            command = "npx"
            args = ["-y", "server"]
            env = { A = "1" }
            cwd = "srv"
            allow = ["echo", "add"]

            [servers.web]
            url = "http://127.0.0.1:9/mcp"
            headers = { Authorization = "Bearer ${TOKEN}" }
            allow = "*"

            [servers.none]
            command = "x"
            "#,
            Path::new("/etc/runbox"),
        )
        .unwrap();
        assert_eq!(c.servers.len(), 3);
        assert!(c.servers[0].allow.allows("echo") && !c.servers[0].allow.allows("rm"));
        match &c.servers[0].transport {
            TransportConfig::Stdio { cwd, env, .. } => {
                assert_eq!(cwd.as_deref(), Some(Path::new("/etc/runbox/srv")));
                assert_eq!(env, &[("A".to_string(), "1".to_string())]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.servers[1].allow, Allow::All);
        assert_eq!(
            c.servers[2].allow,
            Allow::Only(Default::default()),
            "none by default"
        );
    }

    #[test]
    fn bad_configs_say_what_is_wrong() {
        let bad = |text: &str, says: &str| {
            let e = ToolsConfig::parse(text, Path::new(".")).unwrap_err();
            assert!(e.contains(says), "{e}");
        };
        bad("[servers.Bad]\ncommand = \"x\"", "server name `Bad`");
        bad("[servers.a]\nallow = []", "exactly one of `command`");
        bad(
            "[servers.a]\ncommand = \"x\"\nurl = \"http://h\"",
            "exactly one",
        );
        bad("[servers.a]\nurl = \"ftp://h\"", "http://");
        bad(
            "[servers.a]\ncommand = \"x\"\nallow = \"all\"",
            "\"*\" or a list",
        );
        bad(
            "[servers.a]\ncommand = \"x\"\nheaders = { A = \"b\" }",
            "`headers` are for",
        );
        bad(
            "[servers.a]\ncommand = \"x\"\nallowed = []",
            "unknown field",
        );
    }

    #[test]
    fn environment_variables_are_expanded() {
        std::env::set_var("RUNBOX_TEST_EXPAND", "secret");
        assert_eq!(
            expand_env("Bearer ${RUNBOX_TEST_EXPAND}!").unwrap(),
            "Bearer secret!"
        );
        assert!(expand_env("${RUNBOX_TEST_NOT_SET_ANYWHERE}")
            .unwrap_err()
            .contains("RUNBOX_TEST_NOT_SET_ANYWHERE is not set"));
        assert!(expand_env("${OPEN").is_err());
    }
}
