//! The matrix's rows: a claim (and its setting, where a claim has rows per
//! setting) with one [`MatrixCell`] per server, built from each server's judged
//! claims, and what a cell says: the study's judgement on the study's
//! server; elsewhere whether the finding holds and, if not, what instead
//! (with the server's own default of the setting the finding depends on).

use std::collections::BTreeMap;

use super::servers::{Identity, STUDY_RERUN, STUDY_SERVER};
use crate::claims::Judged;

/// Claims whose finding rests on a server default the experiment itself
/// overrides (so the measurement holds everywhere, but an untouched server
/// behaves as its default says): the setting, and what its value means.
const DEFAULT_DEPENDENT: &[(&str, &str, &str)] = &[
    (
        "B4.2",
        "lazyfree-lazy-expire",
        "with `yes` an untouched server frees an expired log in the background: the default stall of the study's server does not happen",
    ),
    (
        "B3.2",
        "zset-max-listpack-entries",
        "the listpack cliff sits at this many entries",
    ),
];

/// One server's judgement of one claim row.
#[derive(Debug, Clone)]
pub struct MatrixCell {
    /// The verdict as the report writes it (with "(borderline)" and the like).
    pub verdict: String,
    /// The verdict alone: what "holds" and "differs" compare (a borderline
    /// interval on one server is not a different finding).
    pub base: String,
    /// The point value(s) and conditions inside the claim's fixed tolerance
    /// (the judge's check without intervals): what a server with too few
    /// trials for a verdict still shows about the finding.
    pub point_inside: bool,
    pub display: String,
    pub value: Option<f64>,
    pub interval: Option<(f64, f64)>,
    /// The claim rests on trials that were disturbed (`schedule.csv`; the
    /// judge's `inconclusive (disturbed: ...)`).
    pub disturbed: bool,
    /// The conditions the claim rests on that hold, and how many it has.
    pub conditions: (usize, usize),
}

/// A row of the matrix: a claim (and its setting, where a claim has rows
/// per setting) with one cell per server.
#[derive(Debug, Clone)]
pub struct MatrixRow {
    pub id: String,
    pub setting: String,
    pub unit: String,
    pub published: Option<f64>,
    pub published_text: String,
    /// What the value drawn (a cell's `value`, the claim's first) is: the
    /// claim's unit, narrowed to its first value where the claim has several.
    pub value_unit: String,
    /// Where the claim's check passes for the value drawn; None for a claim
    /// judged on its shape or behaviour (not on this value).
    pub band: Option<(f64, f64)>,
    pub cells: BTreeMap<String, MatrixCell>,
}

impl MatrixRow {
    /// Does any other server's verdict (or point value against the fixed
    /// tolerance) differ from the study server's? (The study server's
    /// rerun is not another server.)
    pub fn differs(&self) -> bool {
        self.cells.keys().any(|s| self.cell_differs(s))
    }

    /// Does `server`'s cell differ from the study server's (another server only)?
    pub fn cell_differs(&self, server: &str) -> bool {
        if server == STUDY_SERVER || server == STUDY_RERUN {
            return false;
        }
        match (self.cells.get(STUDY_SERVER), self.cells.get(server)) {
            (Some(s), Some(c)) => c.base != s.base || c.point_inside != s.point_inside,
            _ => false,
        }
    }

    /// Whether `server`'s difference from the study server survives the
    /// study server's rerun: the rerun reaches the study server's verdict
    /// (and the same side of the tolerance), and `server`'s value lies
    /// further from the study server's than the rerun's. None: no
    /// difference, or no rerun to tell.
    pub fn survives(&self, server: &str) -> Option<bool> {
        if !self.cell_differs(server) {
            return None;
        }
        let study = self.cells.get(STUDY_SERVER)?;
        let rerun = self.cells.get(STUDY_RERUN)?;
        let c = self.cells.get(server)?;
        if rerun.base != study.base || rerun.point_inside != study.point_inside {
            return Some(false);
        }
        Some(match (c.value, study.value, rerun.value) {
            (Some(v), Some(s), Some(r)) => (v - s).abs() > (r - s).abs(),
            _ => true,
        })
    }

    /// The servers whose difference survives the rerun (or, without a
    /// rerun, every server that differs).
    pub fn surviving(&self) -> Vec<String> {
        self.cells
            .keys()
            .filter(|s| self.cell_differs(s) && self.survives(s) != Some(false))
            .cloned()
            .collect()
    }
}

/// What a differing cell adds about the rerun of the study's server.
pub fn rerun_note(row: &MatrixRow, server: &str) -> &'static str {
    match row.survives(server) {
        Some(true) => "; survives the rerun of redis-7.0",
        Some(false) => "; within what a rerun of redis-7.0 moves (not a difference)",
        None => "",
    }
}

fn setting_text(j: &Judged) -> String {
    j.measured
        .as_ref()
        .map(|m| {
            m.setting
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The rows, from each server's judged claims, in the study server's order.
/// A claim measured on no server (its experiment not in the matrix) is left out.
pub fn rows(per_server: &[(String, Vec<Judged>)]) -> Vec<MatrixRow> {
    let mut out: Vec<MatrixRow> = Vec::new();
    for (server, judged) in per_server {
        for j in judged {
            let Some(m) = &j.measured else { continue };
            let setting = setting_text(j);
            let cell = MatrixCell {
                verdict: crate::report::verdict_text(j),
                base: j.verdict.as_str().to_string(),
                point_inside: crate::claims::value_passes(&j.spec, &m.values, &[], &m.conditions).0,
                display: m.display.clone(),
                value: m.values.first().copied(),
                interval: m.intervals.first().copied(),
                disturbed: m
                    .invalid
                    .iter()
                    .any(|w| w.starts_with(crate::disturbance::DISTURBED)),
                conditions: (
                    m.conditions.iter().filter(|c| c.1).count(),
                    m.conditions.len(),
                ),
            };
            let pos = out
                .iter()
                .position(|r| r.id == j.spec.id && r.setting == setting);
            let pos = match pos {
                Some(p) => p,
                None => {
                    out.push(MatrixRow {
                        id: j.spec.id.clone(),
                        setting,
                        unit: j.spec.unit.clone(),
                        // A claim published without a number (B3.4's "cliff
                        // moves; CPU per decision rises") has none to draw:
                        // its `published` is a placeholder.
                        published: j.spec.published.values().first().copied().filter(|_| {
                            j.spec.published_text.contains(|c: char| c.is_ascii_digit())
                        }),
                        published_text: j.spec.published_text.clone(),
                        value_unit: first_value_unit(&j.spec.unit, m.values.len()),
                        band: crate::claims::pass_region(&j.spec, 0).1,
                        cells: BTreeMap::new(),
                    });
                    out.len() - 1
                }
            };
            out[pos].cells.insert(server.clone(), cell);
        }
    }
    out
}

/// The unit of a claim's first value: `unit` itself for a claim of one
/// value; of several, the first of its bracketed list where it has one per
/// value (`ms (trim of 100,000; of 1,000,000)` -> `ms (trim of 100,000)`),
/// else `unit` with which value it is.
pub fn first_value_unit(unit: &str, values: usize) -> String {
    if values <= 1 {
        return unit.to_string();
    }
    if let (Some(open), true) = (unit.find('('), unit.ends_with(')')) {
        let parts: Vec<&str> = unit[open + 1..unit.len() - 1].split(';').collect();
        if parts.len() == values {
            return format!("{}({})", &unit[..open], parts[0].trim());
        }
    }
    format!("{unit}, the first of {values} values")
}

/// What a row says for `server`: the study's judgement on the study's
/// server; elsewhere whether the finding holds and, if not, what instead.
pub fn cell_text(row: &MatrixRow, server: &str, identities: &BTreeMap<String, Identity>) -> String {
    let Some(c) = row.cells.get(server) else {
        return "not measured".into();
    };
    if server == STUDY_SERVER {
        return format!("{}: {}", c.verdict, c.display);
    }
    let study_name = if server == STUDY_RERUN {
        format!("{STUDY_SERVER} (first run)")
    } else {
        STUDY_SERVER.to_string()
    };
    let study = row.cells.get(STUDY_SERVER);
    let change = match (c.value, study.and_then(|s| s.value)) {
        (Some(v), Some(s)) if s.abs() > 1e-12 && (v - s).abs() > 1e-9 * s.abs() => {
            format!(" ({:+.0}% vs {study_name})", (v / s - 1.0) * 100.0)
        }
        _ => String::new(),
    };
    let mut text = match study {
        Some(s) if s.base == c.base && s.point_inside == c.point_inside => {
            format!("holds ({}): {}{change}", c.verdict, c.display)
        }
        Some(s) => format!(
            "does not hold ({}{}; {} on {study_name}): {}{change}{}",
            c.verdict,
            if c.point_inside {
                ""
            } else {
                ", point value outside the claim's tolerance"
            },
            s.verdict,
            c.display,
            rerun_note(row, server)
        ),
        None => format!("{}: {}{change}", c.verdict, c.display),
    };
    if let Some(d) = default_note(&row.id, server, identities) {
        text += &format!("; {d}");
    }
    text
}

/// The server's own default of the setting `id` depends on, where it is
/// not the study server's.
pub fn default_note(
    id: &str,
    server: &str,
    identities: &BTreeMap<String, Identity>,
) -> Option<String> {
    let (key, here, study, meaning) = default_differs(id, server, identities)?;
    Some(format!(
        "this server's own default {key} = {here} ({STUDY_SERVER}: {study}): {meaning}"
    ))
}

/// The setting `id` depends on, this server's default, the study server's,
/// and what it means, where the two defaults differ.
pub(super) fn default_differs(
    id: &str,
    server: &str,
    identities: &BTreeMap<String, Identity>,
) -> Option<(&'static str, String, String, &'static str)> {
    let (_, key, meaning) = DEFAULT_DEPENDENT.iter().find(|d| d.0 == id)?;
    let here = identities.get(server)?.defaults.get(*key)?;
    let study = identities.get(STUDY_SERVER)?.defaults.get(*key)?;
    (here != study).then(|| (*key, here.clone(), study.clone(), *meaning))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(verdict: &str, v: f64) -> MatrixCell {
        MatrixCell {
            verdict: verdict.into(),
            base: verdict.into(),
            point_inside: verdict == "pass",
            display: format!("{v}"),
            value: Some(v),
            interval: Some((v, v)),
            disturbed: false,
            conditions: (0, 0),
        }
    }

    fn identity(lazy: &str) -> Identity {
        let mut id = Identity::default();
        id.defaults
            .insert("lazyfree-lazy-expire".into(), lazy.into());
        id
    }

    #[test]
    fn a_row_differs_only_when_a_verdict_does_and_says_what_instead() {
        let mut r = MatrixRow {
            id: "B3.3".into(),
            setting: String::new(),
            unit: "B/entry".into(),
            published: Some(130.0),
            published_text: "126-137".into(),
            value_unit: "B/entry".into(),
            band: Some((120.0, 140.0)),
            cells: BTreeMap::new(),
        };
        r.cells.insert(STUDY_SERVER.into(), cell("pass", 128.0));
        r.cells.insert("valkey-9.1".into(), cell("pass", 128.0));
        assert!(!r.differs());
        r.cells.insert("valkey-9.1".into(), cell("fail", 88.0));
        assert!(r.differs());
        let ids = BTreeMap::new();
        let t = cell_text(&r, "valkey-9.1", &ids);
        assert!(
            t.starts_with("does not hold (fail, point value outside the claim's tolerance; pass on redis-7.0): 88"),
            "{t}"
        );
        assert!(t.contains("-31% vs redis-7.0"), "{t}");
        assert!(cell_text(&r, STUDY_SERVER, &ids).starts_with("pass: 128"));
    }

    #[test]
    fn a_difference_counts_only_past_what_a_rerun_of_the_study_server_moves() {
        let mut r = MatrixRow {
            id: "B3.2".into(),
            setting: String::new(),
            unit: "x".into(),
            published: Some(3.6),
            published_text: "3.6x".into(),
            value_unit: "x".into(),
            band: Some((3.1, 4.1)),
            cells: BTreeMap::new(),
        };
        r.cells.insert(STUDY_SERVER.into(), cell("pass", 3.6));
        r.cells.insert("valkey-9.1".into(), cell("fail", 2.6));
        r.cells.insert("redis-8.2".into(), cell("fail", 3.0));
        // No rerun: every difference stands, untested.
        assert_eq!(r.survives("valkey-9.1"), None);
        assert_eq!(r.surviving().len(), 2);
        // The rerun keeps the verdict and moves by 0.7: only valkey's 1.0 survives.
        r.cells.insert(STUDY_RERUN.into(), cell("pass", 2.9));
        assert!(!r.cell_differs(STUDY_RERUN));
        assert_eq!(r.survives("valkey-9.1"), Some(true));
        assert_eq!(r.survives("redis-8.2"), Some(false));
        assert_eq!(r.surviving(), vec!["valkey-9.1".to_string()]);
        let ids = BTreeMap::new();
        assert!(cell_text(&r, "redis-8.2", &ids).contains("not a difference"));
        assert!(cell_text(&r, STUDY_RERUN, &ids).contains("vs redis-7.0 (first run)"));
        // A rerun that flips the verdict: no difference in the row survives.
        r.cells.insert(STUDY_RERUN.into(), cell("fail", 3.4));
        assert!(r.surviving().is_empty());
        assert!(r.differs());
    }

    #[test]
    fn the_unit_drawn_names_the_first_value_of_a_claim_of_several() {
        let b41 = "ms (trim of 100,000; of 1,000,000)";
        assert_eq!(first_value_unit(b41, 2), "ms (trim of 100,000)");
        assert_eq!(first_value_unit(b41, 1), b41);
        assert_eq!(
            first_value_unit("bytes per entry (past the cliff)", 4),
            "bytes per entry (past the cliff), the first of 4 values"
        );
    }

    #[test]
    fn the_lazyfree_default_is_named_where_it_differs_from_the_study_servers() {
        let mut ids = BTreeMap::new();
        ids.insert(STUDY_SERVER.to_string(), identity("no"));
        ids.insert("valkey-8.1".to_string(), identity("yes"));
        ids.insert("redis-8.2".to_string(), identity("no"));
        let n = default_note("B4.2", "valkey-8.1", &ids).unwrap();
        assert!(
            n.contains("lazyfree-lazy-expire = yes (redis-7.0: no)"),
            "{n}"
        );
        assert!(default_note("B4.2", "redis-8.2", &ids).is_none());
        assert!(default_note("B7.1", "valkey-8.1", &ids).is_none());
    }
}
