//! A tool from a name, a description, a permission class and an async
//! function — the shortest way to give a conversation one of the product's
//! own operations.
//!
//! Not here: tools whose class depends on the arguments, that refuse before
//! a person is asked (`precheck`), or that need the call's context — those
//! implement [`Tool`] themselves.

use std::future::Future;
use std::marker::PhantomData;

use rein_wire::permission::PermissionClass;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::{Outcome, Tool, ToolContext};

/// A [`Tool`] made by [`tool_fn`].
pub struct FnTool<I, F> {
    name: String,
    description: String,
    permission: PermissionClass,
    run: F,
    input: PhantomData<fn(I)>,
}

/// A tool named `name` that runs `run` on its typed input. `description`
/// is what the model reads (its first line is the catalog's purpose);
/// `permission` is the class of every call (`Read` runs at once, `Write`
/// waits for a person).
///
/// ```
/// use rein_tools::{Outcome, PermissionClass, Registry, tool_fn};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Item {
///     /// The item's name.
///     name: String,
/// }
///
/// let tools = Registry::new().with(tool_fn(
///     "lookup_price",
///     "The price of an item, in cents.",
///     PermissionClass::Read,
///     |item: Item| async move { Outcome::ok(serde_json::json!({"item": item.name, "cents": 450})) },
/// ));
/// assert!(tools.is_ok());
/// ```
pub fn tool_fn<I, F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    permission: PermissionClass,
    run: F,
) -> FnTool<I, F>
where
    I: JsonSchema + DeserializeOwned + Send + 'static,
    F: Fn(I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send,
{
    FnTool {
        name: name.into(),
        description: description.into(),
        permission,
        run,
        input: PhantomData,
    }
}

impl<I, F, Fut> Tool for FnTool<I, F>
where
    I: JsonSchema + DeserializeOwned + Send + 'static,
    F: Fn(I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send,
{
    type Input = I;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn permission(&self, _input: &I) -> PermissionClass {
        self.permission
    }

    fn invoke(&self, input: I, _ctx: &ToolContext) -> impl Future<Output = Outcome> + Send {
        (self.run)(input)
    }
}
