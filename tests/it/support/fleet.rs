//! More than one `genai serve`: a replica on a first serve's folders (its config and history),
//! and a real Redis (Debian's `redis-server`) on a loopback port of its own, stopped and
//! started again on that port as a test needs, in plain or speaking TLS only.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::tls_front::TestCa;

/// A child process killed when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The arguments of a replica's `genai serve`.
pub const REPLICA: &[&str] = &["serve", "--listen", "127.0.0.1:0", "--no-preload"];

/// Another `genai serve` (`genai` with [`REPLICA`]'s arguments, on the first serve's folders):
/// the process and its HTTP base URL once it listens.
pub fn replica(mut genai: Command) -> (Killed, String) {
    let mut child = genai
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ws://")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"));
    (Killed(child), format!("http://{url}"))
}

/// A `redis-server` with no persistence on a loopback port, with a password when given.
pub struct Redis {
    program: PathBuf,
    pub port: u16,
    password: Option<String>,
    process: Option<Killed>,
    /// TLS only (`--tls-port`, no plain port): the certificate and its key.
    tls: Option<(PathBuf, PathBuf)>,
}

impl Redis {
    /// Started and accepting connections.
    pub fn start(program: &Path, password: Option<&str>) -> Redis {
        Redis::start_with(program, password, None)
    }

    /// Started, speaking TLS only with `ca`'s server certificate (`rediss://`).
    pub fn start_tls(program: &Path, password: Option<&str>, ca: &TestCa) -> Redis {
        Redis::start_with(program, password, Some((ca.cert_file(), ca.key_file())))
    }

    fn start_with(
        program: &Path,
        password: Option<&str>,
        tls: Option<(PathBuf, PathBuf)>,
    ) -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut redis = Redis {
            program: program.to_path_buf(),
            port,
            password: password.map(str::to_string),
            process: None,
            tls,
        };
        redis.restart();
        redis
    }

    /// Its URL, with the password.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        match &self.password {
            Some(p) => format!("{scheme}://:{p}@127.0.0.1:{}/0", self.port),
            None => format!("{scheme}://127.0.0.1:{}/0", self.port),
        }
    }

    /// Killed (`SIGKILL`): its port refuses connections when this returns.
    pub fn stop(&mut self) {
        self.process = None;
    }

    /// Started again on its port; returns once it says it accepts connections.
    pub fn restart(&mut self) {
        self.stop();
        let port = self.port.to_string();
        let (cert, key);
        let mut args = match &self.tls {
            None => vec!["--port", &port],
            Some((c, k)) => {
                (cert, key) = (c.display().to_string(), k.display().to_string());
                let files = ["--tls-cert-file", &cert, "--tls-key-file", &key];
                [
                    &[
                        "--port",
                        "0",
                        "--tls-port",
                        &port,
                        "--tls-auth-clients",
                        "no",
                    ][..],
                    &files,
                ]
                .concat()
            }
        };
        args.extend(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
        if let Some(p) = &self.password {
            args.extend(["--requirepass", p]);
        }
        let dir = std::env::temp_dir();
        let mut child = Command::new(&self.program)
            .args(&args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if line.contains("Ready to accept connections") {
                    let _ = tx.send(());
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        rx.recv_timeout(deadline - Instant::now())
            .expect("redis-server did not say it accepts connections within 30 s");
        self.process = Some(Killed(child));
    }
}
