//! [`Tool`] and the [`Registry`] that makes a backend of them.

use std::collections::BTreeMap;

use async_trait::async_trait;
use rein_wire::permission::{PermissionClass, Policy};
use rein_wire::{AgentError, Preview, Revision, ToolSpec};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::backend::{Outcome, ToolBackend, ToolContext, ToolSummary};

/// One tool with a typed input.
///
/// `invoke` is a native async method: an implementation writes
/// `async fn invoke(…) -> Outcome` with no macro (its future must be
/// `Send`, since a conversation runs tools on any worker thread).
pub trait Tool: Send + Sync + 'static {
    /// The input; its JSON schema is what the model sees.
    type Input: JsonSchema + DeserializeOwned + Send;

    /// The name the model calls.
    fn name(&self) -> &str;

    /// What it does, for the model (the first line is its catalog purpose).
    fn description(&self) -> &str;

    /// The permission class of a call with `input`.
    fn permission(&self, input: &Self::Input) -> PermissionClass;

    /// Refuse a call that could never run (a path outside the tool's
    /// root, a file that does not exist), before it is gated and before a
    /// person is asked about it: a person is asked only about what could
    /// run. A courtesy, not a guard — `invoke` must still refuse on what it
    /// actually touches, since the world may change between the two.
    /// Default: nothing is refused here.
    fn precheck(&self, _input: &Self::Input) -> Result<(), AgentError> {
        Ok(())
    }

    /// Whether its results may be cached per revision (reads only).
    fn cacheable(&self) -> bool {
        false
    }

    /// Normalise the arguments once, before they are checked (see
    /// [`ToolBackend::prepare`]; pure). Default: unchanged.
    fn prepare(&self, args: Value) -> Result<Value, AgentError> {
        Ok(args)
    }

    /// What a person approving this call is shown (a diff, the start of a
    /// new file, a sentence), made when the call is asked about. Default:
    /// nothing beyond the arguments.
    fn preview(&self, _input: &Self::Input) -> Option<Preview> {
        None
    }

    /// The read that shows what a call with `input` would change as it is
    /// now (see [`ToolBackend::read_first`]). Default: none.
    fn read_first(&self, _input: &Self::Input) -> Option<(String, Value)> {
        None
    }

    /// What a call with `input` would change, at the revision it has now
    /// (see [`ToolBackend::changes`]). Default: nothing.
    fn changes(&self, _input: &Self::Input) -> Option<Revision> {
        None
    }

    /// Run it.
    fn invoke(
        &self,
        input: Self::Input,
        ctx: &ToolContext,
    ) -> impl std::future::Future<Output = Outcome> + Send;

    /// Undo a change it made, named by the operation id its result gave
    /// (with `undo` set): `None` when the id is not one of its own, else the
    /// thing put back (a path, a record) or why not — `changed_since` when
    /// it changed after the call, and then nothing is touched. Default:
    /// nothing of its own to undo.
    fn undo(
        &self,
        _operation_id: &str,
    ) -> impl std::future::Future<Output = Option<Result<String, AgentError>>> + Send {
        async { None }
    }
}

/// The schema of `T` as the model sees it: generated, titles and the
/// `$schema` marker stripped (they cost tokens and tell the model nothing).
pub fn schema_for<T: JsonSchema>() -> Value {
    let mut value = schemars::SchemaGenerator::default()
        .into_root_schema_for::<T>()
        .to_value();
    strip(&mut value);
    value
}

fn strip(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("title");
            map.remove("$schema");
            for (key, v) in map.iter_mut() {
                // Property names may be called "title"; only schema keywords go.
                if key == "properties" {
                    if let Value::Object(props) = v {
                        props.values_mut().for_each(strip);
                    }
                } else {
                    strip(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

/// The strict-mode variant of a schema (OpenAI `strict: true`): every
/// object closes (`additionalProperties: false`) and lists every property
/// as required; a property that was optional may instead be `null`.
pub fn strict_variant(schema: &Value) -> Value {
    let mut out = schema.clone();
    make_strict(&mut out);
    out
}

fn make_strict(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let is_object = map.get("type").and_then(Value::as_str) == Some("object")
                || map.contains_key("properties");
            if is_object {
                let required: Vec<String> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| {
                        r.iter()
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                if let Some(Value::Object(props)) = map.get_mut("properties") {
                    for (name, prop) in props.iter_mut() {
                        if !required.contains(name) {
                            allow_null(prop);
                        }
                    }
                    let all: Vec<Value> = props.keys().map(|k| Value::String(k.clone())).collect();
                    map.insert("required".into(), Value::Array(all));
                }
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            for v in map.values_mut() {
                make_strict(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_strict),
        _ => {}
    }
}

fn allow_null(prop: &mut Value) {
    let Some(map) = prop.as_object_mut() else {
        return;
    };
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            map.insert("type".into(), serde_json::json!([t, "null"]));
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push(Value::String("null".into()))
        }
        _ => {}
    }
}

#[async_trait]
trait ErasedTool: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    fn check(&self, args: &Value) -> Result<PermissionClass, AgentError>;
    fn cacheable(&self) -> bool;
    fn prepare(&self, args: Value) -> Result<Value, AgentError>;
    fn preview(&self, args: &Value) -> Option<Preview>;
    fn changes(&self, args: &Value) -> Option<Revision>;
    fn read_first(&self, args: &Value) -> Option<(String, Value)>;
    async fn invoke(&self, args: Value, ctx: &ToolContext) -> Outcome;
    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>>;
}

struct Typed<T: Tool> {
    tool: T,
    spec: ToolSpec,
    validator: jsonschema::Validator,
}

fn invalid(tool: &str, why: String) -> AgentError {
    AgentError::new(
        rein_wire::error::codes::TOOL_ARGUMENTS_INVALID,
        format!("the arguments for `{tool}` are not valid: {why}"),
    )
}

#[async_trait]
impl<T: Tool> ErasedTool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, args: Value) -> Result<Value, AgentError> {
        self.tool.prepare(args)
    }

    fn check(&self, args: &Value) -> Result<PermissionClass, AgentError> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(args)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return Err(invalid(self.tool.name(), problems.join("; ")));
        }
        let input: T::Input = serde_json::from_value(args.clone())
            .map_err(|e| invalid(self.tool.name(), e.to_string()))?;
        self.tool.precheck(&input)?;
        Ok(self.tool.permission(&input))
    }

    fn cacheable(&self) -> bool {
        self.tool.cacheable()
    }

    fn preview(&self, args: &Value) -> Option<Preview> {
        let input: T::Input = serde_json::from_value(args.clone()).ok()?;
        self.tool.preview(&input)
    }

    fn changes(&self, args: &Value) -> Option<Revision> {
        let input: T::Input = serde_json::from_value(args.clone()).ok()?;
        self.tool.changes(&input)
    }

    fn read_first(&self, args: &Value) -> Option<(String, Value)> {
        let input: T::Input = serde_json::from_value(args.clone()).ok()?;
        self.tool.read_first(&input)
    }

    async fn invoke(&self, args: Value, ctx: &ToolContext) -> Outcome {
        match serde_json::from_value::<T::Input>(args) {
            Ok(input) => self.tool.invoke(input, ctx).await,
            Err(e) => Outcome::from_error(&invalid(self.tool.name(), e.to_string())),
        }
    }

    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        self.tool.undo(operation_id).await
    }
}

/// A [`ToolBackend`] made of [`Tool`]s. Its revision token is constant:
/// tools that change shared state should live in a backend with a real one.
#[derive(Default)]
pub struct Registry {
    tools: BTreeMap<String, Box<dyn ErasedTool>>,
    strict: bool,
    skills: crate::Skills,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Offer `skills` beside the tools (their index in the stable prefix,
    /// each read with `read_skill`).
    pub fn with_skills(mut self, skills: crate::Skills) -> Self {
        self.skills = skills;
        self
    }

    /// Add a tool. Its schema must compile; a name may be used once.
    pub fn with<T: Tool>(mut self, tool: T) -> Result<Self, AgentError> {
        let name = tool.name().to_owned();
        if self.tools.contains_key(&name) {
            return Err(AgentError::new(
                rein_wire::error::codes::INVALID_INPUT,
                format!("a tool named `{name}` is already registered"),
            ));
        }
        let schema = schema_for::<T::Input>();
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            AgentError::new(
                rein_wire::error::codes::INVALID_INPUT,
                format!("the schema of `{name}` does not compile: {e}"),
            )
        })?;
        let spec = ToolSpec {
            name: name.clone(),
            description: tool.description().to_owned(),
            input_schema: schema,
            strict: false,
        };
        self.tools.insert(
            name,
            Box::new(Typed {
                tool,
                spec,
                validator,
            }),
        );
        Ok(self)
    }

    /// Offer the strict-mode variant of every schema (for OpenAI's
    /// `strict: true`). Arguments are still validated against the original.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    fn get(&self, name: &str) -> Result<&dyn ErasedTool, AgentError> {
        self.tools.get(name).map(|t| t.as_ref()).ok_or_else(|| {
            let known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            AgentError::new(
                rein_wire::error::codes::TOOL_NOT_FOUND,
                format!(
                    "there is no tool `{name}`; the tools are: {}",
                    known.join(", ")
                ),
            )
        })
    }
}

#[async_trait]
impl ToolBackend for Registry {
    fn catalog(&self, _policy: &Policy) -> Vec<ToolSummary> {
        self.tools
            .values()
            .map(|t| ToolSummary {
                name: t.spec().name.clone(),
                purpose: t.spec().description.lines().next().unwrap_or("").to_owned(),
            })
            .collect()
    }

    fn definition(&self, name: &str) -> Option<ToolSpec> {
        self.tools.get(name).map(|t| {
            let mut spec = t.spec().clone();
            if self.strict {
                spec.input_schema = strict_variant(&spec.input_schema);
                spec.strict = true;
            }
            spec
        })
    }

    fn prepare(&self, name: &str, args: Value) -> Result<Value, AgentError> {
        match self.tools.get(name) {
            Some(tool) => tool.prepare(args),
            None => Ok(args),
        }
    }

    fn permission(&self, name: &str, args: &Value) -> Result<PermissionClass, AgentError> {
        self.get(name)?.check(args)
    }

    async fn invoke(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome {
        match self.get(name) {
            Ok(tool) => tool.invoke(args, ctx).await,
            Err(err) => Outcome::from_error(&err),
        }
    }

    async fn undo(&self, operation_id: &str) -> Option<Result<String, AgentError>> {
        for tool in self.tools.values() {
            if let Some(undone) = tool.undo(operation_id).await {
                return Some(undone);
            }
        }
        None
    }

    fn cacheable(&self, name: &str) -> bool {
        self.tools.get(name).is_some_and(|t| t.cacheable())
    }

    fn preview(&self, name: &str, args: &Value) -> Option<Preview> {
        self.tools.get(name)?.preview(args)
    }

    fn changes(&self, name: &str, args: &Value) -> Option<Revision> {
        self.tools.get(name)?.changes(args)
    }

    fn read_first(&self, name: &str, args: &Value) -> Option<(String, Value)> {
        self.tools.get(name)?.read_first(args)
    }

    fn revision(&self) -> String {
        "static".into()
    }

    fn skills(&self) -> Vec<ToolSummary> {
        self.skills.index()
    }

    fn read_skill(&self, name: &str) -> Option<String> {
        self.skills.read(name)
    }
}
