//! The OpenAPI document's links: what a client (or a stateful tester) may
//! call next with what an answer gave it. A new conversation's `id` opens
//! every route under `/api/conversations/{id}` but its event stream (which
//! stays open); a listed approval's ids
//! open its decision. Written into the document `api_doc` serves, so that
//! generated tests reach past "no such conversation".
//!
//! Not here: the routes themselves (`routes`), the error responses every
//! operation documents (`problem`).

use serde_json::{Map, Value, json};

/// The path a new conversation is made at, and its answer's status.
const CREATE: (&str, &str, &str) = ("/api/conversations", "post", "201");

/// The conversation routes' prefix: each takes the conversation's `id`.
const UNDER: &str = "/api/conversations/{id}";

/// Where approvals are listed, and where one is decided.
const LISTED: (&str, &str, &str) = ("/api/conversations/{id}/approvals", "get", "200");
const DECIDED: &str = "/api/conversations/{id}/approvals/{approval}";

/// `doc` with links from a new conversation to every operation under it,
/// and from the approvals listed to the first one's decision.
pub(crate) fn linked(mut doc: Value) -> Value {
    // Not the event stream: it stays open, it is not an answer.
    let under = operations(&doc, |path| {
        path.starts_with(UNDER) && !path.contains("{approval}") && !path.ends_with("/events")
    });
    let to_conversation: Map<String, Value> = under
        .into_iter()
        .map(|id| {
            (
                id.clone(),
                json!({"operationId": id, "parameters": {"id": "$response.body#/id"}}),
            )
        })
        .collect();
    add(&mut doc, CREATE, to_conversation);
    let decide: Map<String, Value> = operations(&doc, |path| path == DECIDED)
        .into_iter()
        .map(|id| {
            (
                id.clone(),
                json!({"operationId": id, "parameters": {
                    "id": "$request.path.id",
                    "approval": "$response.body#/approvals/0/approval_id",
                }}),
            )
        })
        .collect();
    add(&mut doc, LISTED, decide);
    doc
}

/// The operation ids of every operation on a path `wanted` says.
fn operations(doc: &Value, wanted: impl Fn(&str) -> bool) -> Vec<String> {
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return Vec::new();
    };
    paths
        .iter()
        .filter(|(path, _)| wanted(path))
        .flat_map(|(_, operations)| operations.as_object().into_iter().flatten())
        .filter_map(|(_, operation)| operation.get("operationId")?.as_str().map(str::to_owned))
        .collect()
}

/// Put `links` on the response `status` of `method` at `path`.
fn add(doc: &mut Value, (path, method, status): (&str, &str, &str), links: Map<String, Value>) {
    if links.is_empty() {
        return;
    }
    if let Some(response) = doc
        .pointer_mut(&format!(
            "/paths/{}/{method}/responses/{status}",
            escape(path)
        ))
        .and_then(Value::as_object_mut)
    {
        response.insert("links".to_owned(), Value::Object(links));
    }
}

/// A path as one JSON pointer token (`/` is `~1`, `~` is `~0`).
fn escape(path: &str) -> String {
    path.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

    #[test]
    fn a_new_conversation_links_to_every_route_under_it() {
        let doc = crate::api_doc();
        let links = &doc["paths"]["/api/conversations"]["post"]["responses"]["201"]["links"];
        let links = links.as_object().unwrap();
        assert!(links.len() >= 10, "{links:?}");
        for (name, link) in links {
            assert_eq!(link["operationId"], name.as_str());
            assert_eq!(link["parameters"]["id"], "$response.body#/id");
        }
        let listed =
            &doc["paths"]["/api/conversations/{id}/approvals"]["get"]["responses"]["200"]["links"];
        let decide = listed.as_object().unwrap().values().next().unwrap();
        assert_eq!(
            decide["parameters"]["approval"],
            "$response.body#/approvals/0/approval_id"
        );
    }
}
