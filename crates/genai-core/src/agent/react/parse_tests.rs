//! Tests of the ReAct parser and its stream: thoughts, actions and their inputs, final answers,
//! invented observations cut off, and what the stream shows.

use super::*;
use serde_json::json;

pub(in crate::agent) fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "calc__add".into(),
            description: "Adds two numbers.".into(),
            input_schema: json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a", "b"]}),
        },
        ToolSpec {
            name: "search".into(),
            description: "Searches the web.".into(),
            input_schema: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
        },
    ]
}

fn acts(text: &str) -> Vec<Action> {
    match parse(text, &tools()).step {
        Step::Act { actions, .. } => actions,
        other => panic!("not an action: {other:?} from {text:?}"),
    }
}

fn one(text: &str) -> Action {
    let a = acts(text);
    assert_eq!(a.len(), 1, "{a:?}");
    a.into_iter().next().unwrap()
}

fn final_of(text: &str) -> String {
    match parse(text, &tools()).step {
        Step::Final(t) => t,
        other => panic!("not final: {other:?} from {text:?}"),
    }
}

#[test]
fn a_plain_action_is_read_with_its_thought() {
    let p = parse(
        "Thought: I must add.\nAction: calc__add\nAction Input: {\"a\": \"2\", \"b\": \"3\"}",
        &tools(),
    );
    assert_eq!(
        p.step,
        Step::Act {
            thought: Some("I must add.".into()),
            actions: vec![Action {
                tool: "calc__add".into(),
                arguments: json!({"a": "2", "b": "3"}),
                error: None
            }]
        }
    );
}

#[test]
fn labels_are_case_insensitive_and_may_be_in_markdown() {
    let a = one("**thought:** hm\n**ACTION:** `calc.add`\n**Action Input**: ```json\n{\"a\": \"1\", \"b\": \"2\"}\n```\n");
    assert_eq!(
        (a.tool.as_str(), &a.arguments),
        ("calc__add", &json!({"a": "1", "b": "2"}))
    );
    assert_eq!(a.error, None);
    let a = one("## Action: Calc__Add\n- action_input: `{\"a\": \"1\", \"b\": \"2\"}`");
    assert_eq!(a.arguments, json!({"a": "1", "b": "2"}));
}

#[test]
fn json_followed_by_text_is_read() {
    let a = one("Action: calc__add\nAction Input: {\"a\": \"1\", \"b\": \"2\"} and then I will see.\nMore words.");
    assert_eq!(a.arguments, json!({"a": "1", "b": "2"}));
    assert_eq!(a.error, None);
}

#[test]
fn a_bare_input_fills_a_single_parameter_tool() {
    let a = one("Action: search\nAction Input: weather in Paris");
    assert_eq!(a.arguments, json!({"query": "weather in Paris"}));
    let a = one("Action: search\nAction Input: \"quoted\"");
    assert_eq!(a.arguments, json!({"query": "quoted"}));
    // Not for a tool with two parameters.
    let a = one("Action: calc__add\nAction Input: 2 and 3");
    assert!(
        a.error.as_deref().unwrap().contains("one JSON object"),
        "{a:?}"
    );
}

#[test]
fn several_actions_are_parallel_calls() {
    let a = acts("Thought: both\nAction: search\nAction Input: {\"query\": \"x\"}\n\nAction: calc__add\nAction Input: {\"a\": \"1\", \"b\": \"1\"}\n");
    let names: Vec<&str> = a.iter().map(|a| a.tool.as_str()).collect();
    assert_eq!(names, ["search", "calc__add"]);
    assert_eq!(a[0].arguments, json!({"query": "x"}));
    assert_eq!(a[1].arguments, json!({"a": "1", "b": "1"}));
}

#[test]
fn an_unknown_tool_gets_the_valid_names() {
    let a = one("Action: multiply\nAction Input: {}");
    assert_eq!(a.tool, "multiply");
    let e = a.error.unwrap();
    assert!(
        e.contains("`multiply` is not a tool") && e.contains("calc__add, search"),
        "{e}"
    );
    let a = one("Action:\nAction Input: {}");
    assert!(a.error.unwrap().contains("names no tool"));
}

#[test]
fn malformed_json_gets_the_parse_error() {
    let a = one("Action: calc__add\nAction Input: {\"a\": \"1\", \"b\": }");
    let e = a.error.unwrap();
    assert!(e.contains("not valid JSON") && e.contains("column"), "{e}");
    assert_eq!(a.arguments, json!("{\"a\": \"1\", \"b\": }"));
}

#[test]
fn an_invented_observation_is_cut_off() {
    let p = parse(
        "Action: search\nAction Input: {\"query\": \"x\"}\nObservation: sunny\nFinal Answer: sunny",
        &tools(),
    );
    assert_eq!(p.text, "Action: search\nAction Input: {\"query\": \"x\"}");
    assert!(matches!(p.step, Step::Act { ref actions, .. } if actions.len() == 1));
}

#[test]
fn final_answers_and_text_without_labels() {
    for (text, answer) in [
        ("Thought: easy.\nFinal Answer: 5", "5"),
        ("**Final Answer:** five\nand more", "five\nand more"),
        ("I think so. Final Answer: yes", "yes"),
        ("Thought: easy. final answer: 5", "5"),
        ("Just a reply.", "Just a reply."),
        (
            "Thought: no tools needed, hello!",
            "no tools needed, hello!",
        ),
        ("", ""),
        // A final answer before an action wins.
        ("Final Answer: 5\nAction: search", "5"),
    ] {
        assert_eq!(final_of(text), answer, "{text:?}");
    }
}

#[test]
fn an_action_without_input_has_no_arguments_and_inline_input_is_read() {
    assert_eq!(one("Action: search").arguments, json!({}));
    assert_eq!(
        one("Action: search\n{\"query\": \"x\"}").arguments,
        json!({"query": "x"})
    );
    assert_eq!(
        one("Action: calc__add {\"a\": \"1\", \"b\": \"2\"}").arguments,
        json!({"a": "1", "b": "2"})
    );
    assert_eq!(
        one("Action: calc__add({\"a\": \"1\", \"b\": \"2\"})").arguments,
        json!({"a": "1", "b": "2"})
    );
}

fn stream(pieces: &[&str], answer_of_parser: bool) -> (String, String) {
    let text: String = pieces.concat();
    let mut f = StreamFilter::new();
    let mut shown = String::new();
    for p in pieces {
        shown.push_str(&f.push(p));
    }
    let answer = match parse(&text, &tools()).step {
        Step::Final(a) => a,
        Step::Act { .. } => String::new(),
    };
    if answer_of_parser {
        shown.push_str(&f.finish(&answer));
    }
    (shown, answer)
}

#[test]
fn the_stream_shows_only_the_final_answer() {
    let (shown, answer) = stream(
        &[
            "Thou",
            "ght: easy\nFin",
            "al Ans",
            "wer:",
            " The",
            " sum is",
            " 5.\n",
            "Observ",
            "ation: 5",
        ],
        false,
    );
    assert_eq!(answer, "The sum is 5.");
    assert_eq!(shown, "The sum is 5.", "shown before the end");
    let (shown, _) = stream(
        &[
            "Thought: x\nAct",
            "ion: search\nAction Input: {}",
            "\nFinal Answer: no",
        ],
        false,
    );
    assert_eq!(shown, "");
}

#[test]
fn the_stream_releases_text_without_labels_at_the_end() {
    let mut f = StreamFilter::new();
    assert_eq!(f.push("Hello"), "");
    assert_eq!(f.push(" there"), "");
    assert_eq!(f.finish("Hello there"), "Hello there");
    let (shown, answer) = stream(&["Final Answer: ", "4", "2  "], true);
    assert_eq!((shown.as_str(), answer.as_str()), ("42", "42"));
    let (shown, _) = stream(&["Final Answer: Ob", "viously yes"], true);
    assert_eq!(shown, "Obviously yes");
}
