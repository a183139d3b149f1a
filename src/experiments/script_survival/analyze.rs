//! Analysis of `script-survival` (B6.2-B6.5): what each check answered in each
//! scenario, with the exact texts, and the clients' costs.

use crate::analysis::table::{distinct, md_table};
use crate::analysis::{AnalysisCtx, Measured, Section};
use crate::error::Result;
use super::Row;

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("script-survival.csv")? else {
        return Ok((vec![], Section::new("script-survival", "Not run.\n")));
    };
    let trials = distinct(rows.iter().map(|r| (r.cell.clone(), r.trial))).len();
    let mut md = format!(
        "Fresh primary + replica per trial ({trials} trials over the `replica-read-only` settings); the token-bucket script \
         (writes) and a `no-writes` probe loaded on the primary with SCRIPT LOAD and FUNCTION LOAD. Seed(s): {:?}.\n\n",
        distinct(rows.iter().map(|r| r.seed))
    );
    let sel = |ro: Option<&str>, scen: &str, check: &str| -> Vec<&Row> {
        rows.iter()
            .filter(|r| {
                ro.is_none_or(|x| r.replica_read_only == x)
                    && r.scenario == scen
                    && r.check == check
            })
            .collect()
    };
    // The outcome table: per setting x scenario x check, the outcomes and texts seen.
    let mut t = Vec::new();
    for ro in distinct(rows.iter().map(|r| r.replica_read_only.clone())) {
        for scen in distinct(rows.iter().map(|r| r.scenario.clone())) {
            for check in distinct(rows.iter().map(|r| r.check.clone())) {
                let rs = sel(Some(&ro), &scen, &check);
                if rs.is_empty() {
                    continue;
                }
                let outcomes = distinct(rs.iter().map(|r| r.outcome.clone())).join(", ");
                let texts =
                    distinct(rs.iter().filter(|r| !r.ok).map(|r| r.reply.clone())).join(" / ");
                let cost = if check.starts_with("client:") {
                    let n = rs.len() as f64;
                    format!(
                        "{:.1}/{:.1} ok, {:.1} failed calls, {:.1} extra round trips",
                        rs.iter().map(|r| r.succeeded as f64).sum::<f64>() / n,
                        rs.iter().map(|r| r.decisions as f64).sum::<f64>() / n,
                        rs.iter().map(|r| r.failed_calls as f64).sum::<f64>() / n,
                        rs.iter().map(|r| r.extra_round_trips as f64).sum::<f64>() / n
                    )
                } else {
                    String::new()
                };
                t.push(vec![
                    ro.clone(),
                    scen.clone(),
                    check.clone(),
                    rs[0].script.clone(),
                    format!("{}/{}", rs.iter().filter(|r| r.ok).count(), rs.len()),
                    outcomes,
                    texts,
                    cost,
                ]);
            }
        }
    }
    md.push_str(&md_table(
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
    ));
    let mut out = Vec::new();
    let all = |v: &[&Row], f: &dyn Fn(&Row) -> bool| !v.is_empty() && v.iter().all(|r| f(r));
    let is_noscript = |r: &Row| r.outcome == "NOSCRIPT";
    let restart_exists: Vec<&Row> = sel(None, "restart", "script_exists")
        .into_iter()
        .filter(|r| r.script == "token-bucket")
        .collect();
    let restart_evalsha = sel(None, "restart", "evalsha");
    if !restart_evalsha.is_empty() {
        out.push(
            Measured::new(
                "B6.2",
                vec![1.0],
                format!(
                    "after restart: SCRIPT EXISTS {:?}; EVALSHA: {:?}",
                    distinct(restart_exists.iter().map(|r| r.outcome.clone())),
                    distinct(restart_evalsha.iter().map(|r| r.reply.clone()))
                ),
                "script-survival.csv scenario=restart check in {script_exists, evalsha}",
            )
            .condition(
                "SCRIPT EXISTS is false after every restart",
                all(&restart_exists, &|r| r.outcome == "false"),
            )
            .condition(
                "EVALSHA fails with NOSCRIPT after every restart",
                all(&restart_evalsha, &is_noscript),
            ),
        );
    }
    let rep_evalsha = sel(None, "replica", "evalsha");
    let prom_evalsha = sel(None, "promoted", "evalsha");
    let rep_fcall_ro = sel(Some("yes"), "replica", "fcall");
    if !rep_evalsha.is_empty() {
        let readonly_fcall = distinct(
            rep_fcall_ro
                .iter()
                .filter(|r| !r.ok)
                .map(|r| r.reply.clone()),
        );
        out.push(
            Measured::new(
                "B6.3",
                vec![1.0],
                format!(
                    "EVALSHA on replica: {:?}; after promotion: {:?}",
                    distinct(rep_evalsha.iter().map(|r| r.reply.clone())),
                    distinct(prom_evalsha.iter().map(|r| r.reply.clone()))
                ),
                "script-survival.csv scenario in {replica, promoted} check=evalsha",
            )
            .condition("EVALSHA on the replica fails with NOSCRIPT (every setting, every trial)", all(&rep_evalsha, &is_noscript))
            .condition("EVALSHA on the promoted replica fails with NOSCRIPT", all(&prom_evalsha, &is_noscript))
            .condition(
                "SCRIPT EXISTS is false on the replica",
                all(&sel(None, "replica", "script_exists"), &|r| r.outcome == "false"),
            )
            .note(if readonly_fcall.is_empty() {
                String::new()
            } else {
                format!("on a read-only replica a writing script or function is refused anyway: {readonly_fcall:?}")
            }),
        );
    }
    let fcall_restart = sel(None, "restart", "fcall");
    let fcall_prom = sel(None, "promoted", "fcall");
    let fl_rep = sel(None, "replica", "function_list");
    let fro_rep = sel(None, "replica", "fcall_ro");
    let fcall_rw_rep = sel(Some("no"), "replica", "fcall");
    if !fcall_restart.is_empty() {
        let ro_texts = distinct(rep_fcall_ro.iter().map(|r| r.reply.clone()));
        out.push(
            Measured::new(
                "B6.4",
                vec![1.0],
                format!(
                    "FCALL after restart {}/{} ok, after promotion {}/{} ok; on the replica: library present {}/{}, FCALL_RO {}/{}, \
                     FCALL (writing) on a writable replica {}/{}, on a read-only replica {}/{}",
                    fcall_restart.iter().filter(|r| r.ok).count(), fcall_restart.len(),
                    fcall_prom.iter().filter(|r| r.ok).count(), fcall_prom.len(),
                    fl_rep.iter().filter(|r| r.ok).count(), fl_rep.len(),
                    fro_rep.iter().filter(|r| r.ok).count(), fro_rep.len(),
                    fcall_rw_rep.iter().filter(|r| r.ok).count(), fcall_rw_rep.len(),
                    rep_fcall_ro.iter().filter(|r| r.ok).count(), rep_fcall_ro.len(),
                ),
                "script-survival.csv check in {fcall, fcall_ro, function_list}",
            )
            .condition("FCALL works after the RDB restart", all(&fcall_restart, &|r| r.ok))
            .condition("FCALL works after promotion", all(&fcall_prom, &|r| r.ok))
            .condition("the library is on the replica (FUNCTION LIST)", all(&fl_rep, &|r| r.ok))
            .condition("FCALL_RO of a no-writes function works on the replica", all(&fro_rep, &|r| r.ok))
            .condition("FCALL of the token-bucket function works on a writable replica", all(&fcall_rw_rep, &|r| r.ok))
            .note(format!(
                "on Redis's default read-only replica, FCALL of the (writing) token-bucket function answered {ro_texts:?}: the function is there, the write is refused"
            )),
        );
    }
    let fb: Vec<&Row> = ["restart", "promoted"]
        .iter()
        .flat_map(|s| sel(None, s, "client:evalsha-fallback"))
        .collect();
    let nofb: Vec<&Row> = ["restart", "promoted"]
        .iter()
        .flat_map(|s| sel(None, s, "client:evalsha"))
        .collect();
    if !fb.is_empty() {
        out.push(
            Measured::new(
                "B6.5",
                vec![1.0],
                format!(
                    "fallback client: failed calls {:?}, extra round trips {:?}, all decisions succeeded: {}; without fallback: {:?}",
                    distinct(fb.iter().map(|r| r.failed_calls)),
                    distinct(fb.iter().map(|r| r.extra_round_trips)),
                    fb.iter().all(|r| r.succeeded == r.decisions),
                    distinct(nofb.iter().map(|r| r.reply.clone()))
                ),
                "script-survival.csv scenario in {restart, promoted} check in {client:evalsha-fallback, client:evalsha}",
            )
            .condition("fallback: exactly one failed call", all(&fb, &|r| r.failed_calls == 1))
            .condition("fallback: exactly one extra round trip", all(&fb, &|r| r.extra_round_trips == 1))
            .condition("fallback: every decision succeeded", all(&fb, &|r| r.succeeded == r.decisions))
            .condition("no fallback: the client reports NOSCRIPT", all(&nofb, &|r| r.outcome == "NOSCRIPT" && r.succeeded == 0)),
        );
    }
    Ok((out, Section::new("script-survival", md)))
}
