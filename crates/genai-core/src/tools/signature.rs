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
    pub(crate) name: String,
    pub(crate) params: Vec<(String, String)>,
}

/// Why a signature does not parse, with the 1-based column where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureError {
    pub(crate) column: usize,
    pub(crate) message: String,
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
#[path = "signature_tests.rs"]
mod tests;
