//! The command line: argument definitions, shared start-up, and the mapping of errors to exit
//! codes (0 success, 1 model or provider failure, 2 usage error, 3 missing configuration or
//! credentials). Each subcommand lives in its own file and holds no logic the daemon lacks.
//! Everything printed on stdout goes through `out.rs`, so a closed stdout ends genai quietly.
#![deny(clippy::print_stdout)]

#[macro_use]
mod out;

mod acp;
mod agents;
mod ask;
mod attach;
mod changes;
mod chat;
mod commands;
mod components;
mod config;
mod conversation;
mod daemon;
mod embed;
mod files;
mod keys;
mod lsp;
mod markdown;
mod mcp;
mod models;
mod params;
mod plan;
mod plugins;
mod schema;
mod serve;
mod serve_keys;
mod serve_store;
mod sessions;
mod stdio;
mod stream;
mod transcript;
mod turn;
mod undo;
mod usage;

use clap::{CommandFactory, Parser, Subcommand};
use genai_core::config::{Config, Paths};
use genai_core::error::{Error, ErrorKind};
use genai_core::registry::Registry;

#[derive(Parser)]
#[command(
    name = "genai",
    version,
    about = "Talk to generative-AI models from a shell, an editor or CI",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Ask a model; the reply streams to stdout. Piped stdin is added after the prompt.
    Ask(ask::Args),
    /// Chat on the terminal: replies stream as Markdown, slash commands (/help), history kept.
    Chat(chat::Args),
    /// Serve JSON-RPC 2.0 over stdio (Content-Length or newline-delimited framing).
    Daemon(daemon::Args),
    /// Serve the daemon's protocol over WebSocket for several clients, with a web chat page.
    Serve(serve::Args),
    /// Serve the Language Server Protocol over stdio: code actions, `genai.ask`, completion.
    Lsp,
    /// Be an Agent Client Protocol (ACP v1) agent over stdio, for Zed, JetBrains, Neovim...
    Acp,
    /// Be an MCP server over stdio, for Claude Code, Codex and other MCP clients: the
    /// workspace's tools under genai's permissions, the commands as prompts, `ask`, history search.
    Mcp(mcp::Args),
    /// List, show, create or edit commands: prompts kept as files, run with `ask -t NAME`,
    /// `/NAME` in chat and ACP, and as editor actions.
    #[command(subcommand)]
    Commands(commands::Command),
    /// List or show subagents: agent definitions kept as files (`.genai/agents/`, Claude
    /// Code's `.claude/agents/`) that the model hands work to with its `task` tool.
    #[command(subcommand)]
    Agents(agents::Command),
    /// List, search, show, export, rename or delete stored conversations.
    #[command(subcommand)]
    Sessions(sessions::Command),
    /// Turn texts into vectors with an embeddings model (one vector a line, or --json).
    Embed(embed::Args),
    /// Tokens and cost from the history, by model, day, conversation or gateway key.
    Usage(usage::Args),
    /// Put back the files a turn's tools changed, byte for byte (default: the last turn made
    /// in this folder's project that changed files).
    Undo(undo::UndoArgs),
    /// List the turns whose tools changed files, newest first, for `genai undo --turn`.
    Checkpoints(undo::ListArgs),
    /// Show registered kinds and named instances.
    Components {
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Show the parameters each model format accepts, with types and ranges.
    Params(params::Args),
    /// Store, delete or list API keys (the OS keyring, or a file only you can read).
    #[command(subcommand)]
    Keys(keys::Command),
    /// List, download, remove or choose the local models (GGUF files for provider kind `local`).
    #[command(subcommand)]
    Models(models::Command),
    /// Add, list, remove or call plugin modules (HTTP services whose functions become tools).
    #[command(subcommand)]
    Plugins(plugins::Command),
    /// Print the JSON Schema of a protocol message or of the config (all names without NAME).
    Schema {
        /// A schema's name, such as `OnNewMessage` or `config` (`.json` may follow).
        name: Option<String>,
    },
    /// Show where the config lives, or show it with secrets masked.
    #[command(subcommand)]
    Config(config::Command),
    /// Print a shell completion script.
    Completions {
        /// The shell the script is for.
        shell: clap_complete::Shell,
    },
}

/// Exit code of an error kind.
pub fn exit_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::MissingCredentials
        | ErrorKind::Config
        | ErrorKind::UnknownComponent
        | ErrorKind::IncompatibleComponents => 3,
        ErrorKind::InvalidParams | ErrorKind::InvalidParameter | ErrorKind::UnknownConversation => {
            2
        }
        _ => 1,
    }
}

/// Prints a value as pretty JSON on stdout (the `--json` of every subcommand).
pub fn print_json(v: &impl serde::Serialize) {
    outln!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

/// Prints one line on stderr and returns the exit code.
pub fn fail(e: &Error) -> i32 {
    eprintln!("genai: {}", e.message);
    exit_code(e.kind)
}

/// The paths, the config and the registry built from them.
pub fn load() -> Result<(Paths, Config, Registry), Error> {
    let paths = Paths::from_env()?;
    let config = Config::load(&paths.config_file())?;
    let registry = Registry::from_config(&config)?;
    Ok((paths, config, registry))
}

/// The history store of the data folder.
pub fn open_store() -> Result<genai_core::store::Store, Error> {
    let paths = genai_core::config::Paths::from_env()?;
    genai_core::store::Store::open(&paths.history_db())
}

/// `--since`: a date `YYYY-MM-DD` (UTC midnight) or an age `N` + `m`, `h` or `d`, as
/// milliseconds since the Unix epoch.
pub fn since_ms(when: &str) -> Result<i64, Error> {
    let bad = || {
        Error::invalid_params(format!(
            "--since takes a date (2026-01-31) or an age (30m, 12h, 7d), not `{when}`"
        ))
    };
    let w = when.trim();
    if let Some((y, rest)) = w.split_once('-') {
        let (m, d) = rest.split_once('-').ok_or_else(bad)?;
        let n = |s: &str| s.parse::<i64>().map_err(|_| bad());
        let (y, m, d) = (n(y)?, n(m)?, n(d)?);
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
            return Err(bad());
        }
        // Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return Ok((era * 146_097 + doe - 719_468) * 86_400_000);
    }
    let unit = match w.chars().last() {
        Some('m') => 60_000,
        Some('h') => 3_600_000,
        Some('d') => 86_400_000,
        _ => return Err(bad()),
    };
    let n: i64 = w[..w.len() - 1].parse().map_err(|_| bad())?;
    Ok(genai_core::store::now_ms() - n * unit)
}

/// Runs a stdio front-end (`serve`) on the core over the config and the history, then stops
/// the MCP servers (our children) with it. `what` names it in the log.
async fn serve_stdio<F, Fut>(what: &str, serve: F) -> Result<(), Error>
where
    F: FnOnce(std::sync::Arc<genai_core::session::Framework>) -> Fut,
    Fut: std::future::Future<Output = std::io::Result<()>>,
{
    let (paths, config, registry) = load()?;
    let store = std::sync::Arc::new(genai_core::store::Store::open(&paths.history_db())?);
    let fw = std::sync::Arc::new(
        genai_core::session::Framework::new(config, registry, store).with_home(&paths),
    );
    tracing::info!("{what} ready; history at {}", paths.history_db().display());
    // SIGTERM (an editor closing, systemd) ends it as the end of stdin does: the MCP servers
    // are stopped and the last spans flushed, where the signal's default would lose both.
    let served = tokio::select! {
        served = serve(fw.clone()) => served,
        () = stopped() => {
            tracing::info!("{what}: stopped by a signal");
            Ok(())
        }
    };
    let served = match served {
        // A client that closed its end of stdout has left, as `head` does: the turns it saw
        // end are committed, and there is no one left to tell.
        Err(e) if out::closed(&e) => {
            tracing::info!("{what}: the client closed stdout; stopping");
            Ok(())
        }
        served => served.map_err(|e| Error::new(ErrorKind::Internal, format!("stdio failed: {e}"))),
    };
    fw.toolbox().shutdown().await;
    served
}

/// Waits for Ctrl-C or SIGTERM (what `genai serve --stop`, `kill`, systemd and editors
/// closing a server send).
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Runs a stdio front-end to its end. A stdio read or write blocked on a client that went quiet
/// must not hold the exit, so the runtime gets one second to wind down.
fn serve_blocking(
    front_end: impl std::future::Future<Output = Result<(), Error>>,
) -> Result<(), Error> {
    let rt = runtime();
    let served = rt.block_on(front_end);
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    served
}

/// Logs go to stderr through the redactor; `GENAI_LOG` sets the filter. The daemon warns by
/// default; other commands print their own one-line errors, so they log only errors.
/// llama.cpp's own lines are kept quieter still (`llama_log_directive`), and colours are used
/// only on a terminal. A command that runs turns (`traced`) also sends its spans to the
/// collector `[telemetry]` names, when it names one: the [`Telemetry`] returned flushes them
/// when dropped.
///
/// [`Telemetry`]: genai_core::telemetry::Telemetry
fn init_logging(default: &str, traced: bool) -> Option<genai_core::telemetry::Telemetry> {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let spec = std::env::var("GENAI_LOG")
        .ok()
        .filter(|s| EnvFilter::try_new(s).is_ok())
        .unwrap_or_else(|| default.to_string());
    let mut filter = EnvFilter::new(&spec);
    let llama = genai_core::provider::local::llama_log_directive(&spec, filter.max_level_hint());
    if let Some(directive) = llama.and_then(|d| d.parse().ok()) {
        filter = filter.add_directive(directive);
    }
    // Spans are for the collector, never for the log.
    if let Ok(directive) = format!("{}=off", genai_core::telemetry::TARGET).parse() {
        filter = filter.add_directive(directive);
    }
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let log = tracing_subscriber::fmt::layer()
        .with_writer(|| genai_core::redact::RedactingWriter(std::io::stderr()))
        .with_target(false)
        .with_ansi(ansi)
        .with_filter(filter);
    let telemetry = traced
        .then(telemetry_config)
        .flatten()
        .and_then(|c| genai_core::telemetry::start(&c));
    let traces = telemetry.as_ref().map(|t| t.layer());
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(traces)
        .try_init();
    telemetry
}

/// The config's `[telemetry]`, when the file reads (a file that does not is the command's
/// to report).
fn telemetry_config() -> Option<genai_core::config::telemetry::TelemetryConfig> {
    let paths = Paths::from_env().ok()?;
    Config::load(&paths.config_file()).ok().map(|c| c.telemetry)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("cannot start the async runtime")
}

pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let served = matches!(
        cli.command,
        Command::Daemon(_) | Command::Acp | Command::Mcp(_) | Command::Lsp | Command::Serve(_)
    );
    let traced = served || matches!(cli.command, Command::Ask(_) | Command::Chat(_));
    // Dropped when the command is over, which flushes its last spans.
    let _telemetry = init_logging(if served { "warn" } else { "error" }, traced);
    // One conversation at a time: a local model needs one slot, not the daemon's four. A run
    // that may give the model tools where subagents are defined may run several at once,
    // which share the engine's batch; a plain question keeps the one slot (half the load
    // time and memory), whatever `~/.claude/agents` holds.
    let may_use_tools = match &cli.command {
        Command::Ask(a) => a.conversation.may_use_tools() || a.command.is_some(),
        Command::Chat(_) => true,
        _ => false,
    };
    if matches!(cli.command, Command::Ask(_) | Command::Chat(_))
        && !(may_use_tools && agents::any_defined())
    {
        genai_core::provider::local::one_conversation_at_a_time();
    }
    if matches!(cli.command, Command::Serve(_)) {
        genai_core::provider::http::serving_many_clients();
    }
    // The daemon's, ACP's and LSP's stdout belongs to their protocol writer: it is never
    // flushed here, where a client that stopped reading would hold the process forever.
    let protocol = matches!(
        cli.command,
        Command::Daemon(_) | Command::Acp | Command::Mcp(_) | Command::Lsp
    );
    let result = match cli.command {
        Command::Ask(args) => return runtime().block_on(ask::run(args)),
        Command::Chat(args) => return runtime().block_on(chat::run(args)),
        Command::Daemon(args) => serve_blocking(daemon::run(args)),
        Command::Acp => serve_blocking(acp::run()),
        Command::Mcp(args) => serve_blocking(mcp::run(args)),
        Command::Lsp => runtime().block_on(lsp::run()),
        Command::Serve(args) => runtime().block_on(serve::run(args)),
        Command::Commands(c) => return runtime().block_on(commands::run(c)),
        Command::Agents(c) => return agents::run(c),
        Command::Sessions(c) => sessions::run(c),
        Command::Embed(args) => runtime().block_on(embed::run(args)),
        Command::Usage(args) => usage::run(args),
        Command::Undo(args) => undo::run_undo(args),
        Command::Checkpoints(args) => undo::run_list(args),
        Command::Components { json } => components::run(json),
        Command::Params(args) => params::run(args),
        Command::Keys(c) => keys::run(c),
        Command::Models(c) => models::run(c),
        Command::Plugins(c) => runtime().block_on(plugins::run(c)),
        Command::Schema { name } => schema::run(name.as_deref()),
        Command::Config(c) => config::run(c),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "genai", &mut script);
            out::write_bytes(&script);
            Ok(())
        }
    };
    if !protocol {
        out::flush();
    }
    match result {
        Ok(()) => 0,
        Err(e) => fail(&e),
    }
}

/// Ends the process with `code`, once every local engine's step under way is over (llama.cpp's
/// static state must not be torn down under one).
pub fn exit(code: i32) -> ! {
    genai_core::provider::local::stop_engines();
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// `path` of every argument, flag and command under `cmd` that `--help` shows without a
    /// line saying what it is.
    fn without_help(cmd: &clap::Command, path: &str, found: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                found.push(format!("{path} <{}>", arg.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            let path = format!("{path} {}", sub.get_name());
            if sub.get_about().is_none() && sub.get_long_about().is_none() {
                found.push(path.clone());
            }
            without_help(sub, &path, found);
        }
    }

    #[test]
    fn every_command_argument_and_flag_has_help() {
        let mut cli = super::Cli::command();
        cli.build();
        let mut found = Vec::new();
        without_help(&cli, "genai", &mut found);
        assert!(found.is_empty(), "no help for: {}", found.join(", "));
    }

    #[test]
    fn sessions_help_names_each_of_its_commands() {
        let cli = super::Cli::command();
        let sessions = cli.find_subcommand("sessions").unwrap();
        let about = sessions.get_about().unwrap().to_string().to_lowercase();
        for sub in sessions.get_subcommands() {
            assert!(
                about.contains(sub.get_name()),
                "{about:?} leaves out {}",
                sub.get_name()
            );
        }
    }
}
