//! `genai ask`: one turn in the same core the daemon runs, printed as a widget would show it.
//! The prompt words come first; piped stdin follows after a blank line (`-` alone reads stdin
//! only). This file is a front-end: it implements the core's client port itself (no JSON in
//! between) and must hold no logic the daemon lacks. The model's reasoning goes dimmed to
//! stderr when that is a terminal (never to stdout, which scripts read), and into `--json`.

use std::io::{IsTerminal, Read};
use std::sync::Arc;
use std::time::Duration;

use genai_core::agent::budget::Budget;
use genai_core::error::Error;
use genai_core::feature::port::ClientPort;
use genai_core::format::ResponseSchema;
use genai_core::message::{Message, Part};
use genai_core::session::Framework;
use genai_core::store::Store;
use serde_json::json;

use super::conversation::{parse_params, usage, CloseAtEnd, ConversationArgs};
use super::stream::{ended, follow, reply_value, Event, Events};
use super::turn::{renders_markdown, show_turn, Terminal, View};

#[derive(clap::Args)]
pub struct Args {
    /// The prompt; `-` reads it from stdin alone. With -t: the command's NAME=VALUE arguments,
    /// then its text.
    pub prompt: Vec<String>,
    /// Run a command: a prompt kept as a file (`.genai/commands/NAME.md`, Claude Code's and
    /// Codex's too, or a built-in one: `genai commands list`), or an MCP server's prompt
    /// `SERVER.PROMPT`. Piped stdin is its input.
    #[arg(
        short = 't',
        long = "command",
        visible_alias = "template",
        value_name = "NAME"
    )]
    pub command: Option<String>,
    #[command(flatten)]
    pub conversation: ConversationArgs,
    /// Print one JSON object (conversation id, reply, reasoning, model, usage, cost in US
    /// dollars or null when unknown, finish reason) at the end: `--output-format json`.
    #[arg(long, conflicts_with = "output_format")]
    pub json: bool,
    /// `text` (the reply as it streams), `json` (one object at the end, as --json) or
    /// `stream-json` (one JSON object per line for each event, `result` last: docs/CI.md).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<OutputFormat>,
    /// Stop the run after this many rounds of tool calls: its last reply is final, the turn
    /// is stored, and genai ends with exit code 4.
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
    /// Stop the run before another round of tool calls once its requests cost this many US
    /// dollars (the model's price must be known); exit code 4.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Stop the run before another round of tool calls after this long (`90s`, `5m`, or
    /// seconds); the round in flight finishes (`--timeout` cuts it and stores nothing); exit
    /// code 4.
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// Wait for the whole reply instead of streaming it.
    #[arg(long)]
    pub no_stream: bool,
    /// Keep this conversation out of the history.
    #[arg(long)]
    pub no_log: bool,
    /// Give up after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// A JSON Schema the reply must match, as JSON or the path of a file holding it: the reply
    /// is checked (retried once with the errors), and stdout gets exactly the JSON.
    #[arg(long, value_name = "FILE|JSON")]
    pub schema: Option<String>,
    /// The schema's name as the provider sees it (default `response`).
    #[arg(long, value_name = "NAME", requires = "schema")]
    pub schema_name: Option<String>,
}

/// How `genai ask` prints a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    StreamJson,
}

/// The limits `--max-steps`, `--max-cost` and `--max-time` set (`None`: none set).
fn budget(args: &Args) -> Result<Option<Budget>, Error> {
    if args.max_steps == Some(0) {
        return Err(usage("--max-steps takes a number of rounds above 0"));
    }
    if let Some(c) = args.max_cost.filter(|c| !(c.is_finite() && *c > 0.0)) {
        return Err(usage(format!(
            "--max-cost takes a positive number of US dollars, not {c}"
        )));
    }
    let max_time = args.max_time.as_deref().map(duration).transpose()?;
    let b = Budget {
        max_steps: args.max_steps,
        max_cost: args.max_cost,
        max_time,
    };
    Ok(b.is_limited().then_some(b))
}

/// A duration as `--max-time` takes it: `90s`, `5m`, `1h30m`, or a number of seconds.
fn duration(text: &str) -> Result<Duration, Error> {
    let bad = || {
        usage(format!(
            "--max-time takes a duration such as 90s, 5m or 1h30m, not `{text}`"
        ))
    };
    let d = match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 => Duration::from_secs_f64(secs),
        Ok(_) => return Err(bad()),
        Err(_) => humantime::parse_duration(text.trim()).map_err(|_| bad())?,
    };
    match d.is_zero() {
        true => Err(bad()),
        false => Ok(d),
    }
}

/// The prompt text: the words, then piped stdin after a blank line; `-` is stdin alone.
fn prompt_text(words: &[String]) -> Result<String, Error> {
    if words.len() == 1 && words[0] == "-" {
        return read_stdin();
    }
    let mut text = words.join(" ");
    if let Some(piped) = piped_input()? {
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

/// Reads stdin to its end.
fn read_stdin() -> Result<String, Error> {
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .map_err(|e| usage(format!("cannot read stdin: {e}")))?;
    Ok(s)
}

/// Reads piped stdin (none from a terminal).
pub(super) fn piped_input() -> Result<Option<String>, Error> {
    match std::io::stdin().is_terminal() {
        true => Ok(None),
        false => read_stdin().map(Some),
    }
}

/// The command `-t NAME` names, ready, with its settings laid under the flags (a flag given
/// wins); the working folder is where it is looked up, piped stdin is its input.
async fn command_prompt(
    fw: &Framework,
    name: &str,
    words: &[String],
    flags: &mut ConversationArgs,
    schema: &mut Option<String>,
) -> Result<Vec<Part>, Error> {
    let cwd = std::env::current_dir().map_err(|e| usage(format!("no working folder: {e}")))?;
    let commands = fw.commands(&cwd);
    let mut invocation = commands.invocation(name, words)?;
    invocation.input = piped_input()?;
    let ready = fw
        .prepare_command(&commands, &cwd, None, name, &invocation)
        .await?;
    flags.lay_under(&ready.settings);
    if schema.is_none() {
        *schema = ready.settings.schema.as_ref().map(|s| s.to_string());
    }
    Ok(ready.parts)
}

/// The framework of one ask: the history (none with `--no-log`), the config's components.
fn open_framework(
    no_log: bool,
    no_connect: bool,
    timeout: Option<Duration>,
) -> Result<Arc<Framework>, Error> {
    let (paths, config, registry) = super::load()?;
    super::serve::connect_local(&paths, &config, no_connect);
    let store = if no_log {
        Store::scratch()?
    } else {
        Store::open(&paths.history_db())?
    };
    Ok(Arc::new(
        Framework::new(config, registry, Arc::new(store))
            .with_home(&paths)
            .with_prompt_timeout(timeout),
    ))
}

async fn ask(mut args: Args) -> Result<i32, Error> {
    // Files first: `-f -` takes stdin before the prompt would.
    let files = match args.conversation.files.is_empty() {
        true => String::new(),
        false => {
            let secrets = super::files::secrets(&args.conversation)?;
            super::files::load_all(&args.conversation.files, &secrets)?
        }
    };
    let timeout = match args.timeout {
        Some(t) if !(t.is_finite() && t > 0.0) => {
            return Err(usage("--timeout takes a positive number of seconds"))
        }
        t => t.map(Duration::from_secs_f64),
    };
    let budget = budget(&args)?;
    let format = match (args.json, args.output_format) {
        (true, _) => OutputFormat::Json,
        (false, f) => f.unwrap_or(OutputFormat::Text),
    };
    let json = format == OutputFormat::Json;
    // A command is looked up (and refused) before anything is sent.
    let mut early = None;
    let mut parts = match args.command.clone() {
        Some(name) => {
            let fw = open_framework(args.no_log, args.conversation.no_connect, timeout)?;
            let parts = command_prompt(
                &fw,
                &name,
                &args.prompt,
                &mut args.conversation,
                &mut args.schema,
            )
            .await;
            early = Some(fw);
            parts?
        }
        None => {
            let text = prompt_text(&args.prompt)?;
            match text.trim().is_empty() {
                true => Vec::new(),
                false => vec![Part::text(text)],
            }
        }
    };
    let flags = &args.conversation;
    super::files::after_prompt(&mut parts, &files);
    if parts.is_empty() && flags.attach.is_empty() {
        return Err(usage(
            "nothing to ask: give a prompt, or pipe text into genai ask",
        ));
    }
    // Attachments are read (and refused) before anything else is done.
    let images = super::attach::load_all(&flags.attach).await?;
    let schema = args
        .schema
        .as_deref()
        .map(|s| {
            genai_core::select::schema_text(s)
                .and_then(|json| ResponseSchema::from_json_text(args.schema_name.as_deref(), &json))
        })
        .transpose()?;
    let params = parse_params(&flags.params)?;
    let fw = match early {
        Some(fw) => fw,
        None => open_framework(args.no_log, args.conversation.no_connect, timeout)?,
    };
    let _closing = CloseAtEnd(fw.clone());
    let terminal: Arc<dyn ClientPort> =
        Arc::new(Terminal::new(!args.no_stream && !json, flags.yes));
    let conv = flags.open(&fw, args.no_log, terminal)?;
    let agent = fw.agent(&conv.agent_id)?;
    for (k, v) in params {
        agent.set_parameter(&k, v)?;
    }
    if budget.is_some_and(|b| b.max_cost.is_some()) && agent.binding().price.is_none() {
        // A cost is never guessed: without a price the limit could never be reached.
        return Err(usage(format!(
            "--max-cost needs the price of {}:{}, which genai does not know: set it under [pricing] (docs/USING.md)",
            conv.service_provider, conv.model
        )));
    }
    let mut message = Message::user(String::new());
    message.content = parts;
    message.content.extend(images);
    let structured = schema.is_some();
    let turn = fw.run_turn_within(&conv.conversation_id, message, schema, budget)?;
    let turn_id = turn.id().to_string();
    if format == OutputFormat::StreamJson {
        let start = Event::Start {
            conversation_id: conv.conversation_id.clone(),
            turn_id: turn_id.clone(),
            provider: conv.service_provider.clone(),
            model: conv.model.clone(),
        };
        let mut events = Events::default();
        let followed = follow(turn, &mut events, start, structured).await?;
        let last = &followed.outcome;
        if !followed.changed.is_empty() {
            let undo = format!("genai undo --turn {turn_id}");
            eprintln!("{}", followed.changed.summary(&undo));
        }
        if let Some(e) = &events.failed {
            super::out::give_up(e);
        }
        say_how_it_ended(
            &last.stopped,
            followed.refused,
            &last.error,
            followed.interrupted,
        );
        return Ok(followed.code);
    }
    let view = View {
        print: !json,
        markdown: !flags.raw && !structured && renders_markdown(),
        reasoning: !flags.no_reasoning && !json && std::io::stderr().is_terminal(),
    };
    let shown = show_turn(turn, view).await?;
    // What the tools changed is said even when nobody reads the reply any more.
    if !shown.changed.is_empty() && !json {
        let undo = format!("genai undo --turn {turn_id}");
        eprintln!("{}", shown.changed.summary(&undo));
    }
    if let Some(e) = &shown.stdout_failed {
        super::out::give_up(e);
    }
    let last = shown.outcome;
    let (status, code) = ended(&last, shown.refused, shown.interrupted);
    if let Some(e) = &last.error {
        if json {
            let error = json!({"kind": e.kind.as_str(), "message": e.message});
            outln!(
                "{}",
                json!({"conversationId": conv.conversation_id, "turnId": turn_id, "error": error,
                       "status": status, "exitCode": code})
            );
        }
        if shown.interrupted {
            eprintln!("genai: cancelled");
            return Ok(130);
        }
        return Ok(super::fail(e));
    }
    if json {
        let v = json!({
            "conversationId": conv.conversation_id,
            "turnId": turn_id,
            "reply": reply_value(&last.summary, structured),
            "reasoning": last.reasoning,
            // The provider that answered: a fallback's when one served the turn.
            "provider": last.provider.clone().unwrap_or_else(|| agent.binding().provider.name.clone()),
            "model": last.model.clone().unwrap_or(conv.model.clone()),
            "usage": last.usage,
            "cost": last.cost,
            "finishReason": last.finish_reason,
            // What the feature did: tool calls, permission decisions, notes.
            "details": last.detailed,
            "status": status,
            "exitCode": code,
            "budget": last.stopped.map(|b| b.name()),
            "refused": shown.refused,
        });
        outln!("{v}");
    }
    say_how_it_ended(&last.stopped, shown.refused, &None, false);
    Ok(code)
}

/// The line on stderr saying why a run's exit code is not 0, when it is not.
pub(super) fn say_how_it_ended(
    stopped: &Option<genai_core::agent::budget::BudgetReached>,
    refused: usize,
    error: &Option<Error>,
    interrupted: bool,
) {
    match (error, stopped) {
        (Some(_), _) if interrupted => eprintln!("genai: cancelled"),
        (Some(e), _) => eprintln!("genai: {}", e.message),
        (None, Some(b)) => eprintln!(
            "genai: {}; the reply so far is final and the turn is stored",
            b.describe()
        ),
        (None, None) if refused > 0 => eprintln!(
            "genai: {refused} tool call{} refused by the permission policy (the turn's details say which)",
            if refused == 1 { " was" } else { "s were" }
        ),
        _ => {}
    }
}
