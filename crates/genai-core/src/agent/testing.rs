//! Test-only agents on the scripted provider (`provider::scripted`), with the `openai-chat`
//! format and an in-memory store when asked. It must never be compiled outside tests.

use std::sync::Arc;

use serde_json::Map;

use super::{AIAgent, ModelBinding, Persistence};
use crate::format::{openai_chat::OpenAiChat, ModelConfiguration};
use crate::message::Message;
pub(crate) use crate::provider::scripted::*;
use crate::registry::{Origin, ProviderInstance};
use crate::store::Store;
use genai_protocol::listings::ConversationRecord;

/// The conversation id the test agents persist to.
pub(crate) const CONVERSATION: &str = "c1";

/// An agent on `provider` with the `openai-chat` format, persisted to `store` when given (a
/// conversation is created there), with this history.
pub(crate) fn agent(
    provider: Arc<ScriptedProvider>,
    store: Option<Arc<Store>>,
    system: Option<Message>,
    messages: Vec<Message>,
) -> AIAgent {
    let persistence = store.map(|store| {
        store
            .create_conversation(&ConversationRecord {
                id: CONVERSATION.into(),
                title: String::new(),
                feature: "assistant".into(),
                provider: "scripted".into(),
                model_configuration: None,
                format: "openai-chat".into(),
                model: "m".into(),
                parameters: Map::new(),
                created_at: 0,
                updated_at: 0,
                message_count: 0,
                tools: None,
                cwd: None,
                answered_by: None,
            })
            .expect("a conversation");
        Persistence {
            store: store as Arc<dyn crate::store::History>,
            conversation_id: CONVERSATION.into(),
        }
    });
    let provider = ProviderInstance {
        name: "scripted".into(),
        kind: "scripted",
        provider,
        origin: Origin::Runtime,
    };
    AIAgent::new(
        "a1".into(),
        ModelBinding::new(provider, ModelConfiguration::new(&OpenAiChat, "m")),
        persistence,
        system,
        messages,
    )
}

/// Gives `agent` the fallback agent `name`, on `provider` as the instance `instance` with the
/// model `model` (format `openai-chat`, no price).
pub(crate) fn with_fallback(
    agent: &mut AIAgent,
    name: &str,
    instance: &str,
    provider: Arc<ScriptedProvider>,
    model: &str,
) {
    let binding = agent.binding.get_mut().expect("a binding");
    Arc::make_mut(binding).fallbacks.push(super::Fallback::new(
        name.into(),
        ProviderInstance {
            name: instance.into(),
            kind: "scripted",
            provider,
            origin: Origin::Runtime,
        },
        ModelConfiguration::new(&OpenAiChat, model),
        None,
    ));
}
