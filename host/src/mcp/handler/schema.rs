//! The JSON schemas of the tools, as clients accept them: generated from each tool's
//! types (`tools/`), then held to the rules clients enforce (one `type` per property,
//! standard formats only) and made small for the wire.

use std::sync::Arc;

use rmcp::handler::server::tool::schema_for_input;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde_json::{json, Value};

/// An input schema generated from `T`, in the shape every client accepts: standard
/// formats only, and one JSON `type` per property (an optional property is simply not
/// `required`). The MCP revision 2026-07-28 allows `x-mcp-header` only on a property
/// whose `type` is one string, and the Inspector converts a value only for a single type.
pub fn input_schema_for<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let schema = schema_for_input::<T>().expect("tool arguments are an object");
    let mut value = Value::Object(standard_formats_only(&schema).as_ref().clone());
    drop_null_types(&mut value);
    match value {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("an object stays an object"),
    }
}

/// Removes `null` from every `type` list (`["string", "null"]` becomes `"string"`) and
/// every `{"type": "null"}` branch of an `anyOf`/`oneOf`, at any depth.
fn drop_null_types(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::Array(types)) = object.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let single = types.remove(0);
                    object.insert("type".into(), single);
                }
            }
            for key in ["anyOf", "oneOf"] {
                let Some(Value::Array(branches)) = object.get_mut(key) else {
                    continue;
                };
                branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
                if branches.len() == 1 {
                    let Some(Value::Object(only)) = branches.pop() else {
                        continue;
                    };
                    object.remove(key);
                    for (k, v) in only {
                        object.entry(k).or_insert(v);
                    }
                }
            }
            object.values_mut().for_each(drop_null_types);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_types),
        _ => {}
    }
}

/// A schema as tools/list sends it: standard formats only and no `$schema` (2020-12 is
/// MCP's default dialect); an output schema names its top-level fields with their types
/// (and an enum's values) and nothing deeper or wordier. Every client puts tools/list
/// in every conversation: what the fields mean is in the tool's description and
/// docs/mcp.md, and an output schema is there for clients to validate the result.
pub fn for_the_wire(schema: &JsonObject, output: bool) -> Arc<JsonObject> {
    let mut schema = standard_formats_only(schema).as_ref().clone();
    schema.remove("$schema");
    if output {
        schema = top_level_only(&schema);
    }
    Arc::new(schema)
}

/// `schema`'s `type` and properties, each property only its `type` (an object where it
/// was a `$ref`) and its `enum`.
fn top_level_only(schema: &JsonObject) -> JsonObject {
    let mut out = JsonObject::new();
    if let Some(kind) = schema.get("type") {
        out.insert("type".into(), kind.clone());
    }
    let properties: JsonObject = schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, property)| {
            let mut kept = JsonObject::new();
            let kind = property.get("type").cloned().unwrap_or(json!("object"));
            kept.insert("type".into(), kind);
            if let Some(values) = property.get("enum") {
                kept.insert("enum".into(), values.clone());
            }
            (name.clone(), Value::Object(kept))
        })
        .collect();
    out.insert("properties".into(), Value::Object(properties));
    out
}

/// The `format` values JSON Schema (2020-12, section 7.3) defines. schemars also writes
/// OpenAPI's (`uint64`, `int32`, `double`), which validators such as AJV in strict mode
/// refuse or warn about on every call.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` with every non-standard `format` removed, at any depth.
pub fn standard_formats_only(schema: &JsonObject) -> Arc<JsonObject> {
    let mut value = Value::Object(schema.clone());
    drop_nonstandard_formats(&mut value);
    match value {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("an object stays an object"),
    }
}

fn drop_nonstandard_formats(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let nonstandard = matches!(
                object.get("format"),
                Some(Value::String(f)) if !STANDARD_FORMATS.contains(&f.as_str())
            );
            if nonstandard {
                object.remove("format");
            }
            // `properties` maps names to schemas: a property may itself be called `format`.
            object.values_mut().for_each(drop_nonstandard_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nonstandard_formats),
        _ => {}
    }
}

/// Every property at any depth has exactly one JSON `type`; `x-mcp-header` sits only on a
/// top-level string property (the rules clients of 2026-07-28 enforce).
#[cfg(test)]
pub fn check_client_rules(schema: &Value, path: &str, top: bool) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let here = format!("{path}.{name}");
            assert!(
                prop.get("type").is_some_and(Value::is_string),
                "{here} has no single type: {prop}"
            );
            for key in ["anyOf", "oneOf", "allOf"] {
                assert!(prop.get(key).is_none(), "{here} has {key}: {prop}");
            }
            if prop.get("x-mcp-header").is_some() {
                assert!(top && prop["type"] == "string", "{here}: {prop}");
            }
            check_client_rules(prop, &here, false);
        }
    }
    if let Some(items) = schema.get("items") {
        check_client_rules(items, &format!("{path}[]"), false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonstandard_formats_are_dropped_at_any_depth() {
        let raw = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint64", "minimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "format": {"type": "string"},
                "list": {"type": "array", "items": {"type": "number", "format": "double"}},
                "either": {"anyOf": [{"type": "integer", "format": "int32"}, {"type": "null"}]}
            },
            "$defs": {"X": {"type": "integer", "format": "uint8"}}
        });
        let cleaned = Value::Object(
            standard_formats_only(raw.as_object().unwrap())
                .as_ref()
                .clone(),
        );
        let props = &cleaned["properties"];
        assert_eq!(props["n"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(props["when"]["format"], "date-time");
        assert_eq!(props["format"], json!({"type": "string"}));
        assert_eq!(props["list"]["items"], json!({"type": "number"}));
        assert_eq!(props["either"]["anyOf"][0], json!({"type": "integer"}));
        assert_eq!(cleaned["$defs"]["X"], json!({"type": "integer"}));
    }
}
