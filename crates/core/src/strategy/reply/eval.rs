//! Applying a parsed rule to a reply: the values a rule meets (typed as
//! Redis converts Lua values), comparisons, and the messages that say what
//! arrived when a rule does not fit it.

use crate::resp::Reply;

use super::{Arith, Cmp, Lit, Node, Problem, Request, VARS, num_text, path_text};

/// A value met while applying a rule.
#[derive(Debug, Clone, Copy)]
pub(super) enum V<'a> {
    /// Nil; `Some(n)` when the element was past the end of an array of n.
    Nil(Option<usize>),
    Num(f64),
    Str(&'a [u8]),
    Arr(&'a [Reply]),
    Bool(bool),
    Error(&'a str),
}

impl V<'_> {
    pub(super) fn describe(&self) -> String {
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
    pub(super) fn hint(&self, node: &Node) -> String {
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

pub(super) fn value<'a>(
    n: &'a Node,
    reply: &'a Reply,
    req: &Request<'_>,
) -> Result<V<'a>, Problem> {
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

pub(super) fn truth<'a>(n: &'a Node, reply: &'a Reply, req: &Request<'_>) -> Result<bool, Problem> {
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
