//! A real terminal for the tests of `genai chat`: a command runs in a tmux pane of a tmux
//! server of its own (`-L`, no user config), keys are typed with `send-keys`, and what the
//! terminal shows is read with `capture-pane`, waiting for it with a deadline. The session and
//! its server end when the `Pane` is dropped.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a test waits for the terminal to show something.
pub const WAIT: Duration = Duration::from_secs(30);

/// Whether tmux can run here; without it a test is skipped, except in CI.
pub fn available() -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is not installed (scripts/test.sh installs Debian's tmux)"
        );
        eprintln!("skipped: install tmux to run the terminal chat tests");
    }
    found
}

/// A tmux pane running one command.
pub struct Pane {
    socket: String,
}

impl Pane {
    /// Runs `c` (its program, arguments and variables) in a new 100×40 pane. When it ends the
    /// pane shows `[exited N]` and stays until the `Pane` is dropped.
    pub fn start(c: &Command) -> Pane {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "genai-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let shell = format!(
            "{}; echo \"[exited $?]\"; read _",
            super::cli::shell_line(c)
        );
        let mut tmux = Command::new("tmux");
        tmux.args(["-L", &socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", "100", "-y", "40", &shell]);
        // The server starts with this environment, and the pane's shell gets it.
        for (k, v) in c.get_envs() {
            match v {
                Some(v) => tmux.env(k, v),
                None => tmux.env_remove(k),
            };
        }
        let pane = Pane { socket };
        let o = tmux.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        pane
    }

    fn tmux(&self, args: &[&str]) -> Output {
        let o = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }

    /// Types `text` (literally), then presses Enter.
    pub fn line(&self, text: &str) {
        self.tmux(&["send-keys", "-l", text]);
        self.keys(&["Enter"]);
    }

    /// Presses keys by their tmux names (`C-c`, `C-d`, `M-Enter`, `Enter`).
    pub fn keys(&self, keys: &[&str]) {
        self.tmux(&[&["send-keys"][..], keys].concat());
    }

    /// What the pane shows, with its history, wrapped lines joined; `escapes` keeps the colours.
    pub fn screen(&self, escapes: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-J", "-S", "-1000"];
        if escapes {
            args.push("-e");
        }
        String::from_utf8_lossy(&self.tmux(&args).stdout).into_owned()
    }

    /// Waits until the screen satisfies `cond`, failing the test after [`WAIT`]; returns it.
    #[track_caller]
    pub fn wait_for(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen(false);
            if cond(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the terminal shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the screen shows `text` `times` times or more.
    #[track_caller]
    pub fn wait_for_text(&self, text: &str, times: usize) -> String {
        self.wait_for(&format!("{text:?} ×{times}"), |s| {
            s.matches(text).count() >= times
        })
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}
