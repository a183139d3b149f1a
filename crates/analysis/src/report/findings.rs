//! The report's opening, **Findings**: at most [`MAX_LINES`] lines a reader
//! takes in at once. One sentence of what reproduced (counts), then a table
//! `claim | published | ours as stated | what reproduces it (setting) |
//! cause` holding every claim not reproduced as stated, then (when the run
//! was analysed with `--rerun`) one line of the independent rerun's
//! agreement.
//!
//! Every cell comes from the judged claims: the published text and our
//! value at the setup as stated ([`super::headline`]), the assumed setting
//! or the swept setting that reproduces, and the cause: the verdict's own
//! reason (disturbed cells, an invalid measurement, measuring sessions that
//! disagree, the trial cap, an interval across the edge) followed by the
//! claim's `cause` from `analysis/claims.toml` (the mechanism, written once
//! per claim). One line per claim when they fit; otherwise claims whose
//! verdict and cause class agree share a line, then the smallest lines of
//! one verdict merge, so the table never passes the limit.

use crate::claims::{Judged, Outcome, Verdict, outcome, setting_text};
use crate::compare::Pair;

/// The most lines the findings take before the next section (the sentence,
/// the table with its header, and the rerun's line).
pub const MAX_LINES: usize = 12;

/// The independent rerun the report names: its folder's name and its
/// claims paired with this run's (`compare::pair` of the two claims.csv).
pub struct Rerun {
    pub name: String,
    pub pairs: Vec<Pair>,
}

/// One claim's cells.
struct Cells {
    id: String,
    published: String,
    ours: String,
    setting: String,
    /// Why it is not reproduced as stated, as a class claims share
    /// (`disturbed cells`, `a detail the study does not state`).
    class: String,
    /// This claim's particulars of its class (which validity check
    /// failed), or empty.
    reason: String,
    /// The claim's `cause` from claims.toml (may be empty).
    detail: String,
}

/// A line of the table: claims of one verdict.
struct Line {
    verdict: Verdict,
    claims: Vec<Cells>,
}

/// `s` cut to about `max` characters: at its first clause break (`: `,
/// `, `, ` (`, `; `) if that comes early enough, else at a word, with `…`.
pub fn short_cell(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut = [": ", ", ", " (", "; "]
        .iter()
        .filter_map(|b| s.find(b))
        .filter(|i| *i >= 8 && s[..*i].chars().count() <= max)
        .min();
    match cut {
        Some(i) => s[..i].to_string(),
        None => fit(s, max),
    }
}

/// `s` cut at a word to at most `max` characters, with `…`.
fn fit(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
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
    format!("{}…", out.trim_end_matches([',', ';', ':']))
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

/// The swept setting that reproduces the claim (of those whose interval
/// lies inside, the one changing fewest details), named with the stated detail it changes; "none of N
/// settings" when a sweep found none; "-" without a sweep.
fn reproducing_setting(j: &Judged) -> String {
    let Some(m) = &j.measured else {
        return "-".into();
    };
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
            if j.assumption.contains(reading) {
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
                ("a condition fails".into(), short_cell(&failed[0], 40))
            } else if reproducing_setting(j).contains('=') {
                plain("reproduces only with a stated detail changed")
            } else {
                plain("outside the band as stated")
            }
        }
        _ => {
            let invalid = m.map(|m| m.invalid.clone()).unwrap_or_default();
            if invalid
                .iter()
                .any(|w| w.starts_with(crate::disturbance::DISTURBED))
            {
                plain("disturbed cells")
            } else if let Some(w) = invalid.first() {
                ("invalid measurement".into(), short_cell(w, 40))
            } else if m.is_some_and(|m| m.sessions_apart) {
                plain("measuring sessions disagree")
            } else if stopped_by_budget(manifest, &j.spec.id) {
                plain("stopped at the run's trial cap")
            } else if j.borderline {
                plain("interval across the band's edge")
            } else if let Some(u) = m.and_then(|m| m.undecided.first()) {
                ("undecided".into(), short_cell(u, 40))
            } else {
                ("undecided".into(), short_cell(&j.why, 40))
            }
        }
    }
}

fn cells(j: &Judged, manifest: &serde_json::Value) -> Cells {
    let c = &j.spec;
    let ours = match &j.measured {
        Some(m) => {
            let unit = super::unit_short(c);
            let h = super::headline(c, m);
            if unit.starts_with('%') {
                format!("{h}%")
            } else if unit.is_empty() || unit.chars().count() > 20 {
                h
            } else {
                format!("{h} {unit}")
            }
        }
        None => "-".into(),
    };
    // An assumption may be a reading (a sentence): its first clause; a
    // setting is shown whole up to a word.
    let setting = if j.verdict == Verdict::ReproducedWithAssumption {
        short_cell(&j.assumption, 44)
    } else {
        fit(&reproducing_setting(j), 60)
    };
    let (class, reason) = class(j, manifest);
    Cells {
        id: c.id.clone(),
        published: short_cell(&c.published_text, 36),
        ours: short_cell(&ours, 36),
        setting,
        class,
        reason,
        detail: c.cause.clone().unwrap_or_default(),
    }
}

fn uniq(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

impl Line {
    fn classes(&self) -> Vec<String> {
        uniq(self.claims.iter().map(|c| c.class.clone()))
    }

    fn render(&self) -> String {
        let many = self.claims.len() > 1;
        let join =
            |f: &dyn Fn(&Cells) -> String| self.claims.iter().map(f).collect::<Vec<_>>().join("; ");
        let ids = self
            .claims
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        // Settings: once if shared, else per claim.
        let settings = uniq(self.claims.iter().map(|c| c.setting.clone()));
        let setting = if settings.len() == 1 {
            settings[0].clone()
        } else {
            settings
                .iter()
                .map(|x| {
                    let who: Vec<&str> = self
                        .claims
                        .iter()
                        .filter(|c| &c.setting == x)
                        .map(|c| c.id.as_str())
                        .collect();
                    format!("{}: {x}", who.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        // Cause: each class once (with its claims when the line has
        // several classes), then the claims' own causes, tagged when the
        // line has several claims.
        let classes = self.classes();
        let mut cause = classes
            .iter()
            .map(|k| {
                let mine: Vec<&Cells> = self.claims.iter().filter(|c| &c.class == k).collect();
                let reasons: Vec<String> = mine
                    .iter()
                    .filter(|c| !c.reason.is_empty())
                    .map(|c| {
                        if many {
                            format!("{}: {}", c.id, c.reason)
                        } else {
                            c.reason.clone()
                        }
                    })
                    .collect();
                if !reasons.is_empty() {
                    format!("{k} ({})", reasons.join("; "))
                } else if classes.len() > 1 {
                    let who: Vec<&str> = mine.iter().map(|c| c.id.as_str()).collect();
                    format!("{k} ({})", who.join(", "))
                } else {
                    k.clone()
                }
            })
            .collect::<Vec<_>>()
            .join("; ");
        let details = uniq(
            self.claims
                .iter()
                .filter(|c| !c.detail.is_empty())
                .map(|c| {
                    if many {
                        let who: Vec<&str> = self
                            .claims
                            .iter()
                            .filter(|x| x.detail == c.detail)
                            .map(|x| x.id.as_str())
                            .collect();
                        format!("{}: {}", who.join(", "), c.detail)
                    } else {
                        c.detail.clone()
                    }
                }),
        );
        if !details.is_empty() {
            cause += &format!("; {}", details.join("; "));
        }
        let cell = |s: String| super::md_escape(&s);
        format!(
            "| {} {} | {} | {} | {} | {} |\n",
            ids,
            self.verdict.as_str(),
            cell(join(&|c| c.published.clone())),
            cell(join(&|c| c.ours.clone())),
            cell(setting),
            cell(cause),
        )
    }
}

/// The lines of the table, at most `max`: one per claim if they fit; else
/// claims of one verdict and one (setting, cause) share a line, then those
/// of one verdict and cause class, then the two smallest lines of the
/// verdict with most lines merge until they fit.
fn lines(claims: Vec<(Verdict, Cells)>, max: usize) -> Vec<Line> {
    let mut out: Vec<Line> = claims
        .into_iter()
        .map(|(verdict, c)| Line {
            verdict,
            claims: vec![c],
        })
        .collect();
    type Key = fn(&Line) -> String;
    let same_all: Key = |l| {
        let c = &l.claims[0];
        format!("{}|{}|{}", c.setting, c.class, c.detail)
    };
    let same_class: Key = |l| l.classes().join("|");
    for key in [same_all, same_class] {
        if out.len() <= max {
            return out;
        }
        let mut merged: Vec<Line> = Vec::new();
        for l in out {
            match merged
                .iter_mut()
                .find(|m| m.verdict == l.verdict && key(m) == key(&l))
            {
                Some(m) => m.claims.extend(l.claims),
                None => merged.push(l),
            }
        }
        out = merged;
    }
    while out.len() > max {
        // The verdict with most lines; its two smallest lines merge.
        let Some(v) = Verdict::all()
            .iter()
            .copied()
            .filter(|v| out.iter().filter(|l| l.verdict == *v).count() > 1)
            .max_by_key(|v| out.iter().filter(|l| l.verdict == *v).count())
        else {
            break;
        };
        let mut idx: Vec<usize> = (0..out.len()).filter(|i| out[*i].verdict == v).collect();
        idx.sort_by_key(|i| (out[*i].claims.len(), *i));
        let (a, b) = (idx[0].min(idx[1]), idx[0].max(idx[1]));
        let taken = out.remove(b);
        out[a].claims.extend(taken.claims);
    }
    out
}

/// The rerun's agreement in one line: verdicts agreeing k of n (claims
/// measured in both), the disagreeing ones named with both verdicts.
pub fn rerun_line(r: &Rerun) -> String {
    let both: Vec<&Pair> = r.pairs.iter().filter(|p| p.both_measured()).collect();
    let agree = both.iter().filter(|p| p.agrees()).count();
    let bare = |v: &str| v.split(" (").next().unwrap_or(v).to_string();
    let differ: Vec<String> = both
        .iter()
        .filter(|p| !p.agrees())
        .map(|p| {
            let (a, b) = (p.run.as_ref().unwrap(), p.reference.as_ref().unwrap());
            format!(
                "{} ({} here, {} there)",
                p.claim,
                bare(&a.verdict),
                bare(&b.verdict)
            )
        })
        .collect();
    format!(
        "**Independent rerun** (`{}`, its claims.csv): verdicts agree on {agree} of the {} claims measured in both{}.\n",
        r.name,
        both.len(),
        if differ.is_empty() {
            String::new()
        } else {
            format!("; they differ on {}", differ.join(", "))
        }
    )
}

/// The findings section: heading, sentence, table, rerun line.
pub fn section(rows: &[Judged], manifest: &serde_json::Value, rerun: Option<&Rerun>) -> String {
    let repro: Vec<&Judged> = rows
        .iter()
        .filter(|j| j.spec.tally == "reproduction")
        .collect();
    let count = |v: Verdict| repro.iter().filter(|j| j.verdict == v).count();
    let picked: Vec<&Judged> = rows.iter().filter(|j| not_as_stated(j)).collect();
    let mut out = String::from("## Findings\n\n");
    let others: Vec<String> = Verdict::all()
        .iter()
        .filter(|v| **v != Verdict::Reproduced)
        .filter_map(|v| {
            let n = count(*v);
            (n > 0).then(|| format!("{n} {}", v.as_str()))
        })
        .collect();
    out += &format!(
        "Of {} reproduction claims, **{} reproduced as stated**{}.\n",
        repro.len(),
        count(Verdict::Reproduced),
        if picked.is_empty() {
            String::new()
        } else {
            format!(
                "; the table holds every claim not reproduced as stated ({}{})",
                others.join(", "),
                match picked.len() - repro.iter().filter(|j| not_as_stated(j)).count() {
                    0 => String::new(),
                    n => format!(", and {n} apart from the tally"),
                }
            )
        }
    );
    if !picked.is_empty() {
        let rerun_lines = usize::from(rerun.is_some());
        let max = MAX_LINES - 3 - rerun_lines;
        out += "\n| claim | published | ours as stated | what reproduces it (setting) | cause |\n|---|---|---|---|---|\n";
        let claims = picked
            .iter()
            .map(|j| (j.verdict, cells(j, manifest)))
            .collect();
        for l in lines(claims, max) {
            out += &l.render();
        }
    }
    if let Some(r) = rerun {
        out += "\n";
        out += &rerun_line(r);
    }
    out + "\n"
}
