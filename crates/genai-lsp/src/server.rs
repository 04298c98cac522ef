//! The language server proper, on `tower-lsp-server`: capabilities, document sync, the
//! code-action menu, `workspace/executeCommand` (`genai.action`, `genai.ask`) with work-done
//! progress and both ways to cancel, and the edits or documents a reply becomes. Every bad
//! request gets an LSP error; nothing here may end the server on a client's mistake.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tower_lsp_server::jsonrpc::{self, ErrorCode};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

use super::actions::{self, Action, Selection};
use super::completion::{Completed, Completer, Completing};
use super::documents::offset;
use super::documents::Documents;
use super::port::LspPort;
use genai_core::config::lsp::{ApplyMode, LspConfig};
use genai_core::error::{Error, ErrorKind};
use genai_core::select::ModelChoice;
use genai_core::session::Framework;

/// The command a code action runs.
pub(crate) const ACTION_COMMAND: &str = "genai.action";
/// The command that asks a free question, about a range or not.
pub(crate) const ASK_COMMAND: &str = "genai.ask";

/// What the client said it can do, from `initialize`.
#[derive(Debug, Default, Clone)]
pub(super) struct ClientFlags {
    pub(super) show_document: bool,
    pub(super) work_done_progress: bool,
    root: Option<PathBuf>,
}

pub(crate) struct Backend {
    pub(super) client: Client,
    pub(super) fw: Arc<Framework>,
    pub(super) port: Arc<LspPort>,
    settings: LspConfig,
    pub(super) data_dir: PathBuf,
    docs: Arc<Mutex<Documents>>,
    flags: Mutex<ClientFlags>,
    /// Running work by its progress token, for the progress's cancel button.
    pub(super) progress: Mutex<HashMap<String, CancellationToken>>,
    completer: Completer,
}

/// The arguments of `genai.action`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ActionArgs {
    action: String,
    uri: Uri,
    range: Range,
}

/// The arguments of `genai.ask`: a prompt, and optionally the file and range it is about.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AskArgs {
    prompt: String,
    #[serde(default)]
    uri: Option<Uri>,
    #[serde(default)]
    range: Option<Range>,
}

fn invalid(message: impl Into<String>) -> jsonrpc::Error {
    jsonrpc::Error::invalid_params(message.into())
}

/// A core error as an LSP error: bad params stay `InvalidParams`, a cancel is
/// `RequestCancelled`, the rest `RequestFailed` (-32803) with genai's kind in `data`.
pub(super) fn lsp_error(e: Error) -> jsonrpc::Error {
    let code = match e.kind {
        ErrorKind::InvalidParams | ErrorKind::InvalidParameter => ErrorCode::InvalidParams,
        ErrorKind::Cancelled => ErrorCode::RequestCancelled,
        _ => ErrorCode::ServerError(-32803),
    };
    jsonrpc::Error {
        code,
        message: e.message.into(),
        data: Some(json!({"kind": e.kind.as_str()})),
    }
}

pub(super) fn token_key(t: &ProgressToken) -> String {
    match t {
        NumberOrString::Number(n) => format!("n:{n}"),
        NumberOrString::String(s) => format!("s:{s}"),
    }
}

impl Backend {
    pub(crate) fn new(client: Client, fw: Arc<Framework>, data_dir: PathBuf) -> Backend {
        let settings = fw.config().lsp.clone();
        let docs = Arc::new(Mutex::new(Documents::default()));
        Backend {
            completer: Completer::new(&settings),
            port: Arc::new(LspPort::new(client.clone(), docs.clone())),
            client,
            fw,
            settings,
            data_dir,
            docs,
            flags: Mutex::new(ClientFlags::default()),
            progress: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn model(&self) -> ModelChoice {
        self.settings
            .model
            .clone()
            .map_or(ModelChoice::Default, ModelChoice::Named)
    }

    pub(super) fn flags(&self) -> ClientFlags {
        self.flags.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// The text and language of a document: the editor's unsaved text when it is open, else
    /// the file on disk.
    fn document(&self, uri: &Uri) -> jsonrpc::Result<(String, String)> {
        if let Some(d) = self
            .docs
            .lock()
            .ok()
            .and_then(|d| d.get(uri.as_str()).cloned())
        {
            return Ok((d.text, d.language_id));
        }
        let path = uri
            .to_file_path()
            .ok_or_else(|| invalid(format!("{} is neither open nor a file", uri.as_str())))?;
        let text = std::fs::read_to_string(&path)
            .map_err(|e| invalid(format!("cannot read {}: {e}", path.display())))?;
        let lang = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("plaintext")
            .to_string();
        Ok((text, lang))
    }

    /// The folder commands are looked up from for a file: its own (so the nearest
    /// `.genai/commands/` wins), else the workspace's, else the process's.
    fn commands_dir(&self, uri: &Uri) -> PathBuf {
        uri.to_file_path()
            .and_then(|p| p.parent().map(|d| d.to_path_buf()))
            .filter(|d| d.is_dir())
            .or_else(|| self.flags().root)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default()
    }

    /// The file's name as the prompt shows it: relative to the workspace when inside it.
    fn file_name(&self, uri: &Uri) -> String {
        let Some(path) = uri.to_file_path() else {
            return uri.as_str().to_string();
        };
        let root = self.flags().root;
        root.as_deref()
            .and_then(|r| path.strip_prefix(r).ok())
            .unwrap_or(path.as_ref())
            .display()
            .to_string()
    }

    async fn run_action(
        &self,
        args: ActionArgs,
        token: Option<ProgressToken>,
    ) -> jsonrpc::Result<Value> {
        let dir = self.commands_dir(&args.uri);
        let commands = self.fw.commands(&dir);
        let command = commands
            .find(&args.action)
            .map_err(|e| invalid(e.message))?;
        let (text, language_id) = self.document(&args.uri)?;
        let file_name = self.file_name(&args.uri);
        let range = whole_lines_if_empty(&text, args.range);
        let selection = Selection {
            text: &text,
            range,
            file_name: &file_name,
            language_id: &language_id,
            context_lines: self.settings.context_lines.unwrap_or(20),
        };
        // A prompt that places the selection (`{{input}}`) is not followed by it again.
        let placed = command.places_input();
        let invocation = genai_core::command::Invocation {
            input: placed
                .then(|| actions::selected(&text, range).map(str::to_string))
                .transpose()
                .map_err(invalid)?,
            ..Default::default()
        };
        let ready = self
            .fw
            .prepare_command(&commands, &dir, None, &command.name, &invocation)
            .await
            .map_err(|e| invalid(e.message))?;
        let action = Action {
            name: command.name.clone(),
            title: command.title.clone(),
            apply: command.apply,
        };
        let edits = (action.apply != ApplyMode::Show).then_some(action.apply);
        let prompt = selection
            .prompt(&ready.text(), edits, !placed)
            .map_err(invalid)?;
        let before = actions::selected(&text, range)
            .map_err(invalid)?
            .to_string();
        let title = format!("{}: {file_name}", action.title);
        // Code actions answer with text to apply: they run without tools, on the command's
        // model, system prompt and parameters.
        let acting = super::port::Acting {
            model: ready.settings.model.clone(),
            system: ready.settings.system.clone(),
            parameters: ready.settings.parameters.clone(),
            ..Default::default()
        };
        let answer = self.run(title.clone(), prompt, acting, token).await?;
        let result = |applied: bool| json!({"conversationId": answer.conversation_id, "reply": answer.reply, "applied": applied});
        if action.apply == ApplyMode::Show {
            self.show(&title, &answer).await;
            return Ok(result(false));
        }
        let Some(code) = actions::code_block(&answer.reply) else {
            self.show(&title, &answer).await;
            return Err(failed(
                "the reply has no code block, so nothing was changed (it is shown instead)",
            ));
        };
        // The user may have typed while the model thought: edit only the text it saw.
        let (now, _) = self.document(&args.uri)?;
        if actions::selected(&now, range).ok() != Some(before.as_str()) {
            self.show(&title, &answer).await;
            return Err(jsonrpc::Error {
                code: ErrorCode::ContentModified,
                message:
                    "the selection changed while the model answered; the reply is shown instead"
                        .into(),
                data: None,
            });
        }
        let edit = actions::edit(&now, range, action.apply, &code).map_err(invalid)?;
        let mut changes = HashMap::new();
        changes.insert(args.uri.clone(), vec![edit]);
        let applied = self
            .client
            .apply_edit(WorkspaceEdit {
                changes: Some(changes),
                ..Default::default()
            })
            .await
            .map(|r| r.applied)
            .unwrap_or(false);
        if !applied {
            self.show(&title, &answer).await;
        }
        Ok(result(applied))
    }

    async fn run_ask(&self, args: AskArgs, token: Option<ProgressToken>) -> jsonrpc::Result<Value> {
        if args.prompt.trim().is_empty() {
            return Err(invalid("genai.ask needs a prompt"));
        }
        let (prompt, title) = match &args.uri {
            Some(uri) => {
                let (text, language_id) = self.document(uri)?;
                let file_name = self.file_name(uri);
                let range = args
                    .range
                    .unwrap_or_else(|| Range::new(Position::new(0, 0), Position::new(u32::MAX, 0)));
                let range = whole_lines_if_empty(&text, range);
                let end = actions::clamp(&text, range);
                let selection = Selection {
                    text: &text,
                    range: end,
                    file_name: &file_name,
                    language_id: &language_id,
                    context_lines: self.settings.context_lines.unwrap_or(20),
                };
                let prompt = selection
                    .prompt(&args.prompt, None, true)
                    .map_err(invalid)?;
                (prompt, format!("Ask: {file_name}"))
            }
            None if args.range.is_some() => return Err(invalid("a range needs its `uri`")),
            None => (args.prompt.clone(), "Ask".to_string()),
        };
        let acting = super::port::Acting {
            tools: self.settings.tools.clone(),
            cwd: self.flags().root.map(|r| r.to_string_lossy().into_owned()),
            mode: self.settings.mode,
            ..Default::default()
        };
        let answer = self.run(title.clone(), prompt, acting, token).await?;
        self.show(&title, &answer).await;
        Ok(json!({"conversationId": answer.conversation_id, "reply": answer.reply}))
    }
}

fn failed(message: &str) -> jsonrpc::Error {
    jsonrpc::Error {
        code: ErrorCode::ServerError(-32803),
        message: message.to_string().into(),
        data: None,
    }
}

/// An empty range (a cursor) means its whole line.
fn whole_lines_if_empty(text: &str, range: Range) -> Range {
    if range.start != range.end {
        return range;
    }
    let line = range.start.line;
    let last = text.lines().count() as u32;
    if line + 1 >= last && !text.ends_with('\n') {
        return Range::new(Position::new(line, 0), Position::new(line, u32::MAX));
    }
    Range::new(Position::new(line, 0), Position::new(line + 1, 0))
}

/// The arguments of a command: its first argument as `T`.
fn arguments<T: for<'de> Deserialize<'de>>(command: &str, args: Vec<Value>) -> jsonrpc::Result<T> {
    let first = args
        .into_iter()
        .next()
        .ok_or_else(|| invalid(format!("{command} takes one argument object")))?;
    serde_json::from_value(first).map_err(|e| invalid(format!("{command}: {e}")))
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> jsonrpc::Result<InitializeResult> {
        let window = params.capabilities.window.as_ref();
        #[allow(deprecated)]
        let root = params
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .map(|f| f.uri.clone())
            .or(params.root_uri.clone())
            .and_then(|u| u.to_file_path().map(|p| p.into_owned()));
        let apply_edit = params
            .capabilities
            .workspace
            .as_ref()
            .and_then(|w| w.apply_edit)
            .unwrap_or(false);
        self.port.set_applies_edits(apply_edit);
        if let Ok(mut f) = self.flags.lock() {
            *f = ClientFlags {
                show_document: window
                    .and_then(|w| w.show_document.as_ref())
                    .is_some_and(|s| s.support),
                work_done_progress: window.and_then(|w| w.work_done_progress).unwrap_or(false),
                root,
            };
        }
        let completion = self.settings.completion.enabled;
        Ok(InitializeResult {
            server_info: Some(ServerInfo {
                name: "genai".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Options(
                    TextDocumentSyncOptions {
                        open_close: Some(true),
                        change: Some(TextDocumentSyncKind::INCREMENTAL),
                        ..Default::default()
                    },
                )),
                code_action_provider: Some(CodeActionProviderCapability::Options(
                    CodeActionOptions {
                        code_action_kinds: Some(vec![
                            CodeActionKind::REFACTOR_REWRITE,
                            CodeActionKind::EMPTY,
                        ]),
                        ..Default::default()
                    },
                )),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: vec![ACTION_COMMAND.into(), ASK_COMMAND.into()],
                    work_done_progress_options: WorkDoneProgressOptions {
                        work_done_progress: Some(true),
                    },
                }),
                completion_provider: completion.then(CompletionOptions::default),
                inline_completion_provider: completion.then_some(OneOf::Left(true)),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    async fn shutdown(&self) -> jsonrpc::Result<()> {
        self.fw.cancel_all();
        self.fw.idle().await;
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let d = params.text_document;
        if let Ok(mut docs) = self.docs.lock() {
            docs.open(d.uri.as_str(), &d.language_id, d.version, d.text);
        }
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        let d = params.text_document;
        let result = self
            .docs
            .lock()
            .map_err(|_| "documents lock poisoned".to_string())
            .and_then(|mut docs| docs.change(d.uri.as_str(), d.version, params.content_changes));
        if let Err(e) = result {
            // A notification has no answer: say it, and keep the text as it was.
            tracing::warn!("didChange: {e}");
            self.client
                .log_message(MessageType::ERROR, format!("genai: didChange ignored: {e}"))
                .await;
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        if let Ok(mut docs) = self.docs.lock() {
            docs.close(params.text_document.uri.as_str());
        }
    }

    async fn code_action(
        &self,
        params: CodeActionParams,
    ) -> jsonrpc::Result<Option<CodeActionResponse>> {
        let (text, _) = self.document(&params.text_document.uri)?;
        actions::selected(&text, actions::clamp(&text, params.range)).map_err(invalid)?;
        let commands = self
            .fw
            .commands(&self.commands_dir(&params.text_document.uri));
        let list = actions::from_commands(commands.list())
            .into_iter()
            .map(|a| {
                let args = json!({
                    "action": a.name,
                    "uri": params.text_document.uri,
                    "range": params.range,
                });
                CodeActionOrCommand::CodeAction(CodeAction {
                    title: a.title.clone(),
                    kind: Some(if a.apply == ApplyMode::Show {
                        CodeActionKind::EMPTY
                    } else {
                        CodeActionKind::REFACTOR_REWRITE
                    }),
                    command: Some(Command::new(
                        a.title,
                        ACTION_COMMAND.into(),
                        Some(vec![args]),
                    )),
                    ..Default::default()
                })
            })
            .collect();
        Ok(Some(list))
    }

    async fn execute_command(
        &self,
        params: ExecuteCommandParams,
    ) -> jsonrpc::Result<Option<Value>> {
        let token = params.work_done_progress_params.work_done_token;
        match params.command.as_str() {
            ACTION_COMMAND => {
                let args = arguments(ACTION_COMMAND, params.arguments)?;
                self.run_action(args, token).await.map(Some)
            }
            ASK_COMMAND => {
                let args = match params.arguments.first() {
                    Some(Value::String(prompt)) => AskArgs {
                        prompt: prompt.clone(),
                        uri: None,
                        range: None,
                    },
                    _ => arguments(ASK_COMMAND, params.arguments)?,
                };
                self.run_ask(args, token).await.map(Some)
            }
            other => Err(invalid(format!(
                "no command `{other}` (there are {ACTION_COMMAND} and {ASK_COMMAND})"
            ))),
        }
    }

    async fn completion(
        &self,
        params: CompletionParams,
    ) -> jsonrpc::Result<Option<CompletionResponse>> {
        let at = params.text_document_position;
        let Some((done, pos)) = self.complete_at(&at).await? else {
            return Ok(None);
        };
        let label = done
            .text
            .trim()
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        Ok(Some(CompletionResponse::Array(vec![CompletionItem {
            label,
            kind: Some(CompletionItemKind::TEXT),
            detail: Some(done.prompt.detail().into()),
            text_edit: Some(CompletionTextEdit::Edit(TextEdit::new(
                Range::new(pos, pos),
                done.text,
            ))),
            ..Default::default()
        }])))
    }
}

impl Backend {
    /// `textDocument/inlineCompletion` (LSP 3.18, not in the trait yet).
    pub(crate) async fn inline_completion(&self, params: Value) -> jsonrpc::Result<Option<Value>> {
        let params: InlineCompletionParams = serde_json::from_value(params)
            .map_err(|e| invalid(format!("textDocument/inlineCompletion: {e}")))?;
        let Some((done, pos)) = self.complete_at(&params.text_document_position).await? else {
            return Ok(None);
        };
        let list = InlineCompletionList {
            items: vec![InlineCompletionItem {
                insert_text: done.text,
                filter_text: None,
                range: Some(Range::new(pos, pos)),
                command: None,
                insert_text_format: None,
            }],
        };
        serde_json::to_value(list)
            .map(Some)
            .map_err(|e| jsonrpc::Error::invalid_params(e.to_string()))
    }

    /// `window/workDoneProgress/cancel`: the progress's cancel button.
    pub(crate) async fn cancel_progress(&self, params: Value) {
        let Ok(params) = serde_json::from_value::<WorkDoneProgressCancelParams>(params) else {
            tracing::warn!("window/workDoneProgress/cancel without a token");
            return;
        };
        if let Some(stop) = self
            .progress
            .lock()
            .ok()
            .and_then(|p| p.get(&token_key(&params.token)).cloned())
        {
            stop.cancel();
        }
    }

    /// A completion at a position, with the position.
    async fn complete_at(
        &self,
        at: &TextDocumentPositionParams,
    ) -> jsonrpc::Result<Option<(Completed, Position)>> {
        let (text, language_id) = self.document(&at.text_document.uri)?;
        let cursor = offset(&text, at.position).map_err(invalid)?;
        let file_name = self.file_name(&at.text_document.uri);
        let doc = Completing {
            text: &text,
            cursor,
            file_name: &file_name,
            language_id: &language_id,
        };
        let insert = self
            .completer
            .complete(&self.fw, &self.port, self.model(), doc)
            .await
            .map_err(lsp_error)?;
        Ok(insert.map(|t| (t, at.position)))
    }
}
