//! Runs one shell command the model asked for (`sh -c`), in the workspace root, optionally
//! confined by [`super::sandbox`], and captures what it printed.
//!
//! It owns the command's life: its own session and process group, the timeout, and the kill of
//! the whole group when the shell ends, times out or the call is dropped (the turn cancelled).
//! It must never let a process of the command outlive the call (short of one that leaves the
//! group on purpose), give it the user's stdin or terminal, or pass it any environment beyond
//! what the caller gave.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::sandbox::Sandbox;
use genai_base::error::{Error, ErrorKind, Result};

/// How long a command may run when the model names no timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest a command may run.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// The shortest timeout (a zero one would kill the command before it starts).
pub(crate) const MIN_TIMEOUT: Duration = Duration::from_secs(1);

/// The most output the model gets: the first and last halves are kept.
pub const MAX_OUTPUT: usize = 30_000;

/// One command to run.
pub struct CommandRequest {
    /// The command line, run by `sh -c`.
    pub(crate) command: String,
    /// Where it runs: the workspace root.
    pub(crate) cwd: PathBuf,
    /// How long it may run; clamped to [`MIN_TIMEOUT`]..=[`MAX_TIMEOUT`].
    pub(crate) timeout: Duration,
    /// Its whole environment (nothing else of genai's passes).
    pub(crate) env: Vec<(OsString, OsString)>,
    /// How it is confined; `None`: not sandboxed (full trust, or no Landlock here).
    pub(crate) sandbox: Option<Sandbox>,
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// Its stdout and stderr interleaved, at most [`MAX_OUTPUT`] bytes (the middle cut).
    pub text: String,
    /// Its exit status, when it exited.
    pub exit: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// Whether it ran out of time (and was killed).
    pub timed_out: bool,
    /// The timeout it ran under (after clamping).
    pub timeout: Duration,
    /// What the sandbox could not do, and other details for the user.
    pub notes: Vec<String>,
}

impl CommandOutput {
    /// What the model sees: the text, then "exit status 0", "killed by signal 9" or "timed
    /// out after 5 s (killed)".
    pub(crate) fn for_model(&self) -> String {
        let mut out = self.text.clone();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        let status = if self.timed_out {
            format!("timed out after {} s (killed)", seconds(self.timeout))
        } else if let Some(code) = self.exit {
            format!("exit status {code}")
        } else if let Some(signal) = self.signal {
            format!("killed by signal {signal}")
        } else {
            "exit status unknown".to_string()
        };
        out.push_str(&status);
        out
    }
}

/// `5` for five seconds, `0.5` for half a second.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}

/// Runs `sh -c COMMAND` in `cwd` with exactly `env`, stdin from /dev/null, stdout and stderr
/// in one pipe (interleaved as they arrive), in its own session and process group. When the
/// shell ends, the timeout passes or the returned future is dropped, the whole group is killed
/// (SIGKILL). Errors when the folder is missing or the command cannot start.
pub async fn run(request: CommandRequest) -> Result<CommandOutput> {
    imp::run(request).await
}

#[cfg(unix)]
mod imp {
    use std::io;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    use std::time::Duration;

    use tokio::io::AsyncReadExt;
    use tokio::net::unix::pipe;

    use super::{
        seconds, Capture, CommandOutput, CommandRequest, Error, ErrorKind, Result, MAX_TIMEOUT,
        MIN_TIMEOUT,
    };

    /// How long output is still read after the shell ended and its group was killed: a process
    /// that left the group (`setsid`) may hold the pipe open forever.
    const DRAIN_GRACE: Duration = Duration::from_secs(3);

    /// The command's process group, killed when this is dropped (the call cancelled).
    struct ProcessGroup {
        id: libc::pid_t,
        killed: bool,
    }

    impl ProcessGroup {
        /// Kills every process of the group (once).
        fn kill(&mut self) {
            if !self.killed {
                // SAFETY: a plain syscall; ESRCH (the group is gone) is fine.
                unsafe { libc::kill(-self.id, libc::SIGKILL) };
                self.killed = true;
            }
        }
    }

    impl Drop for ProcessGroup {
        fn drop(&mut self) {
            self.kill();
        }
    }

    pub async fn run(request: CommandRequest) -> Result<CommandOutput> {
        let mut notes = Vec::new();
        let limit = request.timeout.clamp(MIN_TIMEOUT, MAX_TIMEOUT);
        if limit != request.timeout {
            notes.push(format!(
                "the timeout was set to {} s (it must be from {} to {} s)",
                seconds(limit),
                seconds(MIN_TIMEOUT),
                seconds(MAX_TIMEOUT)
            ));
        }
        if !request.cwd.is_dir() {
            return Err(Error::invalid_params(format!(
                "cannot run the command in {}: it is not a folder",
                request.cwd.display()
            )));
        }
        let pipe_failed = |e: io::Error| {
            Error::internal(format!("cannot make a pipe for the command's output: {e}"))
        };
        let (reader, writer) = io::pipe().map_err(pipe_failed)?;
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(&request.command)
            .current_dir(&request.cwd)
            .env_clear()
            .envs(request.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(writer.try_clone().map_err(pipe_failed)?)
            .stderr(writer)
            .kill_on_drop(true);
        // A session of its own: its own process group (killed as one), and no controlling
        // terminal (nothing to read the user's keys from or type into).
        // SAFETY: setsid is async-signal-safe and allocates nothing.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() == -1 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(())
                }
            })
        };
        if let Some(sandbox) = &request.sandbox {
            notes.extend(sandbox.confine(&mut command)?);
        }
        let mut child = command.spawn().map_err(|e| {
            Error::new(
                ErrorKind::FeatureError,
                format!("cannot start the command (/bin/sh): {e}"),
            )
        })?;
        // Closes genai's copies of the pipe's write end: the output ends when the group's do.
        drop(command);
        let Some(pid) = child.id() else {
            return Err(Error::internal("the command ended before genai saw its id"));
        };
        let mut group = ProcessGroup {
            id: pid as libc::pid_t,
            killed: false,
        };
        let mut output = pipe::Receiver::from_owned_fd(reader.into()).map_err(pipe_failed)?;
        let mut capture = Capture::default();
        let deadline = tokio::time::Instant::now() + limit;
        let (status, timed_out) = {
            let mut reading = std::pin::pin!(read_all(&mut output, &mut capture));
            let mut read_done = false;
            let ended = loop {
                tokio::select! {
                    status = child.wait() => break Some(status),
                    () = &mut reading, if !read_done => read_done = true,
                    () = tokio::time::sleep_until(deadline) => break None,
                }
            };
            group.kill();
            let timed_out = ended.is_none();
            let status = match ended {
                Some(status) => status,
                None => child.wait().await,
            };
            if !read_done {
                // Not finishing is fine: what was read so far is kept.
                let _ = tokio::time::timeout(DRAIN_GRACE, reading).await;
            }
            (status, timed_out)
        };
        let status =
            status.map_err(|e| Error::internal(format!("cannot wait for the command: {e}")))?;
        Ok(CommandOutput {
            text: capture.into_text(),
            exit: status.code(),
            signal: status.signal(),
            timed_out,
            timeout: limit,
            notes,
        })
    }

    /// Reads `output` into `capture` until its end (or a read error, which ends it too).
    async fn read_all(output: &mut pipe::Receiver, capture: &mut Capture) {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n @ 1..) = output.read(&mut buf).await {
            capture.push(&buf[..n]);
        }
    }
}

#[cfg(not(unix))]
mod imp {
    use super::{CommandOutput, CommandRequest, Error, ErrorKind, Result};

    pub(super) async fn run(_request: CommandRequest) -> Result<CommandOutput> {
        Err(Error::new(
            ErrorKind::FeatureError,
            "running commands is built for Linux and macOS only",
        ))
    }
}

/// The output kept: the first half of [`MAX_OUTPUT`] and a rolling last half.
#[cfg_attr(not(unix), allow(dead_code))]
#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
}

#[cfg_attr(not(unix), allow(dead_code))]
impl Capture {
    const HALF: usize = MAX_OUTPUT / 2;

    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        if self.head.len() < Self::HALF {
            let take = (Self::HALF - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        if self.tail.len() > Self::HALF {
            let excess = self.tail.len() - Self::HALF;
            self.tail.drain(..excess);
        }
    }

    /// The text: everything when it fits, else head and tail cut on character boundaries with
    /// "… N bytes cut …" between; invalid UTF-8 replaced.
    fn into_text(self) -> String {
        let mut head = self.head;
        let tail = Vec::from(self.tail);
        if self.total <= MAX_OUTPUT {
            head.extend_from_slice(&tail);
            return String::from_utf8_lossy(&head).into_owned();
        }
        let head = &head[..complete_prefix(&head)];
        // A character's continuation bytes (10xxxxxx) at the start belong to one cut away.
        let skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        let tail = &tail[skip..];
        let cut = self.total - head.len() - tail.len();
        format!(
            "{}\n… {cut} bytes cut …\n{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(tail)
        )
    }
}

/// How much of `bytes` ends on a character boundary: without the last character when it is
/// incomplete. By hand because std's boundary helpers need a `str`, and output may be any
/// bytes (invalid UTF-8 is replaced later, a character split by the cut must not be).
#[cfg_attr(not(unix), allow(dead_code))]
fn complete_prefix(bytes: &[u8]) -> usize {
    let from = bytes.len().saturating_sub(4);
    for start in (from..bytes.len()).rev() {
        let lead = bytes[start];
        if lead & 0xC0 == 0x80 {
            continue;
        }
        let width = match lead {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if start + width > bytes.len() {
            start
        } else {
            bytes.len()
        };
    }
    bytes.len()
}

#[cfg(test)]
#[cfg(unix)]
#[path = "command_tests.rs"]
mod tests;
