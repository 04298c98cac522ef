//! The errors of `genai serve`'s OpenAI API, in OpenAI's shape: 404 on an agent added after
//! the serve started (saying to restart it), 400 on malformed JSON and on what cannot be
//! carried (naming the field), 404 on an unknown model, 413 over the body limit, nothing
//! refused going upstream, and 502 when the upstream fails, without genai's key in the answer.

use serde_json::{json, Value};

use crate::gateway::{chat_json, client, serve, CONFIG, UPSTREAM_KEY};
use crate::support::fake_openai::{Behavior, FakeOpenAi, Mode};
use crate::support::gateway::openai_error;

/// An agent added to the config while the serve runs is not known to it (it read its config
/// when it started); the 404 says so and how to mend it, without the config's path.
#[tokio::test]
async fn an_agent_added_to_the_config_after_the_serve_started_is_a_404_saying_restart_it() {
    let fake = FakeOpenAi::start(0, Behavior::text("hi")).unwrap();
    let served = serve(&fake, &[]);
    served.write_config(&format!(
        "{CONFIG}\n[agents.later]\nprovider = \"openai\"\nmodel = \"gpt-later\"\n"
    ));
    let user = json!([{"role": "user", "content": "hi"}]);
    let (got, v) = chat_json(&served, &json!({"model": "later", "messages": user})).await;
    assert_eq!(got, 404, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("names `later` now") && message.contains("genai serve --stop"),
        "{message}"
    );
    assert!(!message.contains("config.toml"), "{message}");
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn bad_requests_get_openai_errors_naming_the_field_and_nothing_goes_upstream() {
    let fake = FakeOpenAi::start(0, Behavior::text("hi")).unwrap();
    let served = serve(&fake, &["--max-message-bytes", "4096"]);
    let url = format!("{}/v1/chat/completions", served.http_base());
    let r = client()
        .post(&url)
        .bearer_auth(&served.token)
        .header("content-type", "application/json")
        .body("{\"model\": \"terse\", \"messages\": [")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(openai_error(&v)["type"], "invalid_request_error");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{v}"
    );

    let user = json!([{"role": "user", "content": "hi"}]);
    let cases = [
        (json!({"model": "nosuch", "messages": user}), 404, "model"),
        (
            json!({"model": "terse", "messages": user, "n": 2}),
            400,
            "n",
        ),
        (
            json!({"model": "terse", "messages": user, "audio": {"voice": "alloy"}}),
            400,
            "audio",
        ),
        (
            json!({"model": "terse", "messages": user, "no_such_setting": 1}),
            400,
            "no_such_setting",
        ),
        (
            json!({"model": "terse", "messages": [{"role": "robot", "content": "x"}]}),
            400,
            "messages[0].role",
        ),
        (
            json!({"model": "terse", "messages": [{"role": "user", "content": [{"type": "input_audio"}]}]}),
            400,
            "messages[0].content[0].type",
        ),
        (
            json!({"model": "terse", "messages": user, "temperature": "hot"}),
            400,
            "temperature",
        ),
        (json!({"messages": user}), 400, "model"),
    ];
    for (body, status, param) in cases {
        let (got, v) = chat_json(&served, &body).await;
        assert_eq!(got, status, "{body} -> {v}");
        assert_eq!(openai_error(&v)["param"], param, "{body} -> {v}");
    }
    let (got, v) = chat_json(&served, &json!({"model": "nosuch", "messages": user})).await;
    assert_eq!(got, 404);
    assert_eq!(v["error"]["code"], "model_not_found");
    assert!(!v.to_string().contains("restart"), "{v}");

    let big =
        json!({"model": "terse", "messages": [{"role": "user", "content": "x".repeat(8000)}]});
    let (got, v) = chat_json(&served, &big).await;
    assert_eq!(got, 413, "{v}");
    openai_error(&v);
    assert!(
        fake.requests().is_empty(),
        "a refused request went upstream"
    );
}

/// A provider that fails is a 502 without genai's key; one that refuses the request as
/// malformed (400: too long a context, a value out of its range) leaves it to the client to
/// change: a 400 with the provider's words, not retried.
#[tokio::test]
async fn an_upstream_failure_is_a_502_without_genais_key_and_a_refused_request_a_400() {
    let cases = [
        (
            500,
            format!("internal failure for key {UPSTREAM_KEY}"),
            502,
            "upstream_error",
        ),
        (
            400,
            "maximum context length is 8192 tokens".into(),
            400,
            "invalid_request_error",
        ),
    ];
    for (upstream, message, status, kind) in cases {
        let fake = FakeOpenAi::start(
            0,
            Behavior::mode(Mode::Error {
                status: upstream,
                message: message.clone(),
                code: String::new(),
            }),
        )
        .unwrap();
        let served = serve(&fake, &[]);
        for stream in [false, true] {
            let (got, v) = chat_json(
                &served,
                &json!({"model": "terse", "messages": [{"role": "user", "content": "hi"}], "stream": stream}),
            )
            .await;
            assert_eq!(got, status, "{v}");
            let e = openai_error(&v);
            assert_eq!(e["type"], kind, "{v}");
            if status == 400 {
                // The provider's words reach the client (the 500's carry genai's key: masked).
                assert!(e["message"].as_str().unwrap().contains(&message), "{v}");
            }
        }
        if status == 400 {
            assert_eq!(fake.requests().len(), 2, "a refused request is not retried");
        }
    }
}
