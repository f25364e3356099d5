//! TypeScript programs run natively: transpiled, not checked, with their own positions.

use crate::engine::Language;
use crate::tests::Session;

fn run(code: &str) -> (i32, String, String) {
    Session::of(Language::TypeScript).run(code)
}

#[test]
fn interfaces_generics_and_enums_run() {
    let code = r#"
interface Point { x: number; y: number }
enum Color { Red, Green = 5, Blue }
enum Named { A = "a", B = "b" }
function largest<T extends Point>(points: T[]): T {
  return points.reduce((a, b) => (a.x + a.y >= b.x + b.y ? a : b));
}
class Box<T> {
  constructor(private readonly value: T, public label: string = "box") {}
  get(): T { return this.value; }
}
const p = largest<Point>([{ x: 1, y: 2 }, { x: 5, y: 1 }]);
console.log(p.x, Color.Green, Color[6], Named.B, new Box<number>(7).get(), new Box(1).label);
let n = <number>(41 as unknown) + 1;
console.log(n!, typeof (null as any));
"#;
    let (status, stdout, stderr) = run(code);
    assert_eq!((status, stderr.as_str()), (0, ""));
    assert_eq!(stdout, "5 5 Blue b 7 box\n42 object\n");
}

#[test]
fn namespaces_compile() {
    let code = "namespace Geometry {\n  export const unit = 2;\n  export function area(r: number): number { return unit * r * r; }\n}\nconsole.log(Geometry.area(3));\n";
    assert_eq!(run(code), (0, "18\n".into(), String::new()));
}

#[test]
fn type_errors_are_not_reported() {
    let code = "const n: number = \"not a number\";\nfunction f(x: string): number { return x as any; }\nconsole.log(n, f('y'));\n";
    assert_eq!(run(code), (0, "not a number y\n".into(), String::new()));
}

#[test]
fn a_syntax_error_points_at_its_line() {
    let code = "interface A { a: number }\nconst x: A = { a: 1 };\nconst y = ;\nconsole.log(x);\n";
    let (status, stdout, stderr) = run(code);
    assert_eq!((status, stdout.as_str()), (1, ""));
    assert!(stderr.starts_with("Uncaught SyntaxError: "), "{stderr}");
    assert!(stderr.contains("at line 3, col 11"), "{stderr}");
}

#[test]
fn a_thrown_error_points_at_the_programs_own_line() {
    // Types and an interface above the throw: the JavaScript has other line numbers.
    let code = "interface Shape {\n  area(): number;\n}\ntype Id = string;\n\nfunction fail(id: Id): never {\n  throw new Error(`no ${id}`);\n}\nfail('x');\n";
    let (status, _, stderr) = run(code);
    assert_eq!(status, 1);
    assert!(stderr.contains("Uncaught Error: no x"), "{stderr}");
    assert!(stderr.contains("main.ts:7:"), "{stderr}");
    assert!(stderr.contains("main.ts:9:"), "{stderr}");
}

#[test]
fn modules_and_top_level_await_run() {
    let code = "import type { Foo } from './nowhere';\nexport const answer: number = await Promise.resolve(42);\nconsole.log(answer);\n";
    assert_eq!(run(code), (0, "42\n".into(), String::new()));
}

#[test]
fn a_session_keeps_its_declarations() {
    let mut session = Session::of(Language::TypeScript);
    assert_eq!(session.run("enum E { A = 3 }\nlet count: number = 1;\nfunction twice(n: number): number { return 2 * n; }\n").0, 0);
    assert_eq!(
        session.run("count += E.A;\nconsole.log(twice(count));\n"),
        (0, "8\n".into(), String::new())
    );
}

#[test]
fn node_modules_are_imported_by_name() {
    let code = "import { readFileSync, writeFileSync } from 'node:fs';\nimport fs from 'fs';\nimport * as util from 'util';\nconsole.log(typeof readFileSync, typeof writeFileSync, typeof fs.existsSync, typeof util.format);\n";
    assert_eq!(
        run(code),
        (
            0,
            "function function function function\n".into(),
            String::new()
        )
    );
    let (status, _, stderr) = run("import { pad } from 'left-pad';\nconsole.log(pad);\n");
    assert_eq!(status, 1);
    assert!(stderr.contains("Cannot find module 'left-pad'"), "{stderr}");
}

#[test]
fn files_of_the_working_directory_are_imported() {
    let dir = std::env::temp_dir().join(format!("runbox-ts-modules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("shapes.ts"), "export interface Sq { side: number }\nexport const area = (s: Sq): number => s.side ** 2;\n").unwrap();
    std::fs::write(
        dir.join("util.js"),
        "export function twice(n) { return 2 * n; }\n",
    )
    .unwrap();
    let base = dir.to_string_lossy();
    let code = format!("import {{ area, type Sq }} from '{base}/shapes.js';\nimport {{ twice }} from '{base}/util';\nconst s: Sq = {{ side: 3 }};\nconsole.log(twice(area(s)));\n");
    let result = run(&code);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(result, (0, "18\n".into(), String::new()));
}
