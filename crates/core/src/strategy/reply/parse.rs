//! A reply rule's text into its tree: the lexer, and a recursive-descent
//! parser that checks at parse time that decisions compare and values do
//! not (`Rule::decision`, `Rule::value` in `mod.rs` call [`parse`]).

use super::{Arith, Cmp, Lit, Node, VARS, num_text};

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Var(String),
    Op(&'static str),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            let t = &s[start..i];
            out.push(Tok::Num(
                t.parse().map_err(|_| format!("`{t}` is not a number"))?,
            ));
        } else if c == '"' || c == '\'' {
            let end = s[i + 1..]
                .find(c)
                .ok_or_else(|| format!("unclosed string starting at `{}`", &s[i..]))?;
            out.push(Tok::Str(s[i + 1..i + 1 + end].to_string()));
            i += end + 2;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
        } else if s[i..].starts_with("${") {
            let end = s[i..]
                .find('}')
                .ok_or_else(|| format!("unclosed `${{` in `{s}`"))?;
            out.push(Tok::Var(s[i + 2..i + end].to_string()));
            i += end + 1;
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            let op = ["==", "!=", "~=", "<=", ">="]
                .into_iter()
                .find(|o| *o == two)
                .or_else(|| {
                    ["<", ">", "+", "-", "*", "(", ")", "[", "]"]
                        .into_iter()
                        .find(|o| o.as_bytes()[0] == b[i])
                })
                .ok_or_else(|| format!("unexpected `{c}`"))?;
            i += op.len();
            out.push(Tok::Op(if op == "~=" { "!=" } else { op }));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }
    fn eat_op(&mut self, op: &str) -> bool {
        if self.peek() == Some(&Tok::Op(leak(op))) {
            self.at += 1;
            true
        } else {
            false
        }
    }
    fn eat_word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Ident(x)) if x == w) {
            self.at += 1;
            true
        } else {
            false
        }
    }
    fn expect_op(&mut self, op: &str) -> Result<(), String> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(format!("expected `{op}`, found {}", self.found()))
        }
    }
    fn found(&self) -> String {
        match self.peek() {
            None => "the end".into(),
            Some(Tok::Num(n)) => format!("`{}`", num_text(*n)),
            Some(Tok::Str(s)) => format!("`{s:?}`"),
            Some(Tok::Ident(s)) => format!("`{s}`"),
            Some(Tok::Var(s)) => format!("`${{{s}}}`"),
            Some(Tok::Op(o)) => format!("`{o}`"),
        }
    }

    fn or(&mut self) -> Result<Node, String> {
        let mut a = self.and()?;
        while self.eat_word("or") {
            let b = self.and()?;
            a = Node::Or(
                Box::new(bool_operand(a, "or")?),
                Box::new(bool_operand(b, "or")?),
            );
        }
        Ok(a)
    }
    fn and(&mut self) -> Result<Node, String> {
        let mut a = self.not()?;
        while self.eat_word("and") {
            let b = self.not()?;
            a = Node::And(
                Box::new(bool_operand(a, "and")?),
                Box::new(bool_operand(b, "and")?),
            );
        }
        Ok(a)
    }
    fn not(&mut self) -> Result<Node, String> {
        if self.eat_word("not") {
            return Ok(Node::Not(Box::new(bool_operand(self.not()?, "not")?)));
        }
        self.cmp()
    }
    fn cmp(&mut self) -> Result<Node, String> {
        let a = self.sum()?;
        let op = match self.peek() {
            Some(Tok::Op("==")) => Cmp::Eq,
            Some(Tok::Op("!=")) => Cmp::Ne,
            Some(Tok::Op("<")) => Cmp::Lt,
            Some(Tok::Op("<=")) => Cmp::Le,
            Some(Tok::Op(">")) => Cmp::Gt,
            Some(Tok::Op(">=")) => Cmp::Ge,
            _ => return Ok(a),
        };
        self.at += 1;
        let b = self.sum()?;
        for side in [&a, &b] {
            if side.is_bool() {
                return Err(format!(
                    "`{}` is a comparison; compare values, and join comparisons with and/or",
                    side.text()
                ));
            }
        }
        let ordering = !matches!(op, Cmp::Eq | Cmp::Ne);
        if ordering
            && [&a, &b]
                .iter()
                .any(|s| matches!(s, Node::Lit(Lit::Nil | Lit::Bool(_) | Lit::Str(_))))
        {
            return Err(format!(
                "`{} {} {}` orders a nil, boolean or string literal; `<`, `<=`, `>`, `>=` compare numbers",
                a.text(),
                op.text(),
                b.text()
            ));
        }
        Ok(Node::Cmp(op, Box::new(a), Box::new(b)))
    }
    fn sum(&mut self) -> Result<Node, String> {
        let mut a = self.product()?;
        loop {
            let op = if self.eat_op("+") {
                Arith::Add
            } else if self.eat_op("-") {
                Arith::Sub
            } else {
                return Ok(a);
            };
            let b = self.product()?;
            a = Node::Arith(op, Box::new(value_operand(a)?), Box::new(value_operand(b)?));
        }
    }
    fn product(&mut self) -> Result<Node, String> {
        let mut a = self.unary()?;
        while self.eat_op("*") {
            let b = self.unary()?;
            a = Node::Arith(
                Arith::Mul,
                Box::new(value_operand(a)?),
                Box::new(value_operand(b)?),
            );
        }
        Ok(a)
    }
    fn unary(&mut self) -> Result<Node, String> {
        if self.eat_op("-") {
            return Ok(match self.unary()? {
                Node::Lit(Lit::Num(n)) => Node::Lit(Lit::Num(-n)),
                x => Node::Neg(Box::new(value_operand(x)?)),
            });
        }
        self.primary()
    }
    fn primary(&mut self) -> Result<Node, String> {
        let t = self
            .peek()
            .cloned()
            .ok_or_else(|| "the rule ends where a value was expected".to_string())?;
        self.at += 1;
        Ok(match t {
            Tok::Num(n) => Node::Lit(Lit::Num(n)),
            Tok::Str(s) => Node::Lit(Lit::Str(s)),
            Tok::Var(v) => Node::Var(VARS.iter().position(|x| *x == v).ok_or_else(|| {
                format!(
                    "unknown placeholder `${{{v}}}` in a reply rule (known: {})",
                    VARS.iter()
                        .map(|x| format!("${{{x}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?),
            Tok::Op("(") => {
                let inner = self.or()?;
                self.expect_op(")")?;
                inner
            }
            Tok::Ident(w) => match w.as_str() {
                "nil" => Node::Lit(Lit::Nil),
                "true" => Node::Lit(Lit::Bool(true)),
                "false" => Node::Lit(Lit::Bool(false)),
                "num" => {
                    self.expect_op("(")?;
                    let x = value_operand(self.or()?)?;
                    self.expect_op(")")?;
                    Node::Num(Box::new(x))
                }
                "reply" => {
                    let mut ix = Vec::new();
                    while self.eat_op("[") {
                        match self.peek() {
                            Some(Tok::Num(n)) if n.fract() == 0.0 && *n >= 1.0 => {
                                ix.push(*n as usize - 1);
                                self.at += 1;
                            }
                            _ => {
                                return Err(format!(
                                    "positions are whole numbers from 1 (as in Lua), found {}",
                                    self.found()
                                ));
                            }
                        }
                        self.expect_op("]")?;
                    }
                    Node::Reply(ix)
                }
                other => {
                    return Err(format!(
                        "unknown word `{other}` (a rule reads `reply`, `reply[i]`, numbers, strings, nil, true, false, ${{placeholders}}, num(...), and, or, not)"
                    ));
                }
            },
            Tok::Op(o) => return Err(format!("unexpected `{o}` where a value was expected")),
        })
    }
}

/// `Tok::Op` holds `&'static str`s from a fixed list; find the static one.
fn leak(op: &str) -> &'static str {
    [
        "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "(", ")", "[", "]",
    ]
    .into_iter()
    .find(|o| *o == op)
    .expect("a known operator")
}

fn bool_operand(n: Node, op: &str) -> Result<Node, String> {
    if n.is_bool() {
        Ok(n)
    } else {
        Err(format!(
            "`{op}` joins comparisons, but `{}` is a value (write e.g. `{} == 1`)",
            n.text(),
            n.text()
        ))
    }
}

pub(super) fn value_operand(n: Node) -> Result<Node, String> {
    if n.is_bool() {
        Err(format!(
            "`{}` is a comparison where a value is expected",
            n.text()
        ))
    } else {
        Ok(n)
    }
}

pub(super) fn parse(text: &str) -> Result<Node, String> {
    let mut p = Parser {
        toks: lex(text)?,
        at: 0,
    };
    if p.toks.is_empty() {
        return Err("empty rule".into());
    }
    let n = p.or()?;
    if p.at < p.toks.len() {
        return Err(format!("unexpected {} after `{}`", p.found(), n.text()));
    }
    Ok(n)
}
