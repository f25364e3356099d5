//! A WebAssembly module a package ships only inside a text file, base64-encoded (a
//! JavaScript bundle that instantiates it: npm `trealla`'s `trealla.js`): the artifact is
//! the module, not the text (`embedded = "base64-wasm"` in a plugins file). A bundle may
//! hold several modules (`trealla.js` also has a WASI shim): the pinned sha256 picks one.

use base64::Engine;
use sha2::{Digest, Sha256};

/// `\0asm`, the first bytes of every WebAssembly module, as base64 begins it.
const WASM_MAGIC_BASE64: &[u8] = b"AGFzbQ";

/// The base64 strings in `text` that decode to a WebAssembly module, decoded, in order.
pub(crate) fn base64_wasm(text: &[u8]) -> Vec<Vec<u8>> {
    let mut modules = Vec::new();
    let is_base64 = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    let mut from = 0;
    while let Some(at) = find(&text[from..], WASM_MAGIC_BASE64).map(|i| from + i) {
        // The string starts at the magic only when no base64 character comes before it.
        let starts_here = at == 0 || !is_base64(&text[at - 1]);
        let len = text[at..].iter().take_while(|b| is_base64(b)).count();
        if starts_here {
            if let Ok(module) =
                base64::engine::general_purpose::STANDARD.decode(&text[at..at + len])
            {
                if module.starts_with(b"\0asm") {
                    modules.push(module);
                }
            }
        }
        from = at + len.max(1);
    }
    modules
}

/// The module of `modules` whose sha256 is `sha256` (hex); else the sha256 of each.
pub(crate) fn pick(modules: Vec<Vec<u8>>, sha256: &str) -> Result<Vec<u8>, Vec<String>> {
    let hex = |m: &[u8]| format!("{:x}", Sha256::digest(m));
    let hashes: Vec<String> = modules.iter().map(|m| hex(m)).collect();
    match hashes.iter().position(|h| h.eq_ignore_ascii_case(sha256)) {
        Some(i) => Ok(modules.into_iter().nth(i).unwrap_or_default()),
        None => Err(hashes),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn the_module_is_found_in_a_bundle() {
        let module = b"\0asm\x01\0\0\0 and the rest of a module".to_vec();
        let shim = b"\0asm\x01\0\0\0 a shim".to_vec();
        let text = format!(
            "var a = \"{}\", s = \"data:application/wasm;base64,{}\";\nconst m = cg(\"{}\");",
            encode(b"not a module"),
            encode(&shim),
            encode(&module)
        );
        assert_eq!(base64_wasm(text.as_bytes()), [shim, module]);
    }

    #[test]
    fn the_pinned_module_is_picked() {
        let (a, b) = (b"\0asm a".to_vec(), b"\0asm b".to_vec());
        let sha_b = format!("{:x}", Sha256::digest(&b));
        assert_eq!(pick(vec![a.clone(), b.clone()], &sha_b), Ok(b.clone()));
        let other = pick(vec![a.clone()], &sha_b).unwrap_err();
        assert_eq!(other, [format!("{:x}", Sha256::digest(&a))]);
    }

    #[test]
    fn no_module_no_result() {
        assert!(base64_wasm(b"const x = 'AGFzbQ';").is_empty());
        assert!(base64_wasm(b"nothing here").is_empty());
        // The magic in the middle of another string is not a module's start.
        let text = format!("\"xy{}\"", encode(b"\0asm\x01\0\0\0"));
        assert!(base64_wasm(text.as_bytes()).is_empty());
    }
}
