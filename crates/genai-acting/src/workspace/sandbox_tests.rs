//! The sandbox tested through the commands it confines (in a file of its own: the sandbox
//! must not import the command runner it serves).

use super::sandbox::*;
use crate::workspace::command::{run, CommandOutput, CommandRequest};
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

/// A workspace root, the command's temp folder and a folder beside them (not writable).
struct Fixture {
    _base: tempfile::TempDir,
    root: PathBuf,
    temp: PathBuf,
    outside: PathBuf,
}

/// The fixture, or `None` (and why, on stderr) when this kernel cannot sandbox.
fn fixture() -> Option<Fixture> {
    if let Support::Missing(why) = support() {
        eprintln!("skipped: {why}");
        return None;
    }
    let base = tempfile::tempdir().unwrap();
    let dir = |name: &str| {
        let path = base.path().join(name);
        std::fs::create_dir(&path).unwrap();
        path.canonicalize().unwrap()
    };
    Some(Fixture {
        root: dir("root"),
        temp: dir("temp"),
        outside: dir("outside"),
        _base: base,
    })
}

impl Fixture {
    fn sandbox(&self, network: bool, hidden: &[&str]) -> Sandbox {
        Sandbox {
            root: self.root.clone(),
            temp: self.temp.clone(),
            network,
            hidden: hidden.iter().map(|h| self.root.join(h)).collect(),
        }
    }

    async fn run(&self, command: &str, sandbox: Sandbox) -> CommandOutput {
        run(CommandRequest {
            command: command.to_string(),
            cwd: self.root.clone(),
            timeout: Duration::from_secs(60),
            env: vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
            sandbox: Some(sandbox),
        })
        .await
        .unwrap()
    }
}

fn quoted(path: &Path) -> String {
    format!("'{}'", path.display())
}

#[tokio::test]
async fn writes_land_only_under_root_and_temp() {
    let Some(f) = fixture() else { return };
    let sandbox = f.sandbox(true, &[]);
    let inside = f
        .run(
            &format!(
                "echo hi > f && mkdir d && mv f d/f && echo t > {}/t && echo gone > /dev/null \
                 && echo out > /dev/stdout && echo err >&2 && cat d/f",
                quoted(&f.temp)
            ),
            sandbox.clone(),
        )
        .await;
    assert_eq!(inside.exit, Some(0), "{}", inside.text);
    assert_eq!(inside.text, "out\nerr\nhi\n");
    assert_eq!(std::fs::read_to_string(f.root.join("d/f")).unwrap(), "hi\n");
    assert_eq!(std::fs::read_to_string(f.temp.join("t")).unwrap(), "t\n");

    std::fs::write(f.outside.join("kept"), "kept").unwrap();
    for write in [
        format!("touch {}/x", quoted(&f.outside)),
        format!("rm {}/kept", quoted(&f.outside)),
        format!("echo more >> {}/kept", quoted(&f.outside)),
        format!("mv d/f {}/f", quoted(&f.outside)),
    ] {
        let out = f.run(&write, sandbox.clone()).await;
        assert_ne!(out.exit, Some(0), "{write}: {}", out.text);
        assert!(
            out.text.contains("Permission denied") || out.text.contains("not permitted"),
            "{write}: {}",
            out.text
        );
    }
    assert!(!f.outside.join("x").exists());
    assert!(!f.outside.join("f").exists());
    assert_eq!(
        std::fs::read_to_string(f.outside.join("kept")).unwrap(),
        "kept"
    );
    // Reading outside works.
    let read = f
        .run(&format!("cat {}/kept", quoted(&f.outside)), sandbox)
        .await;
    assert_eq!(read.text, "kept");
}

/// Connects to a TCP listener of the test's, through bash's /dev/tcp.
async fn tcp_connects(f: &Fixture, network: bool) -> (bool, CommandOutput) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let out = f
        .run(
            &format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo connected"),
            f.sandbox(network, &[]),
        )
        .await;
    (out.text.contains("connected"), out)
}

#[tokio::test]
async fn network_is_cut_unless_allowed() {
    let Some(f) = fixture() else { return };
    let (connected, out) = tcp_connects(&f, true).await;
    assert!(connected, "{}", out.text);
    let (connected, out) = tcp_connects(&f, false).await;
    assert!(!connected, "{}", out.text);
    assert_ne!(out.exit, Some(0));
}

#[tokio::test]
async fn udp_is_cut_by_the_network_namespace() {
    let Some(f) = fixture() else { return };
    let sandbox = f.sandbox(false, &[]);
    let mut command = tokio::process::Command::new("true");
    let notes = sandbox.confine(&mut command).unwrap();
    if !notes.is_empty() {
        eprintln!("skipped: {notes:?}");
        return;
    }
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let udp = format!("bash -c 'echo ping > /dev/udp/127.0.0.1/{port}' && echo sent");
    let out = f.run(&udp, f.sandbox(false, &[])).await;
    assert!(!out.text.contains("sent"), "{}", out.text);
    let out = f.run(&udp, f.sandbox(true, &[])).await;
    assert!(out.text.contains("sent"), "{}", out.text);
}

#[tokio::test]
async fn hidden_files_read_empty() {
    let Some(f) = fixture() else { return };
    std::fs::write(f.root.join(".env"), "TOKEN=secret-value\n").unwrap();
    std::fs::write(f.root.join("other"), "visible\n").unwrap();
    std::fs::create_dir(f.root.join("keys")).unwrap();
    std::fs::write(f.root.join("keys/id"), "secret-key\n").unwrap();
    // With the network allowed: the mount namespace comes without the network one.
    let sandbox = f.sandbox(true, &[".env", "keys", "absent"]);
    let out = f
        .run(
            "cat .env; echo '|'; ls keys; echo '|'; cat other; umount .env; cat .env; id -u",
            sandbox,
        )
        .await;
    if let Some(note) = out.notes.iter().find(|n| n.contains("secret")) {
        eprintln!("skipped: {note}");
        return;
    }
    assert!(!out.text.contains("secret"), "{}", out.text);
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    assert!(
        out.text.starts_with("|\n|\nvisible\n") && out.text.ends_with(&format!("{uid}\n")),
        "{}",
        out.text
    );
    // The user's files are untouched.
    assert_eq!(
        std::fs::read_to_string(f.root.join(".env")).unwrap(),
        "TOKEN=secret-value\n"
    );
}

#[tokio::test]
async fn the_command_cannot_signal_genai() {
    let Some(f) = fixture() else { return };
    if !matches!(support(), Support::Landlock { abi: 6.., .. }) {
        eprintln!("skipped: signal scoping needs Landlock ABI 6");
        return;
    }
    let out = f
        .run(
            &format!(
                "kill -0 {} && echo reached || echo blocked",
                std::process::id()
            ),
            f.sandbox(true, &[]),
        )
        .await;
    assert!(out.text.ends_with("blocked\n"), "{}", out.text);
}

#[test]
fn support_is_probed_once() {
    assert!(std::ptr::eq(support(), support()));
    if let Support::Landlock { abi, network } = support() {
        assert!(*abi >= 1);
        assert_eq!(*network, *abi >= 4);
    }
}
