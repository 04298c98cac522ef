//! Tests of the config file: errors that say where, secrets masked from then on, the shown
//! config, and the sections checked when the file is read.

use super::*;

#[test]
fn a_syntax_error_names_its_line_and_column() {
    let e = Config::parse("[defaults]\nmodel = \"fast\"\n\n[agents.x\nmodel = 1").unwrap_err();
    assert!(
        e.message.starts_with("line 4, column 10: "),
        "{}",
        e.message
    );
    let e = Config::parse("[defaults]\n  model = fast").unwrap_err();
    assert!(
        e.message.starts_with("line 2, column 11: "),
        "{}",
        e.message
    );
}

#[test]
fn every_secret_of_the_file_is_masked_in_errors_from_then_on() {
    Config::parse(
        "[mcp_servers.m]\ncommand = 'x'\nenv = { T = 'mcp-env-secret-42' }\n\
         [plugins.p]\nurl = 'http://127.0.0.1:1'\napi_key = 'plugin-secret-43'\n\
         [service_providers.h]\nkind = 'openai'\nheaders = { X-Token = 'header-secret-44' }",
    )
    .ok();
    let e = Error::provider("echo: mcp-env-secret-42 plugin-secret-43 header-secret-44");
    assert_eq!(e.message, "echo: ******** ******** ********");
}

#[test]
fn parses_and_masks() {
    let c = Config::parse(
        r#"
            [defaults]
            model = "fast"
            [service_providers.work]
            kind = "openai"
            base_url = "http://127.0.0.1:9/v1"
            api_key = "sk-very-secret"
            headers = { "X-Api-Key" = "hdr-secret", "X-Team" = "blue" }
            [model_configurations.mini]
            format = "openai-chat"
            model = "gpt-4o-mini"
            parameters = { temperature = 0.2 }
            [agents.fast]
            provider = "work"
            model_configuration = "mini"
            "#,
    )
    .unwrap();
    assert_eq!(
        c.model_configurations["mini"].parameters["temperature"],
        0.2
    );
    let shown = c.masked_toml();
    assert!(!shown.contains("sk-very-secret"), "{shown}");
    assert!(!shown.contains("hdr-secret"), "{shown}");
    assert!(shown.contains("blue"));
}

#[test]
fn http_credentials_are_masked() {
    let c = Config::parse(
        r#"
            [service_providers.h]
            kind = "http"
            base_url = "http://127.0.0.1:9/x"
            method = "PUT"
            [service_providers.h.credentials.token]
            value = "cred-very-secret"
            [service_providers.h.credentials.other]
            env = "OTHER_TOKEN"
            "#,
    )
    .unwrap();
    let ProviderConfig::Http(h) = &c.service_providers["h"] else {
        panic!("kind http")
    };
    assert_eq!(h.credentials["other"].env.as_deref(), Some("OTHER_TOKEN"));
    let shown = c.masked_toml();
    assert!(!shown.contains("cred-very-secret"), "{shown}");
    assert!(shown.contains("OTHER_TOKEN"), "{shown}");
}

#[test]
fn mcp_servers_are_parsed_masked_and_kept_apart_from_plugins() {
    let c = Config::parse(
        r#"
            [mcp_servers.files]
            command = "mcp-files"
            args = ["--root", "/tmp"]
            env = { FILES_TOKEN = "tok-very-secret" }
            timeout_secs = 5
            "#,
    )
    .unwrap();
    let files = &c.mcp_servers["files"];
    assert_eq!(files.args, ["--root", "/tmp"]);
    assert!(!files.enabled);
    assert_eq!(files.timeout_secs, Some(5));
    let shown = c.masked_toml();
    assert!(!shown.contains("tok-very-secret"), "{shown}");
    assert!(shown.contains("FILES_TOKEN"), "{shown}");

    let c = Config::parse(
        "[serve]
redis_url = 'redis://:redis-secret-pw@10.0.0.5:6379/2'
",
    )
    .unwrap();
    let shown = c.masked_toml();
    assert!(
        shown.contains("redis_url = \"redis://:********@10.0.0.5:6379/2\""),
        "only the password is masked: {shown}"
    );

    let e =
        Config::parse("[plugins.x]\nurl = 'http://127.0.0.1:9'\n[mcp_servers.x]\ncommand = 'x'")
            .unwrap_err();
    assert!(
        e.message.contains("both a plugin and an MCP server"),
        "{}",
        e.message
    );
    assert!(Config::parse("[mcp_servers.x]\ncommand = 'x'\nenv_vars = {}").is_err());
    assert!(Config::parse("[mcp_servers.'a.b']\ncommand = 'x'").is_err());
}

#[test]
fn shown_config_has_whole_seconds_and_no_empty_tables() {
    let c = Config::parse(
        "[service_providers.x]\nkind = 'openai'\ntimeout_secs = 600\nread_timeout_secs = 2.5\n\
         [model_configurations.m]\nformat = 'openai-chat'\nmodel = 'gpt'\n\
         parameters = { temperature = 1.0, top_p = 0.5 }\n",
    )
    .unwrap();
    let shown = c.masked_toml();
    assert!(shown.contains("timeout_secs = 600\n"), "{shown}");
    assert!(shown.contains("read_timeout_secs = 2.5\n"), "{shown}");
    assert!(shown.contains("\ntemperature = 1\n"), "{shown}");
    assert!(shown.starts_with("[service_providers.x]\n"), "{shown}");
    for empty in ["[defaults]", "[lsp]", "[features]", "[agents]"] {
        assert!(!shown.contains(empty), "{shown}");
    }
    let again = Config::parse(&shown).unwrap();
    assert_eq!(again.masked_toml(), shown);
}

#[test]
fn a_value_of_the_wrong_type_is_reported_where_it_is() {
    let text = "[defaults]\nmodel = 'fast'\n\n[service_providers.x]\nkind = 'openai'\n\
                base_url = 'http://127.0.0.1:9/v1'\ntimeout_secs = \"ten\"\n";
    let e = Config::parse(text).unwrap_err();
    assert_eq!(
        e.message,
        "line 7, column 16: service_providers.x.timeout_secs: invalid type: string \"ten\", \
         expected a number of seconds"
    );
    let e = Config::parse("[plugins.p]\nurl = 'http://x'\ntimeout_secs = [3]").unwrap_err();
    assert!(
        e.message.starts_with("line 3, column 16: "),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("expected a number of seconds"),
        "{}",
        e.message
    );
}

#[test]
fn unknown_fields_and_bad_agents_are_refused() {
    assert!(Config::parse("[defaults]\nmodle = 'x'").is_err());
    let e = Config::parse("[agents.a]\nprovider = 'p'").unwrap_err();
    assert!(e.message.contains("exactly one"), "{}", e.message);
}

#[test]
fn serve_roots_are_absolute_or_under_the_home_folder() {
    let c = Config::parse("[serve]\nroots = ['~/projects', '/srv/repos', '~']").unwrap();
    assert_eq!(c.serve.roots, ["~/projects", "/srv/repos", "~"]);
    for bad in ["projects", "./x", "~other/x", ""] {
        let e = Config::parse(&format!("[serve]\nroots = ['{bad}']")).unwrap_err();
        assert!(
            e.message.contains("serve.roots") && e.message.contains("not an absolute folder"),
            "{bad}: {}",
            e.message
        );
    }
}

#[test]
fn bad_permission_rules_and_hook_matchers_are_said_when_the_config_is_read() {
    let e = Config::parse("[permissions]\nallow = ['run_command(']").unwrap_err();
    assert!(e.message.contains("run_command("), "{}", e.message);
    let e = Config::parse("[permissions]\nmode = 'yolo'").unwrap_err();
    assert!(e.message.contains("read-only"), "{}", e.message);
    let e = Config::parse("[[hooks.pre_tool_use]]\nmatcher = '('\ncommand = 'true'").unwrap_err();
    assert!(e.message.contains("hooks.pre_tool_use"), "{}", e.message);
    let ok = Config::parse(
        "[permissions]\nmode = 'edit'\nallow = ['run_command(cargo test *)']\n\n[checkpoints]\nmax_age_days = 7\n",
    )
    .unwrap();
    assert_eq!(ok.checkpoints.max_age_days, 7);
}

#[test]
fn a_hook_is_a_table_a_command_line_or_a_list_of_either_and_typos_are_named() {
    let c = Config::parse(
        "[hooks]\nstop = 'check.sh'\npre_tool_use = ['a.sh', { command = 'b.sh', matcher = 'Bash', timeout_s = 5 }]\n",
    )
    .unwrap();
    assert_eq!(
        c.hooks.stop,
        [crate::hooks::HookConfig::command("check.sh".into())]
    );
    assert_eq!(c.hooks.pre_tool_use.len(), 2);
    assert_eq!(c.hooks.pre_tool_use[1].matcher.as_deref(), Some("Bash"));
    assert_eq!(c.hooks.pre_tool_use[1].timeout_s, Some(5));
    let tables = Config::parse("[[hooks.post_tool_use]]\ncommand = 'log.sh'\n").unwrap();
    assert_eq!(tables.hooks.post_tool_use[0].command, "log.sh");
    let e = Config::parse("[[hooks.stop]]\ncomand = 'x'\n").unwrap_err();
    assert!(e.message.contains("comand"), "{}", e.message);
}
