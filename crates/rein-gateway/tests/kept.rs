//! The gateway's kept message bytes: a body written from them is the
//! plain body, whatever changed in the transcript between requests — a
//! hostile or careless edit in place included.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failure is the test's answer"
)]

use std::sync::Arc;

use rein_gateway::encode::{EncodedCache, body_bytes, body_bytes_kept, body_for};
use rein_gateway::{ProviderConfig, WireApi};
use rein_wire::{CacheBreakpoint, CacheTarget, ContentBlock, Message, Request, Role};
use serde_json::{Value, json};

fn step(request: &mut Request, i: usize) {
    request.messages.push(Arc::new(Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::text(format!("step {i} \"quoted\" \u{1b}")),
            ContentBlock::ToolUse {
                id: format!("c{i}"),
                name: "read".into(),
                input: json!({"path": format!("f{i}")}),
            },
        ],
    }));
    request.messages.push(Arc::new(Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_use_id: format!("c{i}"),
            content: vec![ContentBlock::text(format!("result {i}"))],
            is_error: i.is_multiple_of(3),
        }],
    }));
}

const APIS: [WireApi; 3] = [
    WireApi::OpenAiChat,
    WireApi::AnthropicMessages,
    WireApi::OpenAiResponses,
];

fn check(config: &ProviderConfig, request: &Request, cache: &EncodedCache, what: &str) {
    let kept = body_bytes_kept(config, request, cache).unwrap();
    let plain = body_bytes(config, request).unwrap();
    let tree = serde_json::to_vec(&body_for(config, request)).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&kept).unwrap(),
        serde_json::from_slice::<Value>(&tree).unwrap(),
        "{what}"
    );
    assert_eq!(kept, plain, "{what}");
}

/// Every API, step after step, with the transcript changed in ways a
/// length or a position would not notice.
#[test]
fn a_body_from_kept_messages_is_the_plain_body_whatever_changed() {
    for api in APIS {
        let config = ProviderConfig::new(api);
        let cache = EncodedCache::default();
        let mut request = Request::new("m", vec![Message::user("go")]);
        request.system = vec![rein_wire::SystemBlock { text: "sys".into() }];
        request.metadata.session_id = Some("s1".into());
        for i in 0..7 {
            step(&mut request, i);
            match i {
                // The same length and place, other text, edited in place:
                // `make_mut` copies, since the cache holds the message.
                2 => {
                    Arc::make_mut(&mut request.messages[1]).content[0] =
                        ContentBlock::text("STEP 0 \"quoted\" \u{1b}");
                }
                // A breakpoint moves onto an old message.
                3 => {
                    request.cache_breakpoints = vec![CacheBreakpoint {
                        target: CacheTarget::Message { index: 2 },
                    }];
                }
                // A compaction: the transcript is shorter.
                4 => request.messages.truncate(3),
                // The same content rebuilt in new allocations.
                5 => {
                    request.messages = request
                        .messages
                        .iter()
                        .map(|m| Arc::new((**m).clone()))
                        .collect();
                }
                _ => {}
            }
            check(&config, &request, &cache, &format!("{api} step {i}"));
        }
        assert_eq!(cache.sessions(), 1);
    }
}

/// Two sessions through one provider's cache never get each other's bytes,
/// and a request without a session keeps nothing.
#[test]
fn sessions_keep_their_own_messages() {
    for api in APIS {
        let config = ProviderConfig::new(api);
        let cache = EncodedCache::default();
        let mut a = Request::new("m", vec![Message::user("from a")]);
        a.metadata.session_id = Some("a".into());
        let mut b = Request::new("m", vec![Message::user("from b")]);
        b.metadata.session_id = Some("b".into());
        for i in 0..3 {
            step(&mut a, i);
            check(&config, &a, &cache, &format!("{api} a {i}"));
            check(&config, &b, &cache, &format!("{api} b {i}"));
            step(&mut b, i + 10);
        }
        let mut anonymous = Request::new("m", vec![Message::user("who")]);
        check(&config, &anonymous, &cache, &format!("{api} anonymous"));
        anonymous
            .messages
            .push(Arc::new(Message::assistant("no one")));
        check(&config, &anonymous, &cache, &format!("{api} anonymous 2"));
        assert_eq!(cache.sessions(), 2, "{api}");
    }
}

/// A model with no eyes: images become a note in what is sent, and the
/// kept bytes of that session are of the stripped messages.
#[test]
fn a_text_only_model_gets_no_kept_image() {
    let mut config = ProviderConfig::new(WireApi::OpenAiChat);
    config.images = false;
    let cache = EncodedCache::default();
    let mut request = Request::new(
        "m",
        vec![Message {
            role: Role::User,
            content: vec![ContentBlock::Image {
                source: rein_wire::ImageSource::Base64 {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                },
            }],
        }],
    );
    request.metadata.session_id = Some("s".into());
    for i in 0..3 {
        step(&mut request, i);
        check(&config, &request, &cache, &format!("step {i}"));
        let sent = String::from_utf8(body_bytes_kept(&config, &request, &cache).unwrap()).unwrap();
        assert!(!sent.contains("iVBORw0KGgo="), "{sent}");
    }
}
