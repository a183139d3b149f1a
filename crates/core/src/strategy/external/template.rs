//! The `${placeholder}` templates of a manifest's keys and args: the
//! placeholders a template may name, parsing one at load time, and
//! rendering it for one request straight into an argument list.

use std::path::Path;

use super::bad;
use crate::strategy::{Request, window_index};
use limitbench_base::error::Result;

pub const PLACEHOLDERS: &[&str] = &[
    "client",
    "limit",
    "capacity",
    "window_ms",
    "window_s",
    "rate_per_s",
    "cost",
    "now_s",
    "now_ms",
    "now_us",
    "request_id",
    "now_s_float",
    "window_s_int",
    "window_index",
    "window_start_ms",
    "prev_window_index",
];

/// The placeholders that read the caller's clock.
fn reads_caller_clock(name: &str) -> bool {
    name.starts_with("now_")
        || matches!(
            name,
            "window_index" | "window_start_ms" | "prev_window_index"
        )
}

/// A string with `${placeholder}`s, split once at load time.
#[derive(Debug, Clone)]
pub(super) struct Template(Vec<Piece>);

#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Var(usize),
}

impl Template {
    pub(super) fn parse(s: &str, file: &Path, field: &str) -> Result<Self> {
        let mut pieces = Vec::new();
        let mut rest = s;
        while let Some(start) = rest.find("${") {
            if start > 0 {
                pieces.push(Piece::Text(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let end = after
                .find('}')
                .ok_or_else(|| bad(file, field, format!("unclosed `${{` in `{s}`")))?;
            let var = &after[..end];
            let i = PLACEHOLDERS.iter().position(|p| *p == var).ok_or_else(|| {
                bad(
                    file,
                    field,
                    format!(
                        "unknown placeholder `${{{var}}}` (known: {})",
                        PLACEHOLDERS.join(", ")
                    ),
                )
            })?;
            pieces.push(Piece::Var(i));
            rest = &after[end + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        Ok(Template(pieces))
    }

    /// Whether the template uses the caller's clock (`${now_*}`, `${window_index}`, ...).
    pub(super) fn uses_caller_clock(&self) -> bool {
        self.0
            .iter()
            .any(|p| matches!(p, Piece::Var(i) if reads_caller_clock(PLACEHOLDERS[*i])))
    }

    pub(super) fn uses(&self, name: &str) -> bool {
        self.0
            .iter()
            .any(|p| matches!(p, Piece::Var(i) if PLACEHOLDERS[*i] == name))
    }
}

/// A template filled in for one request, as a value to format straight into
/// an argument list (no String per argument).
pub(super) struct Rendered<'a>(pub(super) &'a Template, pub(super) &'a Request<'a>);

impl std::fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Rendered(template, req) = self;
        let l = &req.limit;
        for p in &template.0 {
            match p {
                Piece::Text(t) => f.write_str(t)?,
                Piece::Var(i) => match PLACEHOLDERS[*i] {
                    "client" => f.write_str(req.client)?,
                    "limit" | "capacity" => write!(f, "{}", l.limit)?,
                    "window_ms" => write!(f, "{}", l.window_ms)?,
                    "window_s" => write!(f, "{}", l.window_ms as f64 / 1000.0)?,
                    "rate_per_s" => write!(f, "{}", l.rate_per_s)?,
                    "cost" => write!(f, "{}", req.cost)?,
                    "now_s" => write!(f, "{}", req.now_us.div_euclid(1_000_000))?,
                    "now_ms" => write!(f, "{}", req.now_us.div_euclid(1000))?,
                    "now_us" => write!(f, "{}", req.now_us)?,
                    "now_s_float" => write!(
                        f,
                        "{}.{:06}",
                        req.now_us.div_euclid(1_000_000),
                        req.now_us.rem_euclid(1_000_000)
                    )?,
                    // Whole by `Info::accepts`, checked before the call.
                    "window_s_int" => write!(f, "{}", l.window_ms / 1000)?,
                    "request_id" => write!(f, "{}", req.request_id)?,
                    "window_index" => write!(f, "{}", window_index(req.now_us, l.window_ms))?,
                    "window_start_ms" => write!(
                        f,
                        "{}",
                        window_index(req.now_us, l.window_ms) * l.window_ms.max(1) as i64
                    )?,
                    "prev_window_index" => {
                        write!(f, "{}", window_index(req.now_us, l.window_ms) - 1)?
                    }
                    _ => unreachable!("placeholders are checked at load time"),
                },
            }
        }
        Ok(())
    }
}

pub(super) fn describe(t: &Template) -> String {
    t.0.iter()
        .map(|p| match p {
            Piece::Text(s) => s.clone(),
            Piece::Var(i) => format!("${{{}}}", PLACEHOLDERS[*i]),
        })
        .collect()
}
