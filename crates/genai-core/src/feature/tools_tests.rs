//! Tests of the `tools` feature's action markers: held back while streamed, found and removed.

use super::*;
use serde_json::json;

#[test]
fn streamed_markers_are_held_back_and_dropped_when_known() {
    let known = |m: &str| m == "[[WAVE]]";
    let mut f = MarkerFilter::default();
    let pieces = [
        "Hello [",
        "[WA",
        "VE]] and [[NOT",
        "]] a [",
        "b] ok [[",
        "x\ny",
    ];
    let shown: Vec<String> = pieces.iter().map(|p| f.push(p, known)).collect();
    assert_eq!(
        shown,
        ["Hello ", "", " and ", "[[NOT]] a ", "[b] ok ", "[[x\ny"]
    );
    assert_eq!(f.push("tail [[open", known), "tail ");
    assert_eq!(f.flush(), "[[open");
    let mut f = MarkerFilter::default();
    let long = format!("[[{}", "a".repeat(300));
    assert_eq!(f.push(&long, known), long);
}

#[test]
fn action_markers_are_found_in_order_and_removed() {
    let actions = vec![
        json!({"code": "[[ACTION.PLAY_ANIMATION.WAIT]]", "type": "PLAY_ANIMATION"}),
        json!({"code": "WAVE", "type": "GESTURE"}),
        json!({"code": "UNUSED", "type": "X"}),
    ];
    let (found, shown) = take_actions(
        "Hello [[WAVE]] and now [[ACTION.PLAY_ANIMATION.WAIT]] then [[WAVE]]",
        &actions,
    );
    let types: Vec<&str> = found.iter().map(|a| a["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["GESTURE", "PLAY_ANIMATION", "GESTURE"]);
    assert_eq!(shown, "Hello  and now  then");
    let (found, shown) = take_actions("no markers", &actions);
    assert!(found.is_empty());
    assert_eq!(shown, "no markers");
}
