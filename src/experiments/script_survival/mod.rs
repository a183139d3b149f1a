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
//!
//! With `strategies` (the scorecard's probe; `["*"]` is every strategy,
//! narrowed to `--strategy`) a cell is a setting and a strategy: the
//! strategy is loaded on the primary as it loads itself, and its clients
//! are the strategy in each of `client_modes` (`["*"]`: every invocation
//! mode it has; one client `none` for a strategy without scripts). With
//! `["*"]` a mode the server says the strategy cannot run
//! (`Strategy::mode_support`: a script calling `redis.replicate_commands()`
//! has no FCALL) runs no client: its row `unrunnable:<mode>` (in scenario
//! `primary`) says why, and the survival cells score only the modes that
//! run. The checks are the token bucket's either way.
//!
//! The scripts, the checks on one server and a client's decisions are in
//! `checks.rs`; this file holds the cells, the scenarios and the rows.

// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::script_survival::{analyze, rows};
mod checks;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use checks::{
    ClientOutcome, bucket_script, probe_script, run_client, run_strategy_client, server_checks,
};
pub use rows::Row;

use super::{RunContext, Spec};
use crate::run::keys::unique_client;
use crate::run::sweep::{self, NoSide, Sweep, TrialRows};
use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::replication::wait_caught_up;
use limitbench_core::fleet::{Fleet, ServerConfig};
use limitbench_core::resp::Connection;
use limitbench_core::strategy::{Options, Strategy, client_key};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// yes/no checks after a restart or promotion: no timing.
pub const SPEC: Spec = Spec::new("script-survival", "B").latency_bound(50.0).others_at_most(0.25);

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Params {
    trials: u64,
    /// Decisions each client makes per scenario.
    client_decisions: u64,
    /// `replica-read-only` settings to run (Redis's default is yes).
    replica_read_only: Vec<String>,
    /// Strategies whose clients run in the scenarios (absent: the token
    /// bucket's three clients, the study's cells).
    strategies: Option<Vec<String>>,
    /// Invocation modes of their clients (`["*"]`: every mode the strategy
    /// has; absent: evalsha, evalsha-fallback, fcall).
    client_modes: Option<Vec<String>>,
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
    /// A mode that runs no client, and why.
    fn unrunnable(&mut self, c: &Client, why: &str) {
        self.rows.push(Row {
            check: format!("unrunnable:{}", c.mode),
            script: c.strategy.clone(),
            ok: false,
            outcome: "unrunnable".into(),
            reply: why.into(),
            ..self.row("primary", "primary")
        });
    }

    fn client(&mut self, scenario: &str, target: &str, c: &Client, o: ClientOutcome) {
        let (outcome, reply) = o
            .first_error
            .clone()
            .unwrap_or(("ok".into(), String::new()));
        self.rows.push(Row {
            check: format!("client:{}", c.mode),
            script: c.strategy.clone(),
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

/// One client of a cell: a strategy built for one invocation mode.
struct Client {
    strategy: String,
    /// Its invocation mode (`none` for a strategy without scripts).
    mode: String,
    built: Arc<dyn Strategy>,
}

impl Recorder<'_> {
    /// One scenario on one server: what the server holds (`server_checks`),
    /// then every client making decisions there.
    #[allow(clippy::too_many_arguments)]
    async fn scenario(
        &mut self,
        scenario: &str,
        target: &str,
        addr: std::net::SocketAddr,
        key: &str,
        clients: &[&Client],
        client_prefix: &str,
        decisions: u64,
    ) -> Result<()> {
        let mut c = Connection::connect(addr).await?;
        self.checks(scenario, target, server_checks(&mut c, key).await);
        for cl in clients {
            let id = format!("{client_prefix}-{}", cl.mode);
            let o = run_strategy_client(addr, cl.built.as_ref(), &id, decisions).await?;
            self.client(scenario, target, cl, o);
        }
        Ok(())
    }
}

/// A cell: a `replica-read-only` setting, and the strategy whose clients
/// run (the token bucket's three when `strategies` is absent).
struct Cell {
    ro: String,
    strategy: Option<String>,
}

/// Its setup: the server config every trial starts its fresh primary +
/// replica with, and the clients.
struct Setup {
    cfg: ServerConfig,
    clients: Vec<Client>,
}

struct ScriptSurvival {
    p: Params,
}

impl ScriptSurvival {
    /// The clients of `strategy` (`None`: the token bucket's study clients,
    /// in their order), in the order they run in each scenario: the clients
    /// that may put the script into the server's cache (EVAL, and EVALSHA's
    /// fallback to it) after those that find out whether it is there.
    fn clients(&self, ctx: &RunContext, strategy: Option<&str>) -> Result<Vec<Client>> {
        let name = strategy.unwrap_or("token-bucket");
        let mut modes: Vec<String> = match (strategy, &self.p.client_modes) {
            (None, _) | (Some(_), None) => CLIENT_MODES.iter().map(|m| m.to_string()).collect(),
            (Some(_), Some(m)) if m.iter().any(|x| x == "*") => {
                let s = ctx.build_strategy(name, &Options::default())?;
                s.info()
                    .modes
                    .iter()
                    .map(|m| m.as_str().to_string())
                    .collect()
            }
            (Some(_), Some(m)) => m.clone(),
        };
        if strategy.is_some() {
            modes.sort_by_key(|m| m == "eval" || m == "evalsha-fallback");
        }
        if modes.is_empty() {
            let built = ctx.build_strategy(name, &Options::default())?;
            return Ok(vec![Client {
                strategy: name.into(),
                mode: "none".into(),
                built,
            }]);
        }
        modes
            .into_iter()
            .map(|mode| {
                let opts = Options::default().with("invocation", &mode);
                Ok(Client {
                    strategy: name.into(),
                    built: ctx.build_strategy(name, &opts)?,
                    mode,
                })
            })
            .collect()
    }

    /// The four scenarios on one fresh pair, in order (see the module doc).
    async fn scenarios(
        &self,
        fleet: &mut Fleet,
        rec: &mut Recorder<'_>,
        clients: &[Client],
        trial_client: &str,
    ) -> Result<()> {
        let n = self.p.client_decisions;
        let key = client_key(trial_client, "tb");
        let every_mode = self
            .p
            .client_modes
            .as_ref()
            .is_some_and(|m| m.iter().any(|x| x == "*"));
        let mut runnable: Vec<&Client> = clients.iter().collect();
        {
            let mut pc = fleet.primary().connection().await?;
            bucket_script().load(&mut pc).await?;
            probe_script().load(&mut pc).await?;
            // A strategy's own scripts, loaded as it loads them (the study's
            // clients run the bucket script loaded just above); with every
            // mode asked for, only those the server can run.
            if self.p.strategies.is_some()
                && let Some(c) = clients.first()
            {
                if every_mode {
                    let support = c.built.mode_support(&mut pc).await?;
                    runnable.retain(|cl| {
                        let problem = support
                            .iter()
                            .find(|m| m.mode.as_str() == cl.mode)
                            .and_then(|m| m.problem.clone());
                        match problem {
                            Some(why) => {
                                rec.unrunnable(cl, &why);
                                false
                            }
                            None => true,
                        }
                    });
                }
                if let Some(c) = runnable.first() {
                    c.built.prepare(&mut pc).await?;
                }
            }
        }
        let clients = runnable.as_slice();
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
        rec.scenario(
            "replica",
            "replica",
            raddr,
            &key,
            clients,
            &replica_clients,
            n,
        )
        .await?;
        let mut rc = Connection::connect(raddr).await?;
        // The fallback client's EVAL cached the script on the replica; a real
        // replica that nobody EVALed on has an empty cache.
        rc.call(&limitbench_core::args!["SCRIPT", "FLUSH"]).await?;
        drop(rc);

        fleet.servers[0].restart_with_rdb().await?;
        let restart_clients = format!("{trial_client}-s");
        rec.scenario(
            "restart",
            "primary",
            paddr,
            &key,
            clients,
            &restart_clients,
            n,
        )
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
            clients,
            &promoted_clients,
            n,
        )
        .await
    }
}

impl Sweep for ScriptSurvival {
    type Cell = Cell;
    type Setup = Setup;
    type Row = Row;
    type Side = NoSide;

    fn cell_id(&self, c: &Cell) -> String {
        match &c.strategy {
            None => format!("survival/replica-read-only={}", c.ro),
            Some(s) => format!("survival/{s}/replica-read-only={}", c.ro),
        }
    }

    fn trials(&self, _c: &Cell) -> u64 {
        self.p.trials
    }

    async fn setup(&mut self, ctx: &RunContext, c: &Cell) -> Result<Setup> {
        Ok(Setup {
            cfg: ServerConfig::default().with("replica-read-only", &c.ro),
            clients: self.clients(ctx, c.strategy.as_deref())?,
        })
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        c: &Cell,
        setup: &mut Setup,
        trial: u64,
    ) -> Result<TrialRows<Row>> {
        let cell = self.cell_id(c);
        let ro = &c.ro;
        let mut fleet = Fleet::primary_replica(ctx.binary()?, setup.cfg.clone()).await?;
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
        self.scenarios(&mut fleet, &mut rec, &setup.clients, &trial_client)
            .await?;
        Ok(TrialRows::with_side(rec.rows, vec![]))
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    let strategies: Vec<Option<String>> = match &p.strategies {
        None => vec![None],
        Some(list) => ctx.named_strategies(list)?.into_iter().map(Some).collect(),
    };
    let mut cells = Vec::new();
    for ro in &p.replica_read_only {
        for s in &strategies {
            cells.push(Cell {
                ro: ro.clone(),
                strategy: s.clone(),
            });
        }
    }
    sweep::run(ctx, &mut ScriptSurvival { p }, &cells).await
}
