//! `script-survival` (claims B6.2-B6.5): what survives a restart, lives on a
//! replica, and survives a failover: the script cache (SCRIPT LOAD /
//! EVALSHA) or a function library (FUNCTION LOAD / FCALL)?
//!
//! Per trial, a fresh primary + replica; the token-bucket script (it writes)
//! and a read-only probe (`#!lua flags=no-writes`, so EVALSHA_RO / FCALL_RO
//! can run on a replica) are loaded on the primary both ways. Then, in order:
//! - `primary`: the checks on the primary (baseline);
//! - `replica`: the checks on the replica, then clients on it (their exact
//!   errors); the replica's script cache is flushed afterwards because the
//!   EVAL-fallback client cached the script there;
//! - `restart`: SHUTDOWN SAVE + start on the same RDB, the checks, then three
//!   clients: EVALSHA without fallback, EVALSHA with the NOSCRIPT->EVAL
//!   fallback (go-redis's Script.Run), FCALL;
//! - `promoted`: the primary killed, the replica promoted, the checks and
//!   the three clients again.
//!
//! Checks: SCRIPT EXISTS, EVALSHA, EVALSHA_RO, FCALL, FCALL_RO, FUNCTION LIST.
//! Every reply or error is recorded verbatim. One row per check or client.
//!
//! A cell is one `replica_read_only` setting; its setup is the server config,
//! and every trial starts its own pair with it, so no trial sees a script
//! cache or a promotion left by another.

// The rows and the analysis are compiled into limitbench-analysis (see
// experiments/analyzers.rs); they are this experiment's all the same.
pub use limitbench_analysis::experiments::script_survival::{analyze, rows};
#[cfg(test)]
mod tests;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use rows::Row;

use super::{Experiment, RunContext};
use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::fleet::replication::wait_caught_up;
use crate::fleet::{Fleet, ServerConfig};
use crate::resp::{Arg, Connection};
use crate::run::keys::unique_client;
use crate::run::sweep::{self, NoSide, Sweep, TrialRows};
use crate::strategy::{Limit, Options, Request, Script, client_key};

pub const EXPERIMENT: Experiment = Experiment {
    name: "script-survival",
    study: "B",
    allows_external: false,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Params {
    trials: u64,
    /// Decisions each client makes per scenario.
    client_decisions: u64,
    /// `replica-read-only` settings to run (Redis's default is yes).
    replica_read_only: Vec<String>,
}

/// The read-only probe: declares no writes so it may run on a replica.
pub fn probe_script() -> Script {
    Script::new(
        "probe-ro",
        "#!lua flags=no-writes\nreturn redis.call('EXISTS', KEYS[1])",
    )
}

/// The token bucket's script, exactly as the strategy runs it.
pub fn bucket_script() -> Script {
    Script::new(
        "token-bucket",
        include_str!("../../../lua/token-bucket.lua"),
    )
}

const LIMIT: Limit = Limit {
    limit: 100,
    window_ms: 1000,
    rate_per_s: 100.0,
};

fn outcome_of(r: &Result<crate::resp::Reply>) -> (bool, String, String) {
    match r {
        Ok(v) => (true, "ok".into(), v.one_line()),
        Err(e) => (false, e.class(), e.caller_text()),
    }
}

/// The single-command checks on one server.
pub async fn server_checks(
    c: &mut Connection,
    key: &str,
) -> Vec<(String, String, bool, String, String)> {
    let tb = bucket_script();
    let pr = probe_script();
    let (cap, rate) = (LIMIT.limit.to_string(), LIMIT.rate_per_s.to_string());
    let mut out = Vec::new();
    fn push(
        out: &mut Vec<(String, String, bool, String, String)>,
        check: &str,
        script: &str,
        r: Result<crate::resp::Reply>,
    ) {
        let (ok, o, t) = outcome_of(&r);
        out.push((check.to_string(), script.to_string(), ok, o, t));
    }
    for s in [&tb, &pr] {
        let r = c
            .call(&crate::args!["SCRIPT", "EXISTS", s.sha.as_str()])
            .await;
        let exists = r
            .as_ref()
            .ok()
            .and_then(|v| v.clone().into_array())
            .and_then(|a| a.first().and_then(|x| x.as_i64()));
        match exists {
            Some(e) => out.push((
                "script_exists".into(),
                s.name.clone(),
                e == 1,
                (e == 1).to_string(),
                e.to_string(),
            )),
            None => push(&mut out, "script_exists", &s.name, r),
        }
    }
    let args_tb: [Arg<'_>; 6] = [
        Arg::S(tb.sha.as_str()),
        Arg::U(1),
        Arg::S(key),
        Arg::S(&cap),
        Arg::S(&rate),
        Arg::U(1),
    ];
    let mut cmd = vec![Arg::S("EVALSHA")];
    cmd.extend_from_slice(&args_tb);
    push(&mut out, "evalsha", &tb.name, c.call(&cmd).await);
    let r = c
        .call(&crate::args!["EVALSHA_RO", pr.sha.as_str(), 1u64, key])
        .await;
    push(&mut out, "evalsha_ro", &pr.name, r);
    let mut cmd = vec![Arg::S("FCALL"), Arg::S(tb.function.as_str())];
    cmd.extend_from_slice(&args_tb[1..]);
    push(&mut out, "fcall", &tb.name, c.call(&cmd).await);
    let r = c
        .call(&crate::args!["FCALL_RO", pr.function.as_str(), 1u64, key])
        .await;
    push(&mut out, "fcall_ro", &pr.name, r);
    let r = c
        .call(&crate::args![
            "FUNCTION",
            "LIST",
            "LIBRARYNAME",
            tb.function.as_str()
        ])
        .await;
    match r {
        Ok(v) => {
            let n = v.into_array().map(|a| a.len()).unwrap_or(0);
            out.push((
                "function_list".into(),
                tb.name.clone(),
                n > 0,
                (n > 0).to_string(),
                format!("{n} libraries"),
            ));
        }
        Err(e) => out.push((
            "function_list".into(),
            tb.name.clone(),
            false,
            e.class(),
            e.caller_text(),
        )),
    }
    out
}

/// What one client saw over `n` decisions.
#[derive(Debug, Clone, Default)]
pub struct ClientOutcome {
    pub decisions: u64,
    pub succeeded: u64,
    pub failed_calls: u64,
    pub round_trips: u64,
    pub noscript_fallbacks: u64,
    pub first_error: Option<(String, String)>,
}

/// `n` token-bucket decisions with invocation `mode` on one server.
pub async fn run_client(
    addr: std::net::SocketAddr,
    mode: &str,
    client: &str,
    n: u64,
) -> Result<ClientOutcome> {
    let s = crate::strategy::build(
        "token-bucket",
        None,
        &Options::default().with("invocation", mode),
    )?;
    let mut conn = Conn::connect(addr).await?;
    let mut out = ClientOutcome::default();
    for i in 0..n {
        let req = Request {
            client,
            limit: LIMIT,
            cost: 1,
            now_us: crate::clock::Clock::system_now_us(),
            request_id: i,
        };
        out.decisions += 1;
        let rt_before = conn.round_trips();
        match s.decide(&mut conn, &req).await {
            Ok(d) => {
                out.succeeded += 1;
                out.noscript_fallbacks += d.noscript_fallbacks as u64;
                out.failed_calls += d.noscript_fallbacks as u64;
            }
            Err(e) => {
                out.failed_calls += 1;
                // A fallback that failed on its EVAL also had a failed EVALSHA first.
                if conn.round_trips() - rt_before == 2 {
                    out.failed_calls += 1;
                    out.noscript_fallbacks += 1;
                }
                if out.first_error.is_none() {
                    out.first_error = Some((e.class(), e.caller_text()));
                }
            }
        }
        out.round_trips = conn.round_trips();
    }
    Ok(out)
}

struct Recorder<'a> {
    rows: Vec<Row>,
    trial: u64,
    seed: u64,
    cell: &'a str,
    ro: &'a str,
}

impl Recorder<'_> {
    /// A row of this trial in `scenario` on `target`, the rest default.
    fn row(&self, scenario: &str, target: &str) -> Row {
        Row {
            cell: self.cell.into(),
            trial: self.trial,
            seed: self.seed,
            replica_read_only: self.ro.into(),
            scenario: scenario.into(),
            target: target.into(),
            ..Default::default()
        }
    }
    fn checks(
        &mut self,
        scenario: &str,
        target: &str,
        v: Vec<(String, String, bool, String, String)>,
    ) {
        for (check, script, ok, outcome, reply) in v {
            self.rows.push(Row {
                check,
                script,
                ok,
                outcome,
                reply,
                ..self.row(scenario, target)
            });
        }
    }
    fn client(&mut self, scenario: &str, target: &str, mode: &str, o: ClientOutcome) {
        let (outcome, reply) = o
            .first_error
            .clone()
            .unwrap_or(("ok".into(), String::new()));
        self.rows.push(Row {
            check: format!("client:{mode}"),
            script: "token-bucket".into(),
            ok: o.succeeded == o.decisions,
            outcome,
            reply,
            decisions: o.decisions,
            succeeded: o.succeeded,
            failed_calls: o.failed_calls,
            round_trips: o.round_trips,
            extra_round_trips: o.round_trips as i64 - o.decisions as i64,
            noscript_fallbacks: o.noscript_fallbacks,
            ..self.row(scenario, target)
        });
    }
}

const CLIENT_MODES: [&str; 3] = ["evalsha", "evalsha-fallback", "fcall"];

impl Recorder<'_> {
    /// One scenario on one server: what the server holds (`server_checks`),
    /// then a client of every invocation mode making decisions there.
    async fn scenario(
        &mut self,
        scenario: &str,
        target: &str,
        addr: std::net::SocketAddr,
        key: &str,
        client_prefix: &str,
        decisions: u64,
    ) -> Result<()> {
        let mut c = Connection::connect(addr).await?;
        self.checks(scenario, target, server_checks(&mut c, key).await);
        for mode in CLIENT_MODES {
            let o = run_client(addr, mode, &format!("{client_prefix}-{mode}"), decisions).await?;
            self.client(scenario, target, mode, o);
        }
        Ok(())
    }
}

/// A cell is one `replica-read-only` setting; its setup is the server
/// config every trial starts its fresh primary + replica with.
struct ScriptSurvival {
    p: Params,
}

impl ScriptSurvival {
    /// The four scenarios on one fresh pair, in order (see the module doc).
    async fn scenarios(
        &self,
        fleet: &mut Fleet,
        rec: &mut Recorder<'_>,
        trial_client: &str,
    ) -> Result<()> {
        let n = self.p.client_decisions;
        let key = client_key(trial_client, "tb");
        {
            let mut pc = fleet.primary().connection().await?;
            bucket_script().load(&mut pc).await?;
            probe_script().load(&mut pc).await?;
        }
        let paddr = fleet.primary_addr();
        let raddr = fleet
            .replica()
            .ok_or_else(|| Error::Other("no replica".into()))?
            .addr();
        wait_caught_up(paddr, raddr, Duration::from_secs(10)).await?;

        let mut pc = Connection::connect(paddr).await?;
        rec.checks("primary", "primary", server_checks(&mut pc, &key).await);
        drop(pc);

        let replica_clients = format!("{trial_client}-r");
        rec.scenario("replica", "replica", raddr, &key, &replica_clients, n)
            .await?;
        let mut rc = Connection::connect(raddr).await?;
        // The fallback client's EVAL cached the script on the replica; a real
        // replica that nobody EVALed on has an empty cache.
        rc.call(&crate::args!["SCRIPT", "FLUSH"]).await?;
        drop(rc);

        fleet.servers[0].restart_with_rdb().await?;
        let restart_clients = format!("{trial_client}-s");
        rec.scenario("restart", "primary", paddr, &key, &restart_clients, n)
            .await?;

        if let Some(r) = fleet.replica() {
            r.wait_in_sync(Duration::from_secs(30)).await?;
        }
        wait_caught_up(paddr, raddr, Duration::from_secs(10)).await?;
        fleet.servers[0].kill();
        fleet.servers[1].promote().await?;
        let promoted_clients = format!("{trial_client}-p");
        rec.scenario(
            "promoted",
            "promoted-replica",
            raddr,
            &key,
            &promoted_clients,
            n,
        )
        .await
    }
}

impl Sweep for ScriptSurvival {
    /// The `replica-read-only` setting.
    type Cell = String;
    type Setup = ServerConfig;
    type Row = Row;
    type Side = NoSide;

    fn cell_id(&self, ro: &String) -> String {
        format!("survival/replica-read-only={ro}")
    }

    fn trials(&self, _ro: &String) -> u64 {
        self.p.trials
    }

    async fn setup(&mut self, _ctx: &RunContext, ro: &String) -> Result<ServerConfig> {
        Ok(ServerConfig::default().with("replica-read-only", ro))
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        ro: &String,
        cfg: &mut ServerConfig,
        trial: u64,
    ) -> Result<TrialRows<Row>> {
        let cell = self.cell_id(ro);
        let mut fleet = Fleet::primary_replica(ctx.binary()?, cfg.clone()).await?;
        if trial == 0 {
            ctx.note_fleet(&format!("fleet-{cell}"), &fleet).await?;
        }
        let mut rec = Recorder {
            rows: vec![],
            trial,
            seed: ctx.seed,
            cell: &cell,
            ro,
        };
        let trial_client = unique_client("surv", &cell, trial);
        self.scenarios(&mut fleet, &mut rec, &trial_client).await?;
        Ok(TrialRows::with_side(rec.rows, vec![]))
    }
}

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    let cells = p.replica_read_only.clone();
    sweep::run(ctx, &mut ScriptSurvival { p }, &cells).await
}
