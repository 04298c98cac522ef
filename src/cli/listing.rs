//! The JSON of the `--json` listings (`sessions`, `components`, `params`, `plugins list`): the
//! command line's own shapes of what the core lists, converted from the core's types. They
//! print what the daemon's listings send (the test below compares the two byte for byte), but
//! they are the command line's output, not the protocol: the daemon's types may change without
//! changing these.

use genai_core::message::{Message, Usage};
use genai_core::{provider, select, store, tools};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// One conversation as stored.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    pub id: String,
    pub title: String,
    pub feature: String,
    pub provider: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_configuration: Option<String>,
    pub format: String,
    pub model: String,
    pub parameters: Map<String, Value>,
    pub created_at: i64,
    pub updated_at: i64,
    pub message_count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// The folder it was started in (its workspace root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

impl From<store::ConversationRecord> for Conversation {
    fn from(r: store::ConversationRecord) -> Self {
        Conversation {
            id: r.id,
            title: r.title,
            feature: r.feature,
            provider: r.provider,
            model_configuration: r.model_configuration,
            format: r.format,
            model: r.model,
            parameters: r.parameters,
            created_at: r.created_at,
            updated_at: r.updated_at,
            message_count: r.message_count,
            tools: r.tools,
            answered_by: r.answered_by,
            cwd: r.cwd,
        }
    }
}

/// One message as stored, with its place, usage, cost and model.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredMessage {
    pub seq: i64,
    #[serde(flatten)]
    pub message: Message,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    pub created_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

impl From<store::StoredMessage> for StoredMessage {
    fn from(m: store::StoredMessage) -> Self {
        StoredMessage {
            seq: m.seq,
            message: m.message,
            usage: m.usage,
            cost: m.cost,
            created_at: m.created_at,
            model: m.model,
            provider: m.provider,
        }
    }
}

/// The registry: instances, features and kinds.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Components {
    /// What `genai ask` without `-m` runs on; absent when nothing is chosen by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<DefaultChoice>,
    pub service_providers: Vec<ProviderInfo>,
    pub model_configurations: Vec<ModelInfo>,
    /// `name`, `description`, `origin` of each feature.
    pub features: Vec<Value>,
    /// `serviceProviders` (with the formats each runs) and `modelConfigurations` (with their
    /// parameters).
    pub kinds: Value,
}

/// The default choice: a provider instance, and a model configuration or model id when it
/// names one.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DefaultChoice {
    pub service_provider: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_configuration: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    pub name: String,
    pub kind: String,
    pub default_model: Option<String>,
    pub origin: String,
    /// `notNeeded`, `found` or `missing`.
    pub key: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub name: String,
    pub format: String,
    pub model: String,
    pub parameters: Map<String, Value>,
    pub origin: String,
}

impl From<select::Listed> for Components {
    fn from(listed: select::Listed) -> Self {
        let c = listed.registered;
        let provider_kinds = c.provider_kinds.iter().map(|k| {
            json!({
                "name": k.name,
                "description": k.description,
                "formats": k.formats,
                "defaultFormat": k.default_format,
            })
        });
        let format_kinds = c.format_kinds.iter().map(
            |k| json!({"name": k.name, "description": k.description, "parameters": k.parameters}),
        );
        Components {
            default: listed.default.map(|d| DefaultChoice {
                service_provider: d.provider,
                model_configuration: d.model_configuration,
                model: d.model,
            }),
            service_providers: c
                .service_providers
                .iter()
                .map(|p| ProviderInfo {
                    name: p.name.clone(),
                    kind: p.kind.to_string(),
                    default_model: p.provider.default_model().map(str::to_string),
                    origin: p.origin.as_str().to_string(),
                    key: match p.provider.key_status() {
                        provider::KeyStatus::NotNeeded => "notNeeded",
                        provider::KeyStatus::Found => "found",
                        provider::KeyStatus::Missing => "missing",
                    },
                })
                .collect(),
            model_configurations: c
                .model_configurations
                .into_iter()
                .map(|m| ModelInfo {
                    name: m.name,
                    format: m.format.to_string(),
                    model: m.model,
                    parameters: m.parameters,
                    origin: m.origin.as_str().to_string(),
                })
                .collect(),
            features: c
                .features
                .iter()
                .map(|f| json!({"name": f.name, "description": f.description, "origin": f.origin.as_str()}))
                .collect(),
            kinds: json!({
                "serviceProviders": provider_kinds.collect::<Vec<_>>(),
                "modelConfigurations": format_kinds.collect::<Vec<_>>(),
            }),
        }
    }
}

/// One tool as the model sees it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub source: String,
}

impl From<tools::Tool> for Tool {
    fn from(t: tools::Tool) -> Self {
        Tool {
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
            source: t.source,
        }
    }
}

#[cfg(test)]
mod tests {
    use genai_core::config::Config;
    use genai_core::registry::Registry;
    use genai_rpc::listings;

    use super::*;

    fn pretty(v: &impl Serialize) -> String {
        serde_json::to_string_pretty(v).unwrap()
    }

    #[test]
    fn components_and_tools_print_what_the_daemons_listing_types_print() {
        let config = Config::parse(
            r#"
[service_providers.work]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"

[model_configurations.facts]
format = "openai-chat"
model = "gpt-4o-mini"
parameters = { temperature = 0.2, max_tokens = 300 }
"#,
        )
        .unwrap();
        let registry = Registry::from_config(&config).unwrap();
        genai_core::feature::register_builtin(&registry);
        let listed = || select::Listed::from(registry.components().unwrap());
        let ours = pretty(&Components::from(listed()));
        let daemons = pretty(&listings::Components::from(listed()));
        assert!(ours.contains("\"facts\""), "{ours}");
        assert_eq!(ours, daemons);

        let tool = || genai_core::tools::Tool {
            name: "weather.today".into(),
            description: "The weather".into(),
            input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            source: "plugin:weather".into(),
            read_only: false,
        };
        assert_eq!(
            pretty(&vec![Tool::from(tool())]),
            pretty(&vec![listings::Tool::from(tool())])
        );
    }
}
