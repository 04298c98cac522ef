//! An agent's `fallback = [...]` (agents, or any name `-m` takes): when its provider fails before answering (a 429, a
//! 5xx, a refused connection), the same request goes to the next fallback that can carry it,
//! through the gateway (whole and streamed, the answer's `x-genai-served-by` and
//! `x-genai-fallback` headers naming who answered) and through `genai ask` (the stored reply
//! names the fallback's model). A stream that breaks after its first piece is not retried
//! elsewhere, and a failure that is the request's own (a 400) is not either.

use std::time::Duration;

use serde_json::{json, Value};

use crate::serve::Served;
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};

const WAIT: Duration = Duration::from_secs(20);

/// `main` on the busy upstream, then `gone` (nothing listens), then `spare`.
fn config(busy: &FakeOpenAi, spare: &FakeOpenAi, gone_port: u16) -> String {
    format!(
        "[service_providers.busy]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"sk-busy\"\nmax_retries = 0\n\n\
         [service_providers.gone]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{gone_port}/v1\"\napi_key = \"sk-gone\"\nmax_retries = 0\n\n\
         [service_providers.spare]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"sk-spare\"\nmax_retries = 0\n\n\
         [agents.main]\nprovider = \"busy\"\nmodel = \"gpt-busy\"\nfallback = [\"gone\", \"spare\"]\n\n\
         [agents.gone]\nprovider = \"gone\"\nmodel = \"gpt-gone\"\n\n\
         [agents.spare]\nprovider = \"spare\"\nmodel = \"gpt-spare\"\n",
        busy.base_url(),
        spare.base_url()
    )
}

/// A port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn error(status: u16) -> Behavior {
    Behavior::mode(Mode::Error {
        status,
        message: format!("upstream says {status}"),
        code: String::new(),
    })
}

async fn chat(served: &Served, body: &Value) -> reqwest::Response {
    reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .unwrap()
        .post(format!(
            "{}/v1/chat/completions",
            served.url.replacen("ws://", "http://", 1)
        ))
        .bearer_auth(&served.token)
        .json(body)
        .send()
        .await
        .unwrap()
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
}

#[tokio::test]
async fn a_rate_limited_agent_is_answered_by_its_next_reachable_fallback_whole_and_streamed() {
    let busy = FakeOpenAi::start(0, error(429)).unwrap();
    let spare = FakeOpenAi::start(0, Behavior::text("Spare here.")).unwrap();
    let served = Served::start_with(&config(&busy, &spare, closed_port()), &[], &[]);

    let r = chat(
        &served,
        &json!({"model": "main", "temperature": 0.25,
                "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "x-genai-served-by").as_deref(),
        Some("spare:gpt-spare")
    );
    assert_eq!(header(&r, "x-genai-fallback").as_deref(), Some("spare"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "Spare here.");
    // The busy upstream was asked once (no retries configured), the spare got the same
    // request on its own model, with the request's parameter and its own key.
    assert_eq!(busy.requests().len(), 1);
    let sent = spare.last();
    assert_eq!(sent.body["model"], "gpt-spare");
    assert_eq!(sent.body["temperature"], 0.25);
    assert_eq!(sent.body["messages"][0]["content"], "hi");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-spare"));

    busy.set_default(error(503));
    let r = chat(
        &served,
        &json!({"model": "main", "stream": true,
                "messages": [{"role": "user", "content": "again"}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-genai-fallback").as_deref(), Some("spare"));
    let text = r.text().await.unwrap();
    // The spare's reply, in its pieces. Where they are cut is not asserted: the stream's mask
    // holds back a piece's end that could begin a key genai holds (the serve token is random
    // hex), so "Spa" may come as "Sp" then "are ".
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let pieces: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(String::from)
        })
        .filter(|t| !t.is_empty())
        .collect();
    assert!(pieces.len() > 1, "the reply came in one piece: {text}");
    assert_eq!(pieces.concat(), "Spare here.", "{text}");
    assert_eq!(busy.requests().len(), 2);

    // When the agent's own provider answers, the header names it and no fallback.
    busy.set_default(Behavior::text("Busy no more."));
    let r = chat(
        &served,
        &json!({"model": "main", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(
        header(&r, "x-genai-served-by").as_deref(),
        Some("busy:gpt-busy")
    );
    assert_eq!(header(&r, "x-genai-fallback"), None);
    assert_eq!(spare.requests().len(), 2);
}

#[tokio::test]
async fn a_request_refused_as_bad_or_a_stream_broken_after_its_first_piece_is_not_retried_elsewhere(
) {
    let busy = FakeOpenAi::start(0, error(400)).unwrap();
    let spare = FakeOpenAi::start(0, Behavior::text("Spare here.")).unwrap();
    let served = Served::start_with(&config(&busy, &spare, closed_port()), &[], &[]);
    let r = chat(
        &served,
        &json!({"model": "main", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    // The provider's 400 is the client's to mend: passed on as a 400, and no fallback tried.
    assert_eq!(r.status(), 400, "{:?}", r.text().await);
    assert!(spare.requests().is_empty());

    busy.set_default(Behavior::mode(Mode::CutAfter { after: 2 }));
    let r = chat(
        &served,
        &json!({"model": "main", "stream": true,
                "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    let text = r.text().await.unwrap_or_default();
    assert!(!text.contains("Spare here"), "{text}");
    assert!(spare.requests().is_empty());
}

#[test]
fn genai_ask_falls_back_and_the_stored_reply_names_the_fallbacks_model() {
    let busy = FakeOpenAi::start(0, error(500)).unwrap();
    let spare = FakeOpenAi::start(0, Behavior::text("Spare here.")).unwrap();
    let dirs = crate::support::cli::Folders::new();
    dirs.write_config(&config(&busy, &spare, closed_port()));
    let o = dirs
        .genai(&["ask", "-m", "main", "--json", "hi"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["reply"], "Spare here.");
    assert_eq!(v["model"], "gpt-spare");
    assert_eq!(v["provider"], "spare", "the provider that answered");
    let details = v["details"].to_string();
    assert!(details.contains("served by fallback spare"), "{details}");
    let id = v["conversationId"].as_str().unwrap();
    let o = dirs
        .genai(&["sessions", "show", id, "--json"])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&o.stdout).unwrap();
    let reply = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap_or_else(|| panic!("{shown}"));
    assert_eq!(reply["model"], "gpt-spare", "{shown}");
}

#[test]
fn a_fallback_may_be_any_name_ask_takes_and_one_naming_nothing_is_said() {
    let dirs = crate::support::cli::Folders::new();
    dirs.write_config(
        "[agents.main]\nprovider = \"openai\"\nmodel = \"m\"\nfallback = [\"nowhere\"]\n",
    );
    let o = dirs.genai(&["ask", "-m", "main", "hi"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("fallback `nowhere`"), "{err}");
    dirs.write_config(
        "[agents.main]\nprovider = \"openai\"\nmodel = \"m\"\nfallback = [\"main\"]\n",
    );
    let o = dirs.genai(&["ask", "-m", "main", "hi"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("agents.main.fallback"), "itself: {err}");

    // PROVIDER:MODEL, as `-m` takes it: no agent needed for the spare.
    let busy = FakeOpenAi::start(0, error(503)).unwrap();
    let spare = FakeOpenAi::start(0, Behavior::text("Spare here.")).unwrap();
    dirs.write_config(&format!(
        "[service_providers.busy]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"sk-busy\"\nmax_retries = 0\n\n\
         [service_providers.spare]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"sk-spare\"\n\n\
         [agents.main]\nprovider = \"busy\"\nmodel = \"gpt-busy\"\nfallback = [\"spare:gpt-other\"]\n",
        busy.base_url(),
        spare.base_url()
    ));
    let o = dirs
        .genai(&["ask", "-m", "main", "--json", "hi"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["reply"].as_str(), v["model"].as_str()),
        (Some("Spare here."), Some("gpt-other")),
        "{v}"
    );
    assert!(
        v["details"]
            .to_string()
            .contains("served by fallback spare:gpt-other"),
        "{v}"
    );
    assert_eq!(spare.last().body["model"], "gpt-other");
}
