//! A fresh home for one journey: a temporary `HOME` with nothing in it, the `genai` binary run
//! from there as a user runs it (the default folders under that home, no `GENAI_*` folder
//! variables, no D-Bus session so no keyring of the caller's, no provider keys or proxies), and
//! the demo model installed the way the README says.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};
use crate::support::loopback::loopback_only;

/// The `genai` binary the journeys run.
pub fn binary() -> PathBuf {
    match std::env::var_os("GENAI_JOURNEY_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_genai")),
    }
}

/// The demo model's GGUF, or `None` (after saying why) when it is absent and `CI` is not set.
pub fn demo_model() -> Option<PathBuf> {
    match std::env::var_os("GENAI_TEST_MODEL") {
        Some(p) if Path::new(&p).is_file() => Some(PathBuf::from(p)),
        _ => {
            let why = "GENAI_TEST_MODEL names no demo model file (scripts/test.sh installs it)";
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("skipping: {why}");
            None
        }
    }
}

/// One user's machine: an empty home folder and the variables they set.
pub struct Home {
    pub dir: tempfile::TempDir,
    vars: Vec<(String, String)>,
}

impl Home {
    pub fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
            vars: Vec::new(),
        }
    }

    /// Sets a variable for every later command, as a user's `export` would.
    pub fn export(&mut self, name: &str, value: &str) {
        self.vars.push((name.into(), value.into()));
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// genai's config file in this home (`~/.config/genai/config.toml`).
    pub fn config_file(&self) -> PathBuf {
        self.path().join(".config/genai/config.toml")
    }

    /// Writes the config file, as a user's editor would.
    pub fn write_config(&self, text: &str) {
        let f = self.config_file();
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    }

    /// `genai args` run from this home.
    pub fn genai(&self, args: &[&str]) -> Command {
        let mut c = Command::new(binary());
        self.prepare(&mut c);
        c.args(args);
        c
    }

    /// A shell line run from this home with `genai` on its PATH (for pipes such as `| head -1`).
    pub fn shell(&self, line: &str) -> Command {
        let bin_dir = self.path().join(".local/bin");
        std::fs::create_dir_all(&bin_dir).unwrap();
        let link = bin_dir.join("genai");
        if !link.exists() {
            std::os::unix::fs::symlink(binary(), &link).unwrap();
        }
        let mut c = Command::new("bash");
        self.prepare(&mut c);
        let path = std::env::var("PATH").unwrap_or_default();
        c.env("PATH", format!("{}:{path}", bin_dir.display()))
            .args(["-o", "pipefail", "-c", line]);
        c
    }

    fn prepare(&self, c: &mut Command) {
        loopback_only(c);
        for var in [
            "XDG_DATA_HOME",
            "XDG_CONFIG_HOME",
            "XDG_CACHE_HOME",
            "XDG_STATE_HOME",
            "XDG_RUNTIME_DIR",
            "GENAI_DATA_DIR",
            "GENAI_CONFIG_DIR",
            "GENAI_BIN",
            "DBUS_SESSION_BUS_ADDRESS",
            "DISPLAY",
            "NO_COLOR",
        ] {
            c.env_remove(var);
        }
        c.env("HOME", self.path()).current_dir(self.path());
        for (k, v) in &self.vars {
            c.env(k, v);
        }
    }

    /// Runs `args` with no stdin.
    pub fn run(&self, args: &[&str]) -> Run {
        Run(self.genai(args).stdin(Stdio::null()).output().unwrap())
    }

    /// Runs `args` with `stdin` piped in.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Run {
        let mut c = self.genai(args);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        Run(child.wait_with_output().unwrap())
    }

    /// Runs a shell line (see [`Home::shell`]).
    pub fn sh(&self, line: &str) -> Run {
        Run(self.shell(line).stdin(Stdio::null()).output().unwrap())
    }

    /// The OpenAI fake (answering `text`) as the config's default model `openai:gpt-journey`,
    /// with the key `sk-journey-cloud` in the environment, and one `ask` on it that failed
    /// (a 503: the cloud was down).
    pub fn cloud_default_after_a_failed_turn(&mut self, text: &str) -> FakeOpenAi {
        let fake = FakeOpenAi::start(0, Behavior::text(text)).unwrap();
        self.export("OPENAI_BASE_URL", &fake.base_url());
        self.export("OPENAI_API_KEY", "sk-journey-cloud");
        self.write_config("[defaults]\nmodel = \"openai:gpt-journey\"\n");
        fake.set_default(Behavior::mode(Mode::Error {
            status: 503,
            message: "overloaded".into(),
            code: String::new(),
        }));
        self.run(&["ask", "hello"]).fails(1, "overloaded");
        fake.set_default(Behavior::text(text));
        fake
    }

    /// After [`Home::cloud_default_after_a_failed_turn`]: the agent `main` on a provider that is
    /// down (`down`, no retries) with the agent `cloud` (the cloud's model) as its fallback,
    /// then `extra` (more of the config).
    pub fn agent_on_a_down_provider(&self, extra: &str) {
        let down = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        self.write_config(&format!(
            "[defaults]\nmodel = \"openai:gpt-journey\"\n\n\
             [service_providers.down]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{down}/v1\"\n\
             api_key = \"sk-journey-down\"\nmax_retries = 0\n\n\
             [agents.main]\nprovider = \"down\"\nmodel = \"m\"\nfallback = [\"cloud\"]\n\n\
             [agents.cloud]\nprovider = \"openai\"\nmodel = \"gpt-journey\"\n{extra}"
        ));
    }

    /// Starts `genai serve --background` on a free loopback port, as the user would; it is
    /// stopped (`genai serve --stop`) when the answer is dropped, however the journey ends.
    pub fn serve_in_background(&self) -> Serving<'_> {
        let started = self
            .run(&["serve", "--background", "--listen", "127.0.0.1:0"])
            .ok();
        let addr = (started.stdout().lines().next())
            .and_then(|l| {
                l.trim()
                    .strip_prefix("listening on ws://")
                    .map(str::to_string)
            })
            .unwrap_or_else(|| panic!("{}", started.stdout()));
        Serving {
            home: self,
            started,
            addr,
        }
    }

    /// Installs the demo model as a user who has only the binary would, and makes it the
    /// default; `None` when there is no demo model to install here.
    pub fn install_demo_model(&self) -> Option<()> {
        let model = demo_model()?;
        let url = format!("file://{}", model.display());
        self.run(&["models", "pull", &url, "--default"]).ok();
        Some(())
    }
}

/// A `genai serve --background` of a home, stopped when dropped.
pub struct Serving<'a> {
    home: &'a Home,
    /// What `genai serve --background` printed.
    pub started: Run,
    /// Its address, `127.0.0.1:PORT`.
    pub addr: String,
}

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        let _ = self.home.run(&["serve", "--stop"]);
    }
}

/// What one command did, as the user saw it.
pub struct Run(pub Output);

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }

    pub fn code(&self) -> Option<i32> {
        self.0.status.code()
    }

    /// Asserts exit 0, and no panic on stderr; returns self.
    #[track_caller]
    pub fn ok(self) -> Run {
        assert!(
            self.0.status.success(),
            "exit {:?}\nstdout:\n{}\nstderr:\n{}",
            self.code(),
            self.stdout(),
            self.stderr()
        );
        self.no_panic()
    }

    /// Asserts the exit code and that stderr says `needle`; returns self.
    #[track_caller]
    pub fn fails(self, code: i32, needle: &str) -> Run {
        assert_eq!(
            self.code(),
            Some(code),
            "stdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
        assert!(
            self.stderr().contains(needle),
            "stderr does not say {needle:?}:\n{}",
            self.stderr()
        );
        self.no_panic()
    }

    #[track_caller]
    pub fn no_panic(self) -> Run {
        let err = self.stderr();
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "genai panicked:\n{err}"
        );
        self
    }
}
