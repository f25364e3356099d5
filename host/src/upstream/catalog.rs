//! What programs are told about the tools they may call: the allowed tools of every
//! upstream server, as `/tools/tools.json` (the schemas), `/tools/README.md` (a line per
//! tool and how to call it from each runtime), `/tools/index.d.ts` (TypeScript
//! declarations of `runbox:tools`), and the one-line summary in `list_runtimes` and the
//! run_code description.

use std::fmt::Write as _;

use rmcp::model::Tool;
use serde_json::{json, Map, Value};

/// One server as programs see it.
#[derive(Debug, Clone)]
pub struct ServerView {
    pub name: String,
    /// Connected, with its tools listed.
    pub available: bool,
    /// Why it is not available (or what it is doing).
    pub message: Option<String>,
    /// Its allowed tools, in the server's order.
    pub tools: Vec<Tool>,
}

/// Every server, in the config's order.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub servers: Vec<ServerView>,
}

/// A description's first sentence or line, at most `max` characters.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    let sentence = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    if sentence.chars().count() <= max {
        sentence.to_string()
    } else {
        let cut: String = sentence.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// The top-level properties of a tool's input schema, and whether each is required: the
/// required ones first, in the order the schema lists them, then the others.
fn parameters(tool: &Tool) -> Vec<(String, bool)> {
    let Some(props) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    let required: Vec<&str> = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut all: Vec<(String, bool)> = required
        .iter()
        .filter(|name| props.contains_key(**name))
        .map(|name| (name.to_string(), true))
        .collect();
    all.extend(
        props
            .keys()
            .filter(|k| !required.contains(&k.as_str()))
            .map(|k| (k.clone(), false)),
    );
    all
}

/// `name(a, b?) -> answer: what it does`, the description cut to `max` characters.
pub fn tool_line(tool: &Tool, max: usize) -> String {
    let what = first_line(tool.description.as_deref().unwrap_or(""), max);
    format!(
        "{} -> {}: {what}",
        signature(tool),
        answer_shape(tool, SHAPE_CHARS)
    )
}

/// How long an answer's shape may be in a tool's line.
const SHAPE_CHARS: usize = 80;

/// What the bindings hand back for `tool`, in at most about `max` characters: the shape
/// its `outputSchema` declares (`{content: string}`: the value is that structure), or
/// `text` (the value is the text of its answer).
pub fn answer_shape(tool: &Tool, max: usize) -> String {
    let Some(schema) = &tool.output_schema else {
        return "text".into();
    };
    let root = Value::Object((**schema).clone());
    // The whole shape if it fits, else shallower, else the top-level keys alone.
    for depth in (1..=6).rev() {
        let shape = Shape { root: &root, depth }.of(&root, 0);
        if shape.chars().count() <= max {
            return shape;
        }
    }
    let keys = Shape {
        root: &root,
        depth: 0,
    }
    .of(&root, 0);
    if keys.chars().count() <= max {
        keys
    } else {
        "object".into()
    }
}

/// A JSON Schema written short, for a model: `{a: string, b?: [number]}`; `$ref`s to the
/// schema's own `$defs` followed; an object nested `depth` levels deep (arrays count) is
/// `{…}`; with `depth` 0, the top-level object's keys alone.
struct Shape<'a> {
    root: &'a Value,
    depth: usize,
}

impl Shape<'_> {
    fn of(&self, schema: &Value, level: usize) -> String {
        if level > 12 {
            return "…".into();
        }
        let Some(obj) = schema.as_object() else {
            return "any".into();
        };
        if let Some(target) = obj.get("$ref").and_then(Value::as_str) {
            return match self.resolve(target) {
                Some(found) => self.of(found, level + 1),
                None => "any".into(),
            };
        }
        if let Some(c) = obj.get("const") {
            return c.to_string();
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            if !values.is_empty() && values.len() <= 4 {
                let parts: Vec<String> = values.iter().map(Value::to_string).collect();
                return parts.join("|");
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(alts) = obj.get(key).and_then(Value::as_array) {
                let parts: Vec<String> = alts.iter().map(|a| self.of(a, level + 1)).collect();
                if !parts.is_empty() {
                    return parts.join(" | ");
                }
            }
        }
        let kind = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(types)) => {
                let parts: Vec<String> = types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|t| {
                        let mut one = obj.clone();
                        one.insert("type".into(), Value::String(t.to_string()));
                        self.of(&Value::Object(one), level + 1)
                    })
                    .collect();
                return parts.join(" | ");
            }
            _ if obj.contains_key("properties") => "object",
            _ => return "any".into(),
        };
        match kind {
            "array" => {
                let item = obj
                    .get("items")
                    .map_or("any".into(), |i| self.of(i, level + 1));
                format!("[{item}]")
            }
            "object" => self.object(obj, level),
            other => other.to_string(),
        }
    }

    fn object(&self, obj: &Map<String, Value>, level: usize) -> String {
        let Some(props) = obj.get("properties").and_then(Value::as_object) else {
            return "object".into();
        };
        if props.is_empty() {
            return "{}".into();
        }
        if level > 0 && level >= self.depth {
            return "{…}".into();
        }
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let fields: Vec<String> = props
            .iter()
            .map(|(k, v)| {
                let optional = if required.contains(&k.as_str()) {
                    ""
                } else {
                    "?"
                };
                if self.depth == 0 {
                    format!("{k}{optional}")
                } else {
                    format!("{k}{optional}: {}", self.of(v, level + 1))
                }
            })
            .collect();
        format!("{{{}}}", fields.join(", "))
    }

    /// `#/$defs/NAME` (or `#/definitions/NAME`) in the schema's root.
    fn resolve(&self, target: &str) -> Option<&Value> {
        let path = target.strip_prefix("#/")?;
        let mut at = self.root;
        for part in path.split('/') {
            at = at.get(part)?;
        }
        Some(at)
    }
}

/// `name(a, b?)`: a tool's call shape in one line.
fn signature(tool: &Tool) -> String {
    let params: Vec<String> = parameters(tool)
        .into_iter()
        .map(|(name, required)| if required { name } else { format!("{name}?") })
        .collect();
    format!("{}({})", tool.name, params.join(", "))
}

impl Catalog {
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    pub fn tool_count(&self) -> usize {
        self.servers.iter().map(|s| s.tools.len()).sum()
    }

    /// A line per tool (`server.tool(args): what it does`) and per unavailable server.
    pub fn summary_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for server in &self.servers {
            if !server.available {
                lines.push(format!(
                    "{} (unavailable: {})",
                    server.name,
                    server.message.as_deref().unwrap_or("not connected")
                ));
            }
            for tool in &server.tools {
                lines.push(format!("{}.{}", server.name, tool_line(tool, 80)));
            }
        }
        lines
    }

    /// `/tools/tools.json`.
    pub fn tools_json(&self) -> String {
        let mut servers = Map::new();
        for s in &self.servers {
            let tools: Vec<Value> = s
                .tools
                .iter()
                .map(|t| {
                    let mut v = json!({
                        "name": t.name,
                        "description": t.description.as_deref().unwrap_or(""),
                        "inputSchema": *t.input_schema,
                    });
                    if let Some(out) = &t.output_schema {
                        v["outputSchema"] = Value::Object((**out).clone());
                    }
                    v
                })
                .collect();
            let mut entry = json!({"available": s.available, "tools": tools});
            if let Some(m) = &s.message {
                entry["message"] = json!(m);
            }
            servers.insert(s.name.clone(), entry);
        }
        serde_json::to_string_pretty(&json!({ "servers": servers })).unwrap_or_default()
    }

    /// `/tools/README.md`.
    pub fn readme(&self) -> String {
        let mut md = String::from(
            "# Tools this sandbox may call\n\n\
             Generated by runbox from the upstream MCP servers its operator named. Full \
             schemas: `/tools/tools.json`; TypeScript declarations: `/tools/index.d.ts`.\n",
        );
        for s in &self.servers {
            let _ = writeln!(md, "\n## {}\n", s.name);
            if !s.available {
                let _ = writeln!(
                    md,
                    "Unavailable: {}\n",
                    s.message.as_deref().unwrap_or("not connected")
                );
            }
            if s.tools.is_empty() {
                md.push_str("No tool of this server is allowed (yet).\n");
            }
            for t in &s.tools {
                let what = first_line(t.description.as_deref().unwrap_or(""), 200);
                let answer = answer_shape(t, 400);
                let _ = writeln!(md, "- `{}` -> `{answer}`: {what}", signature(t));
            }
        }
        md.push_str(CALLING);
        md
    }

    /// `/tools/index.d.ts`.
    pub fn declarations(&self) -> String {
        let mut ts = String::from(
            "// Generated by runbox from the upstream MCP servers' tool schemas.\n\
             declare module \"runbox:tools\" {\n\
             \x20 /** A call that did not give the tool's result: `kind` is `tool_error` (the tool \
             reported an error), `not_allowed`, `unknown_server`, `limit`, `unavailable`, `timeout` \
             or `bad_request`. */\n\
             \x20 export class ToolError extends Error {\n    kind: string;\n    content: unknown[];\n  }\n\
             \x20 /** Calls any tool by its server's and its own name. */\n\
             \x20 export function callTool(server: string, tool: string, args?: Record<string, unknown>): Promise<unknown>;\n",
        );
        for s in &self.servers {
            let _ = writeln!(ts, "  export const {}: {{", s.name);
            for t in &s.tools {
                let doc = t.description.as_deref().unwrap_or("").replace("*/", "* /");
                if !doc.trim().is_empty() {
                    let _ = writeln!(ts, "    /** {} */", doc.trim().replace('\n', "\n     * "));
                }
                let input = ts_type(&Value::Object((*t.input_schema).clone()), 0);
                let output = match &t.output_schema {
                    Some(o) => ts_type(&Value::Object((**o).clone()), 0),
                    None => "string".into(),
                };
                let optional = if parameters(t).iter().any(|(_, r)| *r) {
                    ""
                } else {
                    "?"
                };
                let _ = writeln!(
                    ts,
                    "    {}(args{optional}: {input}): Promise<{output}>;",
                    property_name(&t.name)
                );
            }
            ts.push_str("  };\n");
        }
        ts.push_str("}\n");
        ts
    }
}

const CALLING: &str = r#"
## Calling a tool

Each tool's line says what a call hands back after `->`: `text` (the text of its
answer, a string) or the structure its output schema declares (dicts and lists in
python, objects in javascript; `{content: string}` is an object whose `content` is the
text, not the text itself).

- python: `import tools; r = tools.SERVER.TOOL(arg=value)` (the value: the tool's
  structured content as dicts and lists, else its text; a tool's error raises
  `tools.ToolError`).
- javascript, typescript: `import { SERVER } from "runbox:tools"; const r = await SERVER.TOOL({ arg: value });`
  (a tool's error rejects with `ToolError`).
- shell: `tool SERVER TOOL --arg value` prints the value as JSON (exit 1 on a tool's
  error), so `tool SERVER TOOL … | jq …` works.
- any runtime: open `/tools/call` for reading and writing, write one JSON request
  `{"server": "SERVER", "tool": "TOOL", "arguments": {…}}`, then read to the end: one JSON
  answer, `{"ok": true, "value": …}` or `{"ok": false, "error": KIND, "message": …}`.

A tool name that is not an identifier (`get-sum`) is also reachable as `get_sum`.
Every call counts against the run's time limit and its tool-call cap.
"#;

/// A property key as TypeScript writes it: bare when it is an identifier.
fn property_name(name: &str) -> String {
    let ident = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        name.to_string()
    } else {
        serde_json::to_string(name).unwrap_or_default()
    }
}

/// A JSON Schema as a TypeScript type (what declarations need, not a validator):
/// types, enums and consts, arrays, objects with required and optional properties,
/// unions; anything else is `unknown`.
pub fn ts_type(schema: &Value, depth: usize) -> String {
    if depth > 8 {
        return "unknown".into();
    }
    let Some(obj) = schema.as_object() else {
        return "unknown".into();
    };
    if let Some(c) = obj.get("const") {
        return c.to_string();
    }
    if let Some(values) = obj.get("enum").and_then(Value::as_array) {
        let parts: Vec<String> = values.iter().map(Value::to_string).collect();
        if !parts.is_empty() {
            return parts.join(" | ");
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = obj.get(key).and_then(Value::as_array) {
            let parts: Vec<String> = alts.iter().map(|a| ts_type(a, depth + 1)).collect();
            if !parts.is_empty() {
                return parts.join(" | ");
            }
        }
    }
    match obj.get("type") {
        Some(Value::Array(types)) => {
            let parts: Vec<String> = types
                .iter()
                .map(|t| {
                    let mut one = obj.clone();
                    one.insert("type".into(), t.clone());
                    ts_type(&Value::Object(one), depth + 1)
                })
                .collect();
            parts.join(" | ")
        }
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "number" | "integer" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = obj
                    .get("items")
                    .map_or("unknown".into(), |i| ts_type(i, depth + 1));
                format!("Array<{item}>")
            }
            "object" => object_type(obj, depth),
            _ => "unknown".into(),
        },
        _ if obj.contains_key("properties") => object_type(obj, depth),
        _ => "unknown".into(),
    }
}

fn object_type(obj: &Map<String, Value>, depth: usize) -> String {
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = obj.get("properties").and_then(Value::as_object) else {
        return "Record<string, unknown>".into();
    };
    let fields: Vec<String> = props
        .iter()
        .map(|(k, v)| {
            let opt = if required.contains(&k.as_str()) {
                ""
            } else {
                "?"
            };
            format!("{}{opt}: {}", property_name(k), ts_type(v, depth + 1))
        })
        .collect();
    format!("{{ {} }}", fields.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn tool(name: &str, description: &str, schema: Value) -> Tool {
        let mut t = Tool::default();
        t.name = name.to_string().into();
        t.description = Some(description.to_string().into());
        t.input_schema = Arc::new(schema.as_object().unwrap().clone());
        t
    }

    fn with_output(mut t: Tool, schema: Value) -> Tool {
        t.output_schema = Some(Arc::new(schema.as_object().unwrap().clone()));
        t
    }

    fn catalog() -> Catalog {
        Catalog {
            servers: vec![
                ServerView {
                    name: "everything".into(),
                    available: true,
                    message: None,
                    tools: vec![
                        with_output(
                            tool(
                                "add",
                                "Adds two numbers. Then more text.",
                                json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
                            ),
                            json!({"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}),
                        ),
                        tool(
                            "get-sum",
                            "Sum",
                            json!({"type": "object", "properties": {"mode": {"enum": ["x", "y"]}, "tags": {"type": "array", "items": {"type": "string"}}}}),
                        ),
                    ],
                },
                ServerView {
                    name: "down".into(),
                    available: false,
                    message: Some("cannot start `nope`".into()),
                    tools: vec![],
                },
            ],
        }
    }

    #[test]
    fn a_line_per_tool_and_per_unavailable_server() {
        assert_eq!(
            catalog().summary_lines(),
            vec![
                "everything.add(a, b) -> {sum: number}: Adds two numbers.".to_string(),
                "everything.get-sum(mode?, tags?) -> text: Sum".to_string(),
                "down (unavailable: cannot start `nope`)".to_string(),
            ]
        );
    }

    /// The answers of real servers (server-filesystem, server-memory, mcp-server-time),
    /// as their output schemas declare them.
    #[test]
    fn an_answer_is_shown_as_its_output_schema_says() {
        let shape = |schema: Value, max: usize| {
            answer_shape(
                &with_output(tool("t", "", json!({"type": "object"})), schema),
                max,
            )
        };
        assert_eq!(
            shape(
                json!({"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}),
                80
            ),
            "{content: string}"
        );
        let graph = json!({"type": "object", "properties": {
            "entities": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "entityType": {"type": "string"},
                "observations": {"type": "array", "items": {"type": "string"}}},
                "required": ["name", "entityType", "observations"]}},
            "relations": {"type": "array", "items": {"type": "object", "properties": {
                "from": {"type": "string"}, "to": {"type": "string"}, "relationType": {"type": "string"}},
                "required": ["from", "to", "relationType"]}}},
            "required": ["entities", "relations"]});
        assert_eq!(
            shape(graph.clone(), 200),
            "{entities: [{entityType: string, name: string, observations: [string]}], relations: [{from: string, relationType: string, to: string}]}"
        );
        assert_eq!(
            shape(graph.clone(), 60),
            "{entities: [{…}], relations: [{…}]}"
        );
        assert_eq!(shape(graph.clone(), 24), "{entities, relations}");
        assert_eq!(shape(graph, 10), "object");
        let time = json!({"$defs": {"TimeResult": {"type": "object", "properties": {
                "timezone": {"type": "string"}, "datetime": {"type": "string"}},
                "required": ["timezone", "datetime"]}},
            "type": "object", "properties": {
                "source": {"$ref": "#/$defs/TimeResult"}, "target": {"$ref": "#/$defs/TimeResult"},
                "time_difference": {"type": "string"}},
            "required": ["source", "target", "time_difference"]});
        assert_eq!(
            shape(time, 120),
            "{source: {datetime: string, timezone: string}, target: {datetime: string, timezone: string}, time_difference: string}"
        );
        assert_eq!(
            answer_shape(&tool("t", "", json!({"type": "object"})), 80),
            "text",
            "without an output schema the value is the text"
        );
    }

    #[test]
    fn declarations_follow_the_schemas() {
        let ts = catalog().declarations();
        assert!(
            ts.contains("add(args: { a: number; b: number }): Promise<{ sum: number }>;"),
            "{ts}"
        );
        assert!(
            ts.contains("\"get-sum\"(args?: { mode?: \"x\" | \"y\"; tags?: Array<string> }): Promise<string>;"),
            "{ts}"
        );
        assert!(ts.contains("export const down: {\n  };"), "{ts}");
    }

    #[test]
    fn tools_json_and_readme_hold_every_allowed_tool() {
        let c = catalog();
        let j: Value = serde_json::from_str(&c.tools_json()).unwrap();
        assert_eq!(
            j["servers"]["everything"]["tools"][0]["inputSchema"]["required"],
            json!(["a", "b"])
        );
        assert_eq!(j["servers"]["down"]["available"], false);
        let md = c.readme();
        assert!(
            md.contains("- `add(a, b)` -> `{sum: number}`: Adds two numbers."),
            "{md}"
        );
        assert!(md.contains("Unavailable: cannot start `nope`"), "{md}");
    }
}
