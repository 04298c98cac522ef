//! A throwaway Postgres cluster for one test: `initdb` in a temporary folder, `pg_ctl` on a
//! free loopback port with password authentication (scram), stopped and removed at drop.
//! Postgres refuses to run as root, so under root the cluster is `nobody`'s (`runuser`), its
//! folder handed to that user. The programs are `GENAI_TEST_POSTGRES_BIN`'s (scripts/test.sh
//! sets it); without it the test skips, saying why. `start_tls` admits TLS connections only.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::tls_front::TestCa;

/// The password of the cluster's superuser `genai`: what must never be shown.
pub const PASSWORD: &str = "pg-secret-5up3r-s3cret";

/// A running cluster.
pub struct Cluster {
    bin: PathBuf,
    dir: tempfile::TempDir,
    pub port: u16,
    /// TLS only: its certificate and key in its folder, and no plain connection admitted.
    tls: bool,
}

fn as_owner(program: &Path) -> Command {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(mut c: Command, what: &str) {
    let o = c.stdin(Stdio::null()).output().unwrap();
    assert!(
        o.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

impl Cluster {
    /// A new cluster, started; `None` (said on stderr) without `GENAI_TEST_POSTGRES_BIN`.
    pub fn start() -> Option<Cluster> {
        Cluster::start_with(None)
    }

    /// A new cluster admitting TLS connections only, with `ca`'s server certificate.
    pub fn start_tls(ca: &TestCa) -> Option<Cluster> {
        Cluster::start_with(Some(ca))
    }

    fn start_with(ca: Option<&TestCa>) -> Option<Cluster> {
        let Some(bin) = std::env::var_os("GENAI_TEST_POSTGRES_BIN").map(PathBuf::from) else {
            eprintln!("skipped: GENAI_TEST_POSTGRES_BIN is unset (scripts/test.sh sets it: Debian's postgresql)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            run(
                {
                    let mut c = Command::new("chown");
                    c.args(["nobody:nogroup"]).arg(dir.path());
                    c
                },
                "chown",
            );
        }
        let pwfile = dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        let mut c = as_owner(&bin.join("initdb"));
        c.arg("-D")
            .arg(dir.path().join("data"))
            .args(["-U", "genai", "--auth=scram-sha-256", "--no-sync"])
            .arg(format!("--pwfile={}", pwfile.display()));
        if unsafe { libc::geteuid() } == 0 {
            run(
                {
                    let mut c = Command::new("chown");
                    c.args(["nobody:nogroup"]).arg(&pwfile);
                    c
                },
                "chown pwfile",
            );
        }
        run(c, "initdb");
        if let Some(ca) = ca {
            let data = dir.path().join("data");
            std::fs::copy(ca.cert_file(), data.join("server.pem")).unwrap();
            std::fs::copy(ca.key_file(), data.join("server.key")).unwrap();
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all scram-sha-256\nhostssl all all 127.0.0.1/32 scram-sha-256\n",
            )
            .unwrap();
            let mut c = Command::new("chmod");
            c.arg("600").arg(data.join("server.key"));
            run(c, "chmod");
            if unsafe { libc::geteuid() } == 0 {
                let mut c = Command::new("chown");
                c.args(["-R", "nobody:nogroup"]).arg(&data);
                run(c, "chown data");
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let tls = ca.is_some();
        let cluster = Cluster {
            bin,
            dir,
            port,
            tls,
        };
        cluster.resume();
        Some(cluster)
    }

    /// The URL of its database `postgres`, with the password.
    pub fn url(&self) -> String {
        format!(
            "postgres://genai:{PASSWORD}@127.0.0.1:{}/postgres",
            self.port
        )
    }

    /// Starts it (again), waiting until it accepts connections.
    pub fn resume(&self) {
        let mut c = as_owner(&self.bin.join("pg_ctl"));
        c.arg("-D")
            .arg(self.dir.path().join("data"))
            .arg("-o")
            .arg(format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off{}",
                self.port,
                self.dir.path().display(),
                match self.tls {
                    true => " -c ssl=on -c ssl_cert_file=server.pem -c ssl_key_file=server.key",
                    false => "",
                }
            ))
            .arg("-l")
            .arg(self.dir.path().join("log"))
            .args(["-w", "-t", "60", "start"]);
        run(c, "pg_ctl start");
    }

    /// Stops it at once (`-m immediate`: connections are cut, as a crash would).
    pub fn halt(&self) {
        let mut c = as_owner(&self.bin.join("pg_ctl"));
        c.arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", "immediate", "-w", "stop"]);
        run(c, "pg_ctl stop");
    }

    /// Runs `sql` with psql; its output (unaligned, tuples only).
    pub fn psql(&self, sql: &str) -> String {
        let o = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .arg(self.url())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut c = as_owner(&self.bin.join("pg_ctl"));
        let _ = c
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
