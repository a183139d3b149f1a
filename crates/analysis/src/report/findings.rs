//! The report's opening, **Findings**: a headline of at most [`MAX_LINES`]
//! lines, then a table with one claim per row.
//!
//! The headline names the claims by verdict: those reproduced as stated,
//! those reproduced only under an assumption, those not reproduced (with
//! their cause), the inconclusive ones grouped by why, the claims apart
//! from the tally, and (when the run was analysed with `--rerun`) how far
//! the independent rerun agrees and what that does to the headline (a
//! claim reproduced here and not there rests on this run alone).
//!
//! The table `claim | published | ours | what reproduces it (setting) |
//! cause` holds every claim not reproduced as stated, one per row. The
//! published value and ours are the judged numbers in the claim's one unit
//! (claims.toml's `published` and `unit`), whole. The cause is the claim's
//! computed [`crate::claims::Explanation`] where its analysis computes one,
//! else the verdict's own reason (disturbed cells, an invalid measurement,
//! measuring sessions that disagree, the trial cap, an interval across the
//! edge) followed by the claim's static `cause` from `analysis/claims.toml`.
//! Cells stay short: a text longer than [`CELL_MAX`] is cut at a clause or
//! a word and links to the claim's line in its section ([`anchor`]), where
//! it stands whole; nothing is cut with an ellipsis.

use crate::claims::{ClaimSpec, Judged, Outcome, Verdict, outcome, setting_text};
use crate::compare::Pair;

/// The most lines the headline takes before the table.
pub const MAX_LINES: usize = 12;

/// The most characters of a table cell's text before it is cut and linked
/// (the cause column's: the others take [`NUMBER_MAX`] and [`SETTING_MAX`]).
pub const CELL_MAX: usize = 140;

/// The most characters of the published and ours cells.
const NUMBER_MAX: usize = 48;

/// The most characters of the setting cell.
const SETTING_MAX: usize = 64;

/// The independent rerun the report names: its folder's name and its
/// claims paired with this run's (`compare::pair` of the two claims.csv).
pub struct Rerun {
    pub name: String,
    pub pairs: Vec<Pair>,
}

/// The id of a claim's line in the report (`A2.1` -> `claim-a2-1`): the
/// findings table links to it.
pub fn anchor(id: &str) -> String {
    format!("claim-{}", id.to_lowercase().replace('.', "-"))
}

/// The HTML anchor that opens a claim's line in its section.
pub fn anchor_tag(id: &str) -> String {
    format!("<a id=\"{}\"></a>", anchor(id))
}

/// `s` whole when it fits `max` characters; else cut at its last clause
/// break (`; `, `: `, ` (`, `, `) that fits, or at a word, and a link to
/// the claim's line (`id`), where it stands whole. Never an ellipsis.
pub fn cell_text(s: &str, id: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let fits = |i: &usize| *i >= 12 && s[..*i].chars().count() <= max;
    let clause = ["; ", ": ", " (", ", "]
        .iter()
        .find_map(|b| s.match_indices(b).map(|(i, _)| i).filter(|i| fits(i)).max());
    let cut = match clause {
        Some(i) => s[..i].to_string(),
        None => {
            let mut out = String::new();
            for w in s.split(' ') {
                if out.chars().count() + w.chars().count() + 1 > max {
                    break;
                }
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(w);
            }
            out.trim_end_matches([',', ';', ':']).to_string()
        }
    };
    format!("{cut} ([more](#{}))", anchor(id))
}

/// Whether a claim counts as not reproduced as stated: every verdict but
/// `reproduced`, except a claim apart from the tally that this size does
/// not measure (A0 at a quick size).
fn not_as_stated(j: &Judged) -> bool {
    match j.verdict {
        Verdict::Reproduced => false,
        Verdict::NotRun => j.spec.tally == "reproduction",
        _ => true,
    }
}

/// Claims the run's `--until-decisive` left at its cap or budget.
fn stopped_by_budget(manifest: &serde_json::Value, id: &str) -> bool {
    ["capped_claims", "unfunded_claims"].iter().any(|k| {
        manifest["until_decisive"][*k]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(id)))
    })
}

/// Whether the claim's own values (at the setting as stated) lie inside
/// its band: then no setting is needed, and what keeps it from
/// `reproduced` is its cause (an untested clause, an invalid measurement).
fn inside_as_stated(j: &Judged) -> bool {
    j.measured.as_ref().is_some_and(|m| {
        !matches!(
            j.spec.check,
            crate::claims::Check::Shape | crate::claims::Check::Behaviour
        ) && !m.values.is_empty()
            && outcome(
                &j.spec,
                &m.values,
                &m.intervals,
                &m.conditions,
                m.trial_count(),
            ) == Outcome::Inside
    })
}

/// The swept setting that reproduces the claim (of those whose interval
/// lies inside, the one changing fewest details), named with the stated detail it changes; "none of N
/// settings" when a sweep found none; "-" without a sweep.
fn reproducing_setting(j: &Judged) -> String {
    let Some(m) = &j.measured else {
        return "-".into();
    };
    if inside_as_stated(j) {
        return "in the band as stated".into();
    }
    let hit = m.sweep.iter().filter(|a| {
        a.invalid.is_empty()
            && outcome(
                &j.spec,
                &a.values,
                &a.intervals,
                &a.conditions,
                a.trials.or_else(|| m.trial_count()),
            ) == Outcome::Inside
    });
    let hit = hit.min_by_key(|a| a.own(&m.setting).len());
    match hit {
        Some(a) => {
            let own = a.own(&m.setting);
            // A stated detail it changes, with the value the study states.
            let stated: Vec<String> = own
                .iter()
                .filter(|(k, _)| j.spec.stated_details.contains(k))
                .filter_map(|(k, _)| m.setting.iter().find(|(d, _)| d == k))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let s = setting_text(&own);
            if stated.is_empty() {
                s
            } else {
                format!("{s} (stated: {})", stated.join(", "))
            }
        }
        None if m.sweep.is_empty() => "-".into(),
        None => format!("none of {} settings", 1 + m.sweep.len()),
    }
}

/// The verdict's own reason, as a class claims share, and this claim's
/// particulars of it.
fn class(j: &Judged, manifest: &serde_json::Value) -> (String, String) {
    let m = j.measured.as_ref();
    let plain = |s: &str| (s.to_string(), String::new());
    match j.verdict {
        Verdict::NotRun => plain("not measured at this size"),
        Verdict::ReproducedWithAssumption => {
            let reading = j.spec.reading.as_deref().unwrap_or("\u{0}");
            // The judge's own interval rules (every trial read one value,
            // taken as known to 1%; a claim's stated interval assumption)
            // ride on the verdict as a reading, but are the harness's, not
            // a reading of the study.
            let judges = m
                .and_then(|m| m.interval_assumption.as_deref())
                .is_some_and(|a| j.assumption.contains(a))
                || j.assumption.contains("every trial read one value");
            if judges {
                plain("the judge's interval rule (no spread between trials), not the study")
            } else if j.assumption.contains(reading) {
                plain("a reading the study leaves open")
            } else if j.assumption.contains('=') {
                plain("a detail the study does not state")
            } else {
                plain("an assumption of the judge")
            }
        }
        Verdict::NotReproduced => {
            let failed = m.map(|m| m.failed_conditions()).unwrap_or_default();
            if !failed.is_empty() {
                ("a condition fails".into(), first_clause(failed[0]))
            } else if reproducing_setting(j).contains('=') {
                plain("reproduces only with a stated detail changed")
            } else {
                plain("outside the band as stated")
            }
        }
        _ => {
            let invalid = m.map(|m| m.invalid.clone()).unwrap_or_default();
            let disturbed = |w: &&String| w.starts_with(crate::disturbance::DISTURBED);
            // An invalid measurement first (the summary draws no mark for
            // it), then disturbed cells.
            if let Some(w) = invalid.iter().find(|w| !disturbed(w)) {
                ("invalid measurement".into(), first_clause(w))
            } else if invalid.iter().any(|w| disturbed(&w)) {
                plain("disturbed cells")
            } else if m.is_some_and(|m| m.sessions_disagree) {
                plain("measuring sessions disagree")
            } else if stopped_by_budget(manifest, &j.spec.id)
                && m.and_then(|m| m.trial_count()).is_none_or(|n| {
                    manifest["until_decisive"]["cap_per_cell"]
                        .as_u64()
                        .is_none_or(|cap| n as u64 <= cap)
                })
            {
                plain("stopped at the run's trial cap")
            } else if j.borderline && m.is_some_and(|m| m.sessions_apart) {
                plain("interval across the band's edge (sessions kept apart)")
            } else if j.borderline {
                plain("interval across the band's edge")
            } else if let Some(u) = m.and_then(|m| m.undecided.first()) {
                ("undecided".into(), first_clause(u))
            } else {
                ("undecided".into(), first_clause(&j.why))
            }
        }
    }
}

/// The first clause of a reason (up to its first `: `, `; ` or ` (`),
/// whole when it has none: the part a cause cell shows.
fn first_clause(s: &str) -> String {
    let s = s.trim();
    let i = [": ", "; ", " ("]
        .iter()
        .filter_map(|b| s.find(b))
        .filter(|i| *i >= 12)
        .min()
        .unwrap_or(s.len());
    s[..i].to_string()
}

/// The unit both number cells carry: a percentage sticks to its number, a
/// short unit follows it, a long one (over 20 characters) is left to the
/// claim's line.
fn with_unit(c: &ClaimSpec, number: String) -> String {
    let unit = super::unit_short(c);
    if unit.starts_with('%') {
        format!("{number}%")
    } else if unit.is_empty() || unit.chars().count() > 20 {
        number
    } else {
        format!("{number} {unit}")
    }
}

/// The published value as judged, in the claim's unit: a range `lo-hi`, a
/// bound `≤p` or `≥p`, else the values (several joined by ` / `).
fn published_cell(c: &ClaimSpec) -> String {
    use crate::claims::Check;
    let n = crate::figure::num;
    let v = c.published.values();
    let number = match c.check {
        Check::Shape | Check::Behaviour => return c.published_text.clone(),
        Check::InRange => format!("{}-{}", n(c.published.at(0)), n(c.published.at(1))),
        Check::AtMost => format!("≤{}", n(c.published.at(0))),
        Check::AtLeast => format!("≥{}", n(c.published.at(0))),
        _ => v.iter().map(|x| n(*x)).collect::<Vec<_>>().join(" / "),
    };
    with_unit(c, number)
}

/// Our value as judged, in the same unit as [`published_cell`].
fn ours_cell(j: &Judged) -> String {
    match &j.measured {
        Some(m) if matches!(j.spec.check, crate::claims::Check::Behaviour) => {
            super::headline(&j.spec, m)
        }
        Some(m) => with_unit(&j.spec, super::headline(&j.spec, m)),
        None => "-".into(),
    }
}

/// The cause cell: the verdict's class (with its particulars: why the
/// data do not decide, which condition fails), then the computed
/// explanation where the claim's analysis sets one, else the claim's
/// static `cause` from claims.toml. The class comes first, so an
/// explanation never reads as the verdict (B4.2's "no stall" beside its
/// invalid measurement).
fn cause(j: &Judged, manifest: &serde_json::Value) -> String {
    let (class, reason) = class(j, manifest);
    let mut out = if reason.is_empty() {
        class
    } else {
        format!("{class} ({reason})")
    };
    let computed = j.measured.as_ref().and_then(|m| m.explanation.as_ref());
    // The static cause says why ours lies away from the published value:
    // beside an interval across the band's edge it would explain a
    // difference the data do not show (B5.1's Poisson model).
    let stated = j.spec.cause.as_deref().filter(|_| !j.borderline);
    let why = computed
        .map(|e| e.cause.as_str())
        .or(stated)
        .filter(|c| !c.is_empty());
    if let Some(c) = why {
        out += &format!("; {c}");
    }
    out
}

/// One claim's row of the table.
fn row(j: &Judged, manifest: &serde_json::Value) -> String {
    let id = &j.spec.id;
    let setting = if j.verdict == Verdict::ReproducedWithAssumption {
        j.assumption.clone()
    } else {
        reproducing_setting(j)
    };
    let cell = |s: &str, max: usize| super::md_escape(&cell_text(s, id, max));
    format!(
        "| [{id}](#{}) {} | {} | {} | {} | {} |\n",
        anchor(id),
        j.verdict.as_str(),
        cell(&published_cell(&j.spec), NUMBER_MAX),
        cell(&ours_cell(j), NUMBER_MAX),
        cell(&setting, SETTING_MAX),
        cell(&cause(j, manifest), CELL_MAX),
    )
}

/// The verdict without its parenthesis (`inconclusive (borderline)` ->
/// `inconclusive`), as compare's claims.csv sides carry it.
fn bare(v: &str) -> &str {
    v.split(" (").next().unwrap_or(v)
}

/// `A, B and C`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [a] => a.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The rerun's agreement in one line: verdicts agreeing k of n (claims
/// measured in both), then what the disagreements do to the headline,
/// grouped by this run's verdict: reproduced here and not there rests on
/// this run alone; undecided here and decided there is named too.
pub fn rerun_line(r: &Rerun, rows: &[Judged]) -> String {
    let both: Vec<&Pair> = r.pairs.iter().filter(|p| p.both_measured()).collect();
    let agree = both.iter().filter(|p| p.agrees()).count();
    let mut out = format!(
        "- **Independent rerun** (`{}`, its claims.csv): verdicts agree on {agree} of the {} claims measured in both",
        r.name,
        both.len()
    );
    let differ: Vec<&&Pair> = both.iter().filter(|p| !p.agrees()).collect();
    if differ.is_empty() {
        return out + ".\n";
    }
    let repro = |id: &str| {
        rows.iter()
            .any(|j| j.spec.id == id && j.spec.tally == "reproduction")
    };
    let mut parts = Vec::new();
    for v in Verdict::all() {
        let here = v.as_str();
        let mine: Vec<&&&Pair> = differ
            .iter()
            .filter(|p| bare(&p.run.as_ref().unwrap().verdict) == here)
            .collect();
        if mine.is_empty() {
            continue;
        }
        // Per verdict there: which claims.
        let mut there: Vec<(String, Vec<String>)> = Vec::new();
        for p in &mine {
            let t = bare(&p.reference.as_ref().unwrap().verdict).to_string();
            match there.iter_mut().find(|(k, _)| *k == t) {
                Some((_, ids)) => ids.push(p.claim.clone()),
                None => there.push((t, vec![p.claim.clone()])),
            }
        }
        let total = rows
            .iter()
            .filter(|j| j.verdict == v && repro(&j.spec.id))
            .count();
        let k = mine.len();
        let groups = there
            .iter()
            .map(|(t, ids)| format!("{t} there ({})", ids.join(", ")))
            .collect::<Vec<_>>();
        let decided = matches!(
            v,
            Verdict::Reproduced | Verdict::ReproducedWithAssumption | Verdict::NotReproduced
        );
        let consequence = match (decided, k) {
            (false, _) => "",
            (true, 1) => ", so it rests on this run alone",
            (true, _) => ", so they rest on this run alone",
        };
        parts.push(format!(
            "{k} of the {total} {here} here {} {}{consequence}",
            if k == 1 { "is" } else { "are" },
            and_list(&groups)
        ));
    }
    out += &format!(": {}.\n", parts.join("; "));
    out
}

/// The headline: who reproduced, who did not and why, the inconclusive
/// grouped by why, the claims apart from the tally, and the rerun.
fn headline(rows: &[Judged], manifest: &serde_json::Value, rerun: Option<&Rerun>) -> String {
    let repro: Vec<&Judged> = rows
        .iter()
        .filter(|j| j.spec.tally == "reproduction")
        .collect();
    let ids = |v: Verdict| -> Vec<String> {
        repro
            .iter()
            .filter(|j| j.verdict == v)
            .map(|j| j.spec.id.clone())
            .collect()
    };
    let mut out = format!(
        "Of {} reproduction claims, **{} reproduced as stated**{}.\n",
        repro.len(),
        ids(Verdict::Reproduced).len(),
        match ids(Verdict::Reproduced) {
            v if v.is_empty() => String::new(),
            v => format!(": {}", v.join(", ")),
        }
    );
    let mut lines = Vec::new();
    let with = ids(Verdict::ReproducedWithAssumption);
    if !with.is_empty() {
        lines.push(format!(
            "**{} reproduced only under an assumption** (a detail or reading the study leaves open, named in the table): {}.",
            with.len(),
            with.join(", ")
        ));
    }
    let not: Vec<String> = repro
        .iter()
        .filter(|j| j.verdict == Verdict::NotReproduced)
        .map(|j| {
            let why = j
                .measured
                .as_ref()
                .and_then(|m| m.explanation.as_ref().map(|e| e.cause.clone()))
                .or_else(|| j.spec.cause.clone())
                .unwrap_or_else(|| class(j, manifest).0);
            format!("{}: {why}", j.spec.id)
        })
        .collect();
    if !not.is_empty() {
        lines.push(format!(
            "**{} not reproduced**: {}.",
            not.len(),
            not.join("; ")
        ));
    }
    // The inconclusive, grouped by the verdict's own reason.
    let mut why: Vec<(String, Vec<String>)> = Vec::new();
    for j in repro.iter().filter(|j| j.verdict == Verdict::Inconclusive) {
        let k = class(j, manifest).0;
        match why.iter_mut().find(|(c, _)| *c == k) {
            Some((_, v)) => v.push(j.spec.id.clone()),
            None => why.push((k, vec![j.spec.id.clone()])),
        }
    }
    if !why.is_empty() {
        lines.push(format!(
            "**{} inconclusive**, deciding nothing: {}.",
            ids(Verdict::Inconclusive).len(),
            why.iter()
                .map(|(k, v)| format!("{k}: {}", v.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let notrun = ids(Verdict::NotRun);
    if !notrun.is_empty() {
        lines.push(format!(
            "**{} not run** at this size: {}.",
            notrun.len(),
            notrun.join(", ")
        ));
    }
    let apart: Vec<String> = rows
        .iter()
        .filter(|j| j.spec.tally != "reproduction")
        .map(|j| format!("{} {}", j.spec.id, j.verdict.as_str()))
        .collect();
    if !apart.is_empty() {
        lines.push(format!(
            "Apart from the tally (the studies' own description and the harness's policy): {}.",
            apart.join(", ")
        ));
    }
    for l in lines {
        out += &format!("- {l}\n");
    }
    if let Some(r) = rerun {
        out += &rerun_line(r, rows);
    }
    out
}

/// The findings section: heading, headline, then one row per claim not
/// reproduced as stated.
pub fn section(rows: &[Judged], manifest: &serde_json::Value, rerun: Option<&Rerun>) -> String {
    let mut out = String::from("## Findings\n\n");
    out += &headline(rows, manifest, rerun);
    let picked: Vec<&Judged> = rows.iter().filter(|j| not_as_stated(j)).collect();
    if !picked.is_empty() {
        out += "\nEvery claim not reproduced as stated, one per row (the claim links to its line in its section, where the whole reasoning stands):\n";
        out += "\n| claim | published | ours | what reproduces it (setting) | cause |\n|---|---|---|---|---|\n";
        for j in picked {
            out += &row(j, manifest);
        }
    }
    out + "\n"
}

#[cfg(test)]
mod tests {
    use crate::report::findings::{anchor, cell_text};

    #[test]
    fn a_long_cell_is_cut_at_a_clause_and_linked_never_with_an_ellipsis() {
        assert_eq!(cell_text("short", "A3.3", 20), "short");
        let long = "disturbed cells; all-at-once retries admit about one request per wave (the lockstep bound)";
        let cut = cell_text(long, "A2.1", 40);
        assert_eq!(cut, "disturbed cells ([more](#claim-a2-1))");
        let words = cell_text(&"word ".repeat(30), "B6.1", 30);
        assert!(
            !words.contains('…') && words.ends_with("([more](#claim-b6-1))"),
            "{words}"
        );
        assert!(words.len() <= 30 + " ([more](#claim-b6-1))".len());
        assert_eq!(anchor("B2.5"), "claim-b2-5");
    }
}
