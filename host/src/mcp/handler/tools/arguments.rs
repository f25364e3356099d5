//! A tool's arguments read into its input type with serde, after a check against the
//! input schema generated from that same type: what is wrong is said in words a user (or
//! a model) understands ("`timeout_seconds` must be a number, not a string"), naming the
//! field by its path (`files[0].content`), never a Rust type. The schema and the parser
//! are one declaration, so the words cannot drift from what is accepted.

use rmcp::model::JsonObject;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// How a JSON value is called in a message: "a string", "a number", …
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `arguments` as a `T`, checked against `schema` (T's input schema) first: an explicit
/// `null` counts as left out; a field the schema does not name, one of the wrong type, a
/// required one missing are refused in plain words.
pub fn parse<T: DeserializeOwned>(arguments: JsonObject, schema: &JsonObject) -> Result<T, String> {
    let mut value = Value::Object(arguments);
    check(&mut value, &Value::Object(schema.clone()), "")?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// Checks `value` (standing at `at`) against `schema`, dropping `null` members.
fn check(value: &mut Value, schema: &Value, at: &str) -> Result<(), String> {
    let Some(expected) = schema.get("type").and_then(Value::as_str) else {
        return Ok(());
    };
    let fits = match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !fits {
        return Err(format!(
            "`{at}` must be {}, not {}",
            words(expected, schema),
            kind(value)
        ));
    }
    match value {
        Value::Object(object) => check_object(object, schema, at),
        Value::Array(items) => match schema.get("items") {
            Some(item) => items
                .iter_mut()
                .enumerate()
                .try_for_each(|(i, v)| check(v, item, &format!("{at}[{i}]"))),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

fn check_object(object: &mut JsonObject, schema: &Value, at: &str) -> Result<(), String> {
    let empty = JsonObject::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let member = |name: &str| {
        if at.is_empty() {
            name.to_string()
        } else {
            format!("{at}.{name}")
        }
    };
    object.retain(|_, v| !v.is_null());
    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
        if let Some(unknown) = object.keys().find(|k| !properties.contains_key(*k)) {
            let names: Vec<String> = properties.keys().map(|k| format!("`{k}`")).collect();
            return Err(format!(
                "unknown field `{}`; expected {}",
                member(&unknown.escape_debug().to_string()),
                names.join(", ")
            ));
        }
    }
    for name in required(schema) {
        if !object.contains_key(name) {
            let expected = properties
                .get(name)
                .and_then(|p| p.get("type").and_then(Value::as_str).map(|t| words(t, p)))
                .unwrap_or_else(|| "a value".into());
            return Err(format!("missing field `{}` ({expected})", member(name)));
        }
    }
    for (name, value) in object.iter_mut() {
        if let Some(property) = properties.get(name) {
            check(value, property, &member(name))?;
        }
    }
    Ok(())
}

fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A schema's type in words; an object with its fields, `{"path", "content", "encoding"?}`.
fn words(expected: &str, schema: &Value) -> String {
    match expected {
        "string" => "a string".into(),
        "number" | "integer" => "a number".into(),
        "boolean" => "true or false".into(),
        "array" => "an array".into(),
        "object" => {
            let required = required(schema);
            let fields: Vec<String> = schema
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, _)| match required.contains(&k.as_str()) {
                    true => format!("\"{k}\""),
                    false => format!("\"{k}\"?"),
                })
                .collect();
            match fields.is_empty() {
                true => "an object".into(),
                false => format!("an object {{{}}}", fields.join(", ")),
            }
        }
        other => other.to_string(),
    }
}

/// A session id as a client may send it: printable ASCII, not empty, at most 256 bytes.
pub fn check_session_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > 256 || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "invalid arguments: `session_id` `{}` is not a session id (create_session \
             returns one)",
            id.escape_default()
        ));
    }
    Ok(())
}
