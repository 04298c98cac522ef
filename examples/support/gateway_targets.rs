//! The servers `bench-gateway` measures, each in a process of its own that is killed when
//! dropped: `genai serve` (the release binary beside the bench), the floor (this bench again as
//! a proxy that only forwards: `null_proxy.rs`), LiteLLM's proxy and nginx, each in front of
//! the same upstream, and haproxy in front of genai replicas; and what memory a server's
//! processes hold.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

type Res<T> = Result<T, String>;

/// The key genai and the floor send upstream (the upstream checks none).
pub const UPSTREAM_KEY: &str = "sk-bench-upstream";
const LITELLM_KEY: &str = "sk-bench-litellm-master";

/// Where requests go and who serves them.
pub struct Target {
    pub name: &'static str,
    pub addr: SocketAddr,
    pub key: Option<String>,
    pub model: String,
    /// The server's process (its children counted too), none for the in-process upstream.
    pub pid: Option<u32>,
}

/// Resident and peak memory of `pid` and every process under it, in KiB.
pub fn tree_memory_kib(pid: u32) -> Res<(u64, u64)> {
    let mut pids = vec![pid];
    let mut i = 0;
    let all: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .map_err(|e| e.to_string())?
        .filter_map(|d| d.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let after = stat.rsplit_once(')')?.1;
            Some((p, after.split_whitespace().nth(1)?.parse().ok()?))
        })
        .collect();
    while i < pids.len() {
        let parent = pids[i];
        pids.extend(all.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    let (mut rss, mut peak) = (0, 0);
    for p in pids {
        if let Ok((r, h)) = crate::bench::memory_kib(p) {
            rss += r;
            peak += h;
        }
    }
    Ok((rss, peak))
}

/// A server process of the bench, killed (with its process group) when dropped.
pub struct Server {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: kill(2) on the child's own process group; no memory effects.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn own_group(cmd: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
}

/// `genai serve` with a provider `upstream` at `upstream`, asked with the serve token.
pub fn genai_serve(upstream: SocketAddr) -> Res<(Server, Target)> {
    genai_serve_as("genai", upstream, None, None, None)
}

/// `genai serve` named `name` sending its traces to the OTLP/HTTP collector at `collector`.
pub fn genai_serve_traced(
    name: &'static str,
    upstream: SocketAddr,
    collector: SocketAddr,
) -> Res<(Server, Target)> {
    genai_serve_as(name, upstream, None, None, Some(collector))
}

/// `genai serve` named `name`, asked with a virtual key made for it, its keys and ledger in
/// the SQLite history or, given `database` (a Postgres URL), in that database.
pub fn genai_serve_keyed(
    name: &'static str,
    upstream: SocketAddr,
    database: Option<&str>,
) -> Res<(Server, Target)> {
    genai_serve_as(name, upstream, Some(database), None, None)
}

/// Another replica of a keyed `genai serve` on the same Postgres `database`, asked with the
/// virtual key `key` made by the first.
pub fn genai_replica(
    name: &'static str,
    upstream: SocketAddr,
    database: &str,
    key: &str,
) -> Res<(Server, Target)> {
    genai_serve_as(name, upstream, Some(Some(database)), Some(key), None)
}

fn genai_serve_as(
    name: &'static str,
    upstream: SocketAddr,
    keyed: Option<Option<&str>>,
    existing_key: Option<&str>,
    collector: Option<SocketAddr>,
) -> Res<(Server, Target)> {
    let genai = crate::bench::genai_binary("cargo build --release --bin genai")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (config, data) = (dir.path().join("config"), dir.path().join("data"));
    std::fs::create_dir_all(&config).map_err(|e| e.to_string())?;
    // The provider as a user writes it: under `genai serve` an instance takes 1,024 requests
    // in flight by default, every client's at once here as with LiteLLM.
    let toml = format!(
        "[service_providers.upstream]\nkind = \"openai\"\nbase_url = \"http://{upstream}/v1\"\n\
         api_key = \"{UPSTREAM_KEY}\"\n"
    );
    std::fs::write(config.join("config.toml"), toml).map_err(|e| e.to_string())?;
    let database = keyed.flatten();
    let with_env = |cmd: &mut Command| {
        cmd.env("GENAI_CONFIG_DIR", &config)
            .env("GENAI_DATA_DIR", &data)
            .env_remove("GENAI_LOG")
            .env_remove("GENAI_DATABASE_URL")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
        if let Some(url) = database {
            cmd.env("GENAI_DATABASE_URL", url);
        }
        if let Some(at) = collector {
            cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{at}"));
        }
    };
    let key = match keyed {
        None => None,
        Some(_) if existing_key.is_some() => existing_key.map(str::to_string),
        Some(_) => {
            let mut make = Command::new(&genai);
            with_env(&mut make);
            let key_name = format!("bench-{}", std::process::id());
            let out = make
                .args(["serve", "keys", "create", &key_name])
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("genai serve keys create: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "genai serve keys create: {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
        }
    };
    let mut cmd = Command::new(genai);
    cmd.args([
        "serve",
        "--no-preload",
        "--listen",
        "127.0.0.1:0",
        "--max-connections",
        "4096",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    with_env(&mut cmd);
    let (server, pid, addr) = start_announcing(cmd, dir, "genai serve", "listening on ws://")?;
    let key = match key {
        Some(k) => k,
        None => std::fs::read_to_string(config.join("serve-token"))
            .map_err(|e| format!("no serve token: {e}"))?
            .trim()
            .to_string(),
    };
    let target = Target {
        name,
        addr,
        key: Some(key),
        model: "upstream:gpt-bench".into(),
        pid: Some(pid),
    };
    Ok((server, target))
}

/// The floor (`support/null_proxy.rs`): this program again, as a proxy that only forwards to
/// `upstream`.
pub fn null_proxy_process(upstream: SocketAddr) -> Res<(Server, Target)> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.args(["--null-proxy", &upstream.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let (server, pid, addr) = start_announcing(cmd, dir, "the null proxy", "listening on ")?;
    let target = Target {
        name: "floor",
        addr,
        key: Some(UPSTREAM_KEY.into()),
        model: crate::fast_upstream::MODEL.into(),
        pid: Some(pid),
    };
    Ok((server, target))
}

/// LiteLLM's proxy (`litellm` at `exe`) with `openai/gpt-bench` at `upstream`, a worker per
/// core; waits until it answers its liveness route.
pub async fn litellm(exe: &str, upstream: SocketAddr) -> Res<(Server, Target)> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let yaml = format!(
        "model_list:\n  - model_name: {m}\n    litellm_params:\n      model: openai/{m}\n      api_base: http://{upstream}/v1\n      api_key: {UPSTREAM_KEY}\n\
         general_settings:\n  master_key: {LITELLM_KEY}\nlitellm_settings:\n  set_verbose: false\n",
        m = crate::fast_upstream::MODEL
    );
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, yaml).map_err(|e| e.to_string())?;
    let port = free_port()?;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cmd = Command::new(exe);
    cmd.arg("--config")
        .arg(&config)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--num_workers", &workers.to_string()])
        // A worker's import takes seconds on a busy machine: past uvicorn's health check (5 s)
        // it is killed and started again, forever.
        .args(["--timeout_worker_healthcheck", "600"])
        .env("LITELLM_LOG", "ERROR")
        // Its price list from the package (not fetched from GitHub at start).
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(bin) = std::path::Path::new(exe).parent() {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", bin.display()));
    }
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let liveness = format!("http://{addr}/health/liveliness");
    let ready = || async {
        let probe = reqwest::get(&liveness).await;
        probe.is_ok_and(|r| r.status().is_success())
    };
    let (server, pid) = start_ready(cmd, dir, "litellm", Duration::from_secs(600), ready).await?;
    let target = Target {
        name: "litellm",
        addr,
        key: Some(LITELLM_KEY.into()),
        model: crate::fast_upstream::MODEL.into(),
        pid: Some(pid),
    };
    Ok((server, target))
}

/// nginx (the executable at `exe`) as a reverse proxy to `upstream`: a worker per core,
/// keep-alive connections to the upstream, no buffering, no access log; waits until it
/// listens. Another floor, from outside this project.
pub async fn nginx(exe: &str, upstream: SocketAddr) -> Res<(Server, Target)> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let port = free_port()?;
    let conf = format!(
        "worker_processes auto;\npid {pid};\nerror_log stderr error;\n\
         events {{ worker_connections 8192; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {tmp};\n  proxy_temp_path {tmp};\n\
           upstream bench {{ server {upstream}; keepalive 512; }}\n\
           server {{\n    listen 127.0.0.1:{port};\n    keepalive_requests 1000000;\n\
             location / {{\n      proxy_pass http://bench;\n      proxy_http_version 1.1;\n\
               proxy_set_header Connection \"\";\n      proxy_buffering off;\n    }}\n  }}\n}}\n",
        pid = dir.path().join("nginx.pid").display(),
        tmp = dir.path().display(),
    );
    let config = dir.path().join("nginx.conf");
    std::fs::write(&config, conf).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.arg("-c")
        .arg(&config)
        .arg("-p")
        .arg(dir.path())
        .args(["-g", "daemon off;"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let ready = || async { tokio::net::TcpStream::connect(addr).await.is_ok() };
    let (server, pid) = start_ready(cmd, dir, "nginx", Duration::from_secs(30), ready).await?;
    let target = Target {
        name: "nginx",
        addr,
        key: Some(UPSTREAM_KEY.into()),
        model: crate::fast_upstream::MODEL.into(),
        pid: Some(pid),
    };
    Ok((server, target))
}

/// haproxy (the executable at `exe`) balancing round robin over `servers`, keep-alive on both
/// sides and idle server connections reused by any client, as a team would front replicas;
/// asked as `behind` is (its key and model). Waits until it listens.
pub async fn haproxy(
    exe: &str,
    name: &'static str,
    servers: &[SocketAddr],
    behind: &Target,
) -> Res<(Server, Target)> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let port = free_port()?;
    let backends: String = (servers.iter().enumerate())
        .map(|(i, s)| format!("    server r{i} {s}\n"))
        .collect();
    let conf = format!(
        "global\n    maxconn 8192\n\
         defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n\
             option http-keep-alive\n    http-reuse always\n\
         frontend bench\n    bind 127.0.0.1:{port}\n    default_backend genai\n\
         backend genai\n    balance roundrobin\n{backends}"
    );
    let config = dir.path().join("haproxy.cfg");
    std::fs::write(&config, conf).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.args(["-db", "-f"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let ready = || async { tokio::net::TcpStream::connect(addr).await.is_ok() };
    let (server, _) = start_ready(cmd, dir, "haproxy", Duration::from_secs(30), ready).await?;
    let target = Target {
        name,
        addr,
        key: behind.key.clone(),
        model: behind.model.clone(),
        // Its memory is not genai's: the memory table leaves it out.
        pid: None,
    };
    Ok((server, target))
}

fn free_port() -> Res<u16> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// Starts `cmd` in its own process group, its stdout piped, and reads the address from the
/// first line it prints after `prefix`.
fn start_announcing(
    mut cmd: Command,
    dir: tempfile::TempDir,
    what: &str,
    prefix: &str,
) -> Res<(Server, u32, SocketAddr)> {
    use std::io::BufRead;
    own_group(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let pid = child.id();
    let server = Server { child, _dir: dir };
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let addr = line
        .trim()
        .strip_prefix(prefix)
        .ok_or_else(|| format!("{what} did not start: {line:?}"))?
        .parse()
        .map_err(|e| format!("{what}'s address: {e}"))?;
    Ok((server, pid, addr))
}

/// Starts `cmd` in its own process group and polls `ready` until it holds; an error when the
/// server ends first or is not ready `within`.
async fn start_ready<F: std::future::Future<Output = bool>>(
    mut cmd: Command,
    dir: tempfile::TempDir,
    what: &str,
    within: Duration,
    ready: impl Fn() -> F,
) -> Res<(Server, u32)> {
    own_group(&mut cmd);
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let pid = child.id();
    let mut server = Server { child, _dir: dir };
    let deadline = Instant::now() + within;
    while !ready().await {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!("{what} ended at start: {status}"));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{what} was not ready within {} s",
                within.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok((server, pid))
}
