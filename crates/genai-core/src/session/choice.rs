//! Changing the feature or the model of an open conversation between turns (an ACP client's
//! `session/set_config_option`): the stored record takes the new choice and the conversation
//! is reopened on it with its whole history, so the next turn runs on the new feature or model.
//!
//! It must never change a conversation while one of its turns runs, nor parse a model name
//! (`crate::select` does).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{poisoned, unknown_conversation, Framework, OpenConversation};
use crate::config::McpServerConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::feature::port::ClientPort;
use crate::select::ModelChoice;

/// What a client changes.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    pub feature: Option<String>,
    pub model: Option<ModelChoice>,
}

impl Framework {
    /// Gives the open, stored conversation `id` another feature or model; `mcp_servers` are
    /// the servers its client brought (as when it was opened).
    pub fn change_choice(
        self: &Arc<Self>,
        id: &str,
        choice: Choice,
        mcp_servers: &BTreeMap<String, McpServerConfig>,
        port: Arc<dyn ClientPort>,
    ) -> Result<OpenConversation> {
        let busy = self
            .running
            .conversation(id, |c| c.running.lock().map(|r| r.is_some()).ok())?
            .ok_or_else(|| unknown_conversation(id))?
            .ok_or_else(poisoned)?;
        if busy {
            return Err(Error::invalid_params(
                "a turn is running: change the model or the feature once it is over",
            ));
        }
        let mut rec = self.history.conversation(id)?.ok_or_else(|| {
            Error::new(
                ErrorKind::UnknownConversation,
                format!("conversation {id} is not in the history"),
            )
        })?;
        if let Some(feature) = choice.feature {
            let toolbox = self.toolbox_for(mcp_servers)?;
            self.feature(
                &feature,
                rec.tools.as_deref(),
                &toolbox,
                rec.cwd.as_deref(),
                &self.stored_permissions(&rec.id),
            )?;
            rec.feature = feature;
        }
        if let Some(model) = &choice.model {
            let mut sel = self.selector().select(model)?;
            sel.middleware = self.middleware_across(&rec, &sel)?;
            let agent = self.build_agent(&sel, None, None, None, Vec::new())?;
            let (format, model, parameters) = agent.binding().model_info();
            self.forget_agent(&agent.id);
            rec.provider = sel.provider;
            rec.model_configuration = sel.model_configuration;
            rec.format = format.to_string();
            rec.model = model;
            rec.parameters = parameters;
        }
        self.history.update_choice(&rec)?;
        self.remove_conversation(id)?;
        self.resume_conversation_with(id, None, mcp_servers, port)
    }
}
