//! The JSON Schema of a config file, published with the docs
//! (`docs/config.schema.json`), and the config reference a person reads
//! (`docs/reference/config.md`) are generated from the types: this test
//! fails when either drifts from them (`REIN_SCHEMA_BLESS=1` writes both
//! anew).

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::fmt::Write as _;

use serde_json::{Map, Value};

#[test]
fn the_published_schema_and_reference_are_the_types() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let schema = rein_config::schema();
    let files = [
        (
            docs.join("config.schema.json"),
            serde_json::to_string_pretty(&schema).unwrap() + "\n",
        ),
        (docs.join("reference/config.md"), reference(&schema)),
    ];
    for (path, now) in files {
        if std::env::var_os("REIN_SCHEMA_BLESS").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        let published = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            published == now,
            "{} is stale: run REIN_SCHEMA_BLESS=1 cargo test -p rein-config --test schema",
            path.display()
        );
    }
}

/// Every key of a config file as a table row: its dotted path, its type,
/// the first paragraph of its doc comment.
fn reference(schema: &Value) -> String {
    let defs = schema["$defs"].as_object().unwrap();
    let mut out = String::from(
        "# The config file\n\n\
         Generated from the config's types (`crates/rein-config/src/spec.rs`) by\n\
         `crates/rein-config/tests/schema.rs`; the JSON Schema is\n\
         [`../config.schema.json`](../config.schema.json). Every layer — rein's home\n\
         `config.toml`, a trusted project's `.rein/config.toml`, a product's own definition — takes\n\
         these keys ([the agent definition](../guide/definition.md) says how they layer).\n\n\
         | key | type | what it is |\n| --- | --- | --- |\n",
    );
    let top = schema["properties"].as_object().unwrap();
    rows(&mut out, top, "", defs, &[]);
    out
}

fn rows(
    out: &mut String,
    props: &Map<String, Value>,
    prefix: &str,
    defs: &Map<String, Value>,
    seen: &[&str],
) {
    let base = defs["AgentSpec"]["properties"].as_object().unwrap();
    for (name, prop) in props {
        let key = format!("{prefix}{name}");
        let target = table_of(prop, defs);
        writeln!(
            out,
            "| `{key}` | {} | {} |",
            kind(prop, defs),
            first_paragraph(prop)
        )
        .unwrap();
        let Some((def_name, def)) = target else {
            continue;
        };
        if seen.contains(&def_name) {
            continue;
        }
        let mut inner = def["properties"].as_object().cloned().unwrap_or_default();
        let suffix = if prop.get("additionalProperties").is_some() {
            ".NAME."
        } else if prop.get("items").is_some() {
            "[]."
        } else {
            "."
        };
        let path = format!("{key}{suffix}");
        if def_name != "AgentSpec" && base.keys().all(|k| inner.contains_key(k)) {
            inner.retain(|k, _| !base.contains_key(k));
            writeln!(
                out,
                "| `{path}…` | | every key of `agent`, over the default agent's |"
            )
            .unwrap();
        }
        let mut deeper = seen.to_vec();
        deeper.push(def_name);
        rows(out, &inner, &path, defs, &deeper);
    }
}

/// The named definition a key holds (directly, optionally, as a map's or
/// a list's values).
fn table_of<'a>(prop: &'a Value, defs: &'a Map<String, Value>) -> Option<(&'a str, &'a Value)> {
    let reference = [
        prop.get("$ref"),
        prop.get("anyOf").and_then(|any| any[0].get("$ref")),
        prop.get("additionalProperties").and_then(|v| v.get("$ref")),
        prop.get("items").and_then(|v| v.get("$ref")),
    ]
    .into_iter()
    .flatten()
    .next()?;
    let name = reference.as_str()?.strip_prefix("#/$defs/")?;
    let def = &defs[name];
    def.get("properties").map(|_| (name, def))
}

fn kind(prop: &Value, defs: &Map<String, Value>) -> String {
    if table_of(prop, defs).is_some() {
        let shape = match (prop.get("additionalProperties"), prop.get("items")) {
            (Some(_), _) => "tables by name",
            (_, Some(_)) => "list of tables",
            _ => "table",
        };
        return shape.to_owned();
    }
    let reference = prop
        .get("$ref")
        .or_else(|| prop.get("anyOf").and_then(|any| any[0].get("$ref")))
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"));
    if let Some(words) = reference.and_then(|name| defs[name].get("oneOf")) {
        let words: Vec<String> = words
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w["const"].as_str().map(|c| format!("`\"{c}\"`")))
            .collect();
        return words.join(" or ");
    }
    let types: Vec<&str> = match &prop["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let types: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
    match types.as_slice() {
        [] => "table (its part's)".into(),
        ["array"] => {
            let of = prop["items"]["type"].as_str().unwrap_or("value");
            format!("list of {of}s")
        }
        ["object"] => "table".into(),
        [one] => (*one).to_owned(),
        many => many.join(" or "),
    }
}

fn first_paragraph(prop: &Value) -> String {
    let text = prop["description"].as_str().unwrap_or("");
    let first = text.split("\n\n").next().unwrap_or("");
    first.replace('\n', " ").replace('|', "\\|")
}
