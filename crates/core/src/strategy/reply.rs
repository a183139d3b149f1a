//! How a script's reply becomes a decision: a small rule language.
//!
//! Limiters people ship answer in many shapes: `{1, remaining}`, the number
//! of units granted, the remaining count with -1 for refused, the hit count
//! that the client compares with the limit, nil for refused, a bare integer
//! or a Lua boolean, a string ("1", a retry-after) somewhere in an array. A
//! manifest says how to read its script's reply with one rule per field
//! (`[reply]` in the manifest, `external.rs`):
//!
//! ```toml
//! admitted = "reply[2] >= 0"             # remaining, -1 when refused
//! admitted = "reply <= ${limit}"         # the hit count, compared by the caller
//! admitted = "reply[1] != nil"           # nil (or an empty array) when refused
//! remaining = "${limit} - reply"         # an expression: a number
//! redis_time_us = "num(reply[3][1]) * 1000000 + num(reply[3][2])"   # TIME as returned
//! admitted = 1                           # the position form: reply[1] is 1 or 0
//! ```
//!
//! Why a language rather than more switches: each shape is one line in it,
//! and a rule that does not fit the reply it meets is an error that says
//! what arrived, never a silent refusal. The rules are typed as Redis
//! converts Lua values: a Lua number arrives as an integer (truncated), a
//! string as a string, `true` as the integer 1, `false` and `nil` as nil
//! (and an array stops at its first nil). So:
//!
//! - `reply` is the whole reply, `reply[i]` its i-th element (1-based, as in
//!   Lua), `reply[i][j]` nested; an element past the end is nil, and so is
//!   any element of a nil reply (`reply[1] != nil` reads "nil when refused"
//!   whether the script returns nil or `{}`); indexing a number or a string
//!   is an error.
//! - Literals: integers and decimals (`-1`, `0.5`), strings (`"1"` or
//!   `'1'`), `nil`, `true`, `false`; placeholders `${limit}`, `${capacity}`,
//!   `${cost}`, `${window_ms}`, `${window_s}`, `${rate_per_s}` (the request's).
//! - `+ - *` on numbers; `num(x)` reads a string as a number (a retry-after
//!   sent as text); comparisons `== != ~= < <= > >=`; `and`, `or`, `not`,
//!   parentheses.
//! - Comparing a string with a number, nil with a number, or ordering
//!   strings is an error that shows both sides: `reply[1] == 1` against a
//!   reply `"1"` says so instead of guessing. `x == nil` / `x != nil` never
//!   fail. `x == true` holds for 1, `x == false` for nil, and any other
//!   value there is an error (it is not a Lua boolean as Redis returns it).
//! - The position form `admitted = N` reads `reply[N]`: 1 admitted, 0
//!   refused, anything else an error that suggests a rule (a count of 3 is
//!   not read as a refusal).
//!
//! Numbers are f64, exact for integers up to 2^53 (Redis's time in µs is
//! about 1.7e15). `remaining` and `redis_time_us` are expressions; nil there
//! means "not reported for this decision" (a negative time too).

use crate::resp::Reply;

use super::Request;

/// A parsed rule (`admitted`) or expression (`remaining`, `redis_time_us`),
/// with the text it was written as.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    node: Node,
}

/// The three fields of a reply map, as rules.
#[derive(Debug, Clone)]
pub struct ReplyRules {
    /// Evaluates to a boolean: admitted or not.
    pub admitted: Rule,
    /// A number: the allowance left after this decision.
    pub remaining: Option<Rule>,
    /// A number: Redis's `TIME` in µs as the script read it.
    pub redis_time_us: Option<Rule>,
}

/// Why a rule could not be applied to a reply: what it met, in words.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem(pub String);

/// The request values a rule may name.
const VARS: &[&str] = &[
    "limit",
    "capacity",
    "cost",
    "window_ms",
    "window_s",
    "rate_per_s",
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    fn text(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Arith {
    Add,
    Sub,
    Mul,
}

#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Num(f64),
    Str(String),
    Nil,
    Bool(bool),
}

#[derive(Debug, Clone)]
enum Node {
    /// `reply[i][j]...`, 0-based indices.
    Reply(Vec<usize>),
    Lit(Lit),
    /// A request value, an index into `VARS`.
    Var(usize),
    Num(Box<Node>),
    Neg(Box<Node>),
    Arith(Arith, Box<Node>, Box<Node>),
    Cmp(Cmp, Box<Node>, Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
    /// The position form: `reply[i]` is 1 (true) or 0 (false).
    Flag(Vec<usize>),
}

impl Node {
    fn is_bool(&self) -> bool {
        matches!(
            self,
            Node::Cmp(..) | Node::And(..) | Node::Or(..) | Node::Not(_) | Node::Flag(_)
        )
    }

    /// The node as it would be written (for messages).
    fn text(&self) -> String {
        match self {
            Node::Reply(ix) | Node::Flag(ix) => path_text(ix),
            Node::Lit(Lit::Num(n)) => num_text(*n),
            Node::Lit(Lit::Str(s)) => format!("{s:?}"),
            Node::Lit(Lit::Nil) => "nil".into(),
            Node::Lit(Lit::Bool(b)) => b.to_string(),
            Node::Var(i) => format!("${{{}}}", VARS[*i]),
            Node::Num(x) => format!("num({})", x.text()),
            Node::Neg(x) => format!("-{}", x.text()),
            Node::Arith(op, a, b) => {
                let o = match op {
                    Arith::Add => "+",
                    Arith::Sub => "-",
                    Arith::Mul => "*",
                };
                format!("{} {o} {}", a.text(), b.text())
            }
            Node::Cmp(op, a, b) => format!("{} {} {}", a.text(), op.text(), b.text()),
            Node::And(a, b) => format!("({} and {})", a.text(), b.text()),
            Node::Or(a, b) => format!("({} or {})", a.text(), b.text()),
            Node::Not(a) => format!("not {}", a.text()),
        }
    }
}

fn path_text(ix: &[usize]) -> String {
    let mut s = "reply".to_string();
    for i in ix {
        s += &format!("[{}]", i + 1);
    }
    s
}

fn num_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

// ---- Parsing ----

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

fn value_operand(n: Node) -> Result<Node, String> {
    if n.is_bool() {
        Err(format!(
            "`{}` is a comparison where a value is expected",
            n.text()
        ))
    } else {
        Ok(n)
    }
}

fn parse(text: &str) -> Result<Node, String> {
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

impl Rule {
    /// A decision rule: it must compare (`reply[1] == 1`, joined by and/or).
    pub fn decision(text: &str) -> Result<Self, String> {
        let node = parse(text)?;
        if !node.is_bool() {
            return Err(format!(
                "`{text}` is a value, not a decision: compare it, e.g. `{text} == 1`, `{text} >= 0`, `{text} != nil`"
            ));
        }
        Ok(Rule {
            text: text.to_string(),
            node,
        })
    }

    /// A number (`remaining`, `redis_time_us`): no comparison at the top.
    pub fn value(text: &str) -> Result<Self, String> {
        let node = value_operand(parse(text)?)?;
        Ok(Rule {
            text: text.to_string(),
            node,
        })
    }

    /// The position form of `admitted`: reply[`pos`] (0-based) is 1 or 0.
    pub fn flag_at(pos: usize) -> Self {
        Rule {
            text: (pos + 1).to_string(),
            node: Node::Flag(vec![pos]),
        }
    }

    /// The position form of a number: reply[`pos`] (0-based).
    pub fn at(pos: usize) -> Self {
        Rule {
            text: (pos + 1).to_string(),
            node: Node::Reply(vec![pos]),
        }
    }

    /// The rule as written in the manifest: `"reply[1] >= 0"`, or `1` for a position.
    pub fn text(&self) -> String {
        match self.node {
            Node::Flag(_) => self.text.clone(),
            Node::Reply(_) if self.text.parse::<usize>().is_ok() => self.text.clone(),
            _ => format!("{:?}", self.text),
        }
    }

    /// Apply a decision rule.
    pub fn admitted(&self, reply: &Reply, req: &Request<'_>) -> Result<bool, Problem> {
        truth(&self.node, reply, req)
    }

    /// Apply a number rule: `None` when it reads nil.
    pub fn number(&self, reply: &Reply, req: &Request<'_>) -> Result<Option<f64>, Problem> {
        match value(&self.node, reply, req)? {
            V::Nil(_) => Ok(None),
            V::Num(n) => Ok(Some(n)),
            v => Err(Problem(format!(
                "{} is {}, not a number{}",
                self.node.text(),
                v.describe(),
                v.hint(&self.node)
            ))),
        }
    }
}

// ---- Evaluation ----

/// A value met while applying a rule.
#[derive(Debug, Clone, Copy)]
enum V<'a> {
    /// Nil; `Some(n)` when the element was past the end of an array of n.
    Nil(Option<usize>),
    Num(f64),
    Str(&'a [u8]),
    Arr(&'a [Reply]),
    Bool(bool),
    Error(&'a str),
}

impl V<'_> {
    fn describe(&self) -> String {
        match self {
            V::Nil(None) => "nil".into(),
            V::Nil(Some(n)) => format!(
                "absent (nil: the reply array has {n} element{})",
                if *n == 1 { "" } else { "s" }
            ),
            V::Num(n) if n.fract() == 0.0 => format!("the integer {}", num_text(*n)),
            V::Num(n) => format!("the number {n}"),
            V::Str(s) => format!("the string {:?}", String::from_utf8_lossy(s)),
            V::Arr(a) => format!("an array of {}", a.len()),
            V::Bool(b) => b.to_string(),
            V::Error(e) => format!("the error reply {e:?}"),
        }
    }

    /// What to write instead, where there is an obvious fix.
    fn hint(&self, node: &Node) -> String {
        match self {
            V::Str(s) if std::str::from_utf8(s).is_ok_and(|t| t.trim().parse::<f64>().is_ok()) => {
                format!(
                    " (write num({}) to read the string as a number)",
                    node.text()
                )
            }
            _ => String::new(),
        }
    }
}

fn value<'a>(n: &'a Node, reply: &'a Reply, req: &Request<'_>) -> Result<V<'a>, Problem> {
    Ok(match n {
        Node::Reply(ix) | Node::Flag(ix) => index(reply, ix)?,
        Node::Lit(Lit::Num(x)) => V::Num(*x),
        Node::Lit(Lit::Nil) => V::Nil(None),
        Node::Lit(Lit::Bool(b)) => V::Bool(*b),
        Node::Lit(Lit::Str(s)) => V::Str(s.as_bytes()),
        Node::Var(i) => V::Num(var(*i, req)),
        Node::Num(x) => match value(x, reply, req)? {
            V::Num(v) => V::Num(v),
            V::Str(s) => V::Num(
                std::str::from_utf8(s)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                    .ok_or_else(|| {
                        Problem(format!(
                            "num({}): {} is the string {:?}, not a number",
                            x.text(),
                            x.text(),
                            String::from_utf8_lossy(s)
                        ))
                    })?,
            ),
            v => {
                return Err(Problem(format!(
                    "num({}): {} is {}, not a number or a string",
                    x.text(),
                    x.text(),
                    v.describe()
                )));
            }
        },
        Node::Neg(x) => V::Num(-number(x, reply, req)?),
        Node::Arith(op, a, b) => {
            let (a, b) = (number(a, reply, req)?, number(b, reply, req)?);
            V::Num(match op {
                Arith::Add => a + b,
                Arith::Sub => a - b,
                Arith::Mul => a * b,
            })
        }
        Node::Cmp(..) | Node::And(..) | Node::Or(..) | Node::Not(_) => {
            unreachable!("comparisons are checked at parse time not to be values")
        }
    })
}

fn var(i: usize, req: &Request<'_>) -> f64 {
    let l = &req.limit;
    match VARS[i] {
        "limit" | "capacity" => l.limit as f64,
        "cost" => req.cost as f64,
        "window_ms" => l.window_ms as f64,
        "window_s" => l.window_ms as f64 / 1000.0,
        "rate_per_s" => l.rate_per_s,
        _ => unreachable!("placeholders are checked at parse time"),
    }
}

fn number<'a>(n: &'a Node, reply: &'a Reply, req: &Request<'_>) -> Result<f64, Problem> {
    match value(n, reply, req)? {
        V::Num(x) => Ok(x),
        v => Err(Problem(format!(
            "{} is {}, where arithmetic needs a number{}",
            n.text(),
            v.describe(),
            v.hint(n)
        ))),
    }
}

fn index<'a>(reply: &'a Reply, ix: &[usize]) -> Result<V<'a>, Problem> {
    let mut at = reply;
    for (depth, &i) in ix.iter().enumerate() {
        match at {
            Reply::Array(items) => match items.get(i) {
                Some(r) => at = r,
                None => return Ok(V::Nil(Some(items.len()))),
            },
            Reply::Nil => return Ok(V::Nil(None)),
            other => {
                let whole = depth == 0;
                return Err(Problem(format!(
                    "{} is {}, not an array, so it has no element [{}]{}",
                    path_text(&ix[..depth]),
                    leaf(other).describe(),
                    i + 1,
                    if whole {
                        " (for a script that returns one value, write the rule on `reply`, e.g. `reply == 1`)"
                    } else {
                        ""
                    }
                )));
            }
        }
    }
    Ok(leaf(at))
}

fn leaf(r: &Reply) -> V<'_> {
    match r {
        Reply::Nil => V::Nil(None),
        Reply::Int(i) => V::Num(*i as f64),
        Reply::Bulk(b) => V::Str(b),
        Reply::Status(s) => V::Str(s.as_bytes()),
        Reply::Array(a) => V::Arr(a),
        Reply::Error(e) => V::Error(e),
    }
}

fn truth<'a>(n: &'a Node, reply: &'a Reply, req: &Request<'_>) -> Result<bool, Problem> {
    match n {
        Node::And(a, b) => Ok(truth(a, reply, req)? && truth(b, reply, req)?),
        Node::Or(a, b) => Ok(truth(a, reply, req)? || truth(b, reply, req)?),
        Node::Not(a) => Ok(!truth(a, reply, req)?),
        Node::Cmp(op, a, b) => compare(*op, a, b, reply, req),
        Node::Flag(ix) => match index(reply, ix)? {
            V::Num(1.0) => Ok(true),
            V::Num(0.0) => Ok(false),
            v => Err(Problem(format!(
                "{} is {}: the position form `admitted = {}` reads 1 as admitted and 0 as refused; \
                 for another shape write a rule, e.g. admitted = \"{} >= 1\" (units granted), \
                 \"{} >= 0\" (remaining, -1 refused), \"{} <= ${{limit}}\" (a hit count), \
                 \"{} != nil\" (nil refused) or \"{} == \\\"1\\\"\" (a string)",
                n.text(),
                v.describe(),
                ix[0] + 1,
                n.text(),
                n.text(),
                n.text(),
                n.text(),
                n.text()
            ))),
        },
        _ => unreachable!("values are checked at parse time not to be decisions"),
    }
}

fn compare<'a>(
    op: Cmp,
    a: &'a Node,
    b: &'a Node,
    reply: &'a Reply,
    req: &Request<'_>,
) -> Result<bool, Problem> {
    let want = |same: bool| if op == Cmp::Ne { !same } else { same };
    // A nil or boolean literal on one side decides how the other is read.
    for (lit, other) in [(a, b), (b, a)] {
        match lit {
            Node::Lit(Lit::Nil) => {
                return Ok(want(matches!(value(other, reply, req)?, V::Nil(_))));
            }
            Node::Lit(Lit::Bool(t)) => {
                let got = match value(other, reply, req)? {
                    V::Nil(_) => false,
                    V::Num(1.0) => true,
                    V::Bool(b) => b,
                    v => {
                        return Err(Problem(format!(
                            "{} is {}, not a Lua boolean as Redis returns it (true arrives as the integer 1, false as nil)",
                            other.text(),
                            v.describe()
                        )));
                    }
                };
                return Ok(want(got == *t));
            }
            _ => {}
        }
    }
    let (x, y) = (value(a, reply, req)?, value(b, reply, req)?);
    match (x, y) {
        (V::Num(x), V::Num(y)) => Ok(match op {
            Cmp::Eq => x == y,
            Cmp::Ne => x != y,
            Cmp::Lt => x < y,
            Cmp::Le => x <= y,
            Cmp::Gt => x > y,
            Cmp::Ge => x >= y,
        }),
        (V::Str(x), V::Str(y)) if matches!(op, Cmp::Eq | Cmp::Ne) => Ok(want(x == y)),
        (x, y) => {
            let hint = [(a, x), (b, y)]
                .iter()
                .map(|(n, v)| match v {
                    V::Nil(_) => format!(" (if nil means refused, write `{} != nil`)", n.text()),
                    V::Str(_) if matches!(x, V::Str(_)) && matches!(y, V::Str(_)) => {
                        " (`<`, `<=`, `>`, `>=` compare numbers: wrap both in num(...))".into()
                    }
                    V::Str(_) if matches!(n, Node::Lit(_)) => {
                        " (a number is not compared with a string: compare with a number)".into()
                    }
                    v => v.hint(n),
                })
                .find(|h| !h.is_empty())
                .unwrap_or_default();
            Err(Problem(format!(
                "cannot compare {} {} {}{hint}",
                side(a, x),
                op.text(),
                side(b, y)
            )))
        }
    }
}

/// A side of a comparison in a message: a literal as written, anything
/// else with the value it had.
fn side(n: &Node, v: V<'_>) -> String {
    match n {
        Node::Lit(_) => n.text(),
        _ => format!("{} ({})", n.text(), v.describe()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::Limit;

    fn req(cost: u64) -> Request<'static> {
        Request {
            client: "c",
            limit: Limit::per_window(5, 1000),
            cost,
            now_us: 0,
            request_id: 1,
        }
    }
    fn arr(items: Vec<Reply>) -> Reply {
        Reply::Array(items)
    }
    fn s(t: &str) -> Reply {
        Reply::Bulk(t.as_bytes().to_vec())
    }
    fn ok(rule: &str, reply: &Reply) -> bool {
        Rule::decision(rule)
            .unwrap()
            .admitted(reply, &req(1))
            .unwrap_or_else(|p| panic!("{rule} on {reply:?}: {}", p.0))
    }
    fn problem(rule: &str, reply: &Reply) -> String {
        Rule::decision(rule)
            .unwrap()
            .admitted(reply, &req(1))
            .expect_err(rule)
            .0
    }

    #[test]
    fn each_reply_shape_reads_as_its_rule_says() {
        use Reply::{Int, Nil};
        // Units granted, remaining with -1 refused, a hit count, nil refused.
        assert!(ok("reply[1] == ${cost}", &arr(vec![Int(1)])));
        assert!(!ok("reply[1] >= 1", &arr(vec![Int(0)])));
        assert!(ok("reply[2] >= 0", &arr(vec![Int(1), Int(0)])));
        assert!(!ok("reply[2] >= 0", &arr(vec![Int(0), Int(-1)])));
        assert!(ok("reply <= ${limit}", &Int(5)));
        assert!(!ok("reply <= ${limit}", &Int(6)));
        assert!(ok("reply[1] != nil", &arr(vec![Int(7)])));
        assert!(!ok("reply[1] != nil", &Nil));
        assert!(!ok("reply[1] ~= nil", &arr(vec![])));
        // Lua booleans: true arrives as 1, false as nil.
        assert!(ok("reply == true", &Int(1)));
        assert!(!ok("reply == true", &Nil));
        assert!(ok("reply == false", &Nil));
        // Strings, in the decision slot or another one.
        assert!(ok("reply[1] == \"1\"", &arr(vec![s("1")])));
        assert!(!ok("reply[1] == '1'", &arr(vec![s("0")])));
        assert!(ok("reply[1] == 1", &arr(vec![Int(1), s("0.25")])));
        assert!(ok(
            "num(reply[2]) <= 0 and reply[1] == 1",
            &arr(vec![Int(1), s("-1")])
        ));
        assert!(ok(
            "not (reply[1] == 0) or reply[2] == nil",
            &arr(vec![Int(1)])
        ));
        assert!(ok(
            "reply[2][1] == 3",
            &arr(vec![Int(1), arr(vec![Int(3)])])
        ));
    }

    #[test]
    fn a_rule_that_cannot_be_applied_says_what_it_met() {
        use Reply::{Int, Nil};
        let p = problem("reply[1] == 1", &arr(vec![s("1")]));
        assert!(
            p.contains("the string \"1\"") && p.contains("num(reply[1])"),
            "{p}"
        );
        let p = problem("reply[2] >= 0", &arr(vec![Int(1)]));
        assert!(p.contains("absent") && p.contains("1 element"), "{p}");
        let p = problem("reply[1] == 1", &Int(1));
        assert!(
            p.contains("not an array") && p.contains("reply == 1"),
            "{p}"
        );
        let p = problem("reply == true", &Int(3));
        assert!(p.contains("not a Lua boolean"), "{p}");
        let p = problem("reply < ${limit}", &Nil);
        assert!(p.contains("nil") && p.contains("!= nil"), "{p}");
        let p = problem("reply[1] == \"1\"", &arr(vec![Int(1)]));
        assert!(p.contains("the integer 1") && p.contains("string"), "{p}");
    }

    #[test]
    fn the_position_form_reads_one_and_zero_and_nothing_else() {
        let r = |reply: Reply| Rule::flag_at(0).admitted(&reply, &req(3));
        assert_eq!(r(arr(vec![Reply::Int(1)])), Ok(true));
        assert_eq!(r(arr(vec![Reply::Int(0)])), Ok(false));
        // A count of 3 is not a refusal, a text "1" is not an admission.
        let p = r(arr(vec![Reply::Int(3)])).unwrap_err().0;
        assert!(
            p.contains("the integer 3") && p.contains("reply[1] >= 1"),
            "{p}"
        );
        let p = r(arr(vec![s("1")])).unwrap_err().0;
        assert!(p.contains("the string \"1\""), "{p}");
    }

    #[test]
    fn numbers_and_their_nil() {
        let v = |rule: &str, reply: &Reply| Rule::value(rule).unwrap().number(reply, &req(2));
        assert_eq!(v("${limit} - reply", &Reply::Int(3)), Ok(Some(2.0)));
        let time = arr(vec![Reply::Int(1), arr(vec![s("1700000000"), s("123456")])]);
        assert_eq!(
            v("num(reply[2][1]) * 1000000 + num(reply[2][2])", &time),
            Ok(Some(1_700_000_000_123_456.0))
        );
        assert_eq!(v("reply[3]", &arr(vec![Reply::Int(1)])), Ok(None));
        assert!(v("reply[1]", &arr(vec![s("x")])).is_err());
        assert_eq!(
            v("-reply[1] * ${cost}", &arr(vec![Reply::Int(4)])),
            Ok(Some(-8.0))
        );
    }

    #[test]
    fn malformed_rules_are_refused_with_a_reason() {
        for (rule, says) in [
            ("reply[1]", "is a value, not a decision"),
            ("reply[0] == 1", "from 1"),
            ("reply[1] = 1", "unexpected `=`"),
            ("reply[1] == ${limt}", "unknown placeholder `${limt}`"),
            ("reply[1] == 1 and reply[2]", "joins comparisons"),
            ("reply[1] >= nil", "orders a nil"),
            ("reply[1] == 1 1", "unexpected `1`"),
            ("admitted == 1", "unknown word `admitted`"),
            ("reply[1] == \"1", "unclosed string"),
            ("", "empty rule"),
        ] {
            let e = Rule::decision(rule).unwrap_err();
            assert!(e.contains(says), "{rule}: {e}");
        }
        assert!(Rule::value("reply[1] == 1").is_err());
    }
}
