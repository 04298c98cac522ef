//! The agent's turns against the scripted provider: the atomic commit, the system message, the
//! native tool loop and its bound, the ReAct loop and what it streams, and cancellation.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::FutureExt;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::testing::{
    agent, calls_body, text_body, text_stream, with_fallback, Answer, ScriptedProvider,
    CONVERSATION,
};
use super::{AIAgent, Delta, PromptOutcome, ToolLoop};
use crate::config::ToolMode;
use crate::error::ErrorKind;
use crate::format::testing::assert_mentions;
use crate::format::ToolSpec;
use crate::message::{Message, Part, Role};
use crate::store::Store;

fn store() -> Arc<Store> {
    Arc::new(Store::in_memory().expect("an in-memory store"))
}

fn stored(store: &Store) -> (Option<Message>, Vec<Message>) {
    store.full_history(CONVERSATION).expect("the history")
}

fn add_tool() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "add".into(),
        description: "Adds two numbers.".into(),
        input_schema: json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
    }]
}

/// The `add` tool, run by `run`, for up to `max_steps` rounds.
fn tool_loop<'a>(run: &'a RunCalls<'a>, max_steps: usize, mode: ToolMode) -> ToolLoop<'a> {
    ToolLoop {
        specs: add_tool(),
        max_steps,
        run,
        on_call_delta: None,
        mode,
        budget: None,
        spent_elsewhere: None,
    }
}

/// What runs one reply's calls.
type RunCalls<'a> =
    dyn Fn(Vec<(String, String, Value)>) -> BoxFuture<'a, Vec<Part>> + Send + Sync + 'a;

/// A tool runner that answers every call with `NAME ran` and remembers the calls; it cancels
/// `cancel` when given (a turn cancelled while its tools run).
struct Runner {
    calls: Mutex<Vec<(String, String, Value)>>,
    cancel: Option<CancellationToken>,
}

impl Runner {
    fn new(cancel: Option<CancellationToken>) -> Runner {
        Runner {
            calls: Mutex::new(Vec::new()),
            cancel,
        }
    }

    fn run(&self, calls: Vec<(String, String, Value)>) -> BoxFuture<'_, Vec<Part>> {
        self.calls.lock().unwrap().extend(calls.iter().cloned());
        if let Some(token) = &self.cancel {
            token.cancel();
        }
        async move {
            calls
                .into_iter()
                .map(|(id, name, _)| Part::ToolResult {
                    tool_call_id: id,
                    content: vec![Part::text(format!("{name} ran"))],
                    is_error: false,
                })
                .collect()
        }
        .boxed()
    }
}

/// Asks `a` for 1+2 with `tools`, not streamed.
async fn ask_sum(a: &AIAgent, tools: &ToolLoop<'_>) -> PromptOutcome {
    a.send_prompt_as(
        vec![Message::user("1+2?")],
        None,
        &CancellationToken::new(),
        Some(tools),
        None,
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_successful_turn_commits_the_prompt_and_the_reply_together() {
    let provider = ScriptedProvider::new(vec![text_body("Hello")]);
    let store = store();
    let a = agent(provider.clone(), Some(store.clone()), None, vec![]);
    let outcome = a
        .send_prompt(vec![Message::user("hi")], None, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.reply.message.text(), "Hello");
    assert_eq!(outcome.rounds, 1);
    let (system, messages) = stored(&store);
    assert!(system.is_none());
    assert_eq!(messages, vec![Message::user("hi"), outcome.reply.message]);
    assert_eq!(a.history().unwrap(), messages);
    assert_eq!(provider.bodies()[0]["messages"][0]["content"], "hi");
}

#[tokio::test]
async fn a_failed_turn_commits_nothing() {
    let provider = ScriptedProvider::new(vec![
        Answer::Fail("overloaded"),
        text_stream(&["Hel", "lo"], true),
    ]);
    let store = store();
    let a = agent(provider, Some(store.clone()), None, vec![]);
    let cancel = CancellationToken::new();
    let e = a
        .send_prompt(vec![Message::user("hi")], None, &cancel)
        .await
        .unwrap_err();
    assert_eq!(e.message, "overloaded");
    let shown = Mutex::new(String::new());
    let on_delta = |d: Delta<'_>| {
        if let Delta::Text(d) = d {
            shown.lock().unwrap().push_str(d)
        }
    };
    let e = a
        .send_prompt(vec![Message::user("hi")], Some(&on_delta), &cancel)
        .await
        .unwrap_err();
    assert_mentions(&e, "ended before the reply was complete");
    assert_eq!(*shown.lock().unwrap(), "Hello", "the deltas did stream");
    assert_eq!(stored(&store), (None, vec![]));
    assert!(a.history().unwrap().is_empty());
}

#[tokio::test]
async fn a_system_message_replaces_the_stored_one() {
    let provider = ScriptedProvider::new(vec![text_body("Arr")]);
    let store = store();
    let a = agent(
        provider.clone(),
        Some(store.clone()),
        Some(Message::system("Be brief.")),
        vec![],
    );
    a.send_prompt(
        vec![Message::system("You are a pirate."), Message::user("hi")],
        None,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let sent = &provider.bodies()[0]["messages"];
    assert_eq!(sent.as_array().unwrap().len(), 2, "{sent}");
    assert_eq!(
        sent[0],
        json!({"role": "system", "content": "You are a pirate."})
    );
    let history = a.history().unwrap();
    assert_eq!(history[0], Message::system("You are a pirate."));
    assert_eq!(history.iter().filter(|m| m.role == Role::System).count(), 1);
    let (system, messages) = stored(&store);
    assert_eq!(system, Some(Message::system("You are a pirate.")));
    assert_eq!(messages.len(), 2);
}

#[tokio::test]
async fn the_native_loop_runs_calls_and_sends_the_results_back() {
    let provider = ScriptedProvider::new(vec![
        calls_body(&[("c1", "add", json!({"a": 1, "b": 2}))]),
        text_body("3"),
    ]);
    let store = store();
    let a = agent(provider.clone(), Some(store.clone()), None, vec![]);
    let runner = Runner::new(None);
    let run = |calls| runner.run(calls);
    let tools = tool_loop(&run, 4, ToolMode::Auto);
    let outcome = ask_sum(&a, &tools).await;
    assert_eq!(outcome.reply.message.text(), "3");
    assert_eq!((outcome.rounds, outcome.react), (2, None));
    assert_eq!(
        *runner.calls.lock().unwrap(),
        vec![("c1".to_string(), "add".to_string(), json!({"a": 1, "b": 2}))]
    );
    let bodies = provider.bodies();
    assert_eq!(bodies[0]["tools"][0]["function"]["name"], "add");
    assert_eq!(
        bodies[1]["messages"][2],
        json!({"role": "tool", "tool_call_id": "c1", "content": "add ran"})
    );
    let (_, messages) = stored(&store);
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(messages[1].tool_calls()[0].0, "c1");
}

#[tokio::test]
async fn the_native_loop_stops_after_max_steps_rounds() {
    let call = || calls_body(&[("c1", "add", json!({"a": 1, "b": 2}))]);
    let provider = ScriptedProvider::new(vec![call(), call(), call()]);
    let a = agent(provider.clone(), None, None, vec![]);
    let runner = Runner::new(None);
    let run = |calls| runner.run(calls);
    let tools = tool_loop(&run, 1, ToolMode::Native);
    let outcome = ask_sum(&a, &tools).await;
    assert_eq!(outcome.rounds, 2);
    assert_eq!(runner.calls.lock().unwrap().len(), 1);
    assert_eq!(provider.bodies().len(), 2);
    assert_eq!(
        outcome.reply.message.tool_calls().len(),
        1,
        "taken as final"
    );
}

#[tokio::test]
async fn native_tools_are_refused_before_sending_when_the_provider_ignores_them() {
    let provider = ScriptedProvider::without_native_tools(vec![text_stream(&["unused"], false)]);
    let a = agent(provider.clone(), None, None, vec![]);
    let runner = Runner::new(None);
    let run = |calls| runner.run(calls);
    let tools = tool_loop(&run, 0, ToolMode::Native);
    let e = a
        .send_prompt_as(
            vec![Message::user("1+2?")],
            None,
            &CancellationToken::new(),
            Some(&tools),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidParams, "{}", e.message);
    assert!(
        e.message.contains("does not run native tool calls"),
        "{}",
        e.message
    );
    assert!(provider.bodies().is_empty(), "the request was sent");
}

#[tokio::test]
async fn the_react_loop_observes_and_streams_only_the_final_answer() {
    let provider = ScriptedProvider::without_native_tools(vec![
        text_stream(
            &[
                "Thought: I must add.\nAction: add\n",
                "Action Input: {\"a\": 1, \"b\": 2}",
            ],
            false,
        ),
        text_stream(&["Thought: I know the answer.\nFinal ", "Answer: 3"], false),
    ]);
    let store = store();
    let a = agent(provider.clone(), Some(store.clone()), None, vec![]);
    let runner = Runner::new(None);
    let run = |calls| runner.run(calls);
    let tools = tool_loop(&run, 4, ToolMode::Auto);
    let shown = Mutex::new(String::new());
    let on_delta = |d: Delta<'_>| {
        if let Delta::Text(d) = d {
            shown.lock().unwrap().push_str(d)
        }
    };
    let outcome = a
        .send_prompt_as(
            vec![Message::user("1+2?")],
            Some(&on_delta),
            &CancellationToken::new(),
            Some(&tools),
            None,
        )
        .await
        .unwrap();
    assert_eq!(outcome.reply.message.text(), "3");
    assert_eq!(*shown.lock().unwrap(), "3");
    assert!(
        outcome
            .react
            .as_deref()
            .unwrap()
            .contains("does not run native tool calls"),
        "{:?}",
        outcome.react
    );
    assert_eq!(
        *runner.calls.lock().unwrap(),
        vec![(
            "react_1_0".to_string(),
            "add".to_string(),
            json!({"a": 1, "b": 2})
        )]
    );
    let bodies = provider.bodies();
    assert!(bodies[0].get("tools").is_none(), "no native tools are sent");
    assert_eq!(bodies[0]["stop"], json!(["Observation:"]));
    let sent = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(
        sent.last().unwrap(),
        &json!({"role": "user", "content": "Observation: add ran"})
    );
    let (_, messages) = stored(&store);
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(messages[3], Message::assistant("3"));
}

#[tokio::test]
async fn a_cancelled_turn_fails_and_commits_nothing() {
    let cancel = CancellationToken::new();
    let provider = ScriptedProvider::new(vec![Answer::CancelAndHang(cancel.clone())]);
    let store = store();
    let a = agent(provider, Some(store.clone()), None, vec![]);
    let e = a
        .send_prompt(vec![Message::user("hi")], None, &cancel)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Cancelled);
    assert_eq!(stored(&store), (None, vec![]));

    // Cancelled while its tools run, after a round of calls: still nothing.
    let cancel = CancellationToken::new();
    let provider = ScriptedProvider::new(vec![
        calls_body(&[("c1", "add", json!({"a": 1, "b": 2}))]),
        Answer::CancelAndHang(cancel.clone()),
    ]);
    let store = self::store();
    let a = agent(provider, Some(store.clone()), None, vec![]);
    let runner = Runner::new(Some(cancel.clone()));
    let run = |calls| runner.run(calls);
    let tools = tool_loop(&run, 4, ToolMode::Native);
    let e = a
        .send_prompt_as(
            vec![Message::user("1+2?")],
            None,
            &cancel,
            Some(&tools),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Cancelled);
    assert_eq!(runner.calls.lock().unwrap().len(), 1);
    assert_eq!(stored(&store), (None, vec![]));
    assert!(a.history().unwrap().is_empty());
}

#[tokio::test]
async fn reasoning_streams_apart_is_stored_once_and_not_sent_back() {
    let event = |delta: Value| {
        crate::format::StreamEvent::data(
            json!({"model": "m", "choices": [{"index": 0, "delta": delta}]}).to_string(),
        )
    };
    let stream = Answer::Events(vec![
        event(json!({"role": "assistant", "reasoning_content": "Two and "})),
        event(json!({"reasoning_content": "two."})),
        event(json!({"content": "4"})),
        crate::format::StreamEvent::data(
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
        ),
    ]);
    let provider = ScriptedProvider::new(vec![stream, text_body("8")]);
    let store = store();
    let a = agent(provider.clone(), Some(store.clone()), None, vec![]);
    let seen = Mutex::new(Vec::new());
    let on_delta = |d: Delta<'_>| seen.lock().unwrap().push(format!("{d:?}"));
    let outcome = a
        .send_prompt(
            vec![Message::user("2+2?")],
            Some(&on_delta),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "Answering(Answerer { provider: \"scripted\", kind: \"scripted\", model: \"m\", fallback: None, price: None })",
            "Reasoning(\"Two and \")",
            "Reasoning(\"two.\")",
            "Text(\"4\")"
        ]
    );
    assert_eq!(outcome.reply.message.text(), "4");
    assert_eq!(
        outcome.reply.message.content,
        vec![Part::reasoning("Two and two.", None), Part::text("4")]
    );
    let (_, messages) = stored(&store);
    assert_eq!(messages.len(), 2);
    let stored_reasoning: Vec<_> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter(|p| p.is_reasoning())
        .collect();
    assert_eq!(stored_reasoning.len(), 1, "stored once: {messages:?}");
    // The next request carries the answer, not the reasoning.
    a.send_prompt(vec![Message::user("2*4?")], None, &CancellationToken::new())
        .await
        .unwrap();
    let sent = provider.bodies()[1].to_string();
    assert!(!sent.contains("Two and two"), "{sent}");
    assert_eq!(provider.messages_of(1)[1], "assistant: 4");
}

#[tokio::test]
async fn a_fallback_answers_an_unavailable_provider_and_the_deltas_and_outcome_say_who() {
    let own = ScriptedProvider::new(vec![Answer::Unavailable, text_body("again")]);
    let spare = ScriptedProvider::new(vec![text_stream(&["hi"], false)]);
    let mut a = agent(own, None, None, vec![]);
    with_fallback(&mut a, "spare", "backup", spare, "m2");
    let seen = Mutex::new(Vec::new());
    let on_delta = |d: Delta<'_>| {
        seen.lock().unwrap().push(match d {
            Delta::Answering(a) => format!("{} {:?}", a.described(), a.fallback),
            d => format!("{d:?}"),
        })
    };
    let outcome = a
        .send_prompt(
            vec![Message::user("hi")],
            Some(&on_delta),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "scripted (scripted) None",
            "backup (scripted) Some(\"spare\")",
            "Text(\"hi\")"
        ]
    );
    assert_eq!(outcome.answerer.provider, "backup");
    assert_eq!(outcome.answerer.model, "m2");
    assert_eq!(outcome.answerer.fallback.as_deref(), Some("spare"));
    // The next turn is the agent's own again: nothing of the last one stays on the agent.
    let again = a
        .send_prompt(
            vec![Message::user("again")],
            None,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(again.answerer.described(), "scripted (scripted)");
    assert_eq!(again.answerer.fallback, None);
}

#[tokio::test]
async fn a_failed_prompts_notes_end_with_it_and_never_reach_the_next_turns_details() {
    let own = ScriptedProvider::new(vec![Answer::Unavailable, text_body("fine")]);
    let spare = ScriptedProvider::new(vec![Answer::Unavailable]);
    let mut a = agent(own, None, None, vec![]);
    with_fallback(&mut a, "spare", "backup", spare, "m2");
    let failed = a
        .send_prompt(vec![Message::user("hi")], None, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        failed.message.contains("every fallback failed"),
        "{failed:?}"
    );
    // What the next turn's feature takes before its prompt: nothing of the failed one.
    assert_eq!(a.take_notes(), Vec::<String>::new());
    let next = a
        .send_prompt(
            vec![Message::user("again")],
            None,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(
        next.notes.iter().all(|n| !n.contains("failed")),
        "{:?}",
        next.notes
    );
}

#[tokio::test]
async fn a_parameter_set_during_a_turn_changes_the_turns_after_it_not_that_one() {
    let provider = ScriptedProvider::new(vec![
        calls_body(&[("c1", "add", json!({"a": 1, "b": 2}))]),
        text_body("3"),
        text_body("again"),
    ]);
    let a = agent(provider.clone(), None, None, vec![]);
    let before = a.binding();
    // The tools of the first round set a parameter while the turn runs.
    let runner = Runner::new(None);
    let run = |calls: Vec<(String, String, Value)>| {
        a.set_parameter("temperature", json!(0.5)).unwrap();
        runner.run(calls)
    };
    ask_sum(&a, &tool_loop(&run, 4, ToolMode::Native)).await;
    a.send_prompt(
        vec![Message::user("again")],
        None,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let bodies = provider.bodies();
    assert_eq!(
        bodies[1]["temperature"],
        Value::Null,
        "the running turn's binding"
    );
    assert_eq!(bodies[2]["temperature"], json!(0.5), "the next turn's");
    // A binding taken is a value: the parameter set made a new one.
    assert!(!before.model.parameters.contains_key("temperature"));
    assert_eq!(a.binding().model.parameters["temperature"], json!(0.5));
}
