//! `genai chat`: an interactive chat on the terminal, a front-end on the core's client port like
//! `genai ask` (the same `Terminal` port, turn display and conversation opening, from
//! `cli/turn.rs` and `cli/conversation.rs`). Each input is a prompt or a slash command
//! (`commands.rs`); input comes from reedline on a terminal, or line by line from a pipe
//! (`input.rs`). Ctrl-C during a reply cancels the turn through the core (nothing of it is
//! stored), every turn goes to the history, and `/model` hands the conversation over as
//! `ask -c -m` does.
//!
//! It must hold no logic the daemon lacks: it only calls the core and shows what comes back.
//! Replies go to stdout; notices (`genai: ...`) to stderr, so a script reads replies only.

mod commands;
mod input;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::Arc;

use base64::Engine;
use genai_core::error::{Error, ErrorKind};
use genai_core::feature::port::ClientPort;
use genai_core::message::{Message, Part, Role};
use genai_core::select::ModelChoice;
use genai_core::session::{Choice, Framework, OpenConversation};
use genai_core::store::Store;

use super::ask::OutputFormat;
use super::conversation::{handed_over, parse_params, CloseAtEnd, ConversationArgs};
use super::turn::{renders_markdown, show_turn, Terminal, View};
use commands::{Command, Line};
use input::{Input, Read};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub conversation: ConversationArgs,
    /// `text` (the replies), or `stream-json`: each turn's events as JSON lines, `result`
    /// last (docs/CI.md), for a script that pipes its prompts in.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<super::ask::OutputFormat>,
}

pub async fn run(args: Args) -> i32 {
    match chat(args).await {
        Ok(code) => code,
        Err(e) => super::fail(&e),
    }
}

/// A notice on stderr.
fn note(text: &str) {
    eprintln!("genai: {text}");
}

/// What the chat holds between inputs.
struct Chat {
    fw: Arc<Framework>,
    port: Arc<dyn ClientPort>,
    flags: ConversationArgs,
    conv: OpenConversation,
    /// The model `/new` opens: the last one named (`-m`, `/model`, the continued one's).
    model: Option<String>,
    /// The system prompt set by `-s` or `/system`, kept when the conversation is reopened.
    system: Option<String>,
    /// Files (fenced blocks) and images waiting for the next prompt.
    files: String,
    images: Vec<Part>,
    last_reply: String,
    view: View,
    /// The event stream each turn is written to instead (`--output-format stream-json`).
    events: Option<super::stream::Events>,
}

async fn chat(args: Args) -> Result<i32, Error> {
    let flags = args.conversation;
    let events = match args.output_format {
        Some(OutputFormat::Json) => {
            return Err(super::conversation::usage(
                "genai chat writes text or stream-json (--output-format json is genai ask's)",
            ))
        }
        Some(OutputFormat::StreamJson) => Some(super::stream::Events::default()),
        _ => None,
    };
    // Files, images and parameters are read (and refused) before anything else is done.
    if flags.files.iter().any(|f| f == "-") && !std::io::stdin().is_terminal() {
        return Err(Error::new(
            ErrorKind::InvalidParams,
            "-f - cannot read stdin in a chat whose prompts come from stdin; give the file's path",
        ));
    }
    let files = super::files::load_all(&flags.files, &super::files::secrets(&flags)?)?;
    let images = super::attach::load_all(&flags.attach).await?;
    let params = parse_params(&flags.params)?;
    let (paths, config, registry) = super::load()?;
    super::serve::connect_local(&paths, &config, flags.no_connect);
    let store = Arc::new(Store::open(&paths.history_db())?);
    let fw = Arc::new(Framework::new(config, registry, store).with_home(&paths));
    let _closing = CloseAtEnd(fw.clone());
    let port: Arc<dyn ClientPort> = Arc::new(Terminal::new(true, flags.yes));
    let conv = flags.open(&fw, false, port.clone())?;
    let agent = fw.agent(&conv.agent_id)?;
    for (k, v) in params {
        agent.set_parameter(&k, v)?;
    }
    let interactive = std::io::stdin().is_terminal();
    let mut input = if interactive {
        // What was typed is the user's alone, as the history is.
        let history = paths.data_dir.join("chat-history.txt");
        genai_core::private::dir(&paths.data_dir)
            .and_then(|()| genai_core::private::file(&history))
            .map_err(|e| Error::internal(format!("cannot create {}: {e}", history.display())))?;
        let colour = super::turn::colour();
        Input::editor(&history, conv.model.clone(), colour)?
    } else {
        Input::piped()
    };
    let continued = flags.continues();
    let mut chat = Chat {
        view: View {
            print: true,
            markdown: !flags.raw && renders_markdown(),
            reasoning: !flags.no_reasoning && std::io::stderr().is_terminal(),
        },
        model: flags
            .model
            .clone()
            .or_else(|| continued.then(|| format!("{}:{}", conv.service_provider, conv.model))),
        system: flags.system.clone(),
        fw,
        port,
        flags,
        conv,
        files,
        images,
        last_reply: String::new(),
        events,
    };
    if interactive {
        let how = if continued { "continuing" } else { "new" };
        note(&format!(
            "{how} conversation {} on {}:{} (/help lists the commands, Ctrl-D leaves)",
            chat.conv.conversation_id, chat.conv.service_provider, chat.conv.model
        ));
    }
    // Driven by a script, the chat exits with the code of its last failure (0 when none),
    // or 130 when Ctrl-C stopped it.
    let mut code = 0;
    loop {
        let text = match input.read().await? {
            Read::Text(text) => text,
            Read::Cleared => continue,
            Read::End => break,
        };
        let done = match commands::parse(&text) {
            Line::Empty => Ok(false),
            Line::Prompt(prompt) => chat.send(prompt).await.map(|_| false),
            Line::Refused(why) => Err(super::conversation::usage(why)),
            Line::Command(Command::Exit) => Ok(true),
            Line::Command(c) => chat.run(c).await.map(|_| false),
        };
        match done {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) if e.kind == ErrorKind::Cancelled => {
                note(&e.message);
                code = 130;
                break;
            }
            Err(e) => {
                note(&e.message);
                code = super::exit_code(e.kind);
            }
        }
        input.set_model(&chat.conv.model);
    }
    if input.is_editor() {
        outln!();
    }
    chat.fw.toolbox().shutdown().await;
    Ok(if interactive { 0 } else { code })
}

impl Chat {
    /// Sends a prompt with what waits for it, and shows the reply. A failed or cancelled turn
    /// keeps the waiting files and images for the next prompt.
    async fn send(&mut self, text: String) -> Result<(), Error> {
        self.send_parts(vec![Part::text(text)], None).await
    }

    /// [`Chat::send`] of a message's parts, whose reply must match `schema` when given.
    async fn send_parts(
        &mut self,
        mut parts: Vec<Part>,
        schema: Option<genai_core::format::ResponseSchema>,
    ) -> Result<(), Error> {
        super::files::after_prompt(&mut parts, &self.files);
        let mut message = Message::user(String::new());
        message.content = parts;
        message.content.extend(self.images.iter().cloned());
        let structured = schema.is_some();
        let turn = self
            .fw
            .run_turn(&self.conv.conversation_id, message, schema)?;
        if let Some(events) = &mut self.events {
            let start = super::stream::Event::Start {
                conversation_id: self.conv.conversation_id.clone(),
                turn_id: turn.id().to_string(),
                provider: self.conv.service_provider.clone(),
                model: self.conv.model.clone(),
            };
            let followed = super::stream::follow(turn, events, start, structured).await?;
            if !followed.changed.is_empty() {
                eprintln!("{}", followed.changed.summary("/undo"));
            }
            if let Some(e) = &events.failed {
                self.fw.toolbox().shutdown().await;
                super::out::give_up(e);
            }
            if followed.interrupted {
                return Err(Error::new(ErrorKind::Cancelled, "cancelled"));
            }
            if let Some(e) = followed.outcome.error {
                return Err(e);
            }
            self.files.clear();
            self.images.clear();
            self.last_reply = followed.outcome.summary;
            return Ok(());
        }
        let shown = show_turn(turn, self.view).await?;
        if !shown.changed.is_empty() {
            eprintln!("{}", shown.changed.summary("/undo"));
        }
        if let Some(e) = &shown.stdout_failed {
            // Nobody reads the replies any more: the chat ends (quietly when stdout closed).
            self.fw.toolbox().shutdown().await;
            super::out::give_up(e);
        }
        if shown.interrupted {
            if !std::io::stdin().is_terminal() {
                // A script's chat stops with its turn, as `genai ask` does.
                return Err(Error::new(ErrorKind::Cancelled, "cancelled"));
            }
            // After the `^C` the terminal echoed.
            eprintln!();
            note("cancelled: nothing of this turn is kept");
            return Ok(());
        }
        if let Some(e) = shown.outcome.error {
            return Err(e);
        }
        self.files.clear();
        self.images.clear();
        self.last_reply = shown.printed;
        Ok(())
    }

    async fn run(&mut self, command: Command) -> Result<(), Error> {
        let id = self.conv.conversation_id.clone();
        match command {
            Command::Model(None) => {
                outln!("{}:{}", self.conv.service_provider, self.conv.model)
            }
            Command::Model(Some(name)) => {
                // Refused before the conversation is closed: a wrong name changes nothing.
                let choice = ModelChoice::Named(name.clone());
                self.fw.selector().select(&choice)?;
                self.fw.remove_conversation(&id)?;
                let (system, port) = (self.system.clone(), self.port.clone());
                match self
                    .fw
                    .resume_conversation_on(&id, &choice, system, port)
                    .map(handed_over)
                {
                    Ok(conv) => self.conv = conv,
                    Err(e) => {
                        self.reopen()?;
                        return Err(e);
                    }
                }
                self.model = Some(name);
                note(&format!(
                    "now on {}:{}",
                    self.conv.service_provider, self.conv.model
                ));
            }
            Command::System(None) => {
                let history = self.fw.agent(&self.conv.agent_id)?.history()?;
                let stored = history.first().filter(|m| m.role == Role::System);
                match self.system.clone().or_else(|| stored.map(Message::text)) {
                    Some(s) => outln!("{s}"),
                    None => note("no system prompt"),
                }
            }
            Command::System(Some(text)) => {
                self.system = Some(text);
                self.reopen()?;
                note("the system prompt goes with the next prompt");
            }
            Command::Attach(spec) => {
                let images = super::attach::load_all(std::slice::from_ref(&spec)).await?;
                self.images.extend(images);
                note(&format!("{spec} goes with the next prompt"));
            }
            Command::File(path) => {
                let secrets = super::files::secrets(&self.flags)?;
                let block = super::files::load_all(std::slice::from_ref(&path), &secrets)?;
                if !self.files.is_empty() {
                    self.files.push_str("\n\n");
                }
                self.files.push_str(&block);
                note(&format!("{path} goes with the next prompt"));
            }
            Command::Tools(None) => self.list_tools().await?,
            Command::Tools(Some(on)) => {
                let feature = if on {
                    genai_core::feature::tools::NAME
                } else {
                    genai_core::feature::assistant::NAME
                };
                let choice = Choice {
                    feature: Some(feature.to_string()),
                    model: None,
                };
                self.conv =
                    self.fw
                        .change_choice(&id, choice, &BTreeMap::new(), self.port.clone())?;
                if self.system.is_some() {
                    // Reopened without it: the chat's system prompt goes on.
                    self.reopen()?;
                }
                note(&format!("tools are {}", if on { "on" } else { "off" }));
            }
            Command::Params(specs) => {
                let agent = self.fw.agent(&self.conv.agent_id)?;
                if specs.is_empty() {
                    let (_, _, params) = agent.binding().model_info();
                    if params.is_empty() {
                        note("no parameters set");
                    }
                    for (k, v) in params {
                        outln!(
                            "{k}={}",
                            v.as_str().map_or_else(|| v.to_string(), str::to_string)
                        );
                    }
                }
                for (k, v) in parse_params(&specs)? {
                    agent.set_parameter(&k, v)?;
                }
            }
            Command::History => {
                let mut transcript = super::transcript::Transcript::default();
                for m in self.fw.agent(&self.conv.agent_id)?.history()? {
                    outln!("{}: {}", m.role.as_str(), transcript.plain(&m));
                }
            }
            Command::Compact => {
                let compacted = self.fw.compact_conversation(&id).await?;
                note(&compacted.describe());
            }
            Command::Undo { force } => {
                let target = genai_core::checkpoint::UndoTarget {
                    conversation: Some(id.clone()),
                    turn: None,
                    project: None,
                };
                let paths = genai_core::config::Paths::from_env()?;
                let undone = genai_core::checkpoint::Checkpoints::open(&paths.data_dir)?
                    .undo(target, force)?;
                outln!("{}", super::undo::show_undone(&undone));
            }
            Command::New => {
                self.fw.remove_conversation(&id)?;
                match self
                    .flags
                    .open_new(&self.fw, self.model.clone(), false, self.port.clone())
                {
                    Ok(conv) => {
                        self.conv = conv;
                        // The old one is done with: without a turn it leaves the history.
                        self.fw.close_conversation(&id)?;
                    }
                    Err(e) => {
                        self.reopen()?;
                        return Err(e);
                    }
                }
                note(&format!("new conversation {}", self.conv.conversation_id));
            }
            Command::Copy => self.copy()?,
            Command::Help => {
                for (usage, what) in commands::HELP {
                    outln!("{usage:<24} {what}");
                }
                outln!("Alt-Enter or a line ending in \\ goes on to a new line; Ctrl-C stops a reply or clears the line; // sends a line that starts with /.");
                let cwd = std::env::current_dir().unwrap_or_default();
                let files = self.fw.commands(&cwd);
                outln!("Commands (genai commands list shows where each comes from):");
                for c in files.list() {
                    outln!("{:<24} {}", format!("/{}", c.name), c.description);
                }
            }
            Command::Run { name, rest } => self.run_command(&name, &rest).await?,
            Command::Exit => {}
        }
        Ok(())
    }

    /// `/NAME rest`: a command's prompt sent in this conversation (its schema applies to the
    /// turn; its model, system prompt, parameters and tools are for a conversation it starts,
    /// which `genai ask -t NAME` does).
    async fn run_command(&mut self, name: &str, rest: &str) -> Result<(), Error> {
        let cwd = std::env::current_dir()
            .map_err(|e| Error::internal(format!("no working folder: {e}")))?;
        let files = self.fw.commands(&cwd);
        let words: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
        if !files.contains(name) && !name.contains('.') {
            return Err(super::conversation::usage(format!(
                "unknown command /{name}: /help lists the commands; start a line with // to send it as it is"
            )));
        }
        let invocation = files.invocation(name, &words)?;
        let id = self.conv.conversation_id.clone();
        let ready = self
            .fw
            .prepare_command(&files, &cwd, Some(&id), name, &invocation)
            .await?;
        let s = &ready.settings;
        if s.model.is_some() || s.system.is_some() || !s.parameters.is_empty() || s.tools.is_some()
        {
            note(&format!(
                "/{name} runs in this conversation: its model, system prompt, parameters and tools apply when it starts one (genai ask -t {name})"
            ));
        }
        let schema = genai_core::format::ResponseSchema::given(s.schema.clone(), None)?;
        self.send_parts(ready.parts, schema).await
    }

    /// Reopens the conversation (closed by a command) with the chat's system prompt.
    fn reopen(&mut self) -> Result<(), Error> {
        let id = self.conv.conversation_id.clone();
        self.fw.remove_conversation(&id)?;
        self.conv = self
            .fw
            .resume_conversation(&id, self.system.clone(), self.port.clone())?;
        Ok(())
    }

    /// Lists the tools the model may call, and whether it may now.
    async fn list_tools(&self) -> Result<(), Error> {
        let toolbox = self.fw.toolbox_of(&self.conv.conversation_id)?;
        let selection = self.flags.tools.clone().filter(|t| !t.is_empty());
        let (tools, errors) = toolbox.list(selection.as_deref()).await;
        let on = self.conv.feature == genai_core::feature::tools::NAME;
        note(&format!(
            "tools are {} (/tools {} turns them {})",
            if on { "on" } else { "off" },
            if on { "off" } else { "on" },
            if on { "off" } else { "on" }
        ));
        if tools.is_empty() && errors.is_empty() {
            note("no tool sources: add plugin modules (genai plugins add) or MCP servers to the config");
        }
        for t in tools {
            outln!("{}  {}", t.name, t.description);
        }
        for e in errors {
            note(&format!("{}: {}", e.source, e.message));
        }
        Ok(())
    }

    /// Copies the last reply to the terminal's clipboard with the OSC 52 escape.
    fn copy(&self) -> Result<(), Error> {
        if self.last_reply.is_empty() {
            return Err(super::conversation::usage("there is no reply to copy yet"));
        }
        let encoded = base64::engine::general_purpose::STANDARD.encode(&self.last_reply);
        let escape = format!("\x1b]52;c;{encoded}\x07");
        let written = if std::io::stdout().is_terminal() {
            let mut out = std::io::stdout();
            out.write_all(escape.as_bytes()).and_then(|_| out.flush())
        } else {
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/tty")
                .and_then(|mut tty| tty.write_all(escape.as_bytes()))
        };
        written.map_err(|e| super::conversation::usage(format!("no terminal to copy to ({e})")))?;
        note(&format!(
            "copied the last reply ({} characters) to the clipboard (OSC 52)",
            self.last_reply.chars().count()
        ));
        Ok(())
    }
}
