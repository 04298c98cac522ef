//! The middleware of the session's agents: each agent's chain built from the config's lists
//! (`crate::select` says which), middleware that clients host (`RegisterMiddleware`), and the
//! helper agents a middleware may ask (a fresh agent of the config per question, with no
//! history and nothing stored). This module must never run a middleware itself.

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{new_id, Framework};
use crate::agent::{AIAgent, ModelBinding};
use crate::error::{Error, ErrorKind, Result};
use crate::feature::port::ClientPort;
use crate::message::Message;
use crate::middleware::hosted::{Host, Hosted, MiddlewareCall};
use crate::middleware::{self, Chain, Helpers, Link};
use crate::select::{ModelChoice, Selection};

/// A client hosting a middleware, and the time it has to answer.
pub(super) type MiddlewareHost = (Arc<dyn ClientPort>, Duration);

/// A client's port as the host of the middleware it registered.
struct PortHost(Arc<dyn ClientPort>);

#[async_trait]
impl Host for PortHost {
    async fn middleware(&self, call: MiddlewareCall) -> Result<Vec<Message>> {
        self.0.middleware(call).await
    }
}

/// The agents of the config as helpers of middleware, and as the models of subagents
/// (`agents.rs`).
pub(super) struct ConfigAgents(pub(super) Weak<Framework>);

#[async_trait]
impl Helpers for ConfigAgents {
    async fn ask_agent(&self, agent: &str, prompt: Vec<Message>) -> Result<String> {
        let fw = self
            .0
            .upgrade()
            .ok_or_else(|| Error::internal("the core is shutting down"))?;
        let helper = fw.helper_agent(agent)?;
        let outcome = helper
            .send_prompt(prompt, None, &CancellationToken::new())
            .await
            .map_err(|e| e.reworded(|m| format!("agent {agent}: {m}")))?;
        Ok(outcome.reply.message.text())
    }
}

impl Framework {
    /// From now on `host` runs the middleware `name`, answering within `timeout` (default
    /// `middleware::hosted::DEFAULT_TIMEOUT`). A name of the config cannot be taken.
    pub fn register_middleware(
        &self,
        name: &str,
        timeout: Option<Duration>,
        host: Arc<dyn ClientPort>,
    ) -> Result<()> {
        if name.trim().is_empty() {
            return Err(Error::invalid_params("a middleware needs a name"));
        }
        if self.config.middleware.contains_key(name) {
            return Err(Error::invalid_params(format!(
                "`{name}` is a middleware of the config ([middleware.{name}])"
            )));
        }
        let timeout = timeout.unwrap_or(middleware::hosted::DEFAULT_TIMEOUT);
        self.hosts.host_middleware(name, (host, timeout))
    }

    /// The chain of an agent of this selection.
    pub(super) fn middleware_chain(self: &Arc<Self>, sel: &Selection) -> Result<Chain> {
        let names = self.selector().middleware(sel);
        if names.is_empty() {
            return Ok(Chain::default());
        }
        let hosts = self.hosts.middleware()?;
        let hosted = |name: &str| -> Option<Link> {
            hosts.get(name).map(|(port, timeout)| Link {
                name: name.to_string(),
                kind: "client".to_string(),
                middleware: Arc::new(Hosted::new(
                    name,
                    Arc::new(PortHost(port.clone())),
                    *timeout,
                )),
            })
        };
        middleware::build_chain(
            &names,
            &self.config.middleware,
            &hosted,
            Arc::new(ConfigAgents(Arc::downgrade(self))),
            self.texts.clone(),
        )
    }

    /// The compaction of an agent with this chain: `[compaction]`'s, off when the agent lists
    /// a fit-context middleware (that one does what it did before).
    pub(super) fn compaction(
        self: &Arc<Self>,
        chain: &Chain,
    ) -> Result<Option<Arc<crate::compaction::Compaction>>> {
        if chain.has_kind(middleware::fit_context::KIND.name) {
            return Ok(None);
        }
        let helpers = Arc::new(ConfigAgents(Arc::downgrade(self)));
        let c = crate::compaction::Compaction::of(
            &self.config.compaction,
            helpers,
            self.texts.clone(),
        )?;
        Ok(c.map(Arc::new))
    }

    /// A fresh agent of the config named `name`, not listed among the session's agents.
    fn helper_agent(&self, name: &str) -> Result<AIAgent> {
        let sel = self
            .selector()
            .select(&ModelChoice::Agent(name.to_string()))
            .map_err(|e| Error::new(ErrorKind::Config, e.message))?;
        let provider = self.selector().provider(&sel)?;
        let model = self.registry.build_model(
            &provider,
            sel.model_configuration.as_deref(),
            sel.model.as_deref(),
            None,
        )?;
        let binding = ModelBinding::new(provider, model);
        let mut agent = AIAgent::new(new_id(), binding, None, None, Vec::new());
        agent.timeout = self.prompt_timeout;
        Ok(agent)
    }
}
