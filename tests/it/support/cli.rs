//! Running the built `genai` binary as a user would, kept apart from the caller: its own data
//! and config folders, on loopback only (see `loopback.rs`). Each test adds the variables it
//! means after these. The output comes back whole; the `assert_*` helpers check only what their
//! caller names (an exit code, text on stderr, the exact stdout).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use super::fake_openai::{Behavior, FakeOpenAi};
use super::loopback::loopback_only;

/// `genai args` on loopback with the given data and config folders.
pub fn genai_in(data: &Path, config: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_genai"));
    loopback_only(&mut c);
    c.args(args)
        .env("GENAI_DATA_DIR", data)
        .env("GENAI_CONFIG_DIR", config);
    c
}

/// A data folder and a config folder of one test's own, removed when it ends.
pub struct Folders {
    pub data: tempfile::TempDir,
    pub config: tempfile::TempDir,
}

impl Folders {
    pub fn new() -> Folders {
        Folders {
            data: tempfile::tempdir().unwrap(),
            config: tempfile::tempdir().unwrap(),
        }
    }

    /// `genai args` on loopback with these folders.
    pub fn genai(&self, args: &[&str]) -> Command {
        genai_in(self.data.path(), self.config.path(), args)
    }

    pub fn write_config(&self, text: &str) {
        std::fs::write(self.config.path().join("config.toml"), text).unwrap();
    }
}

/// A test's own folders and the fake OpenAI server its `genai` runs talk to.
pub struct OpenAiCli {
    pub dirs: Folders,
    pub fake: FakeOpenAi,
}

impl OpenAiCli {
    /// Fresh folders and a fake that answers with its default behaviour.
    pub fn new() -> OpenAiCli {
        OpenAiCli {
            dirs: Folders::new(),
            fake: FakeOpenAi::start(0, Behavior::default()).unwrap(),
        }
    }

    /// `genai args` on loopback with these folders, its OpenAI base URL the fake's.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.dirs.genai(args);
        c.env("OPENAI_BASE_URL", self.fake.base_url());
        c
    }

    /// Runs with `stdin` piped in (an empty pipe when None).
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        output_with_stdin(self.cmd(args), stdin)
    }

    /// The body of the last request the fake got.
    pub fn last_body(&self) -> Value {
        let requests = self.fake.requests();
        let last = requests.last().expect("the provider got no request");
        last.body.clone()
    }
}

/// Runs to the end with no stdin.
pub fn output(mut c: Command) -> Output {
    c.stdin(Stdio::null()).output().unwrap()
}

/// Runs to the end with `stdin` written to a pipe that is then closed (an empty pipe when None).
pub fn output_with_stdin(mut c: Command, stdin: Option<&str>) -> Output {
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that the run succeeded and printed exactly `expected` on stdout.
#[track_caller]
pub fn assert_prints(o: &Output, expected: &str) {
    assert!(o.status.success(), "{}", stderr(o));
    assert_eq!(stdout(o), expected);
}

/// Asserts that the run exited with `code` and said `needle` on stderr.
#[track_caller]
pub fn assert_fails_with(o: &Output, code: i32, needle: &str) {
    assert_eq!(o.status.code(), Some(code), "{}", stderr(o));
    assert_stderr_says(o, needle);
}

/// Asserts that the run said `needle` on stderr.
#[track_caller]
pub fn assert_stderr_says(o: &Output, needle: &str) {
    let err = stderr(o);
    assert!(err.contains(needle), "{err}");
}

/// The `messageCount` of every conversation in the output of `genai sessions list --json`,
/// which must have succeeded.
pub fn message_counts(sessions_list: &Output) -> Vec<i64> {
    assert!(sessions_list.status.success(), "{}", stderr(sessions_list));
    serde_json::from_slice::<Value>(&sessions_list.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["messageCount"].as_i64().unwrap())
        .collect()
}

/// Runs `c` to the end on a pseudo-terminal (its stdin, stdout and stderr all on it) through
/// `script`, with `c`'s variables: everything it printed, terminal line ends and all. The run
/// must succeed.
pub fn on_a_terminal(c: &Command) -> String {
    let command = shell_line(c);
    let mut script = Command::new("script");
    script.args(["-qefc", &command, "/dev/null"]);
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let o = output(script);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    stdout(&o)
}

/// `c`'s program and arguments as one line for `sh`, each word quoted (after a `cd` to its
/// folder when it names one).
pub fn shell_line(c: &Command) -> String {
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"));
    let line = std::iter::once(quote(c.get_program()))
        .chain(c.get_args().map(quote))
        .collect::<Vec<_>>()
        .join(" ");
    match c.get_current_dir() {
        Some(dir) => format!("cd {} && {line}", quote(dir.as_os_str())),
        None => line,
    }
}

/// What a terminal keeps of `shown` once the lines drawn while they streamed are erased
/// (`\r\x1b[J`, after moving up the rows they took): each erase drops its line's text.
pub fn settled(shown: &str) -> String {
    let mut out = String::new();
    let mut rest = shown;
    while let Some(at) = rest.find("\r\x1b[J") {
        out.push_str(&rest[..at]);
        out.truncate(out.rfind('\n').map_or(0, |n| n + 1));
        rest = &rest[at + "\r\x1b[J".len()..];
    }
    out.push_str(rest);
    out
}

/// Asserts that `shown` (what a terminal got) has `reasoning` dimmed before `answer`. Pieces
/// dimmed one after the other read as one (the redactor may hold back a piece's end).
#[track_caller]
pub fn assert_dimmed_before(shown: &str, reasoning: &str, answer: &str) {
    let shown = &shown.replace("\x1b[0m\x1b[2m", "");
    let dim = shown
        .find(&format!("\x1b[2m{reasoning}"))
        .unwrap_or_else(|| panic!("no dimmed {reasoning:?} in {shown:?}"));
    let at = shown
        .rfind(answer)
        .unwrap_or_else(|| panic!("no {answer:?} in {shown:?}"));
    assert!(dim < at, "{shown:?}");
}
