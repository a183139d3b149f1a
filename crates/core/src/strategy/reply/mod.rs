//! How a script's reply becomes a decision: a small rule language.
//!
//! Limiters people ship answer in many shapes: `{1, remaining}`, the number
//! of units granted, the remaining count with -1 for refused, the hit count
//! that the client compares with the limit, nil for refused, a bare integer
//! or a Lua boolean, a string ("1", a retry-after) somewhere in an array. A
//! manifest says how to read its script's reply with one rule per field
//! (`[reply]` in the manifest, `external/`):
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

//!
//! Layout: this file holds the rules' types (the parsed tree, `Rule`,
//! `ReplyRules`, `Problem`) and `Rule`'s methods; `parse.rs` turns a rule's
//! text into its tree, `eval.rs` applies a tree to a reply.

mod eval;
mod parse;
#[cfg(test)]
mod tests;

use crate::resp::Reply;

use super::Request;
use eval::{V, truth, value};
use parse::{parse, value_operand};

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

    /// Is this the position form reading the reply's first element (`admitted
    /// = 1`)? Then the replay's allocation-free scan decides as it does.
    pub fn is_first_flag(&self) -> bool {
        matches!(&self.node, Node::Flag(ix) if ix.as_slice() == [0])
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
