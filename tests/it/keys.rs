//! `genai keys`: the key file (set, get through a provider, list, delete, its permissions), the
//! message on a machine with no keyring service, the environment route of a plugin module's
//! key, a kind's well-known key variable going only to the server it belongs to, and, where `gnome-keyring-daemon` is installed, the Secret Service backend for real on
//! a private D-Bus session.

use std::process::{Command, Output};

use fake_openai::{Behavior, FakeOpenAi};
use fake_plugin::FakePlugin;
use serde_json::Value;

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::{fake_openai, fake_plugin};

/// `genai args` with no D-Bus session and no display: no Secret Service can answer.
fn without_keyring(dirs: &Folders, args: &[&str]) -> Command {
    let mut c = dirs.genai(args);
    c.env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("DISPLAY");
    c
}

fn run(dirs: &Folders, args: &[&str], stdin: Option<&str>) -> Output {
    cli::output_with_stdin(without_keyring(dirs, args), stdin)
}

#[test]
fn a_key_in_the_file_is_kept_private_used_listed_and_deleted() {
    let dirs = Folders::new();
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    dirs.write_config(&format!(
        "[service_providers.work]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        fake.base_url()
    ));
    let o = run(
        &dirs,
        &["keys", "set", "work", "--file"],
        Some("sk-file-key-42\n"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let file = dirs.config.path().join("keys.toml");
    cli::assert_stderr_says(&o, &format!("in {}", file.display()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the key file is readable by its owner only");
    }

    // A provider of that name uses it (the environment has no OPENAI_API_KEY).
    let mut c = without_keyring(&dirs, &["ask", "-m", "work:m", "hi"]);
    c.env_remove("OPENAI_API_KEY");
    let o = cli::output(c);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        fake.requests().last().unwrap().header("authorization"),
        Some("Bearer sk-file-key-42")
    );

    // `list` says where, never what.
    let mut c = without_keyring(&dirs, &["keys", "list"]);
    c.env("OPENAI_API_KEY", "sk-env-key-7");
    let o = cli::output(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = stdout(&o);
    // `work` is another server than OpenAI's: OPENAI_API_KEY is not its key.
    assert!(
        shown.contains(&format!("work    file ({})", file.display())),
        "{shown}"
    );
    assert!(shown.contains("openai  env (OPENAI_API_KEY)"), "{shown}");
    let mut c = without_keyring(&dirs, &["keys", "list", "--json"]);
    c.env("OPENAI_API_KEY", "sk-env-key-7");
    let o = cli::output(c);
    let all = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        !all.contains("sk-file-key-42") && !all.contains("sk-env-key-7"),
        "{all}"
    );
    let listed: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let keys = listed["keys"].as_array().unwrap();
    let work = keys.iter().find(|k| k["name"] == "work").unwrap();
    assert_eq!(work["places"], serde_json::json!(["file"]));
    let openai = keys.iter().find(|k| k["name"] == "openai").unwrap();
    assert_eq!(openai["places"], serde_json::json!(["env"]));
    assert_eq!(openai["envVar"], "OPENAI_API_KEY");

    // Delete: gone from the file and the list.
    let o = run(&dirs, &["keys", "delete", "work"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    cli::assert_stderr_says(&o, "from the key file");
    let o = run(&dirs, &["keys", "list"], None);
    assert!(!stdout(&o).contains("work"), "{}", stdout(&o));
    assert!(!std::fs::read_to_string(&file)
        .unwrap()
        .contains("sk-file-key-42"));
    let o = run(&dirs, &["keys", "delete", "work"], None);
    assert!(!o.status.success());
}

#[test]
fn the_config_can_send_every_key_to_the_file() {
    let dirs = Folders::new();
    dirs.write_config("[keys]\nstore = \"file\"\n");
    let o = run(
        &dirs,
        &["keys", "set", "plugin:events"],
        Some("plug-key-9\n"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dirs.config.path().join("keys.toml")).unwrap();
    assert!(
        text.contains("\"plugin:events\" = \"plug-key-9\""),
        "{text}"
    );
    assert!(!stderr(&o).contains("plug-key-9"));
}

#[test]
fn with_no_keyring_service_set_says_so_and_points_to_the_file() {
    let dirs = Folders::new();
    let o = run(
        &dirs,
        &["keys", "set", "nokeyring-test"],
        Some("sk-nowhere-1\n"),
    );
    assert!(!stderr(&o).contains("sk-nowhere-1"));
    if o.status.success() {
        // This login has a kernel session keyring: the fallback took the key.
        cli::assert_stderr_says(&o, "kernel keyring");
        assert!(run(&dirs, &["keys", "delete", "nokeyring-test"], None)
            .status
            .success());
    } else {
        cli::assert_fails_with(&o, 3, "no OS keyring service answers here");
        cli::assert_stderr_says(&o, "genai keys set NAME --file");
        cli::assert_stderr_says(&o, "Secret Service");
        assert!(!dirs.config.path().join("keys.toml").exists());
    }
}

#[test]
fn a_plugin_key_comes_from_its_environment_variable() {
    let module = FakePlugin::start(Some("module-env-key-5"));
    let dirs = Folders::new();
    let o = cli::output(dirs.genai(&["plugins", "add", &module.base_url(), "--enable"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut c = without_keyring(&dirs, &["plugins", "call", "actintech", "getEvents"]);
    c.env("GENAI_PLUGIN_ACTINTECH_KEY", "module-env-key-5");
    let o = cli::output(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let call = module
        .requests()
        .into_iter()
        .rfind(|r| r.path == "/ai-functions")
        .unwrap();
    assert_eq!(call.header("x-api-key"), Some("module-env-key-5"));
    let mut c = without_keyring(&dirs, &["keys", "list"]);
    c.env("GENAI_PLUGIN_ACTINTECH_KEY", "module-env-key-5");
    let o = cli::output(c);
    assert!(
        stdout(&o).contains("plugin:actintech  env (GENAI_PLUGIN_ACTINTECH_KEY)"),
        "{}",
        stdout(&o)
    );
}

/// Whether gnome-keyring's daemon and dbus-run-session are installed (CI installs both).
fn have_gnome_keyring() -> bool {
    ["gnome-keyring-daemon", "dbus-run-session"]
        .iter()
        .all(|p| {
            Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

#[test]
fn the_secret_service_keeps_a_key_on_a_real_gnome_keyring() {
    if !have_gnome_keyring() {
        eprintln!("gnome-keyring-daemon is not installed: the Secret Service test is skipped");
        return;
    }
    let dirs = Folders::new();
    // `keys list` shows the names genai knows: a provider of that name.
    dirs.write_config("[service_providers.ss-test]\nkind = \"openai\"\n");
    let home = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_genai");
    // A private session bus with an unlocked keyring; genai stores, lists, reads and deletes.
    let script = format!(
        r#"set -e
echo -n test-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null
echo sk-real-ss-3 | "{bin}" keys set ss-test
"{bin}" keys list
"{bin}" keys delete ss-test
"{bin}" keys list
"#
    );
    let mut c = Command::new("dbus-run-session");
    c.args(["--", "sh", "-c", &script])
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_RUNTIME_DIR", home.path())
        .env("GENAI_DATA_DIR", dirs.data.path())
        .env("GENAI_CONFIG_DIR", dirs.config.path())
        .env_remove("DISPLAY");
    let o = cli::output(c);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        err.contains("stored the key of `ss-test` in the Secret Service keyring"),
        "{err}"
    );
    assert!(
        err.contains("deleted the key of `ss-test` from the keyring"),
        "{err}"
    );
    let lists: Vec<&str> = out.lines().filter(|l| l.starts_with("ss-test")).collect();
    assert_eq!(lists, ["ss-test  keyring"], "{out}");
    assert!(!out.contains("sk-real-ss-3") && !err.contains("sk-real-ss-3"));
    assert!(!dirs.config.path().join("keys.toml").exists());
}

/// A key of the user's OpenAI account, as it sits in their environment.
const OPENAI_KEY: &str = "sk-users-openai-key-81";

#[test]
fn a_kinds_well_known_key_reaches_only_the_server_it_belongs_to() {
    use fake_openai::Mode;
    let dirs = Folders::new();
    // `own` stands for OpenAI (OPENAI_BASE_URL pairs it with OPENAI_API_KEY); `corp` is the
    // README's other server in the config.
    let own = FakeOpenAi::start(0, Behavior::default()).unwrap();
    let corp = FakeOpenAi::start(0, Behavior::default()).unwrap();
    let corp_config = format!(
        "[service_providers.corp]\nkind = \"openai\"\nbase_url = \"{}\"\n",
        corp.base_url()
    );
    dirs.write_config(&corp_config);
    let genai = |args: &[&str]| {
        let mut c = without_keyring(&dirs, args);
        c.env("OPENAI_API_KEY", OPENAI_KEY)
            .env("OPENAI_BASE_URL", own.base_url());
        cli::output(c)
    };

    // A keyless server works without a key, and gets none of the user's.
    let o = genai(&["ask", "-m", "corp:m", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(corp.requests().len(), 1);
    assert_eq!(corp.last().header("authorization"), None);
    let o = genai(&["ask", "-m", "openai:m", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bearer = format!("Bearer {OPENAI_KEY}");
    assert_eq!(own.last().header("authorization"), Some(bearer.as_str()));

    // `keys list` tells the truth: corp has no key.
    let o = genai(&["keys", "list"]);
    let shown = stdout(&o);
    assert!(shown.contains("openai  env (OPENAI_API_KEY)"), "{shown}");
    assert!(!shown.lines().any(|l| l.starts_with("corp")), "{shown}");
    let listed: Value = serde_json::from_slice(&genai(&["keys", "list", "--json"]).stdout).unwrap();
    let names: Vec<&str> = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert!(
        !names.contains(&"corp") && names.contains(&"openai"),
        "{listed}"
    );

    // A server that wants a key: the error says how to give it one, and why the user's was
    // not sent.
    corp.push(Behavior::mode(Mode::Error {
        status: 401,
        message: "Missing bearer token".into(),
        code: "invalid_api_key".into(),
    }));
    let o = genai(&["ask", "-m", "corp:m", "hi"]);
    cli::assert_fails_with(&o, 3, "401");
    cli::assert_stderr_says(&o, "genai keys set corp");
    cli::assert_stderr_says(&o, "api_key_env");
    cli::assert_stderr_says(&o, "OPENAI_API_KEY is sent only to openai's own service");
    assert!(!stderr(&o).contains(OPENAI_KEY));
    assert_eq!(corp.last().header("authorization"), None);

    // Named in `api_key_env`, the user sends it there on purpose.
    dirs.write_config(&format!("{corp_config}api_key_env = \"OPENAI_API_KEY\"\n"));
    let o = genai(&["ask", "-m", "corp:m", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(corp.last().header("authorization"), Some(bearer.as_str()));
    assert!(stdout(&genai(&["keys", "list"])).contains("corp    env (OPENAI_API_KEY)"));
}

#[test]
fn an_anthropic_key_is_not_sent_to_another_anthropic_server() {
    use crate::support::fake_anthropic::{self, FakeAnthropic};
    let dirs = Folders::new();
    let fake = FakeAnthropic::start(fake_anthropic::Behavior::default()).unwrap();
    dirs.write_config(&format!(
        "[service_providers.claude]\nkind = \"anthropic\"\nbase_url = \"{}\"\n",
        fake.base_url()
    ));
    let mut c = without_keyring(&dirs, &["ask", "-m", "claude:claude-sonnet-4-5", "hi"]);
    c.env("ANTHROPIC_API_KEY", "sk-ant-users-own-key-5");
    let o = cli::output(c);
    cli::assert_fails_with(&o, 3, "no API key for provider `claude`");
    cli::assert_stderr_says(&o, "genai keys set claude");
    cli::assert_stderr_says(
        &o,
        "ANTHROPIC_API_KEY is sent only to anthropic's own service",
    );
    assert!(fake.requests().is_empty(), "a request went out");
    assert!(!stderr(&o).contains("sk-ant-users-own-key-5"));
}

#[test]
fn keys_list_reports_the_keyring_as_keys_set_found_it_and_keeps_d_bus_out_of_the_error() {
    let dirs = Folders::new();
    let set = run(&dirs, &["keys", "set", "probe-test"], Some("sk-probe-2\n"));
    let o = run(&dirs, &["keys", "list", "--json"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let listed: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        listed["keyringAvailable"],
        set.status.success(),
        "keys set said: {}",
        stderr(&set)
    );
    if set.status.success() {
        assert!(run(&dirs, &["keys", "delete", "probe-test"], None)
            .status
            .success());
        return;
    }
    // `keys set` says why at length; `keys list` in one short line, and nothing in --json.
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    let plain = run(&dirs, &["keys", "list"], None);
    let said = stderr(&plain);
    let notice: Vec<&str> = said.lines().filter(|l| l.contains("keyring")).collect();
    assert_eq!(notice.len(), 1, "{said}");
    assert!(
        notice[0].contains("no OS keyring answers here") && notice[0].len() < 200,
        "{said}"
    );
    for noise in ["autolaunch", "X11", "DISPLAY", "org.freedesktop"] {
        assert!(
            !stderr(&set).contains(noise),
            "{noise} in: {}",
            stderr(&set)
        );
        assert!(!said.contains(noise), "{noise} in: {said}");
    }
    assert!(
        stderr(&set).contains("no Secret Service answers"),
        "{}",
        stderr(&set)
    );
}
