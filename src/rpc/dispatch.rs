//! The daemon's methods: each request's params become the core's types, the core acts, and its
//! answer becomes the result. One place maps every method name; the session (`server`) only
//! reads frames and writes answers. This module must never hold conversation state.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::errors::{RpcError, INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND};
use super::listings::Components;
use super::port::RpcPort;
use super::protocol::*;
use crate::error::{Error, ErrorKind};
use crate::format::ResponseSchema;
use crate::peer::Peer;
use crate::select::ModelChoice;
use crate::session::{CancelTarget, ConversationSpec, FeatureReply, Framework, OpenConversation};

/// What the loop should do after a message.
pub enum Flow {
    Continue,
    Shutdown,
}

/// One client's view of the core.
pub struct Session {
    pub fw: Arc<Framework>,
    pub port: Arc<RpcPort>,
    /// The connection: answers to requests of ours, responses answered later (tool calls),
    /// the requests that started turns (for `$/cancelRequest`).
    pub peer: Arc<Peer>,
    /// Requests answered later, waited for before the daemon exits.
    pub later: tokio_util::task::TaskTracker,
}

fn params<T: DeserializeOwned>(p: Value) -> Result<T, RpcError> {
    let p = if p.is_null() { json!({}) } else { p };
    serde_json::from_value(p)
        .map_err(|e| Error::invalid_params(format!("invalid params: {e}")).into())
}

fn ok<T: serde::Serialize>(v: T) -> Result<Value, RpcError> {
    serde_json::to_value(v)
        .map_err(|e| RpcError::new(INTERNAL_ERROR, format!("cannot encode the result: {e}")))
}

/// `{}` when something was removed, else the error saying nothing had that name or id.
fn removed(done: bool, kind: ErrorKind, nothing: String) -> Result<Value, RpcError> {
    if done {
        ok(json!({}))
    } else {
        Err(Error::new(kind, nothing).into())
    }
}

fn response(id: Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(v) => json!({"jsonrpc": "2.0", "id": id, "result": v}),
        Err(e) => e.to_json(id),
    }
}

impl From<OpenConversation> for CreateConversationResult {
    fn from(c: OpenConversation) -> Self {
        CreateConversationResult {
            conversation_id: c.conversation_id,
            agent_id: c.agent_id,
            feature: c.feature,
            service_provider: c.service_provider,
            format: c.format,
            model: c.model,
        }
    }
}

/// One of the methods answered later (`methods::served_later`): tools, and the resources and prompts of MCP servers.
pub(super) async fn tool_request(
    fw: &Framework,
    method: &str,
    p: Value,
) -> Result<Value, RpcError> {
    match method {
        "ListTools" => {
            let p = params::<ListToolsParams>(p)?;
            let (tools, errors) = fw.toolbox().list(p.tools.as_deref()).await;
            ok(ListToolsResult {
                tools: tools.into_iter().map(Into::into).collect(),
                errors: errors.into_iter().map(Into::into).collect(),
            })
        }
        "ListResources" => {
            let p = params::<ListMcpParams>(p)?;
            let (found, errors) = fw.toolbox().resources(p.sources.as_deref()).await;
            ok(ListResourcesResult {
                resources: found.into_iter().map(Into::into).collect(),
                errors: errors.into_iter().map(Into::into).collect(),
            })
        }
        "ReadResource" => {
            let p = params::<ReadResourceParams>(p)?;
            let contents = fw.toolbox().mcp(&p.source)?.read_resource(&p.uri).await?;
            ok(ReadResourceResult { contents })
        }
        "ListPrompts" => {
            let p = params::<ListMcpParams>(p)?;
            let (found, errors) = fw.toolbox().prompts(p.sources.as_deref()).await;
            ok(ListPromptsResult {
                prompts: found.into_iter().map(Into::into).collect(),
                errors: errors.into_iter().map(Into::into).collect(),
            })
        }
        "GetPrompt" => {
            let p = params::<GetPromptParams>(p)?;
            let messages = fw
                .toolbox()
                .mcp(&p.source)?
                .prompt(&p.name, p.arguments)
                .await?;
            ok(GetPromptResult { messages })
        }
        _ => {
            let p = params::<CallToolParams>(p)?;
            let a = fw.toolbox().call(&p.name, &p.arguments).await?;
            ok(CallToolResult {
                text: a.text,
                is_error: a.is_error,
                confirmation_link: a.confirmation_link,
                actions: a.actions,
                collect_link: a.collect_link,
            })
        }
    }
}

impl Session {
    /// Runs one request or notification (or takes a response to a request of ours); `None`
    /// when nothing is to be answered now.
    pub fn handle(&mut self, msg: Value) -> (Option<Value>, Flow) {
        let invalid = |why: &str, id: Option<Value>| {
            let e = RpcError::new(INVALID_REQUEST, why);
            (Some(e.to_json(id.unwrap_or(Value::Null))), Flow::Continue)
        };
        let Value::Object(mut obj) = msg else {
            return invalid("a request must be a JSON object", None);
        };
        let id = obj.remove("id");
        if id
            .as_ref()
            .is_some_and(|id| !(id.is_string() || id.is_number() || id.is_null()))
        {
            return invalid("`id` must be a string or a number", None);
        }
        let method = match obj.remove("method") {
            Some(Value::String(m)) => m,
            None if obj.contains_key("result") || obj.contains_key("error") => {
                // A response to a request of ours (`RequestConfirmation`).
                let key = id.unwrap_or(Value::Null);
                let answer = match obj.remove("error") {
                    Some(e) => Err(e),
                    None => Ok(obj.remove("result").unwrap_or(Value::Null)),
                };
                if !self.peer.answered(&key, answer) {
                    tracing::debug!("ignoring a response to no request of ours: {key}");
                }
                return (None, Flow::Continue);
            }
            _ => return invalid("a request needs a `method` string", id),
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return invalid("`jsonrpc` must be \"2.0\"", id);
        }
        let p = obj.remove("params").unwrap_or(Value::Null);
        if super::methods::answered_later(&method) {
            self.answer_later(method, p, id);
            return (None, Flow::Continue);
        }
        let mut flow = Flow::Continue;
        let result = self.dispatch(&method, p, id.as_ref(), &mut flow);
        (id.map(|id| response(id, result)), flow)
    }

    /// Runs a request that waits on the network (a tool source) off the read loop, so other
    /// requests go on; its response is written when it is ready (in a batch, on its own).
    fn answer_later(&self, method: String, p: Value, id: Option<Value>) {
        let fw = self.fw.clone();
        let peer = self.peer.clone();
        self.later.spawn(async move {
            let result = tool_request(&fw, &method, p).await;
            if let Some(id) = id {
                peer.send(response(id, result).to_string());
            }
        });
    }

    /// Runs one method of `methods::served_now`; `flow` says whether it was
    /// `Shutdown`.
    pub(super) fn dispatch(
        &mut self,
        method: &str,
        p: Value,
        id: Option<&Value>,
        flow: &mut Flow,
    ) -> Result<Value, RpcError> {
        let fw = self.fw.clone();
        let port = self.port.clone();
        match method {
            "Initialize" => {
                let p: InitializeParams = params(p)?;
                port.set_streaming(p.capabilities.streaming);
                ok(InitializeResult {
                    server_info: ServerInfo {
                        name: "genai".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                    },
                    protocol_version: PROTOCOL_VERSION.into(),
                    capabilities: json!({"streaming": p.capabilities.streaming, "framings": ["content-length", "ndjson"], "batches": true}),
                })
            }
            "ListComponents" => ok(Components::from(fw.selector().components()?)),
            "CreateServiceProvider" => {
                let p: CreateServiceProviderParams = params(p)?;
                let mut settings = p.settings;
                // The kind is the parameter's, whatever the settings say.
                settings.remove("kind");
                let c = crate::config::ProviderConfig::from_settings(&p.kind, settings).map_err(
                    |e| match e.kind {
                        ErrorKind::InvalidParams => {
                            Error::invalid_params(format!("invalid settings: {}", e.message))
                        }
                        _ => e,
                    },
                )?;
                fw.create_provider(&p.name, &c)?;
                ok(json!({}))
            }
            "CreateModelConfiguration" => {
                let p: CreateModelConfigurationParams = params(p)?;
                let c = crate::config::ModelConfigurationConfig {
                    format: p.format,
                    model: p.model,
                    parameters: p.parameters,
                    middleware: None,
                    response_schema: None,
                    cache: None,
                    cache_ttl: None,
                };
                fw.create_model_configuration(&p.name, &c)?;
                ok(json!({}))
            }
            "RemoveComponent" => {
                let p: RemoveComponentParams = params(p)?;
                removed(
                    fw.remove_component(&p.name)?,
                    ErrorKind::UnknownComponent,
                    format!("no component named `{}`", p.name),
                )
            }
            "CreateConversation" => {
                let p: CreateConversationParams = params(p)?;
                let spec = ConversationSpec {
                    model: ModelChoice::from_fields(
                        p.agent,
                        p.service_provider,
                        p.model_configuration,
                        p.model,
                    )?,
                    feature: p.feature,
                    title: p.title,
                    system_prompt: p.system_prompt,
                    parameters: p.parameters,
                    ephemeral: p.ephemeral,
                    tools: p.tools,
                    response_schema: ResponseSchema::given(
                        p.response_schema,
                        p.response_schema_name,
                    )?,
                    ..Default::default()
                };
                ok(CreateConversationResult::from(
                    fw.create_conversation(spec, port)?,
                ))
            }
            "ResumeConversation" => {
                let p: ConversationIdParams = params(p)?;
                ok(CreateConversationResult::from(fw.resume_conversation(
                    &p.conversation_id,
                    None,
                    port,
                )?))
            }
            "RemoveConversation" => {
                let p: ConversationIdParams = params(p)?;
                let id = fw.resolve_conversation(&p.conversation_id)?;
                removed(
                    fw.close_conversation(&id)?,
                    ErrorKind::UnknownConversation,
                    format!("no open conversation {}", p.conversation_id),
                )
            }
            "DeleteConversation" => {
                let p: ConversationIdParams = params(p)?;
                fw.delete_conversation(&p.conversation_id)?;
                ok(json!({}))
            }
            "ListConversations" => {
                let p: ListConversationsParams = params(p)?;
                let (conversations, next_cursor) =
                    fw.list_conversations(p.page_size.clamp(1, 1000), p.cursor.as_deref())?;
                ok(ListConversationsResult {
                    conversations: conversations.into_iter().map(Into::into).collect(),
                    next_cursor,
                })
            }
            "SearchConversations" => {
                let p: SearchConversationsParams = params(p)?;
                let found = fw.search_conversations(&p.query, p.limit.clamp(1, 200), "**", "**")?;
                ok(SearchConversationsResult {
                    hits: found
                        .into_iter()
                        .map(|f| SearchHit {
                            conversation_id: f.conversation_id,
                            title: f.title,
                            seq: f.seq,
                            role: f.role,
                            snippet: f.snippet,
                        })
                        .collect(),
                })
            }
            "GetConversationHistory" => {
                let p: GetConversationHistoryParams = params(p)?;
                let id = fw.resolve_conversation(&p.conversation_id)?;
                let (messages, next_cursor) =
                    fw.history_page(&id, p.page_size.clamp(1, 1000), p.cursor.as_deref())?;
                ok(GetConversationHistoryResult {
                    messages: messages.into_iter().map(Into::into).collect(),
                    next_cursor,
                })
            }
            "OnNewMessage" => {
                let p: OnNewMessageParams = params(p)?;
                let schema = ResponseSchema::given(p.response_schema, p.response_schema_name)?;
                let turn_id =
                    fw.on_new_message_with(&p.conversation_id, p.message.into_message(), schema)?;
                if let Some(id) = id {
                    self.peer.running().started(id, &turn_id);
                }
                ok(TurnIdResult { turn_id })
            }
            "CreateAIAgent" => {
                let p: CreateAIAgentParams = params(p)?;
                let choice = ModelChoice::from_fields(
                    p.agent,
                    p.service_provider,
                    p.model_configuration,
                    p.model,
                )?;
                ok(AgentIdResult {
                    agent_id: fw.create_agent(&choice, p.parameters.as_ref())?,
                })
            }
            "RemoveAIAgent" => {
                let p: AgentIdParams = params(p)?;
                removed(
                    fw.remove_agent(&p.agent_id)?,
                    ErrorKind::UnknownAgent,
                    format!("no agent {}", p.agent_id),
                )
            }
            "SendPrompt" => {
                let p: SendPromptParams = params(p)?;
                let schema = ResponseSchema::given(p.response_schema, p.response_schema_name)?;
                let prompt = p.prompt.into_messages();
                ok(RequestIdResult {
                    request_id: fw.send_prompt_with(&p.agent_id, prompt, schema, port)?,
                })
            }
            "GetHistory" => {
                let p: AgentIdParams = params(p)?;
                ok(fw.agent(&p.agent_id)?.history()?)
            }
            "SetModelParameter" => {
                let p: SetModelParameterParams = params(p)?;
                fw.agent(&p.agent_id)?.set_parameter(&p.name, p.value)?;
                ok(json!({}))
            }
            "RegisterFeature" => {
                let p: RegisterFeatureParams = params(p)?;
                fw.register_feature(&p.name, &p.description, port)?;
                ok(json!({}))
            }
            "RegisterMiddleware" => {
                let p: RegisterMiddlewareParams = params(p)?;
                let timeout = p.timeout_ms.map(std::time::Duration::from_millis);
                fw.register_middleware(&p.name, timeout, port)?;
                ok(json!({}))
            }
            "OnFeatureResponse" => {
                let p: OnFeatureResponseParams = params(p)?;
                fw.on_feature_response(FeatureReply {
                    conversation_id: p.conversation_id,
                    turn_id: p.turn_id,
                    summary: p.summary,
                    detailed: p.detailed_response,
                    is_final: p.is_final,
                    error: p.error,
                })?;
                ok(json!({}))
            }
            "Cancel" => {
                let p: CancelParams = params(p)?;
                ok(CancelResult {
                    cancelled: fw.cancel(&CancelTarget {
                        conversation_id: p.conversation_id,
                        turn_id: p.turn_id,
                        request_id: p.request_id,
                    })?,
                })
            }
            "$/cancelRequest" => {
                let turn = p.get("id").and_then(|id| self.peer.running().work_of(id));
                let cancelled = match turn {
                    Some(turn) => fw.cancel(&CancelTarget {
                        turn_id: Some(turn),
                        ..Default::default()
                    })?,
                    None => false,
                };
                ok(CancelResult { cancelled })
            }
            "Shutdown" => {
                *flow = Flow::Shutdown;
                ok(json!({}))
            }
            other => {
                let known = super::methods::served_now().chain(super::methods::served_later());
                Err(RpcError::new(
                    METHOD_NOT_FOUND,
                    format!(
                        "unknown method `{other}`{}; see docs/PROTOCOL.md",
                        crate::suggest::did_you_mean(other, known)
                    ),
                ))
            }
        }
    }
}
