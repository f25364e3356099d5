//! Who may talk to the HTTP transport: the bearer token and the browser origins.
//!
//! The MCP transport spec says a server MUST validate `Origin` (a web page the user
//! visits can otherwise drive a local server through DNS rebinding) and answer a foreign
//! one with 403. Requests without `Origin` (every non-browser client) are not affected.

use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONNECTION, WWW_AUTHENTICATE};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// The shortest token runbox accepts: 32 characters, which a random hex or base64
/// token of 128 bits or more has.
pub const MIN_TOKEN_CHARS: usize = 32;

/// Browser origins a loopback server accepts without being told: pages served from this
/// machine, on any port.
pub const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// What the HTTP transport checks on every request.
#[derive(Debug, Clone, Default)]
pub struct HttpAccess {
    /// The bearer token clients must send, already checked.
    pub token: Option<String>,
    /// Origins allowed beyond the loopback ones (`--allow-origin`).
    pub allow_origins: Vec<String>,
}

/// Why a token was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "the bearer token is {0} characters long; runbox needs at least {MIN_TOKEN_CHARS} \
         (for example the output of `head -c 32 /dev/urandom | base64`)"
    )]
    TooShort(usize),
    #[error("cannot read the token file {path}: {source}")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    #[error("the token file {0} is empty")]
    Empty(String),
    #[error(
        "the bearer token holds whitespace or control characters, which HTTP headers cannot carry"
    )]
    NotAHeaderValue,
}

/// A token given on the command line (or `RUNBOX_TOKEN`), checked.
pub fn checked_token(token: &str) -> Result<String, TokenError> {
    let chars = token.chars().count();
    if chars < MIN_TOKEN_CHARS {
        return Err(TokenError::TooShort(chars));
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(TokenError::NotAHeaderValue);
    }
    Ok(token.to_string())
}

/// The token in `path`: its contents without surrounding whitespace (a trailing newline
/// is what `echo` and editors leave), checked like a token on the command line.
pub fn token_from_file(path: &Path) -> Result<String, TokenError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| TokenError::Unreadable {
        path: shown.clone(),
        source,
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TokenError::Empty(shown));
    }
    checked_token(token)
}

/// The middleware state: the digest of the expected token.
#[derive(Clone)]
pub struct Bearer {
    expected: Arc<[u8; 32]>,
}

impl Bearer {
    pub fn new(token: &str) -> Self {
        Bearer {
            expected: Arc::new(digest(token.as_bytes())),
        }
    }

    /// Whether `presented` is the token, compared in constant time: both sides are
    /// hashed to the same length first, so neither the position of the first difference
    /// nor the token's length shows in the timing.
    pub fn accepts(&self, presented: &str) -> bool {
        use subtle::ConstantTimeEq;
        let presented = digest(presented.as_bytes());
        presented.ct_eq(&*self.expected).into()
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Answers 401 to every request without `Authorization: Bearer <the token>`.
pub async fn require_bearer(
    State(bearer): State<Bearer>,
    request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(bearer_token);
    match presented {
        Some(presented) if bearer.accepts(presented) => next.run(request).await,
        // As for a refused origin (see `origin::check`): the body is left unread.
        _ => (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, "Bearer"), (CONNECTION, "close")],
            "runbox: missing or wrong bearer token\n",
        )
            .into_response(),
    }
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is case-insensitive).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The origins the server accepts: the loopback ones when it listens on loopback, plus
/// what the operator allowed.
pub fn allowed_origins(loopback: bool, extra: &[String]) -> Vec<String> {
    let mut origins: Vec<String> = Vec::new();
    if loopback {
        origins.extend(LOOPBACK_ORIGINS.iter().map(|o| o.to_string()));
    }
    origins.extend(extra.iter().cloned());
    origins
}

/// Checks an `--allow-origin` value: `scheme://host[:port|:*]`, or `null`.
pub fn check_origin(origin: &str) -> Result<String, String> {
    let origin = origin.trim().trim_end_matches('/');
    if origin == "null" {
        return Ok(origin.into());
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return Err(format!(
            "`{origin}` is not an origin like https://app.example:443 or http://localhost:*"
        ));
    };
    if !matches!(scheme, "http" | "https") || rest.is_empty() || rest.contains('/') {
        return Err(format!(
            "`{origin}` is not an origin like https://app.example:443 or http://localhost:*"
        ));
    }
    Ok(origin.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_values() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer "), None);
    }

    #[test]
    fn the_token_is_compared_whole() {
        let bearer = Bearer::new("0123456789abcdef0123456789abcdef");
        assert!(bearer.accepts("0123456789abcdef0123456789abcdef"));
        assert!(!bearer.accepts("0123456789abcdef0123456789abcdeX"));
        assert!(!bearer.accepts("0123456789abcdef0123456789abcdef0"));
        assert!(!bearer.accepts(""));
    }

    #[test]
    fn short_tokens_are_refused() {
        assert!(matches!(
            checked_token("s3cret"),
            Err(TokenError::TooShort(6))
        ));
        assert!(checked_token(&"x".repeat(31)).is_err());
        assert!(checked_token(&"x".repeat(32)).is_ok());
        assert!(checked_token(&format!("{} x", "x".repeat(32))).is_err());
    }

    #[test]
    fn token_files() {
        let dir = std::env::temp_dir().join(format!("runbox-token-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, format!("{}\n", "t".repeat(40))).unwrap();
        assert_eq!(token_from_file(&file).unwrap(), "t".repeat(40));
        std::fs::write(&file, "\n").unwrap();
        assert!(matches!(token_from_file(&file), Err(TokenError::Empty(_))));
        std::fs::write(&file, "short\n").unwrap();
        assert!(matches!(
            token_from_file(&file),
            Err(TokenError::TooShort(5))
        ));
        assert!(matches!(
            token_from_file(&dir.join("missing")),
            Err(TokenError::Unreadable { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn origins() {
        assert_eq!(
            check_origin("https://app.example:443/").unwrap(),
            "https://app.example:443"
        );
        assert!(check_origin("http://localhost:*").is_ok());
        assert!(check_origin("null").is_ok());
        assert!(check_origin("app.example").is_err());
        assert!(check_origin("ftp://app.example").is_err());
        assert!(check_origin("https://app.example/path").is_err());
        assert_eq!(allowed_origins(false, &[]), Vec::<String>::new());
        assert_eq!(allowed_origins(true, &[]).len(), LOOPBACK_ORIGINS.len());
    }
}
