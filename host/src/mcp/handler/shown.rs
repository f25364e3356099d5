//! How much of a stream a result shows: all of it when it fits, else its head and its
//! tail with one marker line between them saying how many bytes were left out
//! (docs/mcp.md, "Results sized for a model").
//!
//! The cap counts what the text costs in the serialized result, not raw bytes: a control
//! byte becomes `\u0000` (six bytes) in JSON and an invalid UTF-8 byte becomes U+FFFD
//! (three), so a stream of NUL bytes cannot make a result six times larger than the cap.

/// The smallest cap that leaves room for a head, a tail and the marker.
pub const MIN_SHOWN_BYTES: usize = 1024;
/// The cap per stream, by default.
pub const DEFAULT_SHOWN_BYTES: usize = 32 << 10;

/// What a result shows of one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The text shown: the whole stream, or head, marker line, tail.
    pub text: String,
    /// Bytes of the stream not shown (0: all of it is).
    pub left_out: usize,
}

/// The part of `bytes` a result shows, costing at most about `cap` bytes of JSON.
pub fn shown(bytes: &[u8], cap: usize) -> Shown {
    let cap = cap.max(MIN_SHOWN_BYTES);
    if json_cost_bound(bytes) <= cap {
        return Shown {
            text: String::from_utf8_lossy(bytes).into_owned(),
            left_out: 0,
        };
    }
    let marker_room = 120;
    let half = (cap - marker_room) / 2;
    let head_end = head_end(bytes, half);
    let tail_start = tail_start(bytes, half).max(head_end);
    let left_out = tail_start - head_end;
    if left_out == 0 {
        return Shown {
            text: String::from_utf8_lossy(bytes).into_owned(),
            left_out: 0,
        };
    }
    let mut text = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "[… {left_out} bytes left out here: the whole output is at output_uri …]\n"
    ));
    text.push_str(&String::from_utf8_lossy(&bytes[tail_start..]));
    Shown { text, left_out }
}

/// What a character costs in a JSON string, as serde_json writes it.
fn char_cost(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        '\0'..='\u{1f}' => 6,
        _ => c.len_utf8(),
    }
}

/// The text `bytes` turn into, piece by piece: (bytes taken, what the piece costs in
/// JSON), a piece being a character or an invalid sequence (one U+FFFD, 3 bytes).
fn pieces(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    bytes.utf8_chunks().flat_map(|chunk| {
        let valid = chunk.valid().chars().map(|c| (c.len_utf8(), char_cost(c)));
        let invalid = chunk.invalid();
        valid.chain((!invalid.is_empty()).then_some((invalid.len(), 3)))
    })
}

fn json_cost_bound(bytes: &[u8]) -> usize {
    pieces(bytes).map(|(_, cost)| cost).sum()
}

/// Where the head ends: as far as `budget` reaches, at a character boundary, pulled back
/// to just after a newline when there is one in the last quarter.
fn head_end(bytes: &[u8], budget: usize) -> usize {
    let mut cost = 0;
    let mut end = 0;
    for (len, piece_cost) in pieces(bytes) {
        cost += piece_cost;
        if cost > budget {
            break;
        }
        end += len;
    }
    let quarter = end / 4;
    match bytes[end - quarter..end].iter().rposition(|&b| b == b'\n') {
        Some(at) => end - quarter + at + 1,
        None => end,
    }
}

/// Where the tail starts: as far back as `budget` reaches, at a character boundary,
/// moved forward to just after a newline when there is one in the first quarter.
fn tail_start(bytes: &[u8], budget: usize) -> usize {
    // Every byte costs at least one, so the tail lies within the last `budget` bytes.
    let mut window = bytes.len().saturating_sub(budget);
    while window < bytes.len() && is_continuation(bytes[window]) {
        window += 1;
    }
    let tail: Vec<(usize, usize)> = pieces(&bytes[window..]).collect();
    let mut cost: usize = tail.iter().map(|(_, c)| c).sum();
    let mut start = window;
    for (len, piece_cost) in tail {
        if cost <= budget {
            break;
        }
        cost -= piece_cost;
        start += len;
    }
    let quarter = (bytes.len() - start) / 4;
    match bytes[start..start + quarter]
        .iter()
        .position(|&b| b == b'\n')
    {
        Some(at) => start + at + 1,
        None => start,
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xc0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serialized_len(s: &str) -> usize {
        serde_json::to_string(s).unwrap().len()
    }

    #[test]
    fn small_streams_are_shown_whole() {
        let s = shown(b"hello\n", 32 << 10);
        assert_eq!((s.text.as_str(), s.left_out), ("hello\n", 0));
        let s = shown(b"", 32 << 10);
        assert_eq!((s.text.as_str(), s.left_out), ("", 0));
    }

    #[test]
    fn big_streams_keep_head_and_tail_around_a_marker() {
        let lines: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let s = shown(lines.as_bytes(), 32 << 10);
        assert!(s.text.starts_with("line 0\nline 1\n"), "{}", &s.text[..50]);
        assert!(s.text.ends_with("line 99999\n"));
        let markers: Vec<&str> = s.text.lines().filter(|l| l.contains("left out")).collect();
        assert_eq!(markers.len(), 1);
        assert!(markers[0].contains(&format!("{} bytes left out", s.left_out)));
        // Cut at line boundaries: every other line is a whole `line N`.
        assert!(s
            .text
            .lines()
            .filter(|l| !l.contains("left out"))
            .all(|l| l.starts_with("line ") && l[5..].parse::<u32>().is_ok()));
        let shown_bytes = s.text.len() - markers[0].len() - 1;
        assert_eq!(shown_bytes + s.left_out, lines.len());
        assert!(serialized_len(&s.text) <= 32 << 10);
    }

    #[test]
    fn the_cap_counts_what_json_costs() {
        for bytes in [
            vec![0u8; 1 << 20],
            vec![0xffu8; 1 << 20],
            "é".repeat(1 << 19).into_bytes(),
            b"\"\\".repeat(1 << 19),
        ] {
            let s = shown(&bytes, 32 << 10);
            assert!(s.left_out > 0);
            let len = serialized_len(&s.text);
            assert!(len <= 32 << 10, "{len}");
            assert!(len > 16 << 10, "too little shown: {len}");
        }
    }

    #[test]
    fn multibyte_characters_are_never_split() {
        let text = "日本語".repeat(100_000);
        let s = shown(text.as_bytes(), 4096);
        assert!(!s.text.contains('\u{fffd}'));
    }
}
