//! Tests of manifest signatures: the documented examples, odd but valid inputs, and errors
//! that say where and why.

use super::*;

fn ok(text: &str) -> Signature {
    parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn err(text: &str) -> String {
    match parse(text) {
        Ok(s) => panic!("{text} parsed as {s:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_documented_examples_parse() {
    assert_eq!(
        ok("getEvents()"),
        Signature {
            name: "getEvents".into(),
            params: vec![]
        }
    );
    let s = ok(r#"eventParticipation({ eventId: "ID of the event", participation: "YES or NO" })"#);
    assert_eq!(s.name, "eventParticipation");
    assert_eq!(
        s.params,
        vec![
            ("eventId".into(), "ID of the event".into()),
            ("participation".into(), "YES or NO".into())
        ]
    );
    assert_eq!(
        s.input_schema(),
        json!({
            "type": "object",
            "properties": {
                "eventId": {"type": "string", "description": "ID of the event"},
                "participation": {"type": "string", "description": "YES or NO"}
            },
            "required": ["eventId", "participation"],
            "additionalProperties": false
        })
    );
}

#[test]
fn odd_but_valid_inputs() {
    // Blanks and new lines anywhere, a trailing comma, single quotes, quoted keys,
    // escapes, empty braces, unicode names and descriptions.
    let s = ok("  search ( {\n  'query' : 'what to look for, e.g. \\'cats\\'',\n  \"limit\": \"max \\\"results\\\"\",\n } )  ");
    assert_eq!(s.name, "search");
    assert_eq!(
        s.params,
        vec![
            ("query".into(), "what to look for, e.g. 'cats'".into()),
            ("limit".into(), "max \"results\"".into())
        ]
    );
    assert_eq!(ok("ping({})").params, vec![]);
    let s = ok(r#"réserver({ $date: "jour \u00e9 (AAAA-MM-JJ)", _n: "" })"#);
    assert_eq!(s.name, "réserver");
    assert_eq!(
        s.params,
        vec![
            ("$date".into(), "jour é (AAAA-MM-JJ)".into()),
            ("_n".into(), String::new())
        ]
    );
    // Braces and parentheses inside descriptions are text.
    let s = ok(r#"f({ a: "x) } ({" })"#);
    assert_eq!(s.params, vec![("a".into(), "x) } ({".into())]);
}

#[test]
fn bad_inputs_say_where_and_why() {
    assert_eq!(
        err(""),
        "at column 1: expected the method name, found the end"
    );
    assert_eq!(
        err("getEvents"),
        "at column 10: expected `(`, found the end"
    );
    assert_eq!(
        err("1abc()"),
        "at column 1: expected the method name, found `1`"
    );
    assert_eq!(
        err("f({ a: \"x\" "),
        "at column 12: expected `,` or `}`, found the end"
    );
    assert_eq!(
        err("f({ a \"x\" })"),
        "at column 7: expected `:`, found `\"`"
    );
    assert_eq!(
        err("f({ a: x })"),
        "at column 8: expected the description of `a` as a quoted string, found `x`"
    );
    assert_eq!(
        err("f({ a: \"x })"),
        "at column 8: this string is not closed"
    );
    assert_eq!(
        err("f({ a: \"x\", a: \"y\" })"),
        "at column 13: parameter `a` appears twice"
    );
    assert_eq!(
        err("f() extra"),
        "at column 5: unexpected text after `)`, found `e`"
    );
    assert_eq!(err("f(a, b)"), "at column 3: expected `)`, found `a`");
    assert_eq!(
        err("f({ , })"),
        "at column 5: expected a parameter name or `}`, found `,`"
    );
    assert!(err(r#"f({ a: "\u00zz" })"#).contains("is not a character"));
}
