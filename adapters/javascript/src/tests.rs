//! The interpreter run natively, with its output captured.

use std::cell::RefCell;
use std::rc::Rc;

use crate::engine::{Interpreter, Language, Output, Program, Stream};

/// Both streams, and their interleaving.
#[derive(Default)]
struct Captured {
    stdout: String,
    stderr: String,
}

#[derive(Clone, Default)]
struct Capture(Rc<RefCell<Captured>>);

impl Output for Capture {
    fn write(&self, stream: Stream, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let mut c = self.0.borrow_mut();
        match stream {
            Stream::Stdout => c.stdout.push_str(&text),
            Stream::Stderr => c.stderr.push_str(&text),
        }
    }
}

pub(crate) struct Session {
    interpreter: Interpreter,
    capture: Capture,
}

impl Session {
    fn new() -> Self {
        Session::of(Language::JavaScript)
    }

    pub(crate) fn of(language: Language) -> Self {
        let capture = Capture::default();
        let interpreter = Interpreter::new(Box::new(capture.clone()), language).unwrap();
        Session {
            interpreter,
            capture,
        }
    }

    /// Runs `code` with `stdin`: (exit code, stdout, stderr) of this call alone.
    fn run_with(
        &mut self,
        code: &str,
        stdin: Option<&str>,
        args: &[&str],
    ) -> (i32, String, String) {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let status = self.interpreter.run(&Program {
            code,
            args: &args,
            stdin: stdin.map(str::as_bytes),
        });
        let mut c = self.capture.0.borrow_mut();
        (
            status,
            std::mem::take(&mut c.stdout),
            std::mem::take(&mut c.stderr),
        )
    }

    /// Points `runbox:tools` at `dir` instead of `/tools`.
    pub(crate) fn set_tools_dir(&mut self, dir: &std::path::Path) {
        self.interpreter.set_tools_dir(dir);
    }

    /// Points `fetch` at `dir` instead of `/net`.
    pub(crate) fn set_net_dir(&mut self, dir: &std::path::Path) {
        self.interpreter.set_net_dir(dir);
    }

    pub(crate) fn run(&mut self, code: &str) -> (i32, String, String) {
        self.run_with(code, None, &[])
    }
}

fn run(code: &str) -> (i32, String, String) {
    Session::new().run(code)
}

fn stdout_of(code: &str) -> String {
    let (status, stdout, stderr) = run(code);
    assert_eq!(status, 0, "{code}: {stderr}");
    stdout
}

#[test]
fn hello() {
    assert_eq!(
        run("console.log('hello, world')"),
        (0, "hello, world\n".into(), String::new())
    );
}

#[test]
fn console_methods_pick_their_stream() {
    let (status, stdout, stderr) = run(
        "console.log('log'); console.info('info'); console.debug('debug');\n\
         console.error('error'); console.warn('warn'); print('print');",
    );
    assert_eq!(status, 0);
    assert_eq!(stdout, "log\ninfo\ndebug\nprint\n");
    assert_eq!(stderr, "error\nwarn\n");
}

/// Expected outputs are what Node.js 20 prints for the same program.
#[test]
fn values_print_like_node() {
    let cases: &[(&str, &str)] = &[
        ("console.log('a', 1, true, null, undefined, 10n, -0)", "a 1 true null undefined 10n -0\n"),
        ("console.log([1, 'two', [3]], {a: 1, 'b-c': 'it\\'s'})", "[ 1, 'two', [ 3 ] ] { a: 1, 'b-c': \"it's\" }\n"),
        ("console.log({a: {b: {c: {d: 1}}}})", "{ a: { b: { c: [Object] } } }\n"),
        (
            "console.log({a: 'x'.repeat(30), b: 'y'.repeat(30), c: 1})",
            "{\n  a: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',\n  b: 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyy',\n  c: 1\n}\n",
        ),
        (
            "console.log([...Array(30).keys()])",
            "[\n   0,  1,  2,  3,  4,  5,  6,  7,  8,\n   9, 10, 11, 12, 13, 14, 15, 16, 17,\n  18, 19, 20, 21, 22, 23, 24, 25, 26,\n  27, 28, 29\n]\n",
        ),
        ("console.log(new Map([[1, {a: 1}]]), new Set(['a']))", "Map(1) { 1 => { a: 1 } } Set(1) { 'a' }\n"),
        ("console.log([1, , 3], function f() {}, () => 1, class A {})", "[ 1, <1 empty item>, 3 ] [Function: f] [Function (anonymous)] [class A]\n"),
        ("const o = {name: 'o'}; o.self = o; console.log(o)", "<ref *1> { name: 'o', self: [Circular *1] }\n"),
        ("console.log(new Date(0), /re/g, new Uint8Array([1, 2]))", "1970-01-01T00:00:00.000Z /re/g Uint8Array(2) [ 1, 2 ]\n"),
        ("console.log(Promise.resolve(1), Object.create(null))", "Promise { 1 } [Object: null prototype] {}\n"),
        ("class Foo { constructor() { this.x = 1 } }; console.log(new Foo())", "Foo { x: 1 }\n"),
        ("console.log('%s is %d years', 'Bob', 42.5, 'extra')", "Bob is 42.5 years extra\n"),
        ("console.log(Array.from({length: 101}, () => 0).length, [1.5, NaN, Infinity])", "101 [ 1.5, NaN, Infinity ]\n"),
    ];
    for (code, expected) in cases {
        assert_eq!(&stdout_of(code), expected, "{code}");
    }
}

#[test]
fn errors_print_with_their_stack() {
    let out = stdout_of("function f() { return new Error('boom') }\nconsole.log(f())");
    assert_eq!(
        out,
        "Error: boom\n    at f (main.js:1:23)\n    at <main> (main.js:2:14)\n"
    );
}

#[test]
fn console_table_draws_a_table() {
    let out = stdout_of("console.table([{a: 1, b: 'x'}, {a: 2}])");
    assert_eq!(
        out,
        "┌─────────┬───┬─────┐\n\
         │ (index) │ a │ b   │\n\
         ├─────────┼───┼─────┤\n\
         │ 0       │ 1 │ 'x' │\n\
         │ 1       │ 2 │     │\n\
         └─────────┴───┴─────┘\n"
    );
}

// The expected outputs below are what Node.js 22 prints for the same programs.

#[test]
fn long_arrays_print_in_columns() {
    let cases: &[(&str, &str)] = &[
        (
            "console.log(Array.from({length: 120}, (_, i) => i * 3))",
            concat!(
                "[\n",
                "    0,   3,   6,   9,  12,  15,  18,  21,  24,  27,  30,  33,\n",
                "   36,  39,  42,  45,  48,  51,  54,  57,  60,  63,  66,  69,\n",
                "   72,  75,  78,  81,  84,  87,  90,  93,  96,  99, 102, 105,\n",
                "  108, 111, 114, 117, 120, 123, 126, 129, 132, 135, 138, 141,\n",
                "  144, 147, 150, 153, 156, 159, 162, 165, 168, 171, 174, 177,\n",
                "  180, 183, 186, 189, 192, 195, 198, 201, 204, 207, 210, 213,\n",
                "  216, 219, 222, 225, 228, 231, 234, 237, 240, 243, 246, 249,\n",
                "  252, 255, 258, 261, 264, 267, 270, 273, 276, 279, 282, 285,\n",
                "  288, 291, 294, 297,\n",
                "  ... 20 more items\n",
                "]\n",
            ),
        ),
        (
            "console.log([1.5, -0, 0, 1e21, 2n, -3n, 10, 100, 1000])",
            concat!(
                "[\n",
                "    1.5,  -0,    0,\n",
                "  1e+21,  2n,  -3n,\n",
                "     10, 100, 1000\n",
                "]\n",
            ),
        ),
        (
            "console.log(Array.from({length: 10}, (_, i) => 'ab'.repeat(i % 4)))",
            concat!(
                "[\n",
                "  '',     'ab',\n",
                "  'abab', 'ababab',\n",
                "  '',     'ab',\n",
                "  'abab', 'ababab',\n",
                "  '',     'ab'\n",
                "]\n",
            ),
        ),
        (
            "console.log(Array.from({length: 7}, (_, i) => ({ i })))",
            concat!(
                "[\n",
                "  { i: 0 }, { i: 1 },\n",
                "  { i: 2 }, { i: 3 },\n",
                "  { i: 4 }, { i: 5 },\n",
                "  { i: 6 }\n",
                "]\n",
            ),
        ),
        (
            "console.log([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6, 7])",
            concat!(
                "[ 1, 2, 3, 4, 5, 6 ] [\n",
                "  1, 2, 3, 4,\n",
                "  5, 6, 7\n",
                "]\n",
            ),
        ),
    ];
    for (code, expected) in cases {
        assert_eq!(&stdout_of(code), expected, "{code}");
    }
}

#[test]
fn lines_break_past_80_columns() {
    let cases: &[(&str, &str)] = &[
        (
            "console.log({k: 'x'.repeat(62)}); console.log({k: 'x'.repeat(63)})",
            concat!(
                "{ k: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' }\n",
                "{\n",
                "  k: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'\n",
                "}\n",
            ),
        ),
        (
            "console.log({outer: {inner: 'y'.repeat(55)}})",
            concat!(
                "{\n",
                "  outer: { inner: 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy' }\n",
                "}\n",
            ),
        ),
        (
            "console.log({text: 'word word\\n'.repeat(8)})",
            concat!(
                "{\n",
                "  text: 'word word\\n' +\n",
                "    'word word\\n' +\n",
                "    'word word\\n' +\n",
                "    'word word\\n' +\n",
                "    'word word\\n' +\n",
                "    'word word\\n' +\n",
                "    'word word\\n' +\n",
                "    'word word\\n'\n",
                "}\n",
            ),
        ),
        (
            "console.log(['x'.repeat(20), 'y'.repeat(20), 'z'.repeat(20)])",
            concat!(
                "[\n",
                "  'xxxxxxxxxxxxxxxxxxxx',\n",
                "  'yyyyyyyyyyyyyyyyyyyy',\n",
                "  'zzzzzzzzzzzzzzzzzzzz'\n",
                "]\n",
            ),
        ),
    ];
    for (code, expected) in cases {
        assert_eq!(&stdout_of(code), expected, "{code}");
    }
}

#[test]
fn nesting_stops_at_the_depth_limit() {
    let cases: &[(&str, &str)] = &[
        (
            "console.log([[[[1]]]], {a: [{b: [{c: 1}]}]}, new Map([[1, new Map([[2, new Map([[3, 4]])]])]]))",
            "[ [ [ [Array] ] ] ] { a: [ { b: [Array] } ] } Map(1) { 1 => Map(1) { 2 => Map(1) { 3 => 4 } } }\n",
        ),
        (
            "const util = require('util'); console.log(util.inspect({a: {b: {c: {d: {e: 1}}}}}, {depth: 9}))",
            concat!(
                "{\n",
                "  a: {\n",
                "    b: { c: { d: { e: 1 } } }\n",
                "  }\n",
                "}\n",
            ),
        ),
        (
            "const util = require('util'); console.log(util.inspect({a: {b: 1}}, {depth: 0}), util.inspect({a: {b: {c: {d: {}}}}}, {depth: null}))",
            concat!(
                "{ a: [Object] } {\n",
                "  a: { b: { c: { d: {} } } }\n",
                "}\n",
            ),
        ),
    ];
    for (code, expected) in cases {
        assert_eq!(&stdout_of(code), expected, "{code}");
    }
}

#[test]
fn circular_references_are_numbered() {
    let cases: &[(&str, &str)] = &[
        (
            "const o = {a: [1]}; o.a.push(o); o.b = {c: o.a}; console.log(o)",
            "<ref *1> { a: [ 1, [Circular *1] ], b: { c: [ 1, [Circular *1] ] } }\n",
        ),
        (
            "const x = {}; const y = {x}; x.y = y; console.log([x, y])",
            concat!(
                "[\n",
                "  <ref *1> { y: { x: [Circular *1] } },\n",
                "  <ref *2> { x: <ref *1> { y: [Circular *2] } }\n",
                "]\n",
            ),
        ),
        (
            "const m = new Map(); m.set('self', m); console.log(m)",
            "<ref *1> Map(1) { 'self' => [Circular *1] }\n",
        ),
    ];
    for (code, expected) in cases {
        assert_eq!(&stdout_of(code), expected, "{code}");
    }
}

#[test]
fn objects_show_their_class_and_contents() {
    let cases: &[(&str, &str)] = &[
        (
            "class Point { constructor() { this.x = 1; this.y = 2 } }; class Empty {}; class List extends Array {}; class Dict extends Map {}; console.log(new Point(), new Empty(), List.from([1, 2]), new Dict([['k', 1]]))",
            "Point { x: 1, y: 2 } Empty {} List(2) [ 1, 2 ] Dict(1) [Map] { 'k' => 1 }\n",
        ),
        (
            "console.log(Object.assign(Object.create(null), {a: 1}), new (class T { get [Symbol.toStringTag]() { return 'Tag' } })())",
            "[Object: null prototype] { a: 1 } T [Tag] {}\n",
        ),
        (
            "console.log(new Map([[{a: 1}, new Set([[1, 2]])], ['k', new Map([['n', []]])]]), new Set([new Set([1]), 'a']))",
            "Map(2) { { a: 1 } => Set(1) { [ 1, 2 ] }, 'k' => Map(1) { 'n' => [] } } Set(2) { Set(1) { 1 }, 'a' }\n",
        ),
        (
            "console.log({get a() { return 1 }, set b(v) {}, get c() { return 1 }, set c(v) {}, [Symbol('s')]: 'sym', 'a-b': \"it's\", [Symbol.iterator]: 0})",
            concat!(
                "{\n",
                "  a: [Getter],\n",
                "  b: [Setter],\n",
                "  c: [Getter/Setter],\n",
                "  'a-b': \"it's\",\n",
                "  [Symbol(s)]: 'sym',\n",
                "  [Symbol(Symbol.iterator)]: 0\n",
                "}\n",
            ),
        ),
        (
            "console.log(Object.assign([1, 2, 3], {foo: 'bar'}), [1, , 3, , , 6], new Uint8Array([1, 2, 3]), new ArrayBuffer(3))",
            "[ 1, 2, 3, foo: 'bar' ] [ 1, <1 empty item>, 3, <2 empty items>, 6 ] Uint8Array(3) [ 1, 2, 3 ] ArrayBuffer { [Uint8Contents]: <00 00 00>, [byteLength]: 3 }\n",
        ),
        (
            "console.log([async function af() {}, function* g() {}, class B extends Map {}], Object.assign(function f() {}, {a: 1}))",
            "[ [AsyncFunction: af], [GeneratorFunction: g], [class B extends Map] ] [Function: f] { a: 1 }\n",
        ),
        (
            "console.log([new Number(3), new String('ab')], Promise.resolve([1]), new WeakMap())",
            "[ [Number: 3], [String: 'ab'] ] Promise { [ 1 ] } WeakMap { <items unknown> }\n",
        ),
    ];
    for (code, expected) in cases {
        assert_eq!(&stdout_of(code), expected, "{code}");
    }
}

#[test]
fn format_specifiers_take_their_arguments() {
    let cases: &[(&str, &str)] = &[
        (
            "console.log('%s|%d|%i|%f|%j|%o|%O|%c|%%|%s', 'str', '42', 42.9, '1.5x', {a: [1]}, [1], {b: {c: {d: {}}}}, 'color: red', 'last', 'extra', 7)",
            "str|42|42|1.5|{\"a\":[1]}|[ 1, [length]: 1 ]|{ b: { c: { d: {} } } }||%|last extra 7\n",
        ),
        (
            "console.log('%s %s', {a: {b: 1}}, 5n, -0); console.log('%d%%', 50, 'left'); console.log('%s')",
            concat!(
                "{ a: [Object] } 5n -0\n",
                "50% left\n",
                "%s\n",
            ),
        ),
        (
            "const util = require('util'); console.log(util.format('%s:%s', 'a'), util.format(1, 'b', [2]), util.format('%i', 5n))",
            "a:1 b [ 2 ] 5n\n",
        ),
    ];
    for (code, expected) in cases {
        assert_eq!(&stdout_of(code), expected, "{code}");
    }
}

#[test]
fn console_table_handles_maps_sets_and_chosen_columns() {
    let cases: &[(&str, &str)] = &[
        (
            "console.table(new Map([['k', {x: 1}], ['j', 2]])); console.table(new Set(['a']))",
            concat!(
                "┌───────────────────┬─────┬──────────┐\n",
                "│ (iteration index) │ Key │ Values   │\n",
                "├───────────────────┼─────┼──────────┤\n",
                "│ 0                 │ 'k' │ { x: 1 } │\n",
                "│ 1                 │ 'j' │ 2        │\n",
                "└───────────────────┴─────┴──────────┘\n",
                "┌───────────────────┬────────┐\n",
                "│ (iteration index) │ Values │\n",
                "├───────────────────┼────────┤\n",
                "│ 0                 │ 'a'    │\n",
                "└───────────────────┴────────┘\n",
            ),
        ),
        (
            "console.table([{a: 1, b: 2}, {b: 3, c: 4}, 5], ['b', 'c'])",
            concat!(
                "┌─────────┬───┬───┐\n",
                "│ (index) │ b │ c │\n",
                "├─────────┼───┼───┤\n",
                "│ 0       │ 2 │   │\n",
                "│ 1       │ 3 │ 4 │\n",
                "│ 2       │   │   │\n",
                "└─────────┴───┴───┘\n",
            ),
        ),
        (
            "console.table([[1, 'two'], {x: null}, 'plain'])",
            concat!(
                "┌─────────┬───┬───────┬──────┬─────────┐\n",
                "│ (index) │ 0 │ 1     │ x    │ Values  │\n",
                "├─────────┼───┼───────┼──────┼─────────┤\n",
                "│ 0       │ 1 │ 'two' │      │         │\n",
                "│ 1       │   │       │ null │         │\n",
                "│ 2       │   │       │      │ 'plain' │\n",
                "└─────────┴───┴───────┴──────┴─────────┘\n",
            ),
        ),
    ];
    for (code, expected) in cases {
        assert_eq!(&stdout_of(code), expected, "{code}");
    }
}

#[test]
fn stdin_reads_every_way() {
    let input = Some("abc\ndef\n");
    let cases: &[&str] = &[
        "console.log(readStdin().trim().split('\\n').join(','))",
        "console.log(std.in.readAsString().trim().split('\\n').join(','))",
        "console.log(require('fs').readFileSync(0, 'utf8').trim().split('\\n').join(','))",
        "console.log(require('fs').readFileSync('/dev/stdin').toString().trim().split('\\n').join(','))",
        "const lines = []; let l; while ((l = std.in.getline()) !== null) lines.push(l); console.log(lines.join(','))",
        "const rl = require('readline').createInterface({input: process.stdin}); const lines = [];\n\
         rl.on('line', (l) => lines.push(l)); rl.on('close', () => console.log(lines.join(',')));",
        "let s = ''; process.stdin.on('data', (c) => s += c); process.stdin.on('end', () => console.log(s.trim().split('\\n').join(',')));",
        "(async () => { const lines = []; for await (const l of require('readline').createInterface({input: process.stdin})) lines.push(l); console.log(lines.join(',')); })()",
    ];
    for code in cases {
        let (status, stdout, stderr) = Session::new().run_with(code, input, &[]);
        assert_eq!(
            (status, stdout.as_str()),
            (0, "abc,def\n"),
            "{code}: {stderr}"
        );
    }
    // Without stdin the input is empty at once.
    assert_eq!(
        stdout_of("console.log(JSON.stringify(readStdin()))"),
        "\"\"\n"
    );
}

#[test]
fn exit_ends_the_program_with_its_code() {
    let cases: &[(&str, i32, &str)] = &[
        ("console.log('bye'); exit(3); console.log('not reached')", 3, "bye\n"),
        ("try { process.exit(4) } catch (e) { console.log('caught') } finally { console.log('finally') }", 4, ""),
        ("function deep(n) { if (n === 0) std.exit(5); deep(n - 1) } deep(50)", 5, ""),
        ("[1, 2, 3].forEach((x) => { if (x === 2) exit(6); console.log(x) })", 6, "1\n"),
        ("Promise.resolve().then(() => exit(7)); setTimeout(() => console.log('late'), 10)", 7, ""),
        ("setTimeout(() => { console.log('in timer'); process.exit(8) }, 1)", 8, "in timer\n"),
        ("(async () => { await null; exit(9) })()", 9, ""),
        ("process.exitCode = 10; console.log('done')", 10, "done\n"),
        ("process.exitCode = 11; process.exit()", 11, ""),
        ("exit()", 0, ""),
    ];
    for (code, status, stdout) in cases {
        let (got, out, err) = run(code);
        assert_eq!((got, out.as_str()), (*status, *stdout), "{code}: {err}");
    }
}

#[test]
fn uncaught_exceptions_go_to_stderr_with_exit_code_1() {
    let (status, stdout, stderr) = run("console.log('before');\nthrow new Error('boom');");
    assert_eq!((status, stdout.as_str()), (1, "before\n"));
    assert_eq!(
        stderr,
        "Uncaught Error: boom\n    at <main> (main.js:2:7)\n"
    );

    let (status, _, stderr) = run("throw 42");
    assert_eq!((status, stderr.as_str()), (1, "Uncaught 42\n"));

    let (status, _, stderr) = run("let x = ;");
    assert_eq!(status, 1);
    assert_eq!(
        stderr,
        "Uncaught SyntaxError: unexpected token ';', primary expression at line 1, col 9\n"
    );

    let (status, _, stderr) = run("setTimeout(() => { throw new TypeError('in timer') }, 0)");
    assert_eq!(status, 1);
    assert!(
        stderr.starts_with("Uncaught TypeError: in timer\n"),
        "{stderr}"
    );
}

#[test]
fn unhandled_rejections_end_the_program() {
    let (status, stdout, stderr) =
        run("Promise.reject(new Error('nobody')); setTimeout(() => console.log('late'), 0)");
    assert_eq!((status, stdout.as_str()), (1, ""));
    assert!(
        stderr.starts_with("Uncaught (in promise) Error: nobody\n"),
        "{stderr}"
    );

    let (status, _, stderr) = run("async function main() { throw new RangeError('async') } main()");
    assert_eq!(status, 1);
    assert!(
        stderr.starts_with("Uncaught (in promise) RangeError: async"),
        "{stderr}"
    );

    // Handled in time: no error.
    let out = stdout_of("const p = Promise.reject(1); p.catch((v) => console.log('caught', v))");
    assert_eq!(out, "caught 1\n");
}

/// Times far apart: an interval of 1 ms three times comes before a 200 ms timer even on
/// a loaded machine (10 ms was not always enough: each tick is rescheduled from when it ran).
#[test]
fn async_code_and_timers_run_to_the_end() {
    let out = stdout_of(
        "const sleep = (ms) => new Promise((r) => setTimeout(r, ms));\n\
         async function main() { console.log('start'); await sleep(400); console.log('after 400'); return 'value' }\n\
         main().then((v) => console.log(v));\n\
         setTimeout(() => console.log('timer 200'), 200);\n\
         let n = 0; const id = setInterval(() => { if (++n === 3) { clearInterval(id); console.log('interval x3') } }, 1);\n\
         console.log('sync end');",
    );
    assert_eq!(
        out,
        "start\nsync end\ninterval x3\ntimer 200\nafter 400\nvalue\n"
    );
}

#[test]
fn sessions_keep_state_across_calls() {
    let mut s = Session::new();
    assert_eq!(s.run("var counter = 1; function bump() { return ++counter } let kept = 'let'; globalThis.g = 'g'").0, 0);
    assert_eq!(s.run("console.log(bump(), kept, g)").1, "2 let g\n");
    // An exception keeps what ran before it, and the state of earlier calls.
    let (status, _, stderr) = s.run("counter = 10; throw new Error('oops'); counter = 20");
    assert_eq!(status, 1, "{stderr}");
    assert_eq!(s.run("console.log(bump())").1, "11\n");
    // So does exit().
    assert_eq!(s.run("counter = 100; exit(2)").0, 2);
    assert_eq!(s.run("console.log(bump())").1, "101\n");
    // Nothing of a stopped call runs in the next one.
    assert_eq!(
        s.run("setTimeout(() => console.log('stale'), 0); throw 1")
            .0,
        1
    );
    assert_eq!(s.run("console.log('fresh')").1, "fresh\n");
    // Each call has its own stdin and arguments.
    assert_eq!(
        s.run_with("console.log(readStdin())", Some("one"), &[]).1,
        "one\n"
    );
    assert_eq!(
        s.run_with(
            "console.log(readStdin(), process.argv.slice(2))",
            Some("two"),
            &["x"]
        )
        .1,
        "two [ 'x' ]\n"
    );
    assert_eq!(
        s.run("console.log(JSON.stringify(readStdin()))").1,
        "\"\"\n"
    );
}

#[test]
fn files_can_be_written_and_read() {
    let dir = std::env::temp_dir().join(format!("runbox-js-test-{}", std::process::id()));
    let dir = dir.to_str().unwrap().to_string();
    let code = format!(
        "const fs = require('fs'); const d = {dir:?};\n\
         fs.mkdirSync(d + '/sub', {{ recursive: true }});\n\
         fs.writeFileSync(d + '/sub/a.txt', 'hello');\n\
         fs.appendFileSync(d + '/sub/a.txt', ' world');\n\
         console.log(fs.readFileSync(d + '/sub/a.txt', 'utf8'), fs.existsSync(d + '/nope'), fs.readdirSync(d + '/sub'));\n\
         console.log(fs.statSync(d + '/sub/a.txt').size, fs.statSync(d + '/sub').isDirectory());\n\
         try {{ fs.readFileSync(d + '/nope') }} catch (e) {{ console.log(e.code, e.message.startsWith('ENOENT: no such file or directory, open')) }}\n\
         fs.rmSync(d, {{ recursive: true }}); console.log(fs.existsSync(d));"
    );
    assert_eq!(
        stdout_of(&code),
        "hello world false [ 'a.txt' ]\n11 true\nENOENT true\nfalse\n"
    );
}

#[test]
fn modern_javascript_works() {
    let out = stdout_of(
        "class P { #x = 1; static s = 2; get x() { return this.#x } }\n\
         const { a, ...rest } = { a: 1, b: 2, c: 3 };\n\
         console.log(new P().x, P.s, rest, [3, 1, 2].toSorted(), [1, 2, 3].findLast((x) => x < 3),\n\
           Object.groupBy([1, 2, 3], (x) => (x % 2 ? 'odd' : 'even')), 2n ** 64n, 'abc'.at(-1), null ?? 'dflt',\n\
           [1, [2, [3]]].flat(Infinity), new TextDecoder().decode(new TextEncoder().encode('é')), structuredClone({ k: [1] }),\n\
           'x'.padStart(3, '-'), 'ab'.substr(1), btoa('hi'));",
    );
    assert_eq!(
        out,
        "1 2 { b: 2, c: 3 } [ 1, 2, 3 ] 2 [Object: null prototype] { odd: [ 1, 3 ], even: [ 2 ] } 18446744073709551616n c dflt [ 1, 2, 3 ] é { k: [ 1 ] } --x b aGk=\n"
    );
}

#[test]
fn modules_and_top_level_await_run_as_modules() {
    let out = stdout_of("const v = await Promise.resolve(41); console.log(v + 1); export {};");
    assert_eq!(out, "42\n");
    let (status, _, stderr) = run("await null; throw new Error('in module')");
    assert_eq!(status, 1);
    assert!(
        stderr.starts_with("Uncaught Error: in module\n"),
        "{stderr}"
    );
    // A syntax error in both reads as the script's.
    let (status, _, stderr) = run("await (");
    assert_eq!(status, 1);
    assert!(stderr.starts_with("Uncaught SyntaxError"), "{stderr}");
}

#[test]
fn node_helpers_exist() {
    let out = stdout_of(
        "class E extends Error { constructor(m) { super(m); Error.captureStackTrace(this, E) } }\n\
         setImmediate(() => console.log('immediate', new E('x').message));\n\
         console.log(require('util').format('%s=%d', 'n', 1), typeof require('events'), module.exports);",
    );
    assert_eq!(out, "n=1 function {}\nimmediate x\n");
    let (status, _, stderr) = run("require('left-pad')");
    assert_eq!(status, 1);
    assert!(
        stderr.starts_with("Uncaught Error: Cannot find module 'left-pad'"),
        "{stderr}"
    );
}

#[test]
fn deep_recursion_is_allowed_and_runaway_recursion_stops() {
    assert_eq!(
        stdout_of("function f(n) { return n ? f(n - 1) + 1 : 0 } console.log(f(5000))"),
        "5000\n"
    );
    let (status, _, stderr) = run("function f() { return f() + 1 } f()");
    assert_eq!(status, 1);
    assert!(stderr.starts_with("Uncaught RuntimeLimitError"), "{stderr}");
}

#[test]
fn buffers_decode_and_encode() {
    let out = stdout_of(
        "const b = Buffer.from('héllo'); console.log(b.length, b.toString(), b.toString('hex'), b.toString('base64'),\n\
         Buffer.from('aGk=', 'base64').toString(), Buffer.concat([Buffer.from('a'), Buffer.from('b')]).toString())",
    );
    assert_eq!(out, "6 héllo 68c3a96c6c6f aMOpbGxv hi ab\n");
    assert_eq!(
        stdout_of("console.log(Buffer.from('hi'), [Buffer.alloc(0)])"),
        "<Buffer 68 69> [ <Buffer > ]\n"
    );
}

#[test]
fn fs_errors_are_worded_like_node() {
    let e = std::io::Error::from(std::io::ErrorKind::NotFound);
    assert_eq!(
        crate::natives::fs_error_message(&e, "open", "x.txt"),
        "ENOENT: no such file or directory, open 'x.txt'"
    );
    // A full scratch directory is ENOSPC, as a full disk is to Node.js, not EIO.
    let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
    assert_eq!(
        crate::natives::fs_error_message(&full, "open", "big.bin"),
        "ENOSPC: no space left on device, open 'big.bin'"
    );
}

#[test]
fn utf8_decoding_follows_text_decoder() {
    use crate::natives::decode_utf8;
    assert_eq!(
        decode_utf8(b"\xEF\xBB\xBFhi", false, false).as_deref(),
        Some("hi")
    );
    assert_eq!(
        decode_utf8(b"\xEF\xBB\xBFhi", false, true).as_deref(),
        Some("\u{feff}hi")
    );
    assert_eq!(
        decode_utf8(b"a\xFFb", false, false).as_deref(),
        Some("a\u{fffd}b")
    );
    assert_eq!(decode_utf8(b"a\xFFb", true, false), None);
}
