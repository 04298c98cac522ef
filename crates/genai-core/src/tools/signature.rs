//! The method signatures of plugin module manifests, such as
//! `eventParticipation({ eventId: "ID of the event", participation: "YES or NO" })`, parsed
//! into a tool's name and JSON input schema (each named parameter a string property described by
//! its text).
//!
//! Written by hand because the grammar is a small JavaScript-like fragment that no crate parses
//! as such (it is neither JSON nor a full JS expression), and errors must point at the column.
//! It owns that grammar only; it must never fetch or call anything.
//!
//! ```text
//! signature  = ws ident ws "(" ws [ params ws ] ")" ws
//! params     = "{" ws [ param *( ws "," ws param ) ws [ "," ws ] ] "}"
//! param      = key ws ":" ws string
//! key        = ident | string
//! string     = '"' chars '"' | "'" chars "'"      (backslash escapes: \" \' \\ \n \t \uXXXX)
//! ident      = (letter | "_" | "$") *(letter | digit | "_" | "$")
//! ```

use std::fmt;

use serde_json::{json, Map, Value};

/// A parsed signature: the method name and its parameters in order, each with its description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub name: String,
    pub params: Vec<(String, String)>,
}

/// Why a signature does not parse, with the 1-based column where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureError {
    pub column: usize,
    pub message: String,
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at column {}: {}", self.column, self.message)
    }
}

impl Signature {
    /// The tool's input schema: an object with one required string property per parameter.
    pub fn input_schema(&self) -> Value {
        let mut properties = Map::new();
        for (name, description) in &self.params {
            properties.insert(
                name.clone(),
                json!({"type": "string", "description": description}),
            );
        }
        let required: Vec<&str> = self.params.iter().map(|(n, _)| n.as_str()).collect();
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    }
}

/// Parses one `method` signature.
pub fn parse(text: &str) -> Result<Signature, SignatureError> {
    let mut p = Parser {
        chars: text.chars().collect(),
        pos: 0,
    };
    p.ws();
    let name = p
        .ident()
        .ok_or_else(|| p.error("expected the method name"))?;
    p.ws();
    p.expect('(')?;
    p.ws();
    let mut params: Vec<(String, String)> = Vec::new();
    if p.peek() == Some('{') {
        p.pos += 1;
        loop {
            p.ws();
            if p.peek() == Some('}') {
                p.pos += 1;
                break;
            }
            let at = p.pos;
            let key = match p.peek() {
                Some('"' | '\'') => p.string()?,
                _ => p
                    .ident()
                    .ok_or_else(|| p.error("expected a parameter name or `}`"))?,
            };
            if params.iter().any(|(k, _)| *k == key) {
                return Err(SignatureError {
                    column: at + 1,
                    message: format!("parameter `{key}` appears twice"),
                });
            }
            p.ws();
            p.expect(':')?;
            p.ws();
            if !matches!(p.peek(), Some('"' | '\'')) {
                return Err(p.error(&format!(
                    "expected the description of `{key}` as a quoted string"
                )));
            }
            let description = p.string()?;
            params.push((key, description));
            p.ws();
            match p.peek() {
                Some(',') => p.pos += 1,
                Some('}') => {}
                _ => return Err(p.error("expected `,` or `}`")),
            }
        }
        p.ws();
    }
    p.expect(')')?;
    p.ws();
    if p.pos < p.chars.len() {
        return Err(p.error("unexpected text after `)`"));
    }
    Ok(Signature { name, params })
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn error(&self, message: &str) -> SignatureError {
        let found = match self.peek() {
            Some(c) => format!("`{c}`"),
            None => "the end".to_string(),
        };
        SignatureError {
            column: self.pos + 1,
            message: format!("{message}, found {found}"),
        }
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, c: char) -> Result<(), SignatureError> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected `{c}`")))
        }
    }

    fn ident(&mut self) -> Option<String> {
        let start = self.pos;
        match self.peek() {
            Some(c) if c.is_alphabetic() || c == '_' || c == '$' => self.pos += 1,
            _ => return None,
        }
        while self
            .peek()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$')
        {
            self.pos += 1;
        }
        Some(self.chars[start..self.pos].iter().collect())
    }

    fn string(&mut self) -> Result<String, SignatureError> {
        let quote = self.peek().expect("called on a quote");
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(SignatureError {
                    column: start + 1,
                    message: "this string is not closed".to_string(),
                });
            };
            self.pos += 1;
            match c {
                c if c == quote => return Ok(out),
                '\\' => {
                    let Some(e) = self.peek() else { continue };
                    self.pos += 1;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'u' => {
                            let hex: String = self.chars.iter().skip(self.pos).take(4).collect();
                            let code = u32::from_str_radix(&hex, 16)
                                .ok()
                                .filter(|_| hex.len() == 4)
                                .and_then(char::from_u32)
                                .ok_or_else(|| SignatureError {
                                    column: self.pos - 1,
                                    message: format!("`\\u{hex}` is not a character"),
                                })?;
                            self.pos += 4;
                            out.push(code);
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
        let s =
            ok(r#"eventParticipation({ eventId: "ID of the event", participation: "YES or NO" })"#);
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
}
