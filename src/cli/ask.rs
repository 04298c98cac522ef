//! `genai ask`: one turn in the same framework the daemon runs, printed as a widget would show
//! it. The prompt words come first; piped stdin follows after a blank line (`-` alone reads
//! stdin only). This file must hold no logic the daemon lacks: it only drives the framework.

use std::io::{IsTerminal, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use genai::error::{Error, ErrorKind};
use genai::framework::Framework;
use genai::message::Message;
use genai::rpc::protocol::{CancelParams, CreateConversationParams, Event};
use genai::store::Store;
use serde_json::{json, Value};

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
    /// A model parameter, NAME=VALUE (repeatable), such as -p temperature=0.2.
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Continue the most recent conversation.
    #[arg(short, long, conflicts_with = "cid")]
    pub r#continue: bool,
    /// Continue the conversation with this id (any unique prefix).
    #[arg(long, value_name = "ID")]
    pub cid: Option<String>,
    /// Print one JSON object (conversation id, reply, model, usage, finish reason) at the end.
    #[arg(long)]
    pub json: bool,
    /// Wait for the whole reply instead of streaming it.
    #[arg(long)]
    pub no_stream: bool,
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

/// Answers a tool's confirmation request: `--yes`, else a question on the terminal, else no.
fn confirm_on_tty(params: &Value, yes: bool) -> bool {
    let text = params["text"].as_str().unwrap_or("");
    let tool = params["tool"].as_str().unwrap_or("a tool");
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
    let text = prompt_text(&args.prompt)?;
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
    let (fw, mut events) = Framework::new(config, registry, Arc::new(store));
    let fw = {
        let mut fw =
            Arc::try_unwrap(fw).map_err(|_| Error::internal("framework shared too early"))?;
        fw.prompt_timeout = timeout;
        Arc::new(fw)
    };
    fw.set_streaming(!args.no_stream && !args.json);

    let conv = if args.r#continue || args.cid.is_some() {
        if args.model.is_some() {
            return Err(usage(
                "-m cannot change the model of an existing conversation; start a new one",
            ));
        }
        let id = match &args.cid {
            Some(id) => id.clone(),
            None => fw
                .store()
                .last_conversation()?
                .ok_or_else(|| usage("there is no conversation to continue yet"))?,
        };
        fw.resume_conversation(&id, args.system.clone())?
    } else {
        let sel = fw.select(args.model.as_deref())?;
        let tools: Option<Vec<String>> = args.tools.as_ref().map(|names| {
            names
                .iter()
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect()
        });
        fw.create_conversation(CreateConversationParams {
            feature: if args.tools.is_some() {
                Some(genai::feature::tools::NAME.to_string())
            } else {
                sel.feature
            },
            tools: tools.filter(|t| !t.is_empty()),
            service_provider: Some(sel.provider),
            model_configuration: sel.model_configuration,
            model: sel.model,
            system_prompt: args.system.clone().or(sel.system_prompt),
            ephemeral: args.no_log,
            ..Default::default()
        })?
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

    let mut out = std::io::stdout();
    let mut printed = String::new();
    let mut interrupted = false;
    let last = loop {
        let event = tokio::select! {
            e = events.recv() => e,
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                fw.cancel(&CancelParams { turn_id: Some(turn_id.clone()), ..Default::default() })?;
                continue;
            }
        };
        match event {
            Some(Event::OnFeatureResponseChunk(c)) if c.turn_id == turn_id => {
                printed.push_str(&c.delta);
                if out
                    .write_all(c.delta.as_bytes())
                    .and_then(|_| out.flush())
                    .is_err()
                {
                    // stdout closed (such as `| head`): stop quietly.
                    fw.cancel(&CancelParams {
                        turn_id: Some(turn_id.clone()),
                        ..Default::default()
                    })?;
                }
            }
            Some(Event::OnToolCallChunk(c)) if c.turn_id == turn_id => {
                // Progress for a person watching; scripts read stdout only.
                if let Some(name) = c.name.filter(|_| std::io::stderr().is_terminal()) {
                    eprintln!("[calling {name}]");
                }
            }
            Some(Event::OnFeatureResponse(r)) if r.turn_id == turn_id && r.is_final => break r,
            Some(Event::ClientRequest(request)) => {
                let answer = match request.method {
                    "RequestConfirmation" => {
                        let params = request.params.clone();
                        let yes = args.yes;
                        let confirmed =
                            tokio::task::spawn_blocking(move || confirm_on_tty(&params, yes))
                                .await
                                .unwrap_or(false);
                        Ok(json!({ "confirmed": confirmed }))
                    }
                    other => Err(Error::internal(format!("genai ask cannot answer {other}"))),
                };
                if let Some(tx) = request.reply.lock().ok().and_then(|mut r| r.take()) {
                    let _ = tx.send(answer);
                }
            }
            Some(_) => {}
            None => {
                return Err(Error::internal(
                    "the framework stopped before the turn ended",
                ))
            }
        }
    };
    if let Some(err) = &last.error {
        if !printed.is_empty() {
            let _ = writeln!(out);
        }
        let e = Error::new(
            ErrorKind::from_name(&err.kind).unwrap_or(ErrorKind::Internal),
            err.message.clone(),
        );
        if args.json {
            let _ = writeln!(
                out,
                "{}",
                json!({"conversationId": conv.conversation_id, "turnId": turn_id, "error": err})
            );
        }
        if interrupted {
            eprintln!("genai: cancelled");
            return Ok(130);
        }
        return Ok(super::fail(&e));
    }
    if args.json {
        let v = json!({
            "conversationId": conv.conversation_id,
            "turnId": turn_id,
            "reply": last.summary,
            "provider": conv.service_provider,
            "model": last.model.clone().unwrap_or(conv.model.clone()),
            "usage": last.usage,
            "finishReason": last.finish_reason,
        });
        let _ = writeln!(out, "{v}");
    } else {
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
