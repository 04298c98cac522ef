//! Reading `genai serve`'s `/metrics` as its tests check it, and Debian's Prometheus programs
//! (`promtool`, `prometheus`) found for them: `GENAI_TEST_PROMTOOL` / `GENAI_TEST_PROMETHEUS`
//! (scripts/test.sh sets them), else on `PATH`.

use std::path::PathBuf;

/// The program `name`: the path in `var`, else `name` found on `PATH`; `None` (said on
/// stderr, for the test to skip) when neither is there.
pub fn program(var: &str, name: &str) -> Option<PathBuf> {
    let found = std::env::var_os(var)
        .map(PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
        .filter(|p| p.is_file());
    if found.is_none() {
        eprintln!("skipped: no {name} ({var} unset and none on PATH; scripts/test.sh installs it)");
    }
    found
}

/// The value of the sample written exactly `series` (name and labels as `/metrics` writes
/// them), if there is one.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let (name, value) = l.rsplit_once(' ')?;
        (name == series).then(|| value.parse().ok())?
    })
}

/// Runs `promtool check metrics` on `text`; panics with what it says unless it passes.
pub fn check_with_promtool(promtool: &std::path::Path, text: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "promtool check metrics refused it ({}): {}{}\n{text}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
