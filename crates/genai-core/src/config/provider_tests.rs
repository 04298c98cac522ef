//! Tests of provider settings: a setting of another kind refused by name, unknown kinds, the
//! schema, and settings shown masked.

use serde_json::json;

use super::*;
use crate::config::Config;

/// The refusal's text after the `line L, column C: ` where the file has it.
fn refusal(toml: &str) -> String {
    let m = Config::parse(toml).unwrap_err().message;
    assert!(m.starts_with("line "), "no place in {m}");
    m.split_once(": ").unwrap().1.to_string()
}

#[test]
fn a_setting_of_another_kind_is_refused_naming_the_kind_and_its_settings() {
    let m = refusal("[service_providers.x]\nkind = 'openai'\nmodel = 'gpt-4o'");
    assert_eq!(
        m,
        "service_providers.x: `model` is not a setting of kind openai; accepted: api_key, \
         api_key_cmd, api_key_env, base_url, connect_timeout_secs, default_model, headers, \
         max_concurrent_requests, max_error_bytes, max_event_bytes, max_reply_bytes, max_reply_tokens, max_retries, \
         read_timeout_secs, retry_budget_secs, timeout_secs"
    );
    let m = refusal("[service_providers.b]\nkind = 'bedrock'\nthreads = 2");
    assert!(
        m.starts_with(
            "service_providers.b: `threads` is not a setting of kind bedrock; accepted: "
        ),
        "{m}"
    );
    assert!(m.contains("profile") && m.contains("region"), "{m}");
    let m = refusal("[service_providers.l]\nkind = 'local'\nbase_url = 'http://x'");
    assert_eq!(
        m,
        "service_providers.l: `base_url` is not a setting of kind local; accepted: \
         context_size, default_model, kv_unified, model, slots, threads"
    );
    let m = refusal("[service_providers.a]\nkind = 'azure-openai'\nregion = 'eu'");
    assert!(m.contains("accepted: api_key"), "{m}");
    assert!(m.contains("api_version") && m.contains("deployment"), "{m}");
    let m = refusal("[service_providers.o]\nkind = 'openai'\nmax_retries = 'x'");
    assert!(
        m.starts_with("service_providers.o.max_retries: invalid type"),
        "{m}"
    );
    let m = refusal(
        "[service_providers.h]\nkind = 'http'\n[service_providers.h.credentials.t]\nvalu = 'x'",
    );
    assert!(m.contains("unknown field `valu`"), "{m}");
}

#[test]
fn an_unknown_kind_names_the_known_kinds() {
    let m = refusal("[service_providers.x]\nkind = 'nope'");
    assert_eq!(
        m,
        "service_providers.x: unknown provider kind `nope`; known: openai, anthropic, \
         ollama, gemini, azure-openai, http, bedrock, local"
    );
    let e = ProviderConfig::from_settings("nope", Map::new()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownComponent);
    let settings = json!({"model": "x"}).as_object().unwrap().clone();
    let e = ProviderConfig::from_settings("openai", settings).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidParams);
    assert!(refusal("[service_providers.x]\nbase_url = 'http://x'").contains("`kind`"));
}

#[test]
fn the_schema_refuses_a_setting_of_another_kind_too() {
    let schema = serde_json::to_value(schemars::schema_for!(Config)).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let config = |provider: Value| json!({"service_providers": {"x": provider}});
    let ok = json!({"kind": "azure-openai", "base_url": "https://r", "deployment": "d"});
    assert!(validator.is_valid(&config(ok)));
    let local = json!({"kind": "local", "model": "m", "threads": 2});
    assert!(validator.is_valid(&config(local)));
    assert!(!validator.is_valid(&config(json!({"kind": "openai", "model": "m"}))));
    assert!(!validator.is_valid(&config(json!({"kind": "nope"}))));
}

#[test]
fn every_kind_is_written_as_its_name() {
    for kind in ProviderConfig::KINDS {
        let c = ProviderConfig::from_settings(kind, Map::new()).unwrap();
        assert_eq!(c.kind(), kind);
        assert_eq!(serde_json::to_value(&c).unwrap(), json!({"kind": kind}));
    }
}

#[test]
fn settings_keep_their_meaning_and_show_masked() {
    let c = Config::parse(
        r#"
            [service_providers.az]
            kind = "azure-openai"
            base_url = "https://r.openai.azure.com"
            api_key = "az-very-secret"
            deployment = "prod"
            timeout_secs = 5
            headers = { Authorization = "Bearer hdr-secret" }
            [service_providers.l]
            kind = "local"
            model = "gemma"
            threads = 2
            "#,
    )
    .unwrap();
    let ProviderConfig::AzureOpenAi(az) = &c.service_providers["az"] else {
        panic!("kind azure-openai")
    };
    assert_eq!(az.deployment.as_deref(), Some("prod"));
    assert_eq!(az.http.timeout_secs, Some(5.0));
    let ProviderConfig::Local(l) = &c.service_providers["l"] else {
        panic!("kind local")
    };
    assert_eq!((l.model.as_deref(), l.threads), (Some("gemma"), Some(2)));
    let shown = c.masked_toml();
    assert!(
        !shown.contains("az-very-secret") && !shown.contains("hdr-secret"),
        "{shown}"
    );
    assert!(shown.contains("kind = \"azure-openai\""), "{shown}");
    let again = Config::parse(&shown).unwrap();
    assert_eq!(again.service_providers["l"].kind(), "local");
}
