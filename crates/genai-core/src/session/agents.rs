//! The agents the core runs: each built from a selection (its model binding — provider, model,
//! price, response schema, fallbacks — and its middleware), kept by id (in `running`) while
//! its conversation is open, made alone outside any conversation, or made for one request of a
//! client that keeps the history itself (the gateway's) and kept nowhere.
//!
//! It must never choose a provider or a model itself (`crate::select` does) nor run a turn.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::middleware::ConfigAgents;
use super::{new_id, Framework};
use crate::agent::{AIAgent, ModelBinding, Persistence};
use crate::error::{Error, ErrorKind, Result};
use crate::feature::SubagentModels;
use crate::format::ModelConfiguration;
use crate::message::Message;
use crate::pricing::Priced;
use crate::registry::ProviderInstance;
use crate::select::{ModelChoice, Selection};

/// The model one request will run on, before its agent: what was chosen, its provider and
/// its model configuration, which the request's parameters change as a value.
#[derive(Clone)]
pub struct RequestModel {
    selection: Selection,
    pub provider: ProviderInstance,
    configuration: ModelConfiguration,
    /// The parameters set, given to the fallbacks too.
    set: Map<String, Value>,
}

impl RequestModel {
    pub fn configuration(&self) -> &ModelConfiguration {
        &self.configuration
    }

    /// Sets a parameter as the model's format takes it, or says why it cannot.
    pub fn set_parameter(&mut self, name: &str, value: Value) -> Result<()> {
        self.configuration.set_parameter(name, value.clone())?;
        self.set.insert(name.to_string(), value);
        Ok(())
    }
}

impl SubagentModels for ConfigAgents {
    fn agent_on(&self, name: &str, id: String) -> Result<AIAgent> {
        let fw = self
            .0
            .upgrade()
            .ok_or_else(|| Error::internal("the core is shutting down"))?;
        let sel = fw
            .selector()
            .select(&ModelChoice::Named(name.to_string()))?;
        let mut agent = fw.make_agent(&sel, None, None, None, Vec::new())?;
        agent.id = id;
        Ok(agent)
    }
}

impl Framework {
    /// Where the subagents of this core's conversations get an agent on the model their
    /// definition names.
    pub(super) fn subagent_models(self: &Arc<Self>) -> Arc<dyn SubagentModels> {
        Arc::new(ConfigAgents(Arc::downgrade(self)))
    }

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
        self.running.add_agent(agent.clone())?;
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
        let (provider, model) = self.model_of(sel, params)?;
        self.agent_on(sel, provider, model, params, persistence, system, history)
    }

    /// The provider and model configuration of `sel`, with `params` set.
    fn model_of(
        &self,
        sel: &Selection,
        params: Option<&Map<String, Value>>,
    ) -> Result<(ProviderInstance, ModelConfiguration)> {
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
        Ok((provider, model))
    }

    /// An agent of `sel` on this provider and model configuration (its binding, with the
    /// price, response schema and fallbacks of `sel`, its middleware and its compaction);
    /// its fallbacks get `params`.
    #[allow(clippy::too_many_arguments)]
    fn agent_on(
        self: &Arc<Self>,
        sel: &Selection,
        provider: ProviderInstance,
        model: ModelConfiguration,
        params: Option<&Map<String, Value>>,
        persistence: Option<Persistence>,
        system: Option<Message>,
        history: Vec<Message>,
    ) -> Result<AIAgent> {
        let binding = ModelBinding {
            price: self.price_of(&provider, &model.model),
            response_schema: self.selector().response_schema(sel)?.map(Arc::new),
            fallbacks: self.fallbacks(sel, params)?,
            ..ModelBinding::new(provider, model)
        };
        let mut agent = AIAgent::new(new_id(), binding, persistence, system, history);
        agent.timeout = self.prompt_timeout;
        agent.middleware = self.middleware_chain(sel)?;
        agent.compaction = self.compaction(&agent.middleware)?;
        Ok(agent)
    }

    /// The price of `model` on `provider` (the vendor's list only where the provider is the
    /// vendor's own service), when one is known.
    pub(super) fn price_of(&self, provider: &ProviderInstance, model: &str) -> Option<Priced> {
        let vendor = provider.provider.vendor_prices();
        self.prices
            .lookup_at(&provider.name, provider.kind, model, vendor)
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
            let price = self.price_of(&provider, &model.model);
            let mut f = crate::agent::Fallback::new(name.clone(), provider, model, price);
            for (k, v) in params.into_iter().flatten() {
                f.set_parameter(k, v.clone());
            }
            out.push(f);
        }
        Ok(out)
    }

    /// The model of one request of a client that keeps the history itself (the gateway's
    /// APIs), chosen as `genai ask -m` chooses (`choice`): a value the caller sets the
    /// request's parameters on before [`Framework::request_agent`] makes its agent.
    pub fn request_model(&self, choice: &ModelChoice) -> Result<RequestModel> {
        let selection = self.selector().select(choice)?;
        let (provider, configuration) = self.model_of(&selection, None)?;
        Ok(RequestModel {
            selection,
            provider,
            configuration,
            set: Map::new(),
        })
    }

    /// The agent of one request's model, with the agent's system prompt (a system message of
    /// the request replaces it), middleware, response schema and fallbacks (given the
    /// parameters set on the model), never compacted. It is registered nowhere and stores
    /// nothing; dropping it ends it.
    pub fn request_agent(self: &Arc<Self>, model: RequestModel) -> Result<AIAgent> {
        let RequestModel {
            selection,
            provider,
            configuration,
            set,
        } = model;
        let system = selection.system_prompt.clone().map(Message::system);
        let params = (!set.is_empty()).then_some(&set);
        let mut agent = self.agent_on(
            &selection,
            provider,
            configuration,
            params,
            None,
            system,
            Vec::new(),
        )?;
        // Its client sends the whole history each time and gets what it asked for.
        agent.compaction = None;
        Ok(agent)
    }

    pub fn agent(&self, id: &str) -> Result<Arc<AIAgent>> {
        self.running.agent(id)?.ok_or_else(|| {
            Error::new(
                ErrorKind::UnknownAgent,
                format!("no agent {id} (agents live while their conversation is open)"),
            )
        })
    }

    pub(super) fn forget_agent(&self, id: &str) {
        let _ = self.running.remove_agent(id);
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
        if self.running.conversation_of_agent(id, |_| ())?.is_some() {
            return Err(Error::invalid_params(
                "this agent belongs to an open conversation: use RemoveConversation",
            ));
        }
        self.running.remove_agent(id)
    }
}
