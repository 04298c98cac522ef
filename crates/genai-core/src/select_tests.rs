//! Tests of selection: the implicit `local`, fields that do not go together, and what names
//! select.

use super::*;
use crate::registry::Origin;

/// A stand-in for the llama.cpp engine (`genai-local`, above the core): the `local` kind's
/// instances on the openai transport.
struct FakeEngine;

impl crate::provider::local::LocalEngine for FakeEngine {
    fn create(
        &self,
        name: &str,
        local: &crate::config::LocalSettings,
    ) -> Result<std::sync::Arc<dyn crate::provider::ServiceProvider>> {
        let openai = crate::config::HttpSettings {
            default_model: local.default_model.clone(),
            ..Default::default()
        };
        crate::provider::build::create(name, &crate::config::ProviderConfig::OpenAi(openai))
    }

    fn stop(&self) {}
}

/// A registry whose `local` kind runs on the stand-in engine, installed for the rest of the
/// process (the tests that build registries without it pass either way).
fn with_fake_local_engine() -> Registry {
    crate::provider::local::install(&FakeEngine);
    Registry::from_config(&Config::default()).unwrap()
}

#[test]
fn implicit_local_needs_the_kind_and_a_default_model_and_no_configured_provider() {
    let d = tempfile::tempdir().unwrap();
    let lib = ModelLibrary::at(d.path());
    let config = Config::default();
    // Without an engine (a genai built without the `local` feature): this test alone installs
    // one, below.
    assert!(!crate::provider::local::installed());
    let registry = Registry::new();
    let e = Selector {
        config: &config,
        registry: &registry,
    }
    .implicit_local(&lib)
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Config);
    assert!(
        e.message.contains("without the `local` feature"),
        "{}",
        e.message
    );

    let r = with_fake_local_engine();
    let s = Selector {
        config: &config,
        registry: &r,
    };
    let e = s.implicit_local(&lib).unwrap_err();
    assert!(
        e.message.contains("`genai models pull demo`"),
        "{}",
        e.message
    );

    std::fs::write(lib.path_of("a"), b"x").unwrap();
    std::fs::write(lib.path_of("b"), b"x").unwrap();
    let e = s.implicit_local(&lib).unwrap_err();
    assert!(
        e.message.contains("genai models default NAME"),
        "{}",
        e.message
    );

    lib.set_default("b").unwrap();
    assert_eq!(s.implicit_local(&lib).unwrap(), "b");
    let inst = r.provider("local").unwrap();
    assert_eq!((inst.kind, inst.origin), ("local", Origin::Builtin));
    assert_eq!(inst.provider.default_model(), Some("b"));

    let configured = Config::parse("[service_providers.work]\nkind = 'openai'").unwrap();
    let r = with_fake_local_engine();
    let e = Selector {
        config: &configured,
        registry: &r,
    }
    .implicit_local(&lib)
    .unwrap_err();
    assert!(e.message.contains("no model chosen"), "{}", e.message);
}

#[test]
fn fields_that_do_not_go_together_are_refused() {
    let f = |a: Option<&str>, p: Option<&str>, m: Option<&str>| {
        ModelChoice::from_fields(ModelChoiceFields {
            agent: a.map(Into::into),
            service_provider: p.map(Into::into),
            model_configuration: None,
            model: m.map(Into::into),
        })
    };
    assert!(f(Some("a"), Some("p"), None)
        .unwrap_err()
        .message
        .contains("not both"));
    assert!(f(None, None, Some("m"))
        .unwrap_err()
        .message
        .contains("need a `serviceProvider`"));
    assert_eq!(f(None, None, None).unwrap(), ModelChoice::Default);
    assert_eq!(
        f(Some("a"), None, None).unwrap(),
        ModelChoice::Agent("a".into())
    );
}

#[test]
fn names_select_agents_provider_model_pairs_and_instances() {
    let config = Config::parse(
        "[agents.fast]\nprovider = 'openai'\nmodel = 'gpt-x'\nfeature = 'tools'\nsystem_prompt = 'be brief'",
    )
    .unwrap();
    let registry = Registry::from_config(&config).unwrap();
    let s = Selector {
        config: &config,
        registry: &registry,
    };
    let sel = s.select(&ModelChoice::Named("fast".into())).unwrap();
    assert_eq!(
        (
            sel.provider.as_str(),
            sel.model.as_deref(),
            sel.feature.as_deref(),
            sel.system_prompt.as_deref()
        ),
        ("openai", Some("gpt-x"), Some("tools"), Some("be brief"))
    );
    let sel = s
        .select(&ModelChoice::Named("anthropic:claude-x".into()))
        .unwrap();
    assert_eq!(
        (sel.provider.as_str(), sel.model.as_deref()),
        ("anthropic", Some("claude-x"))
    );
    let sel = s.select(&ModelChoice::Named("ollama".into())).unwrap();
    assert_eq!((sel.provider.as_str(), sel.model), ("ollama", None));
    let e = s.select(&ModelChoice::Named("nothing".into())).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownComponent);
    let e = s.select(&ModelChoice::Agent("openai".into())).unwrap_err();
    assert!(
        e.message.contains("no agent named `openai`"),
        "{}",
        e.message
    );
}
