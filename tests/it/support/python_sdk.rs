//! A vendor's Python SDK driving `genai serve`: where the SDK is (`scripts/test.sh` installs
//! each pinned and names its directory in an environment variable), and a script run on it
//! against a served address and token. Outside CI a missing SDK skips the test, saying why; in
//! CI it fails.

/// The directory holding Python's `package` (from `env`), `Some("")` when Python finds it on
/// its own path, `None` when it is missing outside CI.
pub fn find(package: &str, env: &str) -> Option<String> {
    let dir = std::env::var(env).unwrap_or_default();
    let found = std::process::Command::new("python3")
        .args(["-c", &format!("import {package}")])
        .env("PYTHONPATH", &dir)
        .output()
        .is_ok_and(|o| o.status.success());
    match found {
        true => Some(dir),
        false if std::env::var_os("CI").is_some() => panic!(
            "Python's {package} package is missing: set {env} to where scripts/test.sh installs it"
        ),
        false => {
            eprintln!("skipped: Python's {package} package is missing (pip install {package}, or set {env})");
            None
        }
    }
}

/// Runs `script` with the SDK at `sdk` on the path and `url` and `token` as its arguments;
/// its standard output, the run checked to have succeeded.
pub async fn run(script: &str, sdk: String, url: String, token: String) -> String {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), script).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .arg(file.path())
            .args([&url, &token])
            .env("PYTHONPATH", sdk)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}
