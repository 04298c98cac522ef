//! The running system: agents, conversations and the routing of events (DESIGN §1–§2).
//!
//! Each conversation has one task fed by a channel, so its turns run in order; conversations run
//! concurrently. `Cancel` acts at once through the running turn's token. Every accepted message
//! ends with exactly one final `OnFeatureResponse`, sent here and nowhere else. The framework
//! must never speak a wire format: the RPC server and the CLI translate for it.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{AIAgent, Persistence};
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::feature::external::{External, PendingTurns};
use crate::feature::{assistant, Events, Feature, Turn, TurnOutcome};
use crate::message::Message;
use crate::registry::Registry;
use crate::rpc::protocol::*;
use crate::store::{now_ms, ConversationRecord, Store};

/// A live conversation.
struct Conversation {
    agent: Arc<AIAgent>,
    feature: String,
    queue: mpsc::UnboundedSender<(String, Message)>,
    /// The running turn and its cancellation token.
    running: Arc<Mutex<Option<(String, CancellationToken)>>>,
    /// Cancelled when the conversation is closed: ends its task.
    closed: CancellationToken,
}

/// What a conversation runs on, before it is built.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub provider: String,
    pub model_configuration: Option<String>,
    pub model: Option<String>,
    pub feature: Option<String>,
    pub system_prompt: Option<String>,
}

pub struct Framework {
    pub registry: Registry,
    pub config: Config,
    store: Arc<Store>,
    events: Events,
    conversations: Mutex<HashMap<String, Conversation>>,
    agents: Mutex<HashMap<String, Arc<AIAgent>>>,
    /// Running `SendPrompt` requests by request id.
    prompts: Arc<Mutex<HashMap<String, CancellationToken>>>,
    pending_external: PendingTurns,
    /// The longest one prompt may take (`genai ask --timeout`).
    pub prompt_timeout: Option<Duration>,
    /// How many turns and prompts are queued or running.
    inflight: Arc<tokio::sync::watch::Sender<usize>>,
    /// The plugin modules and MCP servers of the config (`ListTools`, `CallTool`).
    pub toolbox: Arc<crate::tools::toolbox::Toolbox>,
}

/// The environment variables that select a built-in provider when nothing else chooses one.
const ZERO_CONFIG_ENV: &[(&str, &[&str])] = &[
    (
        crate::provider::openai::KIND,
        &["OPENAI_API_KEY", "OPENAI_BASE_URL"],
    ),
    (crate::provider::anthropic::KIND, &["ANTHROPIC_API_KEY"]),
    (
        crate::provider::gemini::KIND,
        &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    ),
];

fn any_env(vars: &[&str]) -> bool {
    vars.iter()
        .any(|v| std::env::var(v).is_ok_and(|v| !v.trim().is_empty()))
}

fn new_id() -> String {
    ulid::Ulid::new().to_string()
}

fn poisoned() -> Error {
    Error::internal("framework lock poisoned")
}

impl Framework {
    /// A framework over a store; notifications go to the returned receiver.
    pub fn new(
        config: Config,
        registry: Registry,
        store: Arc<Store>,
    ) -> (Arc<Framework>, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let fw = Framework {
            toolbox: Arc::new(crate::tools::toolbox::Toolbox::new(
                config.plugins.clone(),
                config.mcp_servers.clone(),
            )),
            registry,
            config,
            store,
            events: Events {
                tx,
                streaming: Arc::new(AtomicBool::new(true)),
            },
            conversations: Mutex::new(HashMap::new()),
            agents: Mutex::new(HashMap::new()),
            prompts: Arc::new(Mutex::new(HashMap::new())),
            pending_external: Arc::new(Mutex::new(Default::default())),
            prompt_timeout: None,
            inflight: Arc::new(tokio::sync::watch::channel(0).0),
        };
        (Arc::new(fw), rx)
    }

    /// Waits until no turn or prompt is queued or running.
    pub async fn idle(&self) {
        let mut rx = self.inflight.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Cancels every queued and running turn and every prompt (each still ends with its final
    /// notification); used by `Shutdown`.
    pub fn cancel_all(&self) {
        if let Ok(convs) = self.conversations.lock() {
            convs.values().for_each(|c| c.closed.cancel());
        }
        if let Ok(p) = self.prompts.lock() {
            p.values().for_each(CancellationToken::cancel);
        }
    }

    /// The client is gone: turns waiting on a client-hosted feature end with an error.
    pub fn client_gone(&self) {
        if let Ok(mut p) = self.pending_external.lock() {
            // Dropping the senders wakes each waiting turn, which then reports the client gone.
            p.client_gone = true;
            p.turns.clear();
        }
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Whether chunk notifications are sent (a client's `Initialize` may turn them off).
    pub fn set_streaming(&self, on: bool) {
        self.events
            .streaming
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Turns `-m`-style names into a selection: an agent from the config, or `provider:model`,
    /// or a bare provider instance name. `None` uses `[defaults] model`.
    pub fn select(&self, name: Option<&str>) -> Result<Selection> {
        let name = match name.or(self.config.defaults.model.as_deref()) {
            Some(n) => n,
            // Zero config: a provider's key (or endpoint) in the environment selects its
            // built-in instance, in this order.
            None if ZERO_CONFIG_ENV.iter().any(|(_, vars)| any_env(vars)) => ZERO_CONFIG_ENV
                .iter()
                .find(|(_, vars)| any_env(vars))
                .map(|(kind, _)| *kind)
                .unwrap_or(crate::provider::openai::KIND),
            // Zero config, no key in the environment: the default local model.
            None => {
                let lib = crate::models::ModelLibrary::open(&crate::config::Paths::from_env()?);
                let (provider, model) = self.registry.implicit_local(&self.config, &lib)?;
                return Ok(Selection {
                    provider,
                    model: Some(model),
                    ..Default::default()
                });
            }
        };
        if let Some(agent) = self.config.agents.get(name) {
            return Ok(Selection {
                provider: agent.provider.clone(),
                model_configuration: agent.model_configuration.clone(),
                model: agent.model.clone(),
                feature: agent.feature.clone(),
                system_prompt: agent.system_prompt.clone(),
            });
        }
        match name.split_once(':') {
            Some((p, m)) if !p.is_empty() && !m.is_empty() => {
                Ok(Selection { provider: p.to_string(), model: Some(m.to_string()), ..Default::default() })
            }
            _ if self.registry.provider(name).is_ok() => Ok(Selection { provider: name.to_string(), ..Default::default() }),
            _ => Err(Error::new(
                ErrorKind::UnknownComponent,
                format!("`{name}` is neither an agent in the config nor PROVIDER:MODEL (such as openai:gpt-4o-mini)"),
            )),
        }
    }

    fn selection_of(
        &self,
        agent: Option<&str>,
        provider: Option<&str>,
        mc: Option<&str>,
        model: Option<&str>,
    ) -> Result<Selection> {
        match (agent, provider) {
            (Some(_), Some(_)) => Err(Error::invalid_params(
                "give `agent` or `serviceProvider`, not both",
            )),
            (Some(a), None) => {
                if !self.config.agents.contains_key(a) {
                    return Err(Error::new(
                        ErrorKind::UnknownComponent,
                        format!("no agent named `{a}` in the config"),
                    ));
                }
                self.select(Some(a))
            }
            (None, Some(p)) => Ok(Selection {
                provider: p.to_string(),
                model_configuration: mc.map(str::to_string),
                model: model.map(str::to_string),
                ..Default::default()
            }),
            (None, None) if mc.is_some() || model.is_some() => Err(Error::invalid_params(
                "`modelConfiguration` and `model` need a `serviceProvider`",
            )),
            (None, None) => self.select(None),
        }
    }

    fn build_agent(
        &self,
        sel: &Selection,
        params: Option<&Map<String, Value>>,
        persistence: Option<Persistence>,
        system: Option<Message>,
        history: Vec<Message>,
    ) -> Result<Arc<AIAgent>> {
        if sel.model_configuration.is_some() && sel.model.is_some() {
            return Err(Error::invalid_params(
                "give `modelConfiguration` or `model`, not both",
            ));
        }
        let provider = match self.registry.provider(&sel.provider) {
            // A conversation resumed on the implicit zero-config `local` instance (made on
            // first use only): make it again.
            Err(_) if sel.provider == crate::registry::LOCAL_KIND => {
                let lib = crate::models::ModelLibrary::open(&crate::config::Paths::from_env()?);
                self.registry.implicit_local(&self.config, &lib)?;
                self.registry.provider(&sel.provider)?
            }
            other => other?,
        };
        let model = self.registry.build_model(
            &provider,
            sel.model_configuration.as_deref(),
            sel.model.as_deref(),
            params,
        )?;
        let mut agent = AIAgent::new(new_id(), provider, model, persistence, system, history);
        agent.timeout = self.prompt_timeout;
        let agent = Arc::new(agent);
        self.agents
            .lock()
            .map_err(|_| poisoned())?
            .insert(agent.id.clone(), agent.clone());
        Ok(agent)
    }

    /// The feature instance for a name, with the system prompt its config gives; `tools` is
    /// the conversation's tool selection (the `tools` feature only).
    fn feature(
        &self,
        name: &str,
        tools: Option<&[String]>,
    ) -> Result<(Arc<dyn Feature>, Option<String>)> {
        let info = self.registry.feature(name)?;
        let config = self.config.features.get(name);
        let system = config.and_then(|f| f.system_prompt.clone());
        if tools.is_some() && name != crate::feature::tools::NAME {
            return Err(Error::invalid_params(format!(
                "tools are given to the model by the `{}` feature, not `{name}`",
                crate::feature::tools::NAME
            )));
        }
        let f: Arc<dyn Feature> = if info.origin == "client" {
            Arc::new(External {
                name: name.to_string(),
                pending: self.pending_external.clone(),
            })
        } else if name == assistant::NAME {
            Arc::new(assistant::Assistant)
        } else if name == crate::feature::tools::NAME {
            if let Some(t) = tools {
                self.toolbox.check_selection(t)?;
            }
            Arc::new(crate::feature::tools::Tools::new(
                self.toolbox.clone(),
                tools.map(<[String]>::to_vec),
                config.and_then(|f| f.max_steps),
                config.and_then(|f| f.mode),
            ))
        } else {
            return Err(Error::internal(format!(
                "feature `{name}` has no implementation"
            )));
        };
        Ok((f, system))
    }

    pub fn create_conversation(
        self: &Arc<Self>,
        p: CreateConversationParams,
    ) -> Result<CreateConversationResult> {
        let mut sel = self.selection_of(
            p.agent.as_deref(),
            p.service_provider.as_deref(),
            p.model_configuration.as_deref(),
            p.model.as_deref(),
        )?;
        let feature_name = p
            .feature
            .clone()
            .or_else(|| {
                p.tools
                    .is_some()
                    .then(|| crate::feature::tools::NAME.to_string())
            })
            .or(sel.feature.clone())
            .or(self.config.defaults.feature.clone())
            .unwrap_or_else(|| assistant::NAME.to_string());
        let (feature, feature_system) = self.feature(&feature_name, p.tools.as_deref())?;
        sel.system_prompt = p
            .system_prompt
            .clone()
            .or(sel.system_prompt.take())
            .or(feature_system);
        let id = new_id();
        let persistence = (!p.ephemeral).then(|| Persistence {
            store: self.store.clone(),
            conversation_id: id.clone(),
        });
        let agent = self.build_agent(&sel, p.parameters.as_ref(), persistence, None, Vec::new())?;
        let (format, model, parameters) = agent.model_info()?;
        if !p.ephemeral {
            let now = now_ms();
            let rec = ConversationRecord {
                id: id.clone(),
                title: p
                    .title
                    .clone()
                    .map(|t| crate::store::title_of(&t))
                    .unwrap_or_default(),
                feature: feature_name.clone(),
                provider: sel.provider.clone(),
                model_configuration: sel.model_configuration.clone(),
                format: format.to_string(),
                model: model.clone(),
                parameters,
                created_at: now,
                updated_at: now,
                message_count: 0,
                tools: p.tools.clone(),
            };
            if let Err(e) = self.store.create_conversation(&rec) {
                self.forget_agent(&agent.id);
                return Err(e);
            }
        }
        self.open(
            id.clone(),
            agent.clone(),
            feature_name.clone(),
            feature,
            sel.system_prompt.clone(),
        )?;
        Ok(CreateConversationResult {
            conversation_id: id,
            agent_id: agent.id.clone(),
            feature: feature_name,
            service_provider: sel.provider,
            format: format.to_string(),
            model,
        })
    }

    /// Reopens a stored conversation (by id or unique prefix) with its history; returns the ids
    /// at once when it is already open.
    pub fn resume_conversation(
        self: &Arc<Self>,
        id_or_prefix: &str,
        system_prompt: Option<String>,
    ) -> Result<CreateConversationResult> {
        let id = self.resolve_conversation(id_or_prefix)?;
        if let Some(c) = self.conversations.lock().map_err(|_| poisoned())?.get(&id) {
            let (format, model, _) = c.agent.model_info()?;
            return Ok(CreateConversationResult {
                conversation_id: id,
                agent_id: c.agent.id.clone(),
                feature: c.feature.clone(),
                service_provider: c.agent.provider.name.clone(),
                format: format.to_string(),
                model,
            });
        }
        let rec = self.store.conversation(&id)?.ok_or_else(|| {
            Error::new(
                ErrorKind::UnknownConversation,
                format!("no conversation {id}"),
            )
        })?;
        let (feature, feature_system) = self.feature(&rec.feature, rec.tools.as_deref())?;
        let (system, history) = self.store.full_history(&id)?;
        let sel = Selection {
            provider: rec.provider.clone(),
            model_configuration: rec.model_configuration.clone(),
            model: rec.model_configuration.is_none().then(|| rec.model.clone()),
            ..Default::default()
        };
        let persistence = Some(Persistence {
            store: self.store.clone(),
            conversation_id: id.clone(),
        });
        let agent = self.build_agent(&sel, Some(&rec.parameters), persistence, system, history)?;
        let (format, model, _) = agent.model_info()?;
        self.open(
            id.clone(),
            agent.clone(),
            rec.feature.clone(),
            feature,
            system_prompt.or(feature_system),
        )?;
        Ok(CreateConversationResult {
            conversation_id: id,
            agent_id: agent.id.clone(),
            feature: rec.feature,
            service_provider: rec.provider,
            format: format.to_string(),
            model,
        })
    }

    /// An open conversation's id, or a stored one's from its id or unique prefix.
    pub fn resolve_conversation(&self, id_or_prefix: &str) -> Result<String> {
        if self
            .conversations
            .lock()
            .map_err(|_| poisoned())?
            .contains_key(id_or_prefix)
        {
            return Ok(id_or_prefix.to_string());
        }
        self.store.resolve_id(id_or_prefix)
    }

    /// Starts the conversation's task.
    fn open(
        self: &Arc<Self>,
        id: String,
        agent: Arc<AIAgent>,
        feature_name: String,
        feature: Arc<dyn Feature>,
        system_prompt: Option<String>,
    ) -> Result<()> {
        let (queue, mut rx) = mpsc::unbounded_channel::<(String, Message)>();
        let running: Arc<Mutex<Option<(String, CancellationToken)>>> = Arc::new(Mutex::new(None));
        let closed = CancellationToken::new();
        let conv = Conversation {
            agent: agent.clone(),
            feature: feature_name,
            queue,
            running: running.clone(),
            closed: closed.clone(),
        };
        self.conversations
            .lock()
            .map_err(|_| poisoned())?
            .insert(id.clone(), conv);
        let events = self.events.clone();
        let inflight = self.inflight.clone();
        tokio::spawn(async move {
            while let Some((turn_id, message)) = rx.recv().await {
                let cancel = closed.child_token();
                if let Ok(mut r) = running.lock() {
                    *r = Some((turn_id.clone(), cancel.clone()));
                }
                let turn = Turn {
                    conversation_id: id.clone(),
                    turn_id: turn_id.clone(),
                    agent: agent.clone(),
                    message,
                    cancel: cancel.clone(),
                    system_prompt: system_prompt.clone(),
                    events: events.clone(),
                };
                // The feature runs in its own task so that a panic in it still ends the turn.
                let feature = feature.clone();
                let outcome =
                    match tokio::spawn(async move { feature.on_new_message(&turn).await }).await {
                        Ok(outcome) => outcome,
                        Err(e) => {
                            TurnOutcome::failed(Error::internal(format!("the feature failed: {e}")))
                        }
                    };
                if let Ok(mut r) = running.lock() {
                    *r = None;
                }
                if let Some(e) = &outcome.error {
                    tracing::warn!(conversation = %id, turn = %turn_id, kind = e.kind.as_str(), "turn failed: {}", e.message);
                }
                events.send(Event::OnFeatureResponse(final_response(
                    &id, &turn_id, outcome,
                )));
                inflight.send_modify(|n| *n = n.saturating_sub(1));
            }
        });
        Ok(())
    }

    /// Queues a user message; the answer comes as notifications.
    pub fn on_new_message(&self, conversation_id: &str, message: Message) -> Result<String> {
        let blank = message
            .content
            .iter()
            .all(|p| matches!(p, crate::message::Part::Text { text } if text.trim().is_empty()));
        if blank {
            return Err(Error::invalid_params("the message is empty"));
        }
        let convs = self.conversations.lock().map_err(|_| poisoned())?;
        let conv = convs
            .get(conversation_id)
            .ok_or_else(|| unknown_conversation(conversation_id))?;
        let turn_id = new_id();
        self.inflight.send_modify(|n| *n += 1);
        if conv.queue.send((turn_id.clone(), message)).is_err() {
            self.inflight.send_modify(|n| *n = n.saturating_sub(1));
            return Err(unknown_conversation(conversation_id));
        }
        Ok(turn_id)
    }

    /// Cancels a running turn or prompt; false when nothing ran under that id.
    pub fn cancel(&self, p: &CancelParams) -> Result<bool> {
        let mut cancelled = false;
        if let Some(req) = &p.request_id {
            if let Some(t) = self.prompts.lock().map_err(|_| poisoned())?.get(req) {
                t.cancel();
                cancelled = true;
            }
        }
        if p.conversation_id.is_some() || p.turn_id.is_some() {
            let convs = self.conversations.lock().map_err(|_| poisoned())?;
            if let Some(cid) = &p.conversation_id {
                if !convs.contains_key(cid) {
                    return Err(unknown_conversation(cid));
                }
            }
            for (cid, conv) in convs.iter() {
                if p.conversation_id.as_ref().is_some_and(|c| c != cid) {
                    continue;
                }
                if let Some((turn, token)) = conv.running.lock().map_err(|_| poisoned())?.as_ref() {
                    if p.turn_id.as_ref().is_none_or(|t| t == turn) {
                        token.cancel();
                        cancelled = true;
                    }
                }
            }
        }
        if p.request_id.is_none() && p.conversation_id.is_none() && p.turn_id.is_none() {
            return Err(Error::invalid_params(
                "Cancel needs `conversationId`, `turnId` or `requestId`",
            ));
        }
        Ok(cancelled)
    }

    /// Closes a conversation: its running turn is cancelled and its task ends.
    pub fn remove_conversation(&self, id: &str) -> Result<bool> {
        let conv = self
            .conversations
            .lock()
            .map_err(|_| poisoned())?
            .remove(id);
        Ok(match conv {
            Some(c) => {
                c.closed.cancel();
                self.forget_agent(&c.agent.id);
                true
            }
            None => false,
        })
    }

    /// Closes a conversation and deletes it from the history.
    pub fn delete_conversation(&self, id_or_prefix: &str) -> Result<()> {
        let id = self.resolve_conversation(id_or_prefix)?;
        self.remove_conversation(&id)?;
        if !self.store.delete_conversation(&id)? {
            return Err(unknown_conversation(&id));
        }
        Ok(())
    }

    pub fn open_conversations(&self) -> usize {
        self.conversations.lock().map(|c| c.len()).unwrap_or(0)
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

    fn forget_agent(&self, id: &str) {
        if let Ok(mut a) = self.agents.lock() {
            a.remove(id);
        }
    }

    /// An agent outside any conversation (its history lives in memory only).
    pub fn create_agent(&self, p: CreateAIAgentParams) -> Result<String> {
        let sel = self.selection_of(
            p.agent.as_deref(),
            p.service_provider.as_deref(),
            p.model_configuration.as_deref(),
            p.model.as_deref(),
        )?;
        Ok(self
            .build_agent(&sel, p.parameters.as_ref(), None, None, Vec::new())?
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

    /// Runs a prompt on an agent in the background; the outcome comes as `OnPromptResponse`.
    /// A running turn of the agent's conversation cancels the prompt too.
    pub fn send_prompt(&self, agent_id: &str, prompt: Vec<Message>) -> Result<String> {
        let agent = self.agent(agent_id)?;
        if prompt.is_empty() {
            return Err(Error::invalid_params("the prompt is empty"));
        }
        let request_id = new_id();
        let turn_token = self
            .conversations
            .lock()
            .map_err(|_| poisoned())?
            .values()
            .find(|c| c.agent.id == agent_id)
            .and_then(|c| {
                c.running
                    .lock()
                    .ok()
                    .and_then(|r| r.as_ref().map(|(_, t)| t.clone()))
            });
        let cancel = turn_token.map(|t| t.child_token()).unwrap_or_default();
        self.prompts
            .lock()
            .map_err(|_| poisoned())?
            .insert(request_id.clone(), cancel.clone());
        let events = self.events.clone();
        let prompts = self.prompts.clone();
        let rid = request_id.clone();
        let inflight = self.inflight.clone();
        let chunk_events_streaming = self.events.streaming();
        inflight.send_modify(|n| *n += 1);
        tokio::spawn(async move {
            let chunk_events = events.clone();
            let (aid, rid2) = (agent.id.clone(), rid.clone());
            let worker = agent.clone();
            // The prompt runs in its own task so that a panic still ends with OnPromptResponse.
            let work = tokio::spawn(async move {
                let stream_to = move |delta: &str| {
                    chunk_events.send(Event::OnPromptResponseChunk(PromptResponseChunk {
                        agent_id: aid.clone(),
                        request_id: rid2.clone(),
                        delta: delta.to_string(),
                    }))
                };
                let on_delta: Option<&(dyn Fn(&str) + Send + Sync)> = if chunk_events_streaming {
                    Some(&stream_to)
                } else {
                    None
                };
                worker.send_prompt(prompt, on_delta, &cancel).await
            });
            let result = work
                .await
                .unwrap_or_else(|e| Err(Error::internal(format!("the prompt failed: {e}"))));
            if let Ok(mut p) = prompts.lock() {
                p.remove(&rid);
            }
            let response = match result {
                Ok(o) => PromptResponse {
                    agent_id: agent.id.clone(),
                    request_id: rid,
                    is_success: true,
                    message: Some(o.reply.message),
                    error: None,
                    usage: o.reply.usage,
                    finish_reason: o.reply.finish_reason,
                },
                Err(e) => PromptResponse {
                    agent_id: agent.id.clone(),
                    request_id: rid,
                    is_success: false,
                    message: None,
                    error: Some(ErrorInfo::from(&e)),
                    usage: None,
                    finish_reason: None,
                },
            };
            events.send(Event::OnPromptResponse(response));
            inflight.send_modify(|n| *n = n.saturating_sub(1));
        });
        Ok(request_id)
    }

    pub fn register_feature(&self, p: &RegisterFeatureParams) -> Result<()> {
        if p.name.trim().is_empty() {
            return Err(Error::invalid_params("a feature needs a name"));
        }
        if let Ok(f) = self.registry.feature(&p.name) {
            if f.origin == "builtin" {
                return Err(Error::invalid_params(format!(
                    "`{}` is a built-in feature",
                    p.name
                )));
            }
        }
        self.registry
            .register_feature(&p.name, &p.description, "client");
        Ok(())
    }

    /// A client-hosted feature's answer: forwarded at once when not final, ends the turn when final.
    pub fn on_feature_response(&self, p: OnFeatureResponseParams) -> Result<()> {
        let cid = p.conversation_id.clone();
        let mut pending = self.pending_external.lock().map_err(|_| poisoned())?;
        let Some(waiting) = pending.turns.get(&cid) else {
            return Err(Error::new(
                ErrorKind::UnknownConversation,
                format!("conversation {cid} has no turn waiting for a feature response"),
            ));
        };
        if p.turn_id.as_ref().is_some_and(|t| t != &waiting.turn_id) {
            return Err(Error::invalid_params(format!(
                "turn {} is not the running turn of {cid}",
                p.turn_id.unwrap_or_default()
            )));
        }
        let turn_id = waiting.turn_id.clone();
        if !p.is_final {
            self.events.send(Event::OnFeatureResponse(FeatureResponse {
                conversation_id: cid,
                turn_id,
                summary: p.summary,
                detailed_response: p.detailed_response,
                is_final: false,
                is_success: true,
                error: None,
                usage: None,
                model: None,
                finish_reason: None,
            }));
            return Ok(());
        }
        if let Some(w) = pending.turns.remove(&cid) {
            let error = p.error.map(|e| Error::new(ErrorKind::FeatureError, e));
            let _ = w.done.send(TurnOutcome {
                summary: p.summary,
                detailed: p.detailed_response,
                error,
                ..Default::default()
            });
        }
        Ok(())
    }
}

fn unknown_conversation(id: &str) -> Error {
    Error::new(
        ErrorKind::UnknownConversation,
        format!("no open conversation {id} (create it, or ResumeConversation)"),
    )
}

fn final_response(conversation_id: &str, turn_id: &str, o: TurnOutcome) -> FeatureResponse {
    FeatureResponse {
        conversation_id: conversation_id.to_string(),
        turn_id: turn_id.to_string(),
        summary: o.summary,
        detailed_response: o.detailed,
        is_final: true,
        is_success: o.error.is_none(),
        error: o.error.as_ref().map(ErrorInfo::from),
        usage: o.usage,
        model: o.model,
        finish_reason: o.finish_reason,
    }
}
