//! What each daemon method does, one function a method: its params (already decoded into the
//! protocol's type) become the core's types, the core acts, and its answer becomes the
//! method's result type. `methods.rs` names each function in the method table, with its types;
//! `dispatch.rs` runs the one a request names.
//!
//! It must never decode or encode frames, and holds no state of its own.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};

pub(crate) use super::command_handlers::list_commands;
pub(crate) use super::command_handlers::run_command;
use super::errors::RpcError;
use super::listings::Components;
use super::port::RpcPort;
use super::protocol::*;
use genai_core::error::{Error, ErrorKind};
use genai_core::feature::hosted_tools::Registration;
use genai_core::format::ResponseSchema;
use genai_core::message::Message;
use genai_core::select::ModelChoice;
use genai_core::session::{
    CancelTarget, ConversationSpec, FeatureReply, Framework, OpenConversation, PermissionFlags,
};
use genai_peer::Peer;

/// What the read loop does after a message.
pub(crate) enum Flow {
    Continue,
    Shutdown,
}

/// One request answered on the read loop: the client's connection and the request's id.
pub(crate) struct Call<'a> {
    pub(crate) fw: &'a Arc<Framework>,
    pub(crate) port: &'a Arc<RpcPort>,
    pub(crate) peer: &'a Peer,
    pub(crate) id: Option<&'a Value>,
    /// Set to `Shutdown` by the method that ends the session.
    pub(crate) flow: Flow,
}

/// The result of a method that answers `{}`.
#[derive(Serialize)]
pub(crate) struct Done {}

type Answer<T> = Result<T, RpcError>;

/// `{}` when something was removed, else the error saying nothing had that name or id.
fn removed(done: bool, kind: ErrorKind, nothing: String) -> Answer<Done> {
    if done {
        Ok(Done {})
    } else {
        Err(Error::new(kind, nothing).into())
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
            cwd: c.cwd,
        }
    }
}

pub(crate) fn initialize(cx: &mut Call, p: InitializeParams) -> Answer<InitializeResult> {
    cx.port.set_streaming(p.capabilities.streaming);
    cx.port.set_editor(p.capabilities.editor);
    Ok(InitializeResult {
        server_info: ServerInfo {
            name: "genai".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        protocol_version: PROTOCOL_VERSION.into(),
        capabilities: json!({"streaming": p.capabilities.streaming, "framings": ["content-length", "ndjson"], "batches": true}),
        roots: None,
    })
}

pub(crate) fn list_components(cx: &mut Call, _: Value) -> Answer<Components> {
    Ok(Components::from(cx.fw.selector().components()?))
}

pub(crate) fn create_service_provider(
    cx: &mut Call,
    p: CreateServiceProviderParams,
) -> Answer<Done> {
    let mut settings = p.settings;
    // The kind is the parameter's, whatever the settings say.
    settings.remove("kind");
    let c =
        genai_core::config::ProviderConfig::from_settings(&p.kind, settings).map_err(
            |e| match e.kind {
                ErrorKind::InvalidParams => {
                    Error::invalid_params(format!("invalid settings: {}", e.message))
                }
                _ => e,
            },
        )?;
    cx.fw.create_provider(&p.name, &c)?;
    Ok(Done {})
}

pub(crate) fn create_model_configuration(
    cx: &mut Call,
    p: CreateModelConfigurationParams,
) -> Answer<Done> {
    let c = genai_core::config::ModelConfigurationConfig {
        format: p.format,
        model: p.model,
        parameters: p.parameters,
        middleware: None,
        response_schema: None,
        cache: None,
        cache_ttl: None,
    };
    cx.fw.create_model_configuration(&p.name, &c)?;
    Ok(Done {})
}

pub(crate) fn remove_component(cx: &mut Call, p: RemoveComponentParams) -> Answer<Done> {
    removed(
        cx.fw.remove_component(&p.name)?,
        ErrorKind::UnknownComponent,
        format!("no component named `{}`", p.name),
    )
}

pub(crate) fn create_conversation(
    cx: &mut Call,
    mut p: CreateConversationParams,
) -> Answer<CreateConversationResult> {
    let spec = ConversationSpec {
        model: ModelChoice::from_fields(p.take_model_choice())?,
        feature: p.feature,
        title: p.title,
        system_prompt: p.system_prompt,
        parameters: p.parameters,
        ephemeral: p.ephemeral,
        tools: p.tools,
        response_schema: ResponseSchema::given(p.response_schema, p.response_schema_name)?,
        cwd: p.cwd.or_else(|| {
            std::env::current_dir()
                .ok()
                .map(|d| d.to_string_lossy().into_owned())
        }),
        permissions: PermissionFlags {
            mode: p.mode,
            allow: p.allow,
            deny: p.deny,
        },
        ..Default::default()
    };
    Ok(cx.fw.create_conversation(spec, cx.port.clone())?.into())
}

pub(crate) fn resume_conversation(
    cx: &mut Call,
    p: ConversationIdParams,
) -> Answer<CreateConversationResult> {
    let open = cx
        .fw
        .resume_conversation(&p.conversation_id, None, cx.port.clone())?;
    Ok(open.into())
}

pub(crate) fn remove_conversation(cx: &mut Call, p: ConversationIdParams) -> Answer<Done> {
    let id = cx.fw.resolve_conversation(&p.conversation_id)?;
    removed(
        cx.fw.close_conversation(&id)?,
        ErrorKind::UnknownConversation,
        format!("no open conversation {}", p.conversation_id),
    )
}

pub(crate) fn delete_conversation(cx: &mut Call, p: ConversationIdParams) -> Answer<Done> {
    cx.fw.delete_conversation(&p.conversation_id)?;
    Ok(Done {})
}

pub(crate) fn list_conversations(
    cx: &mut Call,
    p: ListConversationsParams,
) -> Answer<ListConversationsResult> {
    let (conversations, next_cursor) = cx
        .fw
        .list_conversations(p.page_size.clamp(1, 1000), p.cursor.as_deref())?;
    Ok(ListConversationsResult {
        conversations,
        next_cursor,
    })
}

pub(crate) fn undo(cx: &mut Call, p: UndoParams) -> Answer<genai_core::checkpoint::Undone> {
    let target = genai_core::checkpoint::UndoTarget {
        conversation: p.conversation_id,
        turn: p.turn_id,
        project: None,
    };
    Ok(cx.fw.undo(target, p.force)?)
}

pub(crate) fn list_checkpoints(
    cx: &mut Call,
    p: ListCheckpointsParams,
) -> Answer<ListCheckpointsResult> {
    let limit = p.limit.unwrap_or(20).clamp(1, 200);
    Ok(ListCheckpointsResult {
        turns: cx.fw.checkpoints(p.conversation_id.as_deref(), limit)?,
    })
}

pub(crate) fn search_conversations(
    cx: &mut Call,
    p: SearchConversationsParams,
) -> Answer<SearchConversationsResult> {
    let found = cx
        .fw
        .search_conversations(&p.query, p.limit.clamp(1, 200), "**", "**")?;
    Ok(SearchConversationsResult {
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

pub(crate) fn get_conversation_history(
    cx: &mut Call,
    p: GetConversationHistoryParams,
) -> Answer<GetConversationHistoryResult> {
    let id = cx.fw.resolve_conversation(&p.conversation_id)?;
    let (messages, next_cursor) =
        cx.fw
            .history_page(&id, p.page_size.clamp(1, 1000), p.cursor.as_deref())?;
    Ok(GetConversationHistoryResult {
        messages,
        next_cursor,
    })
}

pub(crate) fn on_new_message(cx: &mut Call, p: OnNewMessageParams) -> Answer<TurnIdResult> {
    let schema = ResponseSchema::given(p.response_schema, p.response_schema_name)?;
    let turn_id =
        cx.fw
            .on_new_message_with(&p.conversation_id, p.message.into_message(), schema)?;
    if let Some(id) = cx.id {
        cx.peer.running().started(id, &turn_id);
    }
    Ok(TurnIdResult { turn_id })
}

pub(crate) fn create_ai_agent(cx: &mut Call, mut p: CreateAIAgentParams) -> Answer<AgentIdResult> {
    let choice = ModelChoice::from_fields(p.take_model_choice())?;
    Ok(AgentIdResult {
        agent_id: cx.fw.create_agent(&choice, p.parameters.as_ref())?,
    })
}

pub(crate) fn remove_ai_agent(cx: &mut Call, p: AgentIdParams) -> Answer<Done> {
    removed(
        cx.fw.remove_agent(&p.agent_id)?,
        ErrorKind::UnknownAgent,
        format!("no agent {}", p.agent_id),
    )
}

pub(crate) fn send_prompt(cx: &mut Call, p: SendPromptParams) -> Answer<RequestIdResult> {
    let schema = ResponseSchema::given(p.response_schema, p.response_schema_name)?;
    let prompt = p.prompt.into_messages();
    Ok(RequestIdResult {
        request_id: cx
            .fw
            .send_prompt_with(&p.agent_id, prompt, schema, cx.port.clone())?,
    })
}

pub(crate) fn get_history(cx: &mut Call, p: AgentIdParams) -> Answer<Vec<Message>> {
    Ok(cx.fw.agent(&p.agent_id)?.history()?)
}

pub(crate) fn set_model_parameter(cx: &mut Call, p: SetModelParameterParams) -> Answer<Done> {
    cx.fw.agent(&p.agent_id)?.set_parameter(&p.name, p.value)?;
    Ok(Done {})
}

pub(crate) fn register_feature(cx: &mut Call, p: RegisterFeatureParams) -> Answer<Done> {
    cx.fw
        .register_feature(&p.name, &p.description, cx.port.clone())?;
    Ok(Done {})
}

pub(crate) fn register_middleware(cx: &mut Call, p: RegisterMiddlewareParams) -> Answer<Done> {
    let timeout = p.timeout_ms.map(std::time::Duration::from_millis);
    cx.fw
        .register_middleware(&p.name, timeout, cx.port.clone())?;
    Ok(Done {})
}

pub(crate) fn register_tool(cx: &mut Call, p: RegisterToolParams) -> Answer<RegisterToolResult> {
    let tool = cx.port.tools.register(Registration {
        name: p.name,
        description: p.description,
        input_schema: p.input_schema,
        read_only: p.read_only,
        timeout: p.timeout_ms.map(std::time::Duration::from_millis),
    })?;
    Ok(RegisterToolResult { tool })
}

pub(crate) fn unregister_tool(cx: &mut Call, p: UnregisterToolParams) -> Answer<Done> {
    cx.port.tools.unregister(&p.name)?;
    Ok(Done {})
}

pub(crate) fn on_feature_response(cx: &mut Call, p: OnFeatureResponseParams) -> Answer<Done> {
    cx.fw.on_feature_response(FeatureReply {
        conversation_id: p.conversation_id,
        turn_id: p.turn_id,
        summary: p.summary,
        detailed: p.detailed_response,
        is_final: p.is_final,
        error: p.error,
    })?;
    Ok(Done {})
}

pub(crate) fn cancel(cx: &mut Call, p: CancelParams) -> Answer<CancelResult> {
    Ok(CancelResult {
        cancelled: cx.fw.cancel(&CancelTarget {
            conversation_id: p.conversation_id,
            turn_id: p.turn_id,
            request_id: p.request_id,
        })?,
    })
}

/// LSP's `$/cancelRequest {id}`: cancels the turn that request started.
pub(crate) fn cancel_request(cx: &mut Call, p: Value) -> Answer<CancelResult> {
    let turn = p.get("id").and_then(|id| cx.peer.running().work_of(id));
    let cancelled = match turn {
        Some(turn) => cx.fw.cancel(&CancelTarget {
            turn_id: Some(turn),
            ..Default::default()
        })?,
        None => false,
    };
    Ok(CancelResult { cancelled })
}

pub(crate) fn shutdown(cx: &mut Call, _: Value) -> Answer<Done> {
    cx.flow = Flow::Shutdown;
    Ok(Done {})
}

// The methods that wait on a tool source, answered off the read loop.

pub(crate) async fn list_tools(fw: Arc<Framework>, p: ListToolsParams) -> Answer<ListToolsResult> {
    let (tools, errors) = fw.toolbox().list(p.tools.as_deref()).await;
    Ok(ListToolsResult {
        tools: tools.into_iter().map(Into::into).collect(),
        errors,
    })
}

pub(crate) async fn call_tool(fw: Arc<Framework>, p: CallToolParams) -> Answer<CallToolResult> {
    let a = fw.toolbox().call(&p.name, &p.arguments).await?;
    Ok(CallToolResult {
        text: a.text,
        is_error: a.is_error,
        confirmation_link: a.confirmation_link,
        actions: a.actions,
        collect_link: a.collect_link,
    })
}

pub(crate) async fn list_resources(
    fw: Arc<Framework>,
    p: ListMcpParams,
) -> Answer<ListResourcesResult> {
    let (found, errors) = fw.toolbox().resources(p.sources.as_deref()).await;
    Ok(ListResourcesResult {
        resources: found,
        errors,
    })
}

pub(crate) async fn read_resource(
    fw: Arc<Framework>,
    p: ReadResourceParams,
) -> Answer<ReadResourceResult> {
    let contents = fw.toolbox().mcp(&p.source)?.read_resource(&p.uri).await?;
    Ok(ReadResourceResult { contents })
}

pub(crate) async fn list_prompts(
    fw: Arc<Framework>,
    p: ListMcpParams,
) -> Answer<ListPromptsResult> {
    let (found, errors) = fw.toolbox().prompts(p.sources.as_deref()).await;
    Ok(ListPromptsResult {
        prompts: found,
        errors,
    })
}

pub(crate) async fn get_prompt(fw: Arc<Framework>, p: GetPromptParams) -> Answer<GetPromptResult> {
    let messages = fw
        .toolbox()
        .mcp(&p.source)?
        .prompt(&p.name, p.arguments)
        .await?;
    Ok(GetPromptResult { messages })
}
