//! What makes a wheel pure Python, for every place that takes one (an operator's
//! `--python-packages`, a program's `pip install`): tags that name no platform, and no
//! member of compiled code (none could load in the sandbox).

/// Endings of compiled code in a wheel's members.
const COMPILED: &[&str] = &[".so", ".pyd", ".dylib", ".dll", ".wasm", ".a", ".o"];

/// A wheel's file name, `NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl`, read.
pub struct WheelName<'a> {
    pub name: &'a str,
    pub version: &'a str,
    /// `PYTHON-ABI-PLATFORM`.
    pub tags: String,
    /// The ABI is `none` and the platform `any`.
    pub pure: bool,
}

impl<'a> WheelName<'a> {
    /// `None` when `file` is not a wheel's name.
    pub fn parse(file: &'a str) -> Option<WheelName<'a>> {
        let parts: Vec<&str> = file
            .strip_suffix(".whl")
            .unwrap_or(file)
            .split('-')
            .collect();
        if parts.len() < 5 {
            return None;
        }
        let n = parts.len();
        Some(WheelName {
            name: parts[0],
            version: parts[1],
            tags: parts[n - 3..].join("-"),
            pure: parts[n - 2] == "none" && parts[n - 1] == "any",
        })
    }
}

/// Whether a wheel's member is compiled code (`x.so`, `x.so.1`, `x.pyd`, …).
pub fn is_compiled(member: &str) -> bool {
    let member = member.to_ascii_lowercase();
    COMPILED.iter().any(|ext| member.ends_with(ext)) || member.contains(".so.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_members_are_read() {
        let w = WheelName::parse("tiny-1.0-py3-none-any.whl").unwrap();
        assert_eq!(
            (w.name, w.version, w.tags.as_str(), w.pure),
            ("tiny", "1.0", "py3-none-any", true)
        );
        assert!(
            !WheelName::parse("fast-1.0-1-cp311-cp311-linux_x86_64.whl")
                .unwrap()
                .pure
        );
        assert!(WheelName::parse("nope.whl").is_none());
        assert!(is_compiled("a/_x.SO") && is_compiled("a/libz.so.1") && !is_compiled("a/x.py"));
    }
}
