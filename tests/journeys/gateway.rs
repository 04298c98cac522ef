//! Another tool on genai's models: a user whose config names a cloud provider by default, after
//! a failed turn, starts `genai serve --background` and points an OpenAI client (curl here) at
//! it with the serve token. The local model answers at `/v1/chat/completions` with the text
//! `genai ask` gives, a streamed answer piped into `head` leaves the serve serving, the cloud
//! model answers through the same address with genai's own key, which never reaches the client,
//! while the client's token never reaches the cloud; a request without the token is refused,
//! one the cloud refuses as malformed comes back as the cloud's 400, and a cloud model that
//! thinks brings its reasoning and the tokens it spent on it.

use crate::home::{Home, Run};
use crate::support::fake_openai::{Behavior, Mode};

/// `curl` with the given arguments, its output as the user sees it.
fn curl(home: &Home, args: &str) -> Run {
    home.sh(&format!("curl -sS --max-time 120 {args}"))
}

#[test]
fn an_openai_client_reaches_the_local_and_the_cloud_model_through_genai_serve() {
    let mut home = Home::new();
    let Some(()) = home.install_demo_model() else {
        return;
    };
    // The cloud as the default model, and a turn on it that failed.
    let fake = home.cloud_default_after_a_failed_turn("From the cloud.");

    // What the local model answers in the shell, without any serve.
    let asked = home
        .run(&[
            "ask",
            "-m",
            "local",
            "--no-connect",
            "-p",
            "temperature=0",
            "-p",
            "max_tokens=16",
            "Name three colours.",
        ])
        .ok();

    let serving = home.serve_in_background();
    let addr = &serving.addr;
    let token = home.run(&["serve", "--print-token"]).ok().stdout();
    let token = token.trim();
    let base = format!("http://{addr}/v1");

    // No token, no answer; with it, the models genai reaches.
    let refused = curl(&home, &format!("-w ' %{{http_code}}' {base}/models")).ok();
    assert!(refused.stdout().ends_with(" 401"), "{}", refused.stdout());
    let auth = format!("-H 'Authorization: Bearer {token}'");
    let models = curl(&home, &format!("{auth} {base}/models")).ok().stdout();
    assert!(models.contains("\"local:"), "{models}");
    assert!(models.contains("\"openai:"), "{models}");

    // The local model, whole: the text `genai ask` gave.
    let body = r#"{"model":"local","temperature":0,"max_tokens":16,
                   "messages":[{"role":"user","content":"Name three colours."}]}"#;
    let post = |extra: &str, body: &str| {
        curl(
            &home,
            &format!(
                "{auth} -H 'Content-Type: application/json' -d '{body}' {extra} {base}/chat/completions"
            ),
        )
    };
    let whole = post("", body).ok().stdout();
    let reply: serde_json::Value =
        serde_json::from_str(&whole).unwrap_or_else(|e| panic!("{e}: {whole}"));
    assert_eq!(
        reply["choices"][0]["message"]["content"]
            .as_str()
            .map(str::trim),
        Some(asked.stdout().trim()),
        "{whole}"
    );

    // Streamed into head, which leaves early: the serve goes on serving.
    let streamed = body.replace("\"model\"", "\"stream\":true,\"model\"");
    let head = home
        .sh(&format!(
            "curl -sSN --max-time 120 {auth} -H 'Content-Type: application/json' -d '{streamed}' {base}/chat/completions | head -c 6"
        ))
        .stdout();
    assert_eq!(head, "data: ");
    let again: serde_json::Value = serde_json::from_str(&post("", body).ok().stdout()).unwrap();
    assert_eq!(again["choices"], reply["choices"]);

    // The cloud model through the same address: genai's key upstream, the client's token not.
    let cloud = post("", &body.replace("\"local\"", "\"openai:gpt-journey\""))
        .ok()
        .stdout();
    assert!(cloud.contains("From the cloud."), "{cloud}");
    assert!(!cloud.contains("sk-journey-cloud"), "{cloud}");
    let sent = fake.requests();
    let last = sent.last().expect("the cloud got the request");
    assert_eq!(
        last.header("authorization"),
        Some("Bearer sk-journey-cloud")
    );
    assert!(sent
        .iter()
        .all(|r| !format!("{:?}", r.headers).contains(token)));
    // The local conversations never went to the cloud: one request there asked for colours.
    let colours = sent
        .iter()
        .filter(|r| r.body.to_string().contains("colours"));
    assert_eq!(colours.count(), 1);

    // A request the cloud refuses as malformed: the client gets a 400 with the cloud's words
    // (not a 502 of genai's), and the next request is answered.
    fake.push(Behavior::mode(Mode::Error {
        status: 400,
        message: "maximum context length is 8192 tokens".into(),
        code: "context_length_exceeded".into(),
    }));
    let cloud_body = body.replace("\"local\"", "\"openai:gpt-journey\"");
    let refused = post("-w ' %{http_code}'", &cloud_body).ok().stdout();
    assert!(refused.ends_with(" 400"), "{refused}");
    assert!(refused.contains("maximum context length"), "{refused}");
    assert!(!refused.contains("sk-journey-cloud"), "{refused}");
    assert!(post("", &cloud_body)
        .ok()
        .stdout()
        .contains("From the cloud."));

    // A cloud model that thinks: its reasoning and the tokens it spent on it come through; the
    // local model, which does not count reasoning apart, says nothing of them.
    fake.push(Behavior::text("Blue.").thinking("Sky colours first."));
    let thought = post("", &cloud_body).ok().stdout();
    let thought: serde_json::Value =
        serde_json::from_str(&thought).unwrap_or_else(|e| panic!("{e}: {thought}"));
    let message = &thought["choices"][0]["message"];
    assert_eq!(message["content"], "Blue.", "{thought}");
    assert_eq!(
        message["reasoning_content"], "Sky colours first.",
        "{thought}"
    );
    assert_eq!(
        thought["usage"]["completion_tokens_details"]["reasoning_tokens"], 3,
        "{thought}"
    );
    assert!(
        reply["usage"].get("completion_tokens_details").is_none(),
        "{reply}"
    );

    home.run(&["serve", "--stop"]).ok();
}

/// Claude Code's and Codex's histories as they send them again: what they keep of genai's own
/// answers (cache markers, a thought's signature, an answer's annotations, a reasoning item's
/// encrypted content) goes through all three APIs to the cloud, a field genai cannot carry is
/// refused by its path, and a refused request leaves the serve answering the next one.
#[test]
fn what_clients_keep_of_earlier_answers_goes_through_each_api_and_a_stray_field_is_named() {
    let mut home = Home::new();
    let fake = home.cloud_default_after_a_failed_turn("From the cloud.");
    let serving = home.serve_in_background();
    let addr = &serving.addr;
    let token = home.run(&["serve", "--print-token"]).ok().stdout();
    let base = format!("http://{addr}/v1");
    let post = |path: &str, body: &str| {
        curl(
            &home,
            &format!(
                "-w ' %{{http_code}}' -H 'Authorization: Bearer {}' -H 'Content-Type: application/json' -d '{body}' {base}/{path}",
                token.trim()
            ),
        )
        .ok()
        .stdout()
    };

    let messages = r#"{"model":"openai:gpt-journey","max_tokens":64,"metadata":{"user_id":"u1"},
        "system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],
        "tools":[{"name":"Read","input_schema":{"type":"object"},"strict":false,"cache_control":{"type":"ephemeral"}}],
        "messages":[{"role":"user","content":[{"type":"text","text":"Read a.txt","cache_control":{"type":"ephemeral"}}]},
          {"role":"assistant","content":[{"type":"thinking","thinking":"Read it.","signature":"sig"},
            {"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a.txt"}}]},
          {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"alpha"}]}]}"#;
    let answered = post("messages", messages);
    assert!(answered.ends_with(" 200"), "{answered}");
    assert!(answered.contains("From the cloud."), "{answered}");
    let sent = fake.requests().last().unwrap().body.clone();
    assert_eq!(sent["tools"][0]["function"]["name"], "Read", "{sent}");
    assert!(sent.to_string().contains("alpha"), "{sent}");
    assert!(!sent.to_string().contains("ephemeral"), "{sent}");

    let stray = messages.replace(
        r#""text":"Read a.txt","#,
        r#""text":"Read a.txt","id":"x","#,
    );
    let refused = post("messages", &stray);
    assert!(refused.ends_with(" 400"), "{refused}");
    assert!(
        refused.contains("messages[0].content[0].id: genai's gateway cannot carry it"),
        "{refused}"
    );

    let responses = r#"{"model":"openai:gpt-journey","store":false,"input":[
        {"role":"user","content":[{"type":"input_text","text":"hi"}]},
        {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"enc"},
        {"type":"message","id":"msg_1","status":"completed","role":"assistant",
         "content":[{"type":"output_text","text":"Hey.","annotations":[],"logprobs":[]}]},
        {"role":"user","content":"again"}]}"#;
    let answered = post("responses", responses);
    assert!(answered.ends_with(" 200"), "{answered}");
    assert!(answered.contains("From the cloud."), "{answered}");
    let refused = post(
        "responses",
        &responses.replace(r#""text":"hi""#, r#""text":"hi","audio":{}"#),
    );
    assert!(
        refused.contains(r#""param":"input[0].content[0].audio""#),
        "{refused}"
    );

    let chat = r#"{"model":"openai:gpt-journey","messages":[{"role":"user","content":5}]}"#;
    let refused = post("chat/completions", chat);
    assert!(refused.ends_with(" 400"), "{refused}");
    assert!(
        refused.contains(r#""param":"messages[0].content""#),
        "{refused}"
    );
    let answered = post("chat/completions", &chat.replace("5", "\"hi\""));
    assert!(answered.ends_with(" 200"), "{answered}");
    assert!(!answered.contains("sk-journey-cloud"), "{answered}");
}
