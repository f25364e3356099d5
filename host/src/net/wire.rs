//! `/net/fetch`'s request and answer (docs/network.md, "The device"): one JSON object
//! each, the same for every runtime's binding.

use base64::Engine as _;
use serde_json::{json, Value};

/// The most headers one request may carry, and the longest value of one.
const MAX_HEADERS: usize = 100;
const MAX_HEADER_VALUE: usize = 16 << 10;

/// Header names the host sets itself: a program's are refused rather than sent.
const HOSTS_OWN: [&str; 4] = ["host", "content-length", "transfer-encoding", "connection"];

/// A request as the program wrote it (its placeholders not yet replaced).
#[derive(Debug, Clone)]
pub struct NetRequest {
    pub method: http::Method,
    pub url: url::Url,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub follow_redirects: bool,
}

pub fn parse(bytes: &[u8]) -> Result<NetRequest, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        format!("the request is not JSON ({e}); write {{\"method\": …, \"url\": …, \"headers\": [[name, value]], \"body\": …}} (docs/network.md)")
    })?;
    let Value::Object(mut obj) = value else {
        return Err("the request must be a JSON object {\"method\", \"url\", …}".into());
    };
    if let Some(unknown) = obj.keys().find(|k| {
        ![
            "method",
            "url",
            "headers",
            "body",
            "body_base64",
            "follow_redirects",
        ]
        .contains(&k.as_str())
    }) {
        return Err(format!(
            "the request's `{unknown}` is not a field this device takes"
        ));
    }
    let method = match obj.remove("method") {
        None | Some(Value::Null) => http::Method::GET,
        Some(Value::String(m)) => http::Method::from_bytes(m.to_ascii_uppercase().as_bytes())
            .map_err(|_| format!("`{m}` is not an HTTP method"))?,
        Some(_) => return Err("the request's `method` must be a string".into()),
    };
    let url = match obj.remove("url") {
        Some(Value::String(u)) => {
            url::Url::parse(&u).map_err(|e| format!("the URL `{u}` is not valid: {e}"))?
        }
        _ => return Err("the request's `url` must be a string".into()),
    };
    let mut headers = Vec::new();
    match obj.remove("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(pairs)) => {
            for pair in pairs {
                match pair {
                    Value::Array(p) if p.len() == 2 => match (&p[0], &p[1]) {
                        (Value::String(n), Value::String(v)) => {
                            headers.push((n.clone(), v.clone()))
                        }
                        _ => {
                            return Err("each header must be a pair of strings [name, value]".into())
                        }
                    },
                    _ => return Err("each header must be a pair of strings [name, value]".into()),
                }
            }
        }
        Some(Value::Object(map)) => {
            for (n, v) in map {
                match v {
                    Value::String(v) => headers.push((n, v)),
                    _ => return Err(format!("header `{n}`'s value must be a string")),
                }
            }
        }
        Some(_) => {
            return Err("the request's `headers` must be a list of [name, value] pairs".into())
        }
    }
    if headers.len() > MAX_HEADERS {
        return Err(format!("a request carries at most {MAX_HEADERS} headers"));
    }
    for (name, value) in &headers {
        if value.len() > MAX_HEADER_VALUE {
            return Err(format!(
                "header `{name}`'s value is over {MAX_HEADER_VALUE} bytes"
            ));
        }
        if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(format!("`{name}` is not a header name"));
        }
        if http::HeaderValue::from_str(value).is_err() {
            return Err(format!("header `{name}`'s value is not one HTTP can carry"));
        }
        if HOSTS_OWN.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "header `{name}` is set by the host, not by the program"
            ));
        }
    }
    let body = match (obj.remove("body"), obj.remove("body_base64")) {
        (Some(Value::String(_)), Some(Value::String(_))) => {
            return Err("give the body as `body` or `body_base64`, not both".into())
        }
        (Some(Value::String(text)), _) => text.into_bytes(),
        (_, Some(Value::String(b64))) => base64::engine::general_purpose::STANDARD
            .decode(b64.as_bytes())
            .map_err(|e| format!("`body_base64` is not base64: {e}"))?,
        (None | Some(Value::Null), None | Some(Value::Null)) => Vec::new(),
        _ => return Err("the body must be a string (`body`, or base64 in `body_base64`)".into()),
    };
    let follow_redirects = match obj.remove("follow_redirects") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err("`follow_redirects` must be true or false".into()),
    };
    Ok(NetRequest {
        method,
        url,
        headers,
        body,
        follow_redirects,
    })
}

/// The requirements of an install request (`{"install": [...]}`), if it is one.
pub fn install(bytes: &[u8]) -> Option<Result<Vec<String>, String>> {
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let install = value.as_object()?.get("install")?;
    Some(match install.as_array() {
        Some(reqs) if value.as_object().is_some_and(|o| o.len() == 1) => reqs
            .iter()
            .map(|r| r.as_str().map(str::to_string).ok_or(()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|()| "`install` must be a list of requirement strings".to_string()),
        _ => Err("an install request is {\"install\": [\"NAME\", …]} and nothing else".to_string()),
    })
}

/// An answer as the program sees it (secrets already scrubbed).
pub struct NetAnswer {
    pub status: u16,
    pub url: String,
    pub redirected: bool,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub truncated: bool,
}

impl NetAnswer {
    pub fn to_bytes(&self) -> Vec<u8> {
        let reason = http::StatusCode::from_u16(self.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("");
        json!({
            "ok": true,
            "status": self.status,
            "reason": reason,
            "url": self.url,
            "redirected": self.redirected,
            "headers": self.headers.iter().map(|(n, v)| [n, v]).collect::<Vec<_>>(),
            "body_base64": base64::engine::general_purpose::STANDARD.encode(&self.body),
            "truncated": self.truncated,
        })
        .to_string()
        .into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_take_pairs_or_objects_and_either_body() {
        let r = parse(br#"{"url":"https://a.test/x","headers":[["A","1"],["A","2"]],"body":"hi"}"#)
            .unwrap();
        assert_eq!(
            (r.method.as_str(), r.headers.len(), r.body.as_slice()),
            ("GET", 2, &b"hi"[..])
        );
        let r = parse(br#"{"method":"post","url":"http://a.test","headers":{"X":"y"},"body_base64":"AAE=","follow_redirects":false}"#).unwrap();
        assert_eq!(
            (r.method.as_str(), r.body.as_slice(), r.follow_redirects),
            ("POST", &[0u8, 1][..], false)
        );
    }

    #[test]
    fn bad_requests_say_why() {
        for (text, needle) in [
            (&b"nope"[..], "not JSON"),
            (br#"[1]"#, "JSON object"),
            (br#"{"url":"a.test"}"#, "not valid"),
            (
                br#"{"url":"http://a.test","headers":[["Host","x"]]}"#,
                "set by the host",
            ),
            (
                br#"{"url":"http://a.test","headers":[["A","b\nc"]]}"#,
                "not one HTTP can carry",
            ),
            (
                br#"{"url":"http://a.test","body":"a","body_base64":"YQ=="}"#,
                "not both",
            ),
            (br#"{"url":"http://a.test","extra":1}"#, "not a field"),
            (
                br#"{"url":"http://a.test","method":"G T"}"#,
                "not an HTTP method",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(needle), "{e}");
        }
    }
}
