//! `genai ask`: one turn in the same core the daemon runs, printed as a widget would show it.
//! The prompt words come first; piped stdin follows after a blank line (`-` alone reads stdin
//! only). This file is a front-end: it implements the core's client port itself (no JSON in
//! between) and must hold no logic the daemon lacks. The model's reasoning goes dimmed to
//! stderr when that is a terminal (never to stdout, which scripts read), and into `--json`.

use std::io::{IsTerminal, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use genai::error::{Error, ErrorKind};
use genai::feature::port::{
    ClientPort, Confirmation, HostedTurn, PromptEvent, PromptRef, TurnEvent, TurnRef,
};
use genai::message::{Message, Role};
use genai::select::ModelChoice;
use genai::session::{CancelTarget, ConversationSpec, Framework};
use genai::store::Store;
use serde_json::{json, Value};
use tokio::sync::mpsc;

#[derive(clap::Args)]
pub struct Args {
    /// The prompt; `-` reads it from stdin alone.
    pub prompt: Vec<String>,
    /// An agent from the config, or PROVIDER:MODEL (such as openai:gpt-4o-mini).
    #[arg(short, long)]
    pub model: Option<String>,
    /// A system prompt for this conversation.
    #[arg(short, long)]
    pub system: Option<String>,
    /// An image to send with the prompt: a file, a file:// URL, or an http(s) URL that genai
    /// downloads (repeatable). PNG, JPEG, GIF or WebP, told from the bytes; 20 MiB at most.
    #[arg(short = 'a', long = "attach", value_name = "FILE|URL")]
    pub attach: Vec<String>,
    /// A text file to send after the prompt, as a fenced block with its path (repeatable).
    #[arg(short = 'f', long = "file", value_name = "PATH")]
    pub files: Vec<String>,
    /// A model parameter, NAME=VALUE (repeatable), such as -p temperature=0.2.
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Continue the most recent conversation.
    #[arg(short, long, conflicts_with = "cid")]
    pub r#continue: bool,
    /// Continue the conversation with this id (any unique prefix).
    #[arg(long, value_name = "ID")]
    pub cid: Option<String>,
    /// Print one JSON object (conversation id, reply, reasoning, model, usage, cost in US
    /// dollars or null when unknown, finish reason) at the end.
    #[arg(long)]
    pub json: bool,
    /// Wait for the whole reply instead of streaming it.
    #[arg(long)]
    pub no_stream: bool,
    /// Do not show the model's reasoning (shown dimmed on stderr when that is a terminal).
    #[arg(long)]
    pub no_reasoning: bool,
    /// Print the reply as the model wrote it, without rendering its Markdown (it is rendered
    /// only on a terminal, and never with NO_COLOR set).
    #[arg(long)]
    pub raw: bool,
    /// Keep this conversation out of the history.
    #[arg(long)]
    pub no_log: bool,
    /// Give up after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Let the model call tools (the `tools` feature): `--tools` gives it the enabled plugin
    /// modules and MCP servers, `--tools=calc,files.read` the named sources or single tools.
    #[arg(
        long,
        value_name = "SOURCES",
        num_args = 0..=1,
        require_equals = true,
        value_delimiter = ','
    )]
    pub tools: Option<Vec<String>>,
    /// Confirm what tools ask to confirm without asking (without it, genai asks on the
    /// terminal, and refuses when there is none).
    #[arg(long)]
    pub yes: bool,
}

/// The model's reasoning, dimmed on stderr, ended by a line break before the answer.
#[derive(Default)]
struct ReasoningPane {
    open: bool,
}

impl ReasoningPane {
    fn show(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        self.open = true;
        let mut err = std::io::stderr();
        let _ = write!(err, "\x1b[2m{piece}\x1b[0m");
        let _ = err.flush();
    }

    fn close(&mut self) {
        if std::mem::take(&mut self.open) {
            eprintln!();
        }
    }
}

/// The reasoning of the last turn in `history`: every reasoning part after its prompt.
fn last_turn_reasoning(history: &[Message]) -> String {
    let prompt = history
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(0);
    history[prompt..].iter().map(Message::reasoning).collect()
}

/// The terminal as the core's client: the turn's events go to `ask`'s loop, confirmations are
/// asked on the terminal.
struct Terminal {
    streaming: bool,
    yes: bool,
    events: mpsc::UnboundedSender<(TurnRef, TurnEvent)>,
}

#[async_trait]
impl ClientPort for Terminal {
    fn streaming(&self) -> bool {
        self.streaming
    }

    fn turn_event(&self, turn: &TurnRef, event: TurnEvent) {
        let _ = self.events.send((turn.clone(), event));
    }

    // `genai ask` sends no prompts to agents and hosts no feature.
    fn prompt_event(&self, _: &PromptRef, _: PromptEvent) {}

    fn hosted_turn(&self, _: HostedTurn) {}

    async fn confirm(&self, c: Confirmation) -> Result<bool, Error> {
        let yes = self.yes;
        tokio::task::spawn_blocking(move || confirm_on_tty(&c.tool, &c.text, yes))
            .await
            .map_err(|e| Error::internal(format!("asking on the terminal failed: {e}")))
    }
}

/// Answers a tool's confirmation request: `--yes`, else a question on the terminal, else no.
fn confirm_on_tty(tool: &str, text: &str, yes: bool) -> bool {
    if yes {
        eprintln!("genai: {tool} asks: {text} (confirmed by --yes)");
        return true;
    }
    let Ok(mut tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        eprintln!("genai: {tool} asks: {text} (refused: no terminal to ask on; --yes confirms)");
        return false;
    };
    let _ = write!(tty, "\n{tool} asks: {text}\nConfirm? [y/N] ");
    let _ = tty.flush();
    let mut line = String::new();
    let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(tty), &mut line);
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Whether the reply is drawn as Markdown: on a terminal, unless `NO_COLOR` is set.
fn renders_markdown(out: &std::io::Stdout) -> bool {
    out.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn usage(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidParams, msg)
}

/// The prompt text: the words, then piped stdin after a blank line; `-` is stdin alone.
fn prompt_text(words: &[String]) -> Result<String, Error> {
    let read_stdin = || -> Result<String, Error> {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| usage(format!("cannot read stdin: {e}")))?;
        Ok(s)
    };
    if words.len() == 1 && words[0] == "-" {
        return read_stdin();
    }
    let mut text = words.join(" ");
    if !std::io::stdin().is_terminal() {
        let piped = read_stdin()?;
        if !piped.trim().is_empty() {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&piped);
        }
    }
    Ok(text)
}

pub async fn run(args: Args) -> i32 {
    match ask(args).await {
        Ok(code) => code,
        Err(e) => super::fail(&e),
    }
}

async fn ask(args: Args) -> Result<i32, Error> {
    let mut text = prompt_text(&args.prompt)?;
    let files = super::files::load_all(&args.files)?;
    if !files.is_empty() {
        if !text.trim().is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&files);
    }
    if text.trim().is_empty() && args.attach.is_empty() {
        return Err(usage(
            "nothing to ask: give a prompt, or pipe text into genai ask",
        ));
    }
    // Attachments are read (and refused) before anything else is done.
    let images = super::attach::load_all(&args.attach).await?;
    let timeout = match args.timeout {
        Some(t) if !(t.is_finite() && t > 0.0) => {
            return Err(usage("--timeout takes a positive number of seconds"))
        }
        t => t.map(Duration::from_secs_f64),
    };
    let mut params = serde_json::Map::new();
    for p in &args.params {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| usage(format!("-p takes NAME=VALUE, got `{p}`")))?;
        params.insert(k.trim().to_string(), Value::String(v.to_string()));
    }
    let (paths, config, registry) = super::load()?;
    let store = if args.no_log {
        Store::in_memory()?
    } else {
        Store::open(&paths.history_db())?
    };
    let fw =
        Arc::new(Framework::new(config, registry, Arc::new(store)).with_prompt_timeout(timeout));
    let (tx, mut events) = mpsc::unbounded_channel();
    let terminal: Arc<dyn ClientPort> = Arc::new(Terminal {
        streaming: !args.no_stream && !args.json,
        yes: args.yes,
        events: tx,
    });

    let conv = if args.r#continue || args.cid.is_some() {
        let id = match &args.cid {
            Some(id) => id.clone(),
            None => fw
                .store()
                .last_conversation()?
                .ok_or_else(|| usage("there is no conversation to continue yet"))?,
        };
        match &args.model {
            // Another model takes the conversation over; what its format cannot carry of
            // the history is said on stderr.
            Some(m) => {
                let choice = ModelChoice::Named(m.clone());
                let (conv, notes) =
                    fw.resume_conversation_on(&id, &choice, args.system.clone(), terminal)?;
                for note in notes {
                    eprintln!("genai: {note}");
                }
                conv
            }
            None => fw.resume_conversation(&id, args.system.clone(), terminal)?,
        }
    } else {
        let tools: Option<Vec<String>> = args.tools.as_ref().map(|names| {
            names
                .iter()
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect()
        });
        let spec = ConversationSpec {
            feature: args
                .tools
                .is_some()
                .then(|| genai::feature::tools::NAME.to_string()),
            tools: tools.filter(|t| !t.is_empty()),
            model: args
                .model
                .clone()
                .map_or(ModelChoice::Default, ModelChoice::Named),
            system_prompt: args.system.clone(),
            ephemeral: args.no_log,
            ..Default::default()
        };
        fw.create_conversation(spec, terminal)?
    };
    let agent = fw.agent(&conv.agent_id)?;
    for (k, v) in params {
        agent.set_parameter(&k, v)?;
    }
    let mut message = Message::user(text.clone());
    if text.trim().is_empty() {
        message.content.clear();
    }
    message.content.extend(images);
    let turn_id = fw.on_new_message(&conv.conversation_id, message)?;
    let this_turn = CancelTarget {
        turn_id: Some(turn_id.clone()),
        ..Default::default()
    };

    let mut out = std::io::stdout();
    let mut markdown = (!args.raw && !args.json && renders_markdown(&out))
        .then(super::markdown::MarkdownStream::new);
    let mut printed = String::new();
    let show_reasoning = !args.no_reasoning && !args.json && std::io::stderr().is_terminal();
    let mut pane = ReasoningPane::default();
    let mut reasoning_shown = false;
    let mut interrupted = false;
    let last = loop {
        let event = tokio::select! {
            e = events.recv() => e,
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                fw.cancel(&this_turn)?;
                continue;
            }
        };
        let Some((turn, event)) = event else {
            return Err(Error::internal("the core stopped before the turn ended"));
        };
        if turn.turn_id != turn_id {
            continue;
        }
        match event {
            TurnEvent::Reasoning(delta) if show_reasoning => {
                reasoning_shown = true;
                pane.show(&delta);
            }
            TurnEvent::Chunk(delta) => {
                pane.close();
                printed.push_str(&delta);
                let shown = match &mut markdown {
                    Some(md) => md.push(&delta),
                    None => delta,
                };
                if out
                    .write_all(shown.as_bytes())
                    .and_then(|_| out.flush())
                    .is_err()
                {
                    // stdout closed (such as `| head`): stop quietly.
                    fw.cancel(&this_turn)?;
                }
            }
            TurnEvent::ToolCall(c) => {
                pane.close();
                // Progress for a person watching; scripts read stdout only.
                if let Some(name) = c.name.filter(|_| std::io::stderr().is_terminal()) {
                    eprintln!("[calling {name}]");
                }
            }
            TurnEvent::Done(outcome) => break outcome,
            _ => {}
        }
    };
    pane.close();
    if let Some(md) = &mut markdown {
        if printed.is_empty() && last.error.is_none() {
            printed = last.summary.clone();
            let _ = out.write_all(md.push(&printed).as_bytes());
        }
        let _ = out.write_all(md.finish().as_bytes());
    }
    if let Some(e) = &last.error {
        if !printed.is_empty() {
            let _ = writeln!(out);
        }
        if args.json {
            let error = json!({"kind": e.kind.as_str(), "message": e.message});
            let _ = writeln!(
                out,
                "{}",
                json!({"conversationId": conv.conversation_id, "turnId": turn_id, "error": error})
            );
        }
        if interrupted {
            eprintln!("genai: cancelled");
            return Ok(130);
        }
        return Ok(super::fail(e));
    }
    let reasoning = if args.json || (show_reasoning && !reasoning_shown) {
        last_turn_reasoning(&agent.history()?)
    } else {
        String::new()
    };
    if args.json {
        let v = json!({
            "conversationId": conv.conversation_id,
            "turnId": turn_id,
            "reply": last.summary,
            "reasoning": reasoning,
            "provider": conv.service_provider,
            "model": last.model.clone().unwrap_or(conv.model.clone()),
            "usage": last.usage,
            "cost": last.cost,
            "finishReason": last.finish_reason,
        });
        let _ = writeln!(out, "{v}");
    } else {
        // Not streamed: the reasoning comes whole, before the answer.
        pane.show(&reasoning);
        pane.close();
        if printed.is_empty() {
            let _ = out.write_all(last.summary.as_bytes());
            printed = last.summary.clone();
        }
        if !printed.ends_with('\n') {
            let _ = writeln!(out);
        }
        let _ = out.flush();
    }
    Ok(0)
}
