//! `genai serve`: the daemon's protocol over WebSocket for several clients, the gateway's APIs
//! and a web chat page behind one front door (`genai_server`), with a token, an origin allow
//! list and limits.
//! Prints one line, `listening on ws://ADDR`, and serves until interrupted; on stderr, the
//! chat page's address with the token (`http://ADDR/#token=TOKEN`): the page genai carries,
//! or the folder `--web-root` names in its place. A `--web-root` that is not a folder holding
//! `index.html` is a usage error. Then where the page's conversations work: the default root
//! and the folders `[serve] roots` allows (default: the folder it was started in).
//!
//! A serve of this user also keeps the default local model warm for `genai ask` and `genai
//! chat` (`connect_local`): it loads it at start and says where it listens in `serve.json`.
//! `--background` starts one detached and returns once it listens; `--stop` ends it.
//!
//! SIGTERM or Ctrl-C stops it gracefully (`genai_server::Running::stop`): no new connection,
//! the requests and streams in flight finish within `[serve] shutdown_grace` (a second signal
//! cuts them at once), the gateway's rows are stored, and it exits 0. `/metrics` takes
//! `[serve] metrics_token` (or `GENAI_METRICS_TOKEN`) or is served alone at `[serve]
//! metrics_address` (`ops_settings`).
//! `genai serve keys ...` manages the gateway's virtual keys (`serve_keys.rs`). With `[store]
//! url` the gateway keeps its keys and ledger, and the serve its conversations, in that shared
//! database (`serve_store.rs`), which `genai serve migrate` fills from a SQLite serve.

use std::net::SocketAddr;
use std::sync::Arc;

use genai_core::config::{Config, Paths};
use genai_core::error::{Error, ErrorKind};
use genai_core::session::Framework;
use genai_core::store::Store;
use genai_server::roots::{self, Roots};
use genai_server::{auth, presence, Limits, Options};

#[derive(clap::Args)]
pub struct Args {
    /// The gateway's virtual keys (`genai serve keys create|list|revoke`).
    #[command(subcommand)]
    pub command: Option<ServeCommand>,
    /// The address to listen on (loopback by default: anyone who can reach it still needs
    /// the token).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    pub listen: SocketAddr,
    /// Print the bearer token (made on first use, in the config dir) and exit.
    #[arg(long)]
    pub print_token: bool,
    /// Start the serve detached from this terminal (its log in the data dir's `serve.log`),
    /// print its address and the chat page's once it listens, and return.
    #[arg(long, conflicts_with_all = ["print_token", "stop"])]
    pub background: bool,
    /// Stop the running serve of this user (the one `serve.json` names) and wait for its end.
    #[arg(long, conflicts_with = "print_token")]
    pub stop: bool,
    /// Do not load the default local model at start (it is then loaded by the first request).
    #[arg(long)]
    pub no_preload: bool,
    /// A browser origin allowed to connect besides the served page's own (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// A folder served as the web chat page at `/` in place of the one genai carries
    /// (`editor-integrations/vscode/dist/web` after `npm run build` there, while working on
    /// the page); it must hold `index.html`.
    #[arg(long, value_name = "DIR")]
    pub web_root: Option<std::path::PathBuf>,
    /// WebSocket clients at once.
    #[arg(long, default_value_t = Limits::default().ws.connections)]
    pub max_connections: u32,
    /// HTTP connections open at once (kept under the open-file limit; WebSockets count under
    /// --max-connections); past it the oldest is closed (at once when idle, after its answer
    /// otherwise).
    #[arg(long, default_value_t = Limits::default().open_connections)]
    pub max_open_connections: usize,
    /// Seconds a request's head may take to arrive (a connection idle that long is closed),
    /// and its body after it.
    #[arg(long, value_name = "SECS", default_value_t = Limits::default().read_timeout.as_secs_f64())]
    pub read_timeout_secs: f64,
    /// The largest message, in bytes.
    #[arg(long, default_value_t = Limits::default().ws.message_bytes)]
    pub max_message_bytes: u32,
    /// Turns one connection may have queued or running.
    #[arg(long, default_value_t = Limits::default().ws.turns_per_connection)]
    pub max_turns_per_connection: usize,
    /// Events a client may fall behind before it is dropped.
    #[arg(long, default_value_t = Limits::default().ws.buffered_events)]
    pub max_buffered_events: usize,
}

/// What `genai serve` does besides serving.
#[derive(clap::Subcommand)]
pub enum ServeCommand {
    /// Create, list or revoke the gateway's virtual keys, each with its own budget, rate and
    /// models, its usage kept by name (`genai usage --by key`).
    #[command(subcommand)]
    Keys(super::serve_keys::Command),
    /// Copy a SQLite serve's virtual keys (their hashes) and its ledger of gateway requests
    /// into the shared database; run again, it copies only what was added since.
    Migrate {
        /// The SQLite history of the serve to copy (its data folder's `history.db`).
        #[arg(long, value_name = "SQLITE_FILE")]
        from: std::path::PathBuf,
        /// The Postgres URL (default: `[store] url`, or `GENAI_DATABASE_URL`).
        #[arg(long, value_name = "URL")]
        to: Option<String>,
    },
}

pub async fn run(args: Args) -> Result<(), Error> {
    match args.command {
        Some(ServeCommand::Keys(c)) => return super::serve_keys::run(c).await,
        Some(ServeCommand::Migrate { from, to }) => {
            return super::serve_store::migrate(from, to).await
        }
        None => {}
    }
    let (paths, config, registry) = super::load()?;
    let token = auth::token(&paths.config_dir)?;
    if args.print_token {
        outln!("{token}");
        return Ok(());
    }
    if args.stop {
        let grace = ops_settings(&config.serve)?.grace;
        return stop(&paths.config_dir, grace).await;
    }
    if args.max_connections == 0
        || args.max_open_connections == 0
        || !(args.read_timeout_secs.is_finite() && args.read_timeout_secs > 0.0)
        || args.max_turns_per_connection == 0
        || args.max_buffered_events == 0
    {
        return Err(Error::new(
            ErrorKind::InvalidParams,
            "the limits must be at least 1 (and --read-timeout-secs above 0)",
        ));
    }
    if let Some(dir) = &args.web_root {
        check_web_root(dir)?;
    }
    if args.background {
        return background(&paths, &token).await;
    }
    let started_in = std::env::current_dir().map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("cannot tell the folder genai serve runs in: {e}"),
        )
    })?;
    let roots = Roots::new(
        &config.serve.roots,
        &started_in,
        roots::home_folder().as_deref(),
    )?;
    let shared = super::serve_store::shared_for_serve(&config)
        .await?
        .map(Arc::new);
    if let Some(db) = &shared {
        eprintln!(
            "genai: the gateway's keys and ledger are in the shared database {}, the conversations too",
            db.shown()
        );
    }
    let store = Store::open(&paths.history_db())?;
    let mut fw = Framework::new(config, registry, Arc::new(store)).with_home(&paths);
    if let Some(db) = &shared {
        fw = fw.with_history(db.clone());
    }
    let fw = Arc::new(fw);
    let options = Options {
        listen: args.listen,
        token,
        origins: args.allow_origins,
        web_root: args.web_root,
        limits: Limits {
            open_connections: args.max_open_connections,
            read_timeout: std::time::Duration::from_secs_f64(args.read_timeout_secs),
            ws: genai_rpc::ws::Limits {
                connections: args.max_connections,
                message_bytes: args.max_message_bytes,
                turns_per_connection: args.max_turns_per_connection,
                buffered_events: args.max_buffered_events,
            },
        },
        roots,
        shutdown_grace: DEFAULT_GRACE,
        metrics_token: None,
        metrics_address: None,
        shared: shared.map(|db| db as Arc<dyn genai_gateway::SharedState>),
    };
    let ops = ops_settings(&fw.config().serve)?;
    let options = Options {
        shutdown_grace: ops.grace,
        metrics_token: ops.metrics_token,
        metrics_address: ops.metrics_address,
        ..options
    };
    let shown = options.roots.shown();
    let token = options.token.clone();
    let running = genai_server::start(fw.clone(), options).await?;
    let announced = presence::announce(&paths.config_dir, running.addr)
        .map_err(|e| tracing::warn!("ask and chat will not find this serve: {}", e.message))
        .ok();
    outln!("listening on ws://{}", running.addr);
    if !args.no_preload {
        tokio::spawn(preload(fw.clone()));
    }
    eprintln!(
        "genai: open the chat page at http://{}/#token={token}",
        running.addr
    );
    eprintln!(
        "genai: conversations work in {} unless the page names another folder inside {} ([serve] roots)",
        shown.default,
        shown.allowed.join(", ")
    );
    if let Some(at) = running.metrics_addr {
        eprintln!("genai: metrics at http://{at}/metrics (no token)");
    }
    super::stopped().await;
    drop(announced);
    let grace = ops.grace;
    eprintln!(
        "genai: stopping: no new connections; requests in flight may finish within {} s (signal again to cut them)",
        grace.as_secs_f64()
    );
    let cut = running.cut_short();
    tokio::spawn(async move {
        super::stopped().await;
        cut.cancel();
    });
    if !running.stop().await {
        eprintln!("genai: the requests still in flight were cancelled");
    }
    fw.cancel_all();
    fw.idle().await;
    fw.close_all();
    Ok(())
}

/// How long a stop lets requests in flight finish, without `[serve] shutdown_grace`.
const DEFAULT_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// The operator's settings of `[serve]`, checked.
struct OpsSettings {
    grace: std::time::Duration,
    metrics_token: Option<String>,
    metrics_address: Option<SocketAddr>,
}

fn ops_settings(serve: &genai_core::config::ServeConfig) -> Result<OpsSettings, Error> {
    let grace = match serve.shutdown_grace {
        None => DEFAULT_GRACE,
        Some(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => {
            std::time::Duration::from_secs_f64(s)
        }
        Some(s) => {
            return Err(Error::new(
                ErrorKind::Config,
                format!("serve.shutdown_grace = {s}: give the seconds as a number from 0 to 86400"),
            ))
        }
    };
    let metrics_address = match &serve.metrics_address {
        None => None,
        Some(a) => Some(a.parse::<SocketAddr>().map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("serve.metrics_address = {a:?}: {e}; write an address and port, as \"127.0.0.1:9464\""),
            )
        })?),
    };
    let metrics_token = std::env::var("GENAI_METRICS_TOKEN")
        .ok()
        .or_else(|| serve.metrics_token.clone())
        .map(|t| t.trim().to_string());
    if metrics_token.as_deref().is_some_and(|t| t.len() < 16) {
        return Err(Error::new(
            ErrorKind::Config,
            "the metrics token (serve.metrics_token or GENAI_METRICS_TOKEN) must be at least 16 characters: make one with `openssl rand -hex 32`",
        ));
    }
    Ok(OpsSettings {
        grace,
        metrics_token,
        metrics_address,
    })
}

/// Refuses a web root that is not a folder holding the page's `index.html`.
fn check_web_root(dir: &std::path::Path) -> Result<(), Error> {
    let refuse = |why: &str| {
        Err(Error::new(
            ErrorKind::InvalidParams,
            format!(
                "--web-root {}: {why}; build the page with `npm run build` in editor-integrations/vscode and pass its dist/web folder",
                dir.display()
            ),
        ))
    };
    if !dir.is_dir() {
        return refuse(if dir.exists() {
            "not a folder"
        } else {
            "no such folder"
        });
    }
    if !dir.join("index.html").is_file() {
        return refuse("the folder holds no index.html");
    }
    Ok(())
}

/// Loads the model `genai ask` runs without `-m`, when it is a local one, so the first
/// question does not wait for it.
async fn preload(fw: Arc<genai_core::session::Framework>) {
    let selector = fw.selector();
    let Ok(selection) = selector.select(&genai_core::select::ModelChoice::Default) else {
        return;
    };
    let Ok(instance) = selector.provider(&selection) else {
        return;
    };
    if instance.provider.model_file("").is_none() {
        return;
    }
    let model = selection.model.clone().unwrap_or_default();
    let started = std::time::Instant::now();
    match instance.provider.warm_up(&model).await {
        Ok(()) => tracing::info!(
            "the local model of `{}` is loaded ({:.2} s)",
            instance.name,
            started.elapsed().as_secs_f64()
        ),
        Err(e) => tracing::warn!("cannot load the default local model: {}", e.message),
    }
}

/// Lets this `ask` or `chat` send its local-model requests to the running serve of this
/// user, which holds the model loaded, unless `--no-connect` or `[serve] connect = false`
/// says no. Without a serve this reads one missing file.
pub fn connect_local(paths: &Paths, config: &Config, no_connect: bool) {
    if no_connect || config.serve.connect == Some(false) {
        return;
    }
    let Some(found) = presence::find(&paths.config_dir) else {
        return;
    };
    let Ok(token) = std::fs::read_to_string(auth::token_path(&paths.config_dir)) else {
        return;
    };
    genai_core::provider::local::served::use_serve(found.addr, token.trim().to_string());
}

/// `--background`: this command again, detached (its own process group, stdin closed, its
/// output in `serve.log`), waited for until it says where it listens.
async fn background(paths: &Paths, token: &str) -> Result<(), Error> {
    if let Some(running) = presence::find(&paths.config_dir) {
        let wait = std::time::Duration::from_secs(1);
        if std::net::TcpStream::connect_timeout(&running.addr, wait).is_ok() {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "a genai serve of this user already runs (pid {}, ws://{}): stop it first with `genai serve --stop`",
                    running.pid, running.addr
                ),
            ));
        }
    }
    let failed = |what: &str, e: std::io::Error| Error::internal(format!("{what}: {e}"));
    let log_path = paths.data_dir.join("serve.log");
    genai_core::private::dir(&paths.data_dir).map_err(|e| failed("cannot make the data dir", e))?;
    let log = std::fs::File::create(&log_path)
        .map_err(|e| failed(&format!("cannot write {}", log_path.display()), e))?;
    // The log holds the page's address with the token: the user's alone, as the token is.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        log.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| failed(&format!("cannot protect {}", log_path.display()), e))?;
    }
    let err_log = log
        .try_clone()
        .map_err(|e| failed("cannot share the log", e))?;
    let exe = std::env::current_exe().map_err(|e| failed("cannot find this program", e))?;
    let args = std::env::args_os().skip(1).filter(|a| a != "--background");
    let mut command = std::process::Command::new(exe);
    command
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(err_log);
    #[cfg(unix)]
    {
        // Its own process group: the terminal's Ctrl-C and hang-up do not reach it.
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    let mut child = command
        .spawn()
        .map_err(|e| failed("cannot start genai serve", e))?;
    let pid = child.id();
    // The serve writes `serve.json` with its pid once it listens; it may also fail first.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(found) = presence::find(&paths.config_dir).filter(|p| p.pid == pid) {
            outln!("listening on ws://{}", found.addr);
            eprintln!(
                "genai: open the chat page at http://{}/#token={token}",
                found.addr
            );
            eprintln!(
                "genai: serve runs in the background (pid {pid}, log {}); stop it with `genai serve --stop`",
                log_path.display()
            );
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            return Err(Error::internal(format!(
                "genai serve ended at start ({status}): {}",
                log.trim()
            )));
        }
        if std::time::Instant::now() > deadline {
            return Err(Error::internal(format!(
                "genai serve (pid {pid}) did not start listening within 60 s; see {}",
                log_path.display()
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `--stop`: SIGTERM to the serve `serve.json` names, then wait until it has removed the file
/// and ended (its requests in flight may take `grace`).
async fn stop(config_dir: &std::path::Path, grace: std::time::Duration) -> Result<(), Error> {
    let Some(found) = presence::find(config_dir) else {
        return Err(Error::new(
            ErrorKind::Config,
            "no genai serve of this user is running (no serve.json in the config dir)",
        ));
    };
    #[cfg(unix)]
    {
        let pid = found.pid as libc::pid_t;
        // SAFETY: kill(2) with a pid and a signal number has no memory effects.
        if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
            let e = std::io::Error::last_os_error();
            // A serve that died without cleaning up: its file is stale.
            let _ = std::fs::remove_file(presence::path(config_dir));
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "the serve of pid {pid} is not running ({e}); its stale serve.json is removed"
                ),
            ));
        }
    }
    let within = grace + std::time::Duration::from_secs(30);
    let deadline = std::time::Instant::now() + within;
    while presence::find(config_dir).is_some_and(|p| p == found) || alive(found.pid) {
        if std::time::Instant::now() > deadline {
            return Err(Error::internal(format!(
                "genai serve (pid {}) did not stop within {} s",
                found.pid,
                within.as_secs()
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    eprintln!("genai: serve (pid {}) stopped", found.pid);
    Ok(())
}

/// Whether process `pid` still runs (a zombie has ended).
fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: kill(2) with signal 0 only asks whether the process exists.
        if unsafe { libc::kill(pid as libc::pid_t, 0) } != 0 {
            return false;
        }
        // /proc/PID/stat: "PID (NAME) STATE ..."; the name may hold spaces or parentheses.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.trim_start().chars().next());
        state != Some('Z')
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}
