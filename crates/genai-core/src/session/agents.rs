//! The agents the core runs: each built from a selection (its provider and model, middleware,
//! response schema, price and fallbacks), and kept by id while its conversation is open, made
//! alone outside any conversation, or made for one request of a client that keeps the history
//! itself (the gateway's) and kept nowhere.
//!
//! It must never choose a provider or a model itself (`crate::select` does) nor run a turn.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{new_id, poisoned, Framework};
use crate::agent::{AIAgent, Persistence};
use crate::error::{Error, ErrorKind, Result};
use crate::message::Message;
use crate::select::{ModelChoice, Selection};

impl Framework {
    /// An agent of `sel`, kept by id until its conversation or its client removes it.
    pub(super) fn build_agent(
        self: &Arc<Self>,
        sel: &Selection,
        params: Option<&Map<String, Value>>,
        persistence: Option<Persistence>,
        system: Option<Message>,
        history: Vec<Message>,
    ) -> Result<Arc<AIAgent>> {
        let agent = Arc::new(self.make_agent(sel, params, persistence, system, history)?);
        self.agents
            .lock()
            .map_err(|_| poisoned())?
            .insert(agent.id.clone(), agent.clone());
        Ok(agent)
    }

    /// An agent of `sel` (its middleware, response schema and price), registered nowhere.
    fn make_agent(
        self: &Arc<Self>,
        sel: &Selection,
        params: Option<&Map<String, Value>>,
        persistence: Option<Persistence>,
        system: Option<Message>,
        history: Vec<Message>,
    ) -> Result<AIAgent> {
        if sel.model_configuration.is_some() && sel.model.is_some() {
            return Err(Error::invalid_params(
                "give `modelConfiguration` or `model`, not both",
            ));
        }
        let provider = self.selector().provider(sel)?;
        let model = self.registry.build_model(
            &provider,
            sel.model_configuration.as_deref(),
            sel.model.as_deref(),
            params,
        )?;
        let model_id = model.model.clone();
        let mut agent = AIAgent::new(new_id(), provider, model, persistence, system, history);
        agent.timeout = self.prompt_timeout;
        agent.middleware = self.middleware_chain(sel)?;
        agent.response_schema = self.selector().response_schema(sel)?.map(Arc::new);
        agent.price = self.prices.lookup_at(
            &agent.provider.name,
            agent.provider.kind,
            &model_id,
            agent.provider.provider.vendor_prices(),
        );
        agent.fallbacks = self.fallbacks(sel, params)?;
        Ok(agent)
    }

    /// The fallbacks of `sel` (each a name `-m` takes: an agent, `PROVIDER:MODEL`, a provider
    /// or `local`), each on its own provider and model (an agent's own fallbacks are not
    /// followed), with the parameters given to the agent.
    fn fallbacks(
        &self,
        sel: &Selection,
        params: Option<&Map<String, Value>>,
    ) -> Result<Vec<crate::agent::Fallback>> {
        let mut out = Vec::with_capacity(sel.fallback.len());
        for name in &sel.fallback {
            let fsel = self
                .selector()
                .select(&ModelChoice::Named(name.clone()))
                .map_err(|e| Error::new(e.kind, format!("fallback `{name}`: {}", e.message)))?;
            let provider = self.selector().provider(&fsel)?;
            let model = self.registry.build_model(
                &provider,
                fsel.model_configuration.as_deref(),
                fsel.model.as_deref(),
                None,
            )?;
            let price = self.prices.lookup_at(
                &provider.name,
                provider.kind,
                &model.model,
                provider.provider.vendor_prices(),
            );
            let f = crate::agent::Fallback::new(name.clone(), provider, model, price);
            for (k, v) in params.into_iter().flatten() {
                f.set_parameter(k, v.clone());
            }
            out.push(f);
        }
        Ok(out)
    }

    /// An agent for one request of a client that keeps the history itself (the gateway's
    /// APIs): chosen as `genai ask -m` chooses (`choice`), with the agent's system prompt (a
    /// system message of the request replaces it), middleware and response schema. It is
    /// registered nowhere and stores nothing; dropping it ends it.
    pub fn request_agent(self: &Arc<Self>, choice: &ModelChoice) -> Result<AIAgent> {
        let sel = self.selector().select(choice)?;
        let system = sel.system_prompt.clone().map(Message::system);
        self.make_agent(&sel, None, None, system, Vec::new())
    }

    pub fn agent(&self, id: &str) -> Result<Arc<AIAgent>> {
        self.agents
            .lock()
            .map_err(|_| poisoned())?
            .get(id)
            .cloned()
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::UnknownAgent,
                    format!("no agent {id} (agents live while their conversation is open)"),
                )
            })
    }

    pub(super) fn forget_agent(&self, id: &str) {
        if let Ok(mut a) = self.agents.lock() {
            a.remove(id);
        }
    }

    /// An agent outside any conversation (its history lives in memory only).
    pub fn create_agent(
        self: &Arc<Self>,
        choice: &ModelChoice,
        parameters: Option<&Map<String, Value>>,
    ) -> Result<String> {
        let sel = self.selector().select(choice)?;
        Ok(self
            .build_agent(&sel, parameters, None, None, Vec::new())?
            .id
            .clone())
    }

    pub fn remove_agent(&self, id: &str) -> Result<bool> {
        let owned = self
            .conversations
            .lock()
            .map_err(|_| poisoned())?
            .values()
            .any(|c| c.agent.id == id);
        if owned {
            return Err(Error::invalid_params(
                "this agent belongs to an open conversation: use RemoveConversation",
            ));
        }
        Ok(self
            .agents
            .lock()
            .map_err(|_| poisoned())?
            .remove(id)
            .is_some())
    }
}
