//! Analysis of `script-survival` (B6.2-B6.5): what each check answered in each
//! scenario, with the exact texts, and the clients' costs.
//!
//! Metrics (rows -> claim values and conditions): `b62`, `b63`, `b64`,
//! `b65`, each over `Rows` (selection by setting, scenario and check).
//! Presentation: `outcome_table` and `analyze`.
//!
//! Unit tests of the metrics: `tests.rs` in this folder.

use super::rows::Row;
use crate::analysis::figure::{Axis, Figure, Panel, Pt, Series};
use crate::analysis::table::{distinct, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;

/// The rows, selected by `replica-read-only` setting, scenario and check.
pub struct Rows<'a>(pub &'a [Row]);

impl<'a> Rows<'a> {
    /// `ro: None` means every setting.
    pub fn sel(&self, ro: Option<&str>, scenario: &str, check: &str) -> Vec<&'a Row> {
        self.0
            .iter()
            .filter(|r| {
                ro.is_none_or(|x| r.replica_read_only == x)
                    && r.scenario == scenario
                    && r.check == check
            })
            .collect()
    }
}

/// Non-empty, and every row satisfies `f`.
fn all(v: &[&Row], f: &dyn Fn(&Row) -> bool) -> bool {
    !v.is_empty() && v.iter().all(|r| f(r))
}

fn is_noscript(r: &Row) -> bool {
    r.outcome == "NOSCRIPT"
}

/// `ok/n` of some rows.
/// Distinct values read as a list: `a or b`; reply texts in quotes.
fn list<T: std::fmt::Display>(v: Vec<T>) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}

fn quoted(v: Vec<String>) -> String {
    list(v.into_iter().map(|s| format!("\"{s}\"")).collect())
}

fn ok_of(v: &[&Row]) -> String {
    format!("{}/{}", v.iter().filter(|r| r.ok).count(), v.len())
}

/// B6.2: after an RDB restart the script cache is empty (SCRIPT EXISTS
/// false, EVALSHA NOSCRIPT).
pub fn b62(rows: &Rows) -> Option<Measured> {
    let exists: Vec<&Row> = rows
        .sel(None, "restart", "script_exists")
        .into_iter()
        .filter(|r| r.script == "token-bucket")
        .collect();
    let evalsha = rows.sel(None, "restart", "evalsha");
    if evalsha.is_empty() {
        return None;
    }
    Some(
        Measured::new(
            "B6.2",
            vec![1.0],
            format!(
                "after restart: SCRIPT EXISTS {}; EVALSHA: {}",
                list(distinct(exists.iter().map(|r| r.outcome.clone()))),
                quoted(distinct(evalsha.iter().map(|r| r.reply.clone())))
            ),
            "script-survival.csv scenario=restart check in {script_exists, evalsha}",
        )
        .condition(
            "SCRIPT EXISTS is false after every restart",
            all(&exists, &|r| r.outcome == "false"),
        )
        .condition(
            "EVALSHA fails with NOSCRIPT after every restart",
            all(&evalsha, &is_noscript),
        ),
    )
}

/// B6.3: the script cache is not replicated: EVALSHA fails with NOSCRIPT
/// on the replica and after its promotion.
pub fn b63(rows: &Rows) -> Option<Measured> {
    let rep_evalsha = rows.sel(None, "replica", "evalsha");
    if rep_evalsha.is_empty() {
        return None;
    }
    let prom_evalsha = rows.sel(None, "promoted", "evalsha");
    let readonly_fcall = distinct(
        rows.sel(Some("yes"), "replica", "fcall")
            .iter()
            .filter(|r| !r.ok)
            .map(|r| r.reply.clone()),
    );
    Some(
        Measured::new(
            "B6.3",
            vec![1.0],
            format!(
                "EVALSHA on replica: {}; after promotion: {}",
                quoted(distinct(rep_evalsha.iter().map(|r| r.reply.clone()))),
                quoted(distinct(prom_evalsha.iter().map(|r| r.reply.clone())))
            ),
            "script-survival.csv scenario in {replica, promoted} check=evalsha",
        )
        .condition(
            "EVALSHA on the replica fails with NOSCRIPT (every setting, every trial)",
            all(&rep_evalsha, &is_noscript),
        )
        .condition(
            "EVALSHA on the promoted replica fails with NOSCRIPT",
            all(&prom_evalsha, &is_noscript),
        )
        .condition(
            "SCRIPT EXISTS is false on the replica",
            all(&rows.sel(None, "replica", "script_exists"), &|r| {
                r.outcome == "false"
            }),
        )
        .note(if readonly_fcall.is_empty() {
            String::new()
        } else {
            format!(
                "on a read-only replica a writing script or function is refused anyway: {}",
                quoted(readonly_fcall)
            )
        }),
    )
}

/// B6.4: a function library survives the restart, is on the replica and
/// works after promotion.
pub fn b64(rows: &Rows) -> Option<Measured> {
    let fcall_restart = rows.sel(None, "restart", "fcall");
    if fcall_restart.is_empty() {
        return None;
    }
    let fcall_prom = rows.sel(None, "promoted", "fcall");
    let fl_rep = rows.sel(None, "replica", "function_list");
    let fro_rep = rows.sel(None, "replica", "fcall_ro");
    let fcall_rw_rep = rows.sel(Some("no"), "replica", "fcall");
    let fcall_ro_rep = rows.sel(Some("yes"), "replica", "fcall");
    let ro_texts = distinct(fcall_ro_rep.iter().map(|r| r.reply.clone()));
    Some(
        Measured::new(
            "B6.4",
            vec![1.0],
            format!(
                "FCALL after restart {} ok, after promotion {} ok; on the replica: library present {}, FCALL_RO {}, \
                 FCALL (writing) on a writable replica {}, on a read-only replica {}",
                ok_of(&fcall_restart),
                ok_of(&fcall_prom),
                ok_of(&fl_rep),
                ok_of(&fro_rep),
                ok_of(&fcall_rw_rep),
                ok_of(&fcall_ro_rep),
            ),
            "script-survival.csv check in {fcall, fcall_ro, function_list}",
        )
        .condition("FCALL works after the RDB restart", all(&fcall_restart, &|r| r.ok))
        .condition("FCALL works after promotion", all(&fcall_prom, &|r| r.ok))
        .condition("the library is on the replica (FUNCTION LIST)", all(&fl_rep, &|r| r.ok))
        .condition("FCALL_RO of a no-writes function works on the replica", all(&fro_rep, &|r| r.ok))
        .condition(
            "FCALL of the token-bucket function works on a writable replica",
            all(&fcall_rw_rep, &|r| r.ok),
        )
        .note(format!(
            "on Redis's default read-only replica, FCALL of the (writing) token-bucket function answered {}: the function is there, the write is refused",
            quoted(ro_texts)
        )),
    )
}

/// B6.5: the NOSCRIPT -> EVAL fallback costs one failed call and one extra
/// round trip per client, and every decision still succeeds; without it
/// the client sees NOSCRIPT.
pub fn b65(rows: &Rows) -> Option<Measured> {
    let after_loss = |check: &str| -> Vec<&Row> {
        ["restart", "promoted"]
            .iter()
            .flat_map(|s| rows.sel(None, s, check))
            .collect()
    };
    let fb = after_loss("client:evalsha-fallback");
    let nofb = after_loss("client:evalsha");
    if fb.is_empty() {
        return None;
    }
    Some(
        Measured::new(
            "B6.5",
            vec![1.0],
            format!(
                "fallback client: failed calls {}, extra round trips {}, all decisions succeeded: {}; without fallback: {}",
                list(distinct(fb.iter().map(|r| r.failed_calls))),
                list(distinct(fb.iter().map(|r| r.extra_round_trips))),
                if fb.iter().all(|r| r.succeeded == r.decisions) { "yes" } else { "no" },
                quoted(distinct(nofb.iter().map(|r| r.reply.clone())))
            ),
            "script-survival.csv scenario in {restart, promoted} check in {client:evalsha-fallback, client:evalsha}",
        )
        .condition("fallback: exactly one failed call", all(&fb, &|r| r.failed_calls == 1))
        .condition("fallback: exactly one extra round trip", all(&fb, &|r| r.extra_round_trips == 1))
        .condition("fallback: every decision succeeded", all(&fb, &|r| r.succeeded == r.decisions))
        .condition(
            "no fallback: the client reports NOSCRIPT",
            all(&nofb, &|r| r.outcome == "NOSCRIPT" && r.succeeded == 0),
        ),
    )
}

/// Per setting x scenario x check: the outcomes, the error texts and (for
/// clients) the mean cost per trial.
fn outcome_table(rows: &Rows) -> String {
    let all_rows = rows.0;
    let mut t = Vec::new();
    for ro in distinct(all_rows.iter().map(|r| r.replica_read_only.clone())) {
        for scen in distinct(all_rows.iter().map(|r| r.scenario.clone())) {
            for check in distinct(all_rows.iter().map(|r| r.check.clone())) {
                let rs = rows.sel(Some(&ro), &scen, &check);
                if rs.is_empty() {
                    continue;
                }
                let outcomes = distinct(rs.iter().map(|r| r.outcome.clone())).join(", ");
                let texts =
                    distinct(rs.iter().filter(|r| !r.ok).map(|r| r.reply.clone())).join(" / ");
                let cost = if check.starts_with("client:") {
                    let n = rs.len() as f64;
                    let mean = |g: &dyn Fn(&Row) -> f64| rs.iter().map(|r| g(r)).sum::<f64>() / n;
                    format!(
                        "{:.1}/{:.1} ok, {:.1} failed calls, {:.1} extra round trips",
                        mean(&|r| r.succeeded as f64),
                        mean(&|r| r.decisions as f64),
                        mean(&|r| r.failed_calls as f64),
                        mean(&|r| r.extra_round_trips as f64)
                    )
                } else {
                    String::new()
                };
                t.push(vec![
                    ro.clone(),
                    scen.clone(),
                    check.clone(),
                    rs[0].script.clone(),
                    ok_of(&rs),
                    outcomes,
                    texts,
                    cost,
                ]);
            }
        }
    }
    md_table(
        &[
            "replica-read-only",
            "scenario",
            "check",
            "script",
            "ok",
            "outcome",
            "error text",
            "client cost (mean per trial)",
        ],
        &t,
    )
}

/// B6.2-B6.5: the share of trials in which each check succeeded, per
/// scenario, a panel per `replica-read-only` setting.
fn figure(ctx: &AnalysisCtx, rows: &Rows) -> Result<String> {
    let checks = distinct(rows.0.iter().map(|r| r.check.clone()));
    let scenarios = distinct(rows.0.iter().map(|r| r.scenario.clone()));
    let mut fig = Figure::new(
        "b6_2-b6_5-script-survival",
        &["B6.2", "B6.3", "B6.4", "B6.5"],
        "what survives a restart, a replica and a promotion: scripts (EVALSHA) and functions (FCALL)",
        format!(
            "Share of trials in which the check succeeded (0: failed in every trial, e.g. NOSCRIPT), one value per check and scenario over its trials ({{n}}); these are behaviour claims (published: {}), judged on the conditions listed in the section.",
            ["B6.2", "B6.3", "B6.4", "B6.5"]
                .iter()
                .filter_map(|id| ctx
                    .claim(id)
                    .map(|c| format!("{} {}", c.id, c.published_text)))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    );
    for ro in distinct(rows.0.iter().map(|r| r.replica_read_only.clone())) {
        let mut p = Panel::new(
            format!("replica-read-only {ro}"),
            Axis::new("check"),
            Axis::new("share of trials that succeeded").range(-0.05, 1.08),
        )
        .categories(
            checks
                .iter()
                .map(|c| c.replace('_', " ").replace("client:", "client "))
                .collect(),
        );
        for sc in &scenarios {
            let pts = checks
                .iter()
                .enumerate()
                .filter_map(|(i, c)| {
                    let v = rows.sel(Some(&ro), sc, c);
                    (!v.is_empty()).then(|| Pt {
                        n: Some(v.len()),
                        ..Pt::new(
                            i as f64,
                            v.iter().filter(|r| r.ok).count() as f64 / v.len() as f64,
                        )
                    })
                })
                .collect();
            p = p.series(Series::points(sc.clone(), pts));
        }
        fig = fig.panel(p);
    }
    fig.write(ctx)
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("script-survival.csv")? else {
        return Ok((vec![], Section::new("script-survival", "Not run.\n")));
    };
    let trials = distinct(rows.iter().map(|r| (r.cell.clone(), r.trial))).len();
    let mut md = format!(
        "Fresh primary + replica per trial ({trials} trials over the `replica-read-only` settings); the token-bucket script \
         (writes) and a `no-writes` probe loaded on the primary with SCRIPT LOAD and FUNCTION LOAD. Seed(s): {}.\n\n",
        list(distinct(rows.iter().map(|r| r.seed)))
    );
    let rows = Rows(&rows);
    md = figure(ctx, &rows)? + &md;
    let appendix = outcome_table(&rows);
    md.push_str(
        "Every setting, scenario and check with its outcome and error text is in the appendix.\n",
    );
    let out: Vec<Measured> = [b62(&rows), b63(&rows), b64(&rows), b65(&rows)]
        .into_iter()
        .flatten()
        .collect();
    let all_hold = out
        .iter()
        .all(|m: &Measured| m.conditions.iter().all(|c| c.1));
    let finding = if !all_hold {
        "some of the checked behaviours did not hold; see the claims above and the appendix."
    } else {
        "after a restart and on a replica the script cache is empty (EVALSHA answers NOSCRIPT), while a function library survives the restart and is on the replica; a client that falls back to EVAL on NOSCRIPT succeeds."
    };
    Ok((
        out,
        Section::new("script-survival", md)
            .finding(finding)
            .appendix(appendix),
    ))
}
