//! Tools made from typed inputs: schemas, validation, strict variants.

use rein_tools::{Outcome, Registry, Tool, ToolBackend, ToolContext, schema_for, strict_variant};
use rein_wire::permission::{PermissionClass, Policy};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Move a file.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "Ignored title")]
struct MoveInput {
    /// From where.
    from: String,
    /// To where.
    to: String,
    /// Replace an existing file.
    overwrite: Option<bool>,
    /// How many times to retry.
    #[schemars(range(min = 1, max = 5))]
    retries: Option<u8>,
}

struct Move;

impl Tool for Move {
    type Input = MoveInput;
    fn name(&self) -> &str {
        "move_file"
    }
    fn description(&self) -> &str {
        "Move a file.\nLonger text the catalog leaves out."
    }
    fn permission(&self, input: &MoveInput) -> PermissionClass {
        if input.overwrite == Some(true) {
            PermissionClass::Destructive
        } else {
            PermissionClass::SourceFileWrite
        }
    }
    async fn invoke(&self, input: MoveInput, _: &ToolContext) -> Outcome {
        Outcome::ok(json!({"moved": input.from, "to": input.to, "retries": input.retries}))
    }
}

fn ctx() -> ToolContext {
    ToolContext {
        call_id: "c".into(),
        session: String::new(),
        elevated: false,
        asked: false,
        policy: Policy::default(),
        progress: rein_tools::Progress::none(),
        app: rein_tools::AppContext::default(),
    }
}

#[tokio::test]
async fn schemas_are_generated_without_titles_and_arguments_are_validated() {
    let schema = schema_for::<MoveInput>();
    assert!(
        schema.get("title").is_none() && schema.get("$schema").is_none(),
        "{schema}"
    );
    assert_eq!(schema["properties"]["from"]["type"], "string");
    let registry = Registry::new().with(Move).unwrap();
    assert_eq!(
        registry.catalog(&Policy::default())[0].purpose,
        "Move a file."
    );
    // Permission depends on the arguments.
    assert_eq!(
        registry
            .permission("move_file", &json!({"from": "a", "to": "b"}))
            .unwrap(),
        PermissionClass::SourceFileWrite
    );
    assert_eq!(
        registry
            .permission(
                "move_file",
                &json!({"from": "a", "to": "b", "overwrite": true})
            )
            .unwrap(),
        PermissionClass::Destructive
    );
    // Invalid arguments: a coded error the model can read, naming the problem.
    let err = registry
        .permission("move_file", &json!({"from": "a"}))
        .unwrap_err();
    assert_eq!(err.code.as_str(), "tool_arguments_invalid");
    assert!(err.message.contains("to"), "{}", err.message);
    let err = registry
        .permission("move_file", &json!({"from": "a", "to": "b", "retries": 9}))
        .unwrap_err();
    assert!(err.message.contains("retries"), "{}", err.message);
    assert_eq!(
        registry
            .permission("nope", &json!({}))
            .unwrap_err()
            .code
            .as_str(),
        "tool_not_found"
    );
    // Invoking an unknown tool is an outcome, not a panic.
    assert!(!registry.invoke("nope", json!({}), &ctx()).await.is_ok());
    assert!(
        registry
            .invoke("move_file", json!({"from": "a", "to": "b"}), &ctx())
            .await
            .is_ok()
    );
    assert!(
        Registry::new().with(Move).unwrap().with(Move).is_err(),
        "a name is used once"
    );
}

#[test]
fn the_strict_variant_closes_objects_and_makes_optional_fields_nullable() {
    let strict = strict_variant(&schema_for::<MoveInput>());
    assert_eq!(strict["additionalProperties"], false);
    let mut required: Vec<&str> = strict["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["from", "overwrite", "retries", "to"]);
    assert_eq!(
        strict["properties"]["overwrite"]["type"],
        json!(["boolean", "null"])
    );
    assert_eq!(strict["properties"]["from"]["type"], "string");
    let registry = Registry::new().with(Move).unwrap().strict(true);
    let spec = registry.definition("move_file").unwrap();
    assert!(spec.strict);
    assert_eq!(spec.input_schema["additionalProperties"], false);
}
