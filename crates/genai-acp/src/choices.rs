//! A session's choices as ACP config options: `model` (category `model`: the agents of the
//! config, and the session's own `provider:model`) and `mode` (category `mode`: the built-in
//! features), changed with `session/set_config_option`.
//!
//! It owns the option ids and how a value names a choice; the core makes the change
//! (`Framework::change_choice`). It must never pick a model itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption,
};

use super::connection::AcpError;
use genai_core::config::McpServerConfig;
use genai_core::feature::port::ClientPort;
use genai_core::feature::BUILTIN;
use genai_core::select::ModelChoice;
use genai_core::session::{Choice, Framework};
use genai_protocol::listings::ConversationRecord;

pub(crate) const MODEL: &str = "model";
pub(crate) const MODE: &str = "mode";

fn record(fw: &Framework, id: &str) -> Result<ConversationRecord, AcpError> {
    fw.conversation_record(id)?
        .ok_or_else(|| AcpError::not_found(format!("no session {id}")))
}

/// The config agent that is this conversation's provider and model, if one is.
fn agent_of<'a>(fw: &'a Framework, rec: &ConversationRecord) -> Option<&'a str> {
    fw.config().agents.iter().find_map(|(name, a)| {
        let same_model = match (&a.model_configuration, &a.model) {
            (Some(mc), _) => rec.model_configuration.as_ref() == Some(mc),
            (None, Some(m)) => rec.model_configuration.is_none() && *m == rec.model,
            (None, None) => false,
        };
        (a.provider == rec.provider && same_model).then_some(name.as_str())
    })
}

/// The session's config options, with their current values.
pub(crate) fn options(fw: &Framework, id: &str) -> Result<Vec<SessionConfigOption>, AcpError> {
    let rec = record(fw, id)?;
    let own = format!("{}:{}", rec.provider, rec.model);
    let current = agent_of(fw, &rec).map_or_else(|| own.clone(), str::to_string);
    let mut models: Vec<SessionConfigSelectOption> = fw
        .config()
        .agents
        .iter()
        .map(|(name, a)| {
            let model = a
                .model
                .as_deref()
                .or(a.model_configuration.as_deref())
                .unwrap_or("default model");
            SessionConfigSelectOption::new(name.clone(), name.clone())
                .description(format!("{}:{model}", a.provider))
        })
        .collect();
    if current == own {
        models.push(SessionConfigSelectOption::new(own.clone(), own));
    }
    let modes: Vec<SessionConfigSelectOption> = BUILTIN
        .iter()
        .map(|f| {
            SessionConfigSelectOption::new(f.name, f.name).description(f.description.to_string())
        })
        .collect();
    Ok(vec![
        SessionConfigOption::select(MODEL, "Model", current, models)
            .category(SessionConfigOptionCategory::Model)
            .description("An agent of genai's config, or PROVIDER:MODEL".to_string()),
        // Not category `mode`: the session modes are the permission modes (`modes.rs`).
        SessionConfigOption::select(MODE, "Feature", rec.feature, modes)
            .category(SessionConfigOptionCategory::Other("_genai_feature".into()))
            .description("The genai feature that runs the turns".to_string()),
    ])
}

/// Changes one option of an open session.
pub(crate) fn set(
    fw: &Arc<Framework>,
    id: &str,
    option: &str,
    value: &SessionConfigOptionValue,
    mcp_servers: &BTreeMap<String, McpServerConfig>,
    port: Arc<dyn ClientPort>,
) -> Result<(), AcpError> {
    let SessionConfigOptionValue::ValueId { value } = value else {
        return Err(AcpError::invalid_params(format!(
            "`{option}` takes a value id, not a boolean"
        )));
    };
    let value = value.0.to_string();
    let choice = match option {
        MODEL => Choice {
            model: Some(ModelChoice::Named(value)),
            ..Default::default()
        },
        MODE => {
            if !BUILTIN.iter().any(|f| f.name == value) {
                return Err(AcpError::invalid_params(format!(
                    "no mode `{value}`; the modes are {}",
                    BUILTIN
                        .iter()
                        .map(|f| f.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            Choice {
                feature: Some(value),
                ..Default::default()
            }
        }
        other => {
            return Err(AcpError::invalid_params(format!(
                "no config option `{other}`; genai has `{MODEL}` and `{MODE}`"
            )))
        }
    };
    fw.change_choice(id, choice, mcp_servers, port)?;
    Ok(())
}
