//! Secrets: an API key reaches the provider and nothing else (no file, log or answer).

use std::path::Path;

use serde_json::json;

use crate::support::daemon::{conversation_id, error_behavior, fake, initialize, EXIT, TURN};
use crate::support::fake_openai::Behavior;
use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn assert_no_secret_in_files(dir: &Path, secret: &str) -> usize {
    let mut files = Vec::new();
    files_under(dir, &mut files);
    for file in &files {
        let bytes = std::fs::read(file).unwrap_or_default();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the API key is in {}",
            file.display()
        );
    }
    files.len()
}

#[test]
fn api_key_reaches_the_provider_and_nothing_else() {
    const SECRET: &str = "sk-test-SECRET-123456";
    // Keys from the config file and from CreateServiceProvider, and a secret header.
    const CONFIG_KEY: &str = "sk-cfg-SECRET-777777";
    const HEADER_SECRET: &str = "hdr-SECRET-888888";
    const RUNTIME_KEY: &str = "sk-rt-SECRET-999999";
    let secrets = [SECRET, CONFIG_KEY, HEADER_SECRET, RUNTIME_KEY];

    let fake = fake(Behavior::reply("Authorized reply.", 2));
    fake.push(error_behavior(401, "Incorrect API key provided"));
    let dir = tempfile::tempdir().unwrap();
    let cfg = DaemonConfig::in_dir(dir.path(), Framing::Lines, "daemon")
        .env("OPENAI_BASE_URL", &fake.base_url())
        .env("OPENAI_API_KEY", SECRET);
    cfg.write_config(&format!(
        r#"[service_providers.work]
kind = "openai"
base_url = "{}"
api_key = "{CONFIG_KEY}"
api_key_env = "GENAI_TEST_UNSET_KEY_VAR"
headers = {{ "X-Api-Key" = "{HEADER_SECRET}", "X-Team" = "blue" }}
"#,
        fake.base_url()
    ));
    let mut d = Daemon::spawn(&cfg);
    initialize(&mut d, true);
    let cid = conversation_id(&mut d);

    let (_, fin) = d.turn(&cid, "who am I", TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    let kind = fin["error"]["kind"].as_str().unwrap();
    assert!(
        kind == "missingCredentials" || kind == "providerError",
        "{fin}"
    );
    assert!(
        fin["error"]["message"].as_str().unwrap().contains("401"),
        "{fin}"
    );
    let (_, fin) = d.turn(&cid, "who am I", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {SECRET}").as_str()),
            "the key did not reach the provider"
        );
    }

    // The provider from the config file: its own key and headers.
    fake.push(error_behavior(403, "Forbidden for this key"));
    let (work_id, _) = d.create_conversation(json!({"serviceProvider": "work", "model": "m"}));
    let (_, fin) = d.turn(&work_id, "and now?", TURN);
    assert_eq!(fin["isSuccess"], false, "{fin}");
    let (_, fin) = d.turn(&work_id, "and now?", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let last = fake.requests().last().cloned().unwrap();
    assert_eq!(
        last.header("authorization"),
        Some(format!("Bearer {CONFIG_KEY}").as_str())
    );
    assert_eq!(last.header("x-api-key"), Some(HEADER_SECRET));
    assert_eq!(last.header("x-team"), Some("blue"));

    // A provider created at run time with a key in its settings.
    d.call(
        "CreateServiceProvider",
        json!({"name": "rt", "kind": "openai", "settings": {
            "base_url": fake.base_url(), "api_key": RUNTIME_KEY, "api_key_env": "GENAI_TEST_UNSET_KEY_VAR"}}),
    );
    let (rt_id, _) = d.create_conversation(json!({"serviceProvider": "rt", "model": "m"}));
    let (_, fin) = d.turn(&rt_id, "runtime key?", TURN);
    assert_eq!(fin["isSuccess"], true, "{fin}");
    let last = fake.requests().last().cloned().unwrap();
    assert_eq!(
        last.header("authorization"),
        Some(format!("Bearer {RUNTIME_KEY}").as_str())
    );
    d.call("ListComponents", json!({}));

    // While running (the WAL and shared-memory files exist) and after exit.
    for secret in secrets {
        let n = assert_no_secret_in_files(&cfg.data_dir, secret);
        assert!(n >= 1, "no history files");
    }
    assert!(d.shutdown(EXIT).success());
    for secret in secrets {
        assert_no_secret_in_files(&cfg.data_dir, secret);
    }
    assert_no_secret_in_files(&cfg.config_dir, SECRET);
    assert_no_secret_in_files(&cfg.config_dir, RUNTIME_KEY);

    let stdout = d.raw_stdout();
    assert!(!stdout.is_empty());
    let stderr = d.stderr_text();
    assert!(
        stderr.contains("DEBUG") || stderr.contains("INFO"),
        "no logs on stderr: {stderr}"
    );
    for secret in secrets {
        assert!(
            !stdout.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{secret} is on stdout"
        );
        assert!(!stderr.contains(secret), "{secret} is on stderr");
        // Not even its distinctive part.
        let tail = &secret[secret.len() - 6..];
        assert!(!stderr.contains(tail), "part of {secret} is on stderr");
    }
}
