//! Reopening stored conversations: with their history on their own model, with the MCP
//! servers a client brings, or handed over to another model (`genai ask -c -m`).
//!
//! It must never rewrite the stored history (a handover changes only what is sent) nor speak
//! a wire format.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Map;

use super::{handover, unknown_conversation, Framework, OpenConversation};
use crate::agent::{AIAgent, Persistence};
use crate::config::McpServerConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::feature::port::ClientPort;
use crate::select::{ModelChoice, Selection};
use crate::tools::toolbox::Toolbox;
use genai_protocol::listings::ConversationRecord;

impl Framework {
    /// Reopens a stored conversation (by id or unique prefix) with its history, driven by
    /// `port`; returns the ids at once when it is already open.
    pub fn resume_conversation(
        self: &Arc<Self>,
        id_or_prefix: &str,
        system_prompt: Option<String>,
        port: Arc<dyn ClientPort>,
    ) -> Result<OpenConversation> {
        self.resume_conversation_with(id_or_prefix, system_prompt, &BTreeMap::new(), port)
    }

    /// As `resume_conversation`, with MCP servers the client brings (as in
    /// [`ConversationSpec::mcp_servers`]); they count only when the conversation is not open.
    pub fn resume_conversation_with(
        self: &Arc<Self>,
        id_or_prefix: &str,
        system_prompt: Option<String>,
        mcp_servers: &BTreeMap<String, McpServerConfig>,
        port: Arc<dyn ClientPort>,
    ) -> Result<OpenConversation> {
        let id = self.resolve_conversation(id_or_prefix)?;
        let open = |c: &super::conversation::Conversation| {
            let binding = c.agent.binding();
            let (format, model, _) = binding.model_info();
            OpenConversation {
                conversation_id: id.clone(),
                agent_id: c.agent.id.clone(),
                feature: c.feature.clone(),
                service_provider: binding.provider.name.clone(),
                format: format.to_string(),
                model,
                cwd: c.cwd.clone(),
            }
        };
        if let Some(open) = self.running.conversation(&id, open)? {
            return Ok(open);
        }
        let rec = self.history.conversation(&id)?.ok_or_else(|| {
            Error::new(
                ErrorKind::UnknownConversation,
                format!("no conversation {id}"),
            )
        })?;
        let toolbox = self.toolbox_for(mcp_servers)?;
        let sel = Selection {
            provider: rec.provider.clone(),
            model_configuration: rec.model_configuration.clone(),
            model: rec.model_configuration.is_none().then(|| rec.model.clone()),
            middleware: self.history.middleware(&id)?,
            response_schema: self.stored_schema(&id)?,
            ..Default::default()
        };
        let (system, history) = self.history.full_history(&id)?;
        let persistence = Some(Persistence {
            store: self.history.clone(),
            conversation_id: id.clone(),
        });
        let agent = self.build_agent(&sel, Some(&rec.parameters), persistence, system, history)?;
        self.reopen(rec, agent, system_prompt, toolbox, port)
    }

    /// Resumes a stored conversation on the model `choice` names (`genai ask -c -m`). The
    /// same provider and model go on as [`Framework::resume_conversation`]; another takes the
    /// whole history over, rewritten into what its format carries (`handover.rs`), and the
    /// conversation records the switch (each later turn stores its model). Returns the notes
    /// of what the handover changed in the history sent (the stored one stays as it was).
    pub fn resume_conversation_on(
        self: &Arc<Self>,
        id_or_prefix: &str,
        choice: &ModelChoice,
        system_prompt: Option<String>,
        port: Arc<dyn ClientPort>,
    ) -> Result<(OpenConversation, Vec<String>)> {
        let id = self.resolve_conversation(id_or_prefix)?;
        if self.running.conversation(&id, |_| ())?.is_some() {
            return Err(Error::invalid_params(format!(
                "conversation {id} is open: close it before handing it to another model"
            )));
        }
        let rec = self
            .history
            .conversation(&id)?
            .ok_or_else(|| unknown_conversation(&id))?;
        let mut sel = self.selector().select(choice)?;
        sel.response_schema = self.stored_schema(&id)?;
        let (system, history) = self.history.full_history(&id)?;
        let persistence = Some(Persistence {
            store: self.history.clone(),
            conversation_id: id.clone(),
        });
        // Built with no history first, to learn what the new model carries.
        let probe = self.build_agent(&sel, None, None, None, Vec::new())?;
        self.forget_agent(&probe.id);
        let probe = probe.binding();
        let (format, model, _) = probe.model_info();
        if probe.provider.name == rec.provider && model == rec.model && format == rec.format {
            return Ok((
                self.resume_conversation(&id, system_prompt, port)?,
                Vec::new(),
            ));
        }
        let (history, notes) = handover::carry_over(
            history,
            &handover::Target {
                format,
                images: probe.model.images(),
                provider: &probe.provider.name,
                max_image_bytes: probe.provider.provider.max_image_bytes(),
                format_changed: format != rec.format,
            },
        );
        sel.middleware = self.middleware_across(&rec, &sel)?;
        // The parameters go over only to the same format (another may not know them).
        let params = (format == rec.format).then_some(&rec.parameters);
        let agent = self.build_agent(&sel, params, persistence, system, history)?;
        agent.add_notes(notes.iter().cloned());
        let provider = agent.binding().provider.name.clone();
        self.history.switch_model(
            &id,
            &provider,
            sel.model_configuration.as_deref(),
            format,
            &model,
        )?;
        if params.is_none() {
            self.history.update_parameters(&id, &Map::new())?;
        }
        let rec = ConversationRecord { provider, ..rec };
        let toolbox = self.toolbox_for(&BTreeMap::new())?;
        Ok((
            self.reopen(rec, agent, system_prompt, toolbox, port)?,
            notes,
        ))
    }

    /// The middleware a stored conversation runs once it goes over to the model of `next`:
    /// those it ran (its agent's list, else its model configuration's, else `[defaults]`),
    /// then those `next` adds, stored with it. A switch never drops a middleware that kept
    /// something from the provider (a `redact` list ran again only on the turn after).
    pub(super) fn middleware_across(
        &self,
        rec: &ConversationRecord,
        next: &Selection,
    ) -> Result<Option<Vec<String>>> {
        let selector = self.selector();
        let ran = Selection {
            model_configuration: rec.model_configuration.clone(),
            middleware: self.history.middleware(&rec.id)?,
            ..Default::default()
        };
        let mut list = selector.middleware(&ran);
        for name in selector.middleware(next) {
            if !list.contains(&name) {
                list.push(name);
            }
        }
        if list.is_empty() {
            return Ok(next.middleware.clone());
        }
        self.history.set_middleware(&rec.id, Some(&list))?;
        Ok(Some(list))
    }

    /// The schema the client gave a stored conversation at its creation, if any (its model
    /// configuration's, if it has one, comes from the selection).
    fn stored_schema(&self, id: &str) -> Result<Option<crate::format::ResponseSchema>> {
        self.history
            .response_schema(id)?
            .map(|s| crate::format::ResponseSchema::from_stored(&s))
            .transpose()
    }

    /// Opens a stored conversation `rec` on `agent` (built with its history).
    fn reopen(
        self: &Arc<Self>,
        rec: ConversationRecord,
        agent: Arc<AIAgent>,
        system_prompt: Option<String>,
        toolbox: Arc<Toolbox>,
        port: Arc<dyn ClientPort>,
    ) -> Result<OpenConversation> {
        let id = rec.id.clone();
        let (feature, feature_system) = match self.feature(
            &rec.feature,
            rec.tools.as_deref(),
            &toolbox,
            rec.cwd.as_deref(),
            &self.stored_permissions(&rec.id),
        ) {
            Ok(f) => f,
            Err(e) => {
                self.forget_agent(&agent.id);
                return Err(e);
            }
        };
        self.open(
            id,
            agent,
            (rec.feature, feature),
            system_prompt.or(feature_system),
            toolbox,
            port,
            (rec.provider, rec.cwd),
        )
    }
}
