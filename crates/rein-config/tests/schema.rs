//! The JSON Schema of a config file, published with the docs
//! (`docs/config.schema.json`), is generated from the types: this test
//! fails when they drift apart (`REIN_SCHEMA_BLESS=1` writes it anew).

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

#[test]
fn the_published_schema_is_the_types_schema() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/config.schema.json");
    let now = serde_json::to_string_pretty(&rein_config::schema()).unwrap() + "\n";
    if std::env::var_os("REIN_SCHEMA_BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == now,
        "docs/config.schema.json is stale: run REIN_SCHEMA_BLESS=1 cargo test -p rein-config --test schema"
    );
}
