//! A streaming pre-scan that bounds a JSON-RPC message's structure before it is parsed.
//! The transports cap a message's bytes ([`crate::mcp::MAX_MESSAGE_BYTES`]), but rmcp parses
//! the whole message into `serde_json::Value`s before any of runbox's checks run, and
//! a value costs far more heap than its text: a 57 MiB array of zeros took 5.6 GB
//! (tests/mcp_client/hardening.py sends such messages). [`scan`] walks the bytes once, with
//! O(1) memory and no allocation, counting every value (object, array, string, object key, number,
//! `true`/`false`/`null`) and the nesting depth, and stops at the first byte that
//! passes a [`MessageLimits`]. It does not validate the grammar (serde_json does that
//! next) but never counts fewer values or levels than serde_json would build from the
//! same bytes, malformed or not; it also refuses the one object key that makes
//! serde_json parse a string's content as more JSON (see [`ScanError::ReservedKey`]).

use thiserror::Error;

/// What [`ScanSummary::parse_cost`] charges per JSON value, in bytes of heap.
///
/// A `serde_json::Value` is 32 bytes (`Map` is a `BTreeMap` here: serde_json is built
/// without `preserve_order` and `arbitrary_precision`). An array's `Vec<Value>` grows
/// by doubling, so an element takes up to 64 bytes, and 96 while the last growth copies.
/// The dearest shape is a chain of one-key objects (`{"a":{"a":…}}`): every object with
/// a key allocates a whole B-tree leaf (11 `String` keys + 11 `Value`s + header = 632
/// bytes, 640 from malloc) for just 2 values (the object and its key), plus up to 32
/// for a short key's `String`: 336 a value. 384 leaves 14% over that. Measured beyond
/// the text (`parse_cost_bounds_serde_json_heap`, heap as glibc rounds it): an array of
/// zeros 60 a value, of short strings 79, of small objects 211–238, nested arrays 140,
/// one-key object chains 330.
pub const PARSE_COST_PER_VALUE: usize = 384;

/// What [`ScanSummary::parse_cost`] charges per byte of the message.
///
/// The strings' contents are copied into the tree (at most the text's bytes), and a
/// string with an escape is first decoded into serde_json's scratch buffer, which grows
/// by doubling: a message that is one long escaped string peaks at 3× its length (old
/// and new scratch while it grows, then the scratch and the finished `String`).
pub const PARSE_COST_PER_BYTE: usize = 3;

/// The key serde_json (with its `raw_value` feature, on in runbox's build) treats as a
/// `RawValue`: parsing `{"$serde_json::private::RawValue":"[0,0]"}` into a `Value`
/// parses the string's content as JSON, with no bound from this scan.
const RAW_VALUE_KEY: &[u8] = b"$serde_json::private::RawValue";

/// How much structure one message may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageLimits {
    /// JSON values in the message, object keys included.
    pub max_values: usize,
    /// Arrays and objects inside each other; a scalar at the top is depth 0, `[]` is 1.
    pub max_depth: usize,
}

impl Default for MessageLimits {
    /// Limits no real request meets. A `run_code` call with the most input files (100)
    /// has under 1,000 values (729 in the test): 7 a file (the object, its 3 keys and
    /// their values) and a few dozen for the envelope and the other arguments;
    /// 100,000 values cost at most ~38 MB to parse ([`PARSE_COST_PER_VALUE`]). No MCP
    /// message nests deeper than a handful of levels; 64 is half of serde_json's own
    /// recursion limit (128), so nothing here reaches it.
    fn default() -> Self {
        MessageLimits {
            max_values: 100_000,
            max_depth: 64,
        }
    }
}

/// What a message holds, once scanned within its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanSummary {
    /// JSON values, object keys included.
    pub values: usize,
    /// The deepest nesting of arrays and objects.
    pub max_depth: usize,
    /// Bytes scanned.
    pub bytes: usize,
}

impl ScanSummary {
    /// An upper bound on the heap serde_json takes to parse this message into a
    /// `serde_json::Value` (the input's own buffer aside):
    /// `bytes × PARSE_COST_PER_BYTE + values × PARSE_COST_PER_VALUE`. rmcp may hold more
    /// than one such tree of a message while it parses (untagged enums buffer first).
    pub fn parse_cost(&self) -> usize {
        self.bytes
            .saturating_mul(PARSE_COST_PER_BYTE)
            .saturating_add(self.values.saturating_mul(PARSE_COST_PER_VALUE))
    }
}

/// Why a message was refused before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ScanError {
    #[error(
        "the message holds more than {max} JSON values (strings, numbers, object keys, \
         arrays and objects); runbox accepts at most {max} in one message: send large \
         data as file contents, not as JSON arrays or objects"
    )]
    TooManyValues { max: usize },
    #[error(
        "the message nests JSON arrays and objects more than {max} levels deep; runbox \
         accepts at most {max} levels"
    )]
    TooDeep { max: usize },
    #[error(
        "the message uses the object key \"$serde_json::private::RawValue\", which runbox \
         does not accept"
    )]
    ReservedKey,
}

/// Where the scan is between two bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between tokens: the next byte starts one, or is whitespace, `,` or `:`.
    Between,
    /// Inside a run of bytes that are neither structural nor whitespace (a number,
    /// `true`, … or garbage): one value, counted at its first byte.
    Bare,
    /// Inside a string.
    Str,
    /// Just after a `\` in a string.
    Escape,
    /// In the hex digits of a `\u` escape, while the string may still be the reserved key.
    Unicode,
    /// After a string that decoded to the reserved key: a `:` next makes it a key.
    AfterReservedKey,
}

/// `matched` when the current string can no longer be the reserved key.
const NO_MATCH: u8 = u8::MAX;

/// Bytes that end a bare token: JSON whitespace, structural bytes and `"`.
const ENDS_BARE: [bool; 256] = {
    let mut table = [false; 256];
    let ends = b" \t\n\r,:[]{}\"";
    let mut i = 0;
    while i < ends.len() {
        table[ends[i] as usize] = true;
        i += 1;
    }
    table
};

/// The scan of one message, byte by byte.
struct Scanner {
    limits: MessageLimits,
    state: State,
    values: usize,
    depth: usize,
    max_depth: usize,
    /// How many bytes of [`RAW_VALUE_KEY`] the current string has decoded to, or
    /// [`NO_MATCH`].
    matched: u8,
    /// Hex digits still to come in a `\u` escape, and the value so far.
    hex_left: u8,
    hex_value: u16,
}

impl Scanner {
    fn new(limits: MessageLimits) -> Self {
        Scanner {
            limits,
            state: State::Between,
            values: 0,
            depth: 0,
            max_depth: 0,
            matched: NO_MATCH,
            hex_left: 0,
            hex_value: 0,
        }
    }

    /// Scans the message's bytes; fails at the first byte that passes a limit.
    fn scan_chunk(&mut self, chunk: &[u8]) -> Result<(), ScanError> {
        let n = chunk.len();
        let mut i = 0;
        while i < n {
            match self.state {
                State::Between => {
                    let byte = chunk[i];
                    i += 1;
                    match byte {
                        b' ' | b'\t' | b'\n' | b'\r' | b',' | b':' => {}
                        b'[' | b'{' => {
                            self.count_value()?;
                            self.depth += 1;
                            if self.depth > self.max_depth {
                                self.max_depth = self.depth;
                                if self.depth > self.limits.max_depth {
                                    return Err(ScanError::TooDeep {
                                        max: self.limits.max_depth,
                                    });
                                }
                            }
                        }
                        // Unbalanced closers (serde_json refuses them) stop at depth 0.
                        b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                        b'"' => {
                            self.count_value()?;
                            self.matched = 0;
                            self.state = State::Str;
                        }
                        _ => {
                            self.count_value()?;
                            self.state = State::Bare;
                        }
                    }
                }
                State::Bare => {
                    while i < n && !ENDS_BARE[chunk[i] as usize] {
                        i += 1;
                    }
                    if i < n {
                        // The ending byte is scanned again, between tokens.
                        self.state = State::Between;
                    }
                }
                State::Str => {
                    if self.matched == NO_MATCH {
                        // The hot loop: a string's body up to its end or an escape.
                        while i < n && chunk[i] != b'"' && chunk[i] != b'\\' {
                            i += 1;
                        }
                        if i == n {
                            break;
                        }
                    }
                    let byte = chunk[i];
                    i += 1;
                    match byte {
                        b'"' => {
                            self.state = if usize::from(self.matched) == RAW_VALUE_KEY.len() {
                                State::AfterReservedKey
                            } else {
                                State::Between
                            };
                        }
                        b'\\' => self.state = State::Escape,
                        _ => self.match_byte(byte),
                    }
                }
                State::Escape => {
                    // Whatever follows `\` is part of the string (serde_json refuses a
                    // bad escape there and then).
                    let byte = chunk[i];
                    i += 1;
                    self.state = State::Str;
                    if self.matched != NO_MATCH {
                        match byte {
                            b'u' => {
                                self.state = State::Unicode;
                                self.hex_left = 4;
                                self.hex_value = 0;
                            }
                            b'"' | b'\\' | b'/' => self.match_byte(byte),
                            _ => self.matched = NO_MATCH,
                        }
                    }
                }
                State::Unicode => match hex_digit(chunk[i]) {
                    Some(digit) => {
                        i += 1;
                        self.hex_value = self.hex_value << 4 | u16::from(digit);
                        self.hex_left -= 1;
                        if self.hex_left == 0 {
                            self.state = State::Str;
                            match u8::try_from(self.hex_value) {
                                Ok(byte) if byte.is_ascii() => self.match_byte(byte),
                                _ => self.matched = NO_MATCH,
                            }
                        }
                    }
                    None => {
                        // Not a hex digit: scanned again as string (it may end it).
                        self.matched = NO_MATCH;
                        self.state = State::Str;
                    }
                },
                State::AfterReservedKey => match chunk[i] {
                    b' ' | b'\t' | b'\n' | b'\r' => i += 1,
                    b':' => return Err(ScanError::ReservedKey),
                    _ => self.state = State::Between,
                },
            }
        }
        Ok(())
    }

    #[inline]
    fn count_value(&mut self) -> Result<(), ScanError> {
        self.values += 1;
        if self.values > self.limits.max_values {
            return Err(ScanError::TooManyValues {
                max: self.limits.max_values,
            });
        }
        Ok(())
    }

    /// One more decoded byte of the current string, against the reserved key.
    #[inline]
    fn match_byte(&mut self, byte: u8) {
        let at = usize::from(self.matched);
        self.matched = if at < RAW_VALUE_KEY.len() && RAW_VALUE_KEY[at] == byte {
            self.matched + 1
        } else {
            NO_MATCH
        };
    }
}

fn hex_digit(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Scans one whole message.
pub fn scan(bytes: &[u8], limits: &MessageLimits) -> Result<ScanSummary, ScanError> {
    let mut scanner = Scanner::new(*limits);
    scanner.scan_chunk(bytes)?;
    Ok(ScanSummary {
        values: scanner.values,
        max_depth: scanner.max_depth,
        bytes: bytes.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// Counts requested heap per thread, as glibc's malloc would round it, so a test
    /// can measure what parsing takes. It serves the whole unit-test binary; counting
    /// is per thread, so tests running beside each other do not disturb it.
    mod counting {
        use std::alloc::{GlobalAlloc, Layout, System};
        use std::cell::Cell;

        pub struct Counting;

        thread_local! {
            static LIVE: Cell<isize> = const { Cell::new(0) };
            static PEAK: Cell<isize> = const { Cell::new(0) };
        }

        /// A glibc chunk: 8 bytes of header, 16-byte granules, 32 bytes at least.
        fn chunk(size: usize) -> isize {
            ((size + 8 + 15) & !15).max(32) as isize
        }

        fn add(delta: isize) {
            let _ = LIVE.try_with(|live| {
                let now = live.get().wrapping_add(delta);
                live.set(now);
                let _ = PEAK.try_with(|peak| {
                    if now > peak.get() {
                        peak.set(now);
                    }
                });
            });
        }

        unsafe impl GlobalAlloc for Counting {
            unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
                let ptr = unsafe { System.alloc(layout) };
                if !ptr.is_null() {
                    add(chunk(layout.size()));
                }
                ptr
            }

            unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
                let ptr = unsafe { System.alloc_zeroed(layout) };
                if !ptr.is_null() {
                    add(chunk(layout.size()));
                }
                ptr
            }

            unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
                unsafe { System.dealloc(ptr, layout) };
                add(-chunk(layout.size()));
            }

            unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
                // As if the block moved: old and new are both live for a moment.
                add(chunk(new_size));
                let new = unsafe { System.realloc(ptr, layout, new_size) };
                if new.is_null() {
                    add(-chunk(new_size));
                } else {
                    add(-chunk(layout.size()));
                }
                new
            }
        }

        /// Runs `f` and returns its result with the most heap this thread held meanwhile,
        /// over what it held before.
        pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
            let start = LIVE.with(Cell::get);
            PEAK.with(|peak| peak.set(start));
            let out = f();
            let peak = PEAK.with(Cell::get);
            (out, (peak - start) as usize)
        }
    }

    #[global_allocator]
    static COUNTING: counting::Counting = counting::Counting;

    fn limits() -> MessageLimits {
        MessageLimits::default()
    }

    fn summary(text: &[u8]) -> ScanSummary {
        scan(text, &limits()).unwrap()
    }

    /// What serde_json built: values (keys included) and depth.
    fn oracle(value: &Value) -> (usize, usize) {
        let (mut values, mut depth) = (1, 0);
        match value {
            Value::Array(items) => {
                for item in items {
                    let (v, d) = oracle(item);
                    values += v;
                    depth = depth.max(d);
                }
                (values, depth + 1)
            }
            Value::Object(map) => {
                for item in map.values() {
                    let (v, d) = oracle(item);
                    values += 1 + v;
                    depth = depth.max(d);
                }
                (values, depth + 1)
            }
            _ => (1, 0),
        }
    }

    fn check_against_serde(text: &[u8]) {
        let value: Value = serde_json::from_slice(text).unwrap();
        let (values, depth) = oracle(&value);
        let got = summary(text);
        assert_eq!(
            (got.values, got.max_depth, got.bytes),
            (values, depth, text.len()),
            "{}",
            String::from_utf8_lossy(text)
        );
    }

    /// A deterministic xorshift generator for the generated cases.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    const PIECES: &[&str] = &[
        "a",
        "\"",
        "\\",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        " ",
        "\n",
        "\u{1}",
        "é",
        "😀",
        "\\u",
        "$serde_json::private::RawValue",
        "0",
        "true",
    ];

    fn random_string(rng: &mut Rng) -> String {
        let text: String = (0..rng.below(6))
            .map(|_| PIECES[rng.below(PIECES.len())])
            .collect();
        // Exactly the reserved key is refused (and tested on its own).
        if text.as_bytes() == RAW_VALUE_KEY {
            text + "x"
        } else {
            text
        }
    }

    fn random_value(rng: &mut Rng, depth: usize) -> Value {
        let kind = if depth == 0 {
            rng.below(6)
        } else {
            rng.below(8)
        };
        match kind {
            0 => Value::Null,
            1 => Value::Bool(rng.below(2) == 0),
            2 => json!(rng.next() as i64),
            3 => json!((rng.next() % 100_000) as f64 / 7.0),
            4 | 5 => Value::String(random_string(rng)),
            6 => Value::Array(
                (0..rng.below(5))
                    .map(|_| random_value(rng, depth - 1))
                    .collect(),
            ),
            _ => Value::Object(
                (0..rng.below(5))
                    .map(|_| (random_string(rng), random_value(rng, depth - 1)))
                    .collect(),
            ),
        }
    }

    #[test]
    fn counts_every_value_and_key() {
        let cases: &[(&str, usize, usize)] = &[
            ("0", 1, 0),
            ("-12.5e3", 1, 0),
            ("null", 1, 0),
            ("\"\"", 1, 0),
            ("[]", 1, 1),
            ("{}", 1, 1),
            ("[0,true,false,null,\"x\"]", 6, 1),
            ("{\"a\":1,\"b\":[2,3]}", 7, 2),
            ("[[[]],{\"k\":{}}]", 6, 3),
            ("", 0, 0),
        ];
        for &(text, values, depth) in cases {
            let got = summary(text.as_bytes());
            assert_eq!((got.values, got.max_depth), (values, depth), "{text}");
            assert_eq!(got.bytes, text.len());
        }
    }

    #[test]
    fn strings_hide_brackets_quotes_and_escapes() {
        for text in [
            r#"["[{]}:,", "\"", "\\", "\\\"", "a\"b[c", "\\\\"]"#,
            r#"{"\"[": "]}\\", "\u005b\u005D": "\uD83D\uDE00", "\/": "\b\f\n\r\t"}"#,
            r#"["\\", "]", "\\\\\\\"]]]", 0]"#,
        ] {
            check_against_serde(text.as_bytes());
        }
        assert_eq!(summary(br#"["\"]\"", 1]"#).values, 3);
        assert_eq!(summary(br#"["\\", 1]"#).values, 3);
        assert_eq!(summary(br#"["\u0022]", 1]"#).values, 3);
    }

    #[test]
    fn matches_serde_json_on_generated_messages() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2_000 {
            let value = random_value(&mut rng, 5);
            let compact = serde_json::to_vec(&value).unwrap();
            let pretty = serde_json::to_vec_pretty(&value).unwrap();
            check_against_serde(&compact);
            check_against_serde(&pretty);
        }
    }

    #[test]
    fn whitespace_everywhere() {
        let text =
            " \t\r\n{ \n\"a\" \t:\r\n[ 1 ,\n2\t,\r\"x\" , { } , [ ] ]\n,\t\"b\"\r:\nnull } \n";
        check_against_serde(text.as_bytes());
        assert_eq!(summary(text.as_bytes()).values, 10);
        assert_eq!(summary(b" \t\r\n ").values, 0);
    }

    #[test]
    fn depth_64_passes_and_65_is_refused() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let ok = summary(nested(64).as_bytes());
        assert_eq!((ok.values, ok.max_depth), (64, 64));
        assert_eq!(
            scan(nested(65).as_bytes(), &limits()),
            Err(ScanError::TooDeep { max: 64 })
        );
        // Refused at the 65th opener, whatever follows.
        assert_eq!(
            scan("[".repeat(65).as_bytes(), &limits()),
            Err(ScanError::TooDeep { max: 64 })
        );
        let objects = format!("{}0{}", "{\"a\":".repeat(65), "}".repeat(65));
        assert_eq!(
            scan(objects.as_bytes(), &limits()),
            Err(ScanError::TooDeep { max: 64 })
        );
        // Siblings do not add up: depth is nesting, not the number of arrays.
        let wide = format!("[{}]", ["[[]]"; 1000].join(","));
        assert_eq!(summary(wide.as_bytes()).max_depth, 3);
    }

    #[test]
    fn unbalanced_closers_do_not_lower_depth() {
        let text = format!("{}{}", "]}".repeat(100), "[".repeat(65));
        assert_eq!(
            scan(text.as_bytes(), &limits()),
            Err(ScanError::TooDeep { max: 64 })
        );
        let got = summary(b"]]][[]]][");
        assert_eq!((got.values, got.max_depth), (3, 2));
    }

    #[test]
    fn array_of_100_001_zeros_is_refused() {
        let zeros = |n: usize| format!("[{}]", vec!["0"; n].join(","));
        assert_eq!(
            scan(zeros(100_001).as_bytes(), &limits()),
            Err(ScanError::TooManyValues { max: 100_000 })
        );
        // The array itself is a value: 99,999 zeros make 100,000 values.
        assert_eq!(summary(zeros(99_999).as_bytes()).values, 100_000);
        assert_eq!(
            scan(zeros(100_000).as_bytes(), &limits()),
            Err(ScanError::TooManyValues { max: 100_000 })
        );
        let keys = format!(
            "{{{}}}",
            (0..50_000)
                .map(|i| format!("\"{i}\":0"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(
            scan(keys.as_bytes(), &limits()),
            Err(ScanError::TooManyValues { max: 100_000 })
        );
    }

    #[test]
    fn stops_at_the_value_that_passes_a_limit() {
        let small = MessageLimits {
            max_values: 3,
            max_depth: 2,
        };
        assert!(scan(b"[0,0]", &small).is_ok());
        assert_eq!(
            scan(b"[0,0,0]", &small),
            Err(ScanError::TooManyValues { max: 3 })
        );
        // Whatever follows the value that passed the limit.
        assert_eq!(
            scan(b"[0,0,0\"", &small),
            Err(ScanError::TooManyValues { max: 3 })
        );
        assert_eq!(scan(b"[[[", &small), Err(ScanError::TooDeep { max: 2 }));
    }

    /// A `tools/call` of `run_code` with the most input files runbox takes (100, 32 MiB
    /// decoded in total, base64), the other arguments and a progress token.
    fn largest_run_code_call() -> Vec<u8> {
        use crate::service::{MAX_INPUT_BYTES, MAX_INPUT_FILES};
        use base64::Engine as _;
        let engine = base64::engine::general_purpose::STANDARD;
        let per_file = MAX_INPUT_BYTES / MAX_INPUT_FILES;
        let contents: Vec<u8> = (0..per_file).map(|i| (i * 131 % 251) as u8).collect();
        let encoded = engine.encode(&contents);
        let files: Vec<Value> = (0..MAX_INPUT_FILES)
            .map(|i| json!({"path": format!("data/part-{i:03}.bin"), "content": encoded, "encoding": "base64"}))
            .collect();
        let message = json!({
            "jsonrpc": "2.0",
            "id": 42,
            "method": "tools/call",
            "params": {
                "name": "run_code",
                "arguments": {
                    "runtime": "python",
                    "code": "import glob\nfor p in sorted(glob.glob('data/*')):\n    print(p, len(open(p, 'rb').read()))\n",
                    "stdin": "line one\nline \"two\"\n",
                    "timeout_seconds": 30.5,
                    "session_id": "s-0123456789abcdef",
                    "files": files,
                },
                "_meta": {"progressToken": "p-42"},
            },
        });
        serde_json::to_vec(&message).unwrap()
    }

    #[test]
    fn largest_real_run_code_call_passes() {
        let message = largest_run_code_call();
        assert!(message.len() < crate::mcp::intake::MAX_MESSAGE_BYTES);
        let got = summary(&message);
        let value: Value = serde_json::from_slice(&message).unwrap();
        assert_eq!((got.values, got.max_depth), oracle(&value));
        assert!(got.values < 1_000, "{got:?}");
        assert!(got.max_depth <= 5, "{got:?}");
        assert_eq!(got.bytes, message.len());
    }

    #[test]
    fn reserved_raw_value_key_is_refused() {
        // serde_json (its `raw_value` feature is on in this build) parses such a key's
        // string as JSON, which the scan does not see.
        assert_eq!(
            serde_json::from_slice::<Value>(
                br#"{"a":{"\u0024serde_json::private::RawValue":"[0,[0,0]]"}}"#
            )
            .unwrap(),
            json!({"a": [0, [0, 0]]})
        );
        for text in [
            r#"{"$serde_json::private::RawValue":"[0,0,0]"}"#,
            r#"{"a":{"\u0024serde_json::private::RawValue" : "[0]"}}"#,
            r#"[{"$serde_json\u003A:private::Raw\u0056alue"
               :"0"}]"#,
        ] {
            assert_eq!(
                scan(text.as_bytes(), &limits()),
                Err(ScanError::ReservedKey),
                "{text}"
            );
        }
        // Only the exact key: as a value, longer, shorter or escaped otherwise it passes.
        for text in [
            r#"["$serde_json::private::RawValue"]"#,
            r#"{"k":"$serde_json::private::RawValue"}"#,
            r#"{"$serde_json::private::RawValueX":0}"#,
            r#"{"$serde_json::private::RawValu":0}"#,
            r#"{"\$serde_json::private::RawValue":0}"#,
            r#"{"$serde_json::private::RawValue\n":0}"#,
        ] {
            assert!(scan(text.as_bytes(), &limits()).is_ok(), "{text}");
        }
    }

    #[test]
    fn malformed_input_never_panics() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let alphabet = b" \t\n\r,:[]{}\"\\u0aA9fF-.etrn$\xff\x00";
        for _ in 0..20_000 {
            let len = rng.below(64);
            let text: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let whole = scan(&text, &limits());
            if let Ok(value) = serde_json::from_slice::<Value>(&text) {
                let got = whole.unwrap();
                assert_eq!((got.values, got.max_depth), oracle(&value));
            }
            // Every prefix counts at most what the whole counts.
            let at = rng.below(len + 1);
            if let (Ok(prefix), Ok(all)) = (scan(&text[..at], &limits()), whole) {
                assert!(prefix.values <= all.values && prefix.max_depth <= all.max_depth);
            }
        }
        // Mutated real messages: one byte changed or the text cut short.
        for _ in 0..300 {
            let mut text = serde_json::to_vec(&random_value(&mut rng, 4)).unwrap();
            if text.is_empty() {
                continue;
            }
            let at = rng.below(text.len());
            text[at] = alphabet[rng.below(alphabet.len())];
            let _ = scan(&text, &limits());
            let _ = scan(&text[..rng.below(text.len())], &limits());
        }
        // A lone escape or unfinished `\u` at the very end.
        for text in [&b"\"\\"[..], b"\"\\u00", b"\"\\u00\"", b"\"\\uZZ\"]", b"\""] {
            let _ = scan(text, &limits());
        }
        assert_eq!(summary(b"\"\\u00\"[").values, 2);
    }

    #[test]
    fn parse_cost_bounds_serde_json_heap() {
        let chain = |links: usize| format!("{}0{}", "{\"a\":".repeat(links), "}".repeat(links));
        let shapes: Vec<(&str, Vec<u8>)> = vec![
            (
                "zeros",
                format!("[{}]", vec!["0"; 99_999].join(",")).into_bytes(),
            ),
            (
                "strings",
                format!("[{}]", vec!["\"a\""; 99_999].join(",")).into_bytes(),
            ),
            (
                "empty keys",
                format!("[{}]", vec!["{\"\":0}"; 33_333].join(",")).into_bytes(),
            ),
            (
                "small keys",
                format!("[{}]", vec!["{\"ab\":[1]}"; 24_999].join(",")).into_bytes(),
            ),
            ("wide object", {
                let entries: Vec<String> = (0..49_999).map(|i| format!("\"{i}\":{i}")).collect();
                format!("{{{}}}", entries.join(",")).into_bytes()
            }),
            (
                "object chains",
                format!("[{}]", vec![chain(63); 780].join(",")).into_bytes(),
            ),
            ("array chains", {
                let link = format!("{}{}", "[".repeat(63), "]".repeat(63));
                format!("[{}]", vec![link; 1_580].join(",")).into_bytes()
            }),
            ("escaped string", {
                let mut text = vec![b'a'; 8 << 20];
                text.extend_from_slice(b"\\n");
                format!("[\"{}\"]", String::from_utf8(text).unwrap()).into_bytes()
            }),
            ("largest run_code", largest_run_code_call()),
        ];
        for (name, text) in shapes {
            let got = summary(&text);
            let (value, peak) =
                counting::peak_during(|| serde_json::from_slice::<Value>(&text).unwrap());
            drop(value);
            let per_value = peak.saturating_sub(text.len()) / got.values.max(1);
            eprintln!(
                "{name}: {} values, {} bytes: peak {peak} bytes, {per_value} a value \
                 beyond the text; parse_cost {}",
                got.values,
                got.bytes,
                got.parse_cost()
            );
            assert!(peak > 0, "{name}: the counting allocator saw nothing");
            assert!(
                peak <= got.parse_cost(),
                "{name}: peak {peak} over parse_cost {}",
                got.parse_cost()
            );
        }
    }
}
