//! `cluster` (claims B7.1, B7.2): a fixed-window script that builds its
//! window key inside the script, on Redis Cluster.
//!
//! For each cluster size in `node_counts` (one cluster each, flushed between
//! trials), `users` users make one decision each with each variant:
//! - `derived-plain`: the derived-key script, base key `rl:<user>:fwd`;
//! - `derived-tagged`: the same script, base key `rl:{<user>}:fwd`;
//! - `declared`: the fixed-window script that gets its key in KEYS.
//!
//! The script's first line is unstated in the study and Redis 7 treats a
//! script differently with a shebang: `flags` sweeps no shebang, `#!lua`
//! without flags, and `#!lua flags=allow-cross-slot-keys` (the same Lua
//! source with that line prepended). Per user (side table `users`): the base
//! and derived keys, their slots and owning nodes, ok or the exact error.
//! Per (cell, trial) a row with the counts and the distinct error texts.
//!
//! Then study A's concurrency check runs against the cluster for the atomic
//! strategies with hash-tagged keys (`workers` released together, `offered`
//! decisions, limit `limit`): kind=`concurrency` rows with admitted and exact.
//!
//! With `strategies` (the scorecard's probe; `["*"]` is every strategy,
//! narrowed to `--strategy`), `users` users make `decisions_per_user`
//! decisions each with the strategy as it is built: kind=`strategy` rows,
//! ok or the exact error per user. Those cells, and only those, can run on
//! a cluster you run (`RunContext::cluster_url`, the scorecard's
//! `--cluster-url`): the others FLUSHALL between trials.
//!
//! One sweep over every kind of cell (`Cell::Users`, `Cell::Concurrency`,
//! `Cell::Strategy`), ordered by cluster size: the cluster of a size is
//! started when its first unfinished cell is set up and serves every cell
//! of that size; a cell's setup is its strategy, loaded on every master.
//!
//! The script variants (their first line, keys and strategy) are in
//! `variants.rs`; one user's decision and a users trial's counts in
//! `users.rs`.

// The analysis half (analyze/) is compiled into limitbench-analysis
// (crates/analysis/src/experiments/mod.rs); it is this experiment's all the same.
pub use limitbench_analysis::experiments::cluster::{analyze, rows};
#[cfg(test)]
mod tests;
mod users;
mod variants;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use rows::{Row, UserRow};
use users::{user_decision, users_counts};
pub use variants::{shebang, variant_keys, variant_strategy};

use super::{RunContext, Spec};
use crate::run::keys::unique_client;
use crate::run::sweep::{self, Sweep, TrialRows};
use limitbench_base::error::{Error, Result};
use limitbench_core::conn::{ClusterConn, Conn};
use limitbench_core::fleet::{Fleet, ServerConfig};
use limitbench_core::strategy::{Limit, Options, Request, Strategy};

/// Its registration (the registry adds its `run` and its analysis half's `analyze`).
// Run alone: its users' key names take a process-wide counter
// (`unique_client`), so which slots they hash to depends on what else
// ran; in 2 lanes at smoke size with 8 trials, derived-plain's
// fraction on one node moved from 0.335-0.340 to 0.320 (Mann-Whitney
// p = 0.0002, status-power.md).
pub const SPEC: Spec = Spec::new("cluster", "B").others_at_most(0.1);

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Params {
    node_counts: Vec<usize>,
    users: u64,
    variants: Vec<String>,
    flags: Vec<String>,
    window_ms: u64,
    user_limit: u64,
    trials: u64,
    concurrency_strategies: Vec<String>,
    concurrency_nodes: Vec<usize>,
    workers: usize,
    limit: u64,
    offered: u64,
    concurrency_trials: u64,
    /// Strategies whose users decide with them as they are built (absent: none).
    strategies: Option<Vec<String>>,
    /// Decisions per user in the strategy cells (absent: 1).
    decisions_per_user: Option<u64>,
}

/// One cell, on a cluster of `nodes` masters.
enum Cell {
    /// Every user makes one decision with a script variant and first line.
    Users {
        nodes: usize,
        variant: String,
        flags: String,
    },
    /// Study A's concurrency check with one strategy, hash-tagged keys.
    Concurrency { nodes: usize, strategy: String },
    /// Every user decides with a strategy as it is built (`nodes` 0: the
    /// cluster you run).
    Strategy { nodes: usize, strategy: String },
}

impl Cell {
    fn nodes(&self) -> usize {
        match self {
            Cell::Users { nodes, .. }
            | Cell::Concurrency { nodes, .. }
            | Cell::Strategy { nodes, .. } => *nodes,
        }
    }
}

/// Per cluster size: the variant x flags cells, then (for the sizes in
/// `concurrency_nodes`) the concurrency cells, then the strategy cells. On
/// a cluster you run, only the strategy cells.
fn cells(p: &Params, strategies: &[String], external: bool) -> Result<Vec<Cell>> {
    let strategy_cells = |nodes: usize| {
        strategies.iter().map(move |s| Cell::Strategy {
            nodes,
            strategy: s.clone(),
        })
    };
    if external {
        if !(p.variants.is_empty() || p.flags.is_empty()) || !p.concurrency_strategies.is_empty() {
            return Err(Error::Other(
                "cluster: on a cluster you run only the strategy cells can run (the script variants and the concurrency check FLUSHALL it); set variants and concurrency_strategies to []".into(),
            ));
        }
        return Ok(strategy_cells(0).collect());
    }
    let mut out = Vec::new();
    for &nodes in &p.node_counts {
        for variant in &p.variants {
            for flags in &p.flags {
                out.push(Cell::Users {
                    nodes,
                    variant: variant.clone(),
                    flags: flags.clone(),
                });
            }
        }
        if p.concurrency_nodes.contains(&nodes) {
            for strategy in &p.concurrency_strategies {
                out.push(Cell::Concurrency {
                    nodes,
                    strategy: strategy.clone(),
                });
            }
        }
        out.extend(strategy_cells(nodes));
    }
    Ok(out)
}

/// The cluster a cell runs on: one the harness started, or one you run.
enum Nodes {
    Own(Fleet),
    /// The scorecard's cluster, lent to every strategy's probe
    /// (`RunContext::shared`): used like one's own, never flushed.
    Shared(std::sync::Arc<Fleet>),
    /// The seed node of a cluster you run (`--cluster-url`).
    External(std::net::SocketAddr),
}

impl Nodes {
    /// The servers the harness started (its own or the scorecard's shared
    /// ones), or the seed node of a cluster you run.
    fn started(&self) -> std::result::Result<&Fleet, std::net::SocketAddr> {
        match self {
            Nodes::Own(f) => Ok(f),
            Nodes::Shared(f) => Ok(f),
            Nodes::External(seed) => Err(*seed),
        }
    }

    async fn conn(&self) -> Result<Conn> {
        match self.started() {
            Ok(f) => f.conn().await,
            Err(seed) => Ok(Conn::Cluster(ClusterConn::connect(seed).await?)),
        }
    }

    /// Load `strategy` on every master; how many there are.
    async fn prepare(&self, strategy: &dyn Strategy) -> Result<usize> {
        match self.started() {
            Ok(f) => {
                f.prepare(strategy).await?;
                Ok(f.servers.len())
            }
            Err(seed) => {
                let masters = ClusterConn::connect(seed).await?.node_addrs();
                for a in &masters {
                    strategy
                        .prepare(&mut limitbench_core::resp::Connection::connect(*a).await?)
                        .await?;
                }
                Ok(masters.len())
            }
        }
    }
}

/// Cross-cell state: the cluster of the size being run (one at a time), and
/// how many masters it has.
struct Cluster {
    p: Params,
    cluster: Option<(usize, Nodes)>,
    masters: usize,
}

impl Cluster {
    /// The cluster of `nodes` masters (0: the one you run), started (and the
    /// previous one stopped) if needed.
    async fn cluster_of(&mut self, ctx: &RunContext, nodes: usize) -> Result<&Nodes> {
        if self.cluster.as_ref().map(|c| c.0) != Some(nodes) {
            drop(self.cluster.take());
            let cluster = match ctx.cluster_url {
                Some(seed) if nodes == 0 => Nodes::External(seed),
                _ if ctx.shared.is_some() => {
                    let shared = ctx.shared.as_ref().expect("checked");
                    let (fleet, started) = shared.cluster(ctx.binary()?, nodes).await?;
                    // Described in every probe folder that used it.
                    ctx.note_fleet(&format!("fleet-{nodes}"), &fleet).await?;
                    ctx.note(
                        &format!("fleet-{nodes}-shared"),
                        serde_json::json!(if started {
                            "started for this strategy's probe and lent to the later strategies' (the scorecard's shared cluster)"
                        } else {
                            "the scorecard's shared cluster, started for an earlier strategy's probe: keys and scripts of its own, nothing flushed"
                        }),
                    )?;
                    Nodes::Shared(fleet)
                }
                _ => {
                    let fleet =
                        Fleet::cluster(ctx.binary()?, ServerConfig::default(), nodes).await?;
                    ctx.note_fleet(&format!("fleet-{nodes}"), &fleet).await?;
                    Nodes::Own(fleet)
                }
            };
            self.cluster = Some((nodes, cluster));
        }
        Ok(&self.cluster.as_ref().expect("set above").1)
    }

    fn nodes(&self) -> Result<&Nodes> {
        self.cluster
            .as_ref()
            .map(|c| &c.1)
            .ok_or_else(|| Error::Other("cluster: a trial ran before its cell was set up".into()))
    }

    /// A cluster the harness started (the cells that flush it need one).
    fn fleet(&self) -> Result<&Fleet> {
        match self.nodes()? {
            Nodes::Own(f) => Ok(f),
            Nodes::External(_) => Err(Error::Other(
                "cluster: this cell flushes the cluster; it runs only on one the harness starts"
                    .into(),
            )),
            Nodes::Shared(_) => Err(Error::Other(
                "cluster: this cell flushes the cluster; it runs only on one of its own, not the scorecard's shared one"
                    .into(),
            )),
        }
    }

    /// Every user makes `decisions_per_user` decisions with `strategy`;
    /// a user is ok if all of them returned.
    async fn strategy_trial(
        &self,
        ctx: &RunContext,
        id: &str,
        name: &str,
        strategy: &Arc<dyn Strategy>,
        trial: u64,
    ) -> Result<TrialRows<Row, UserRow>> {
        let p = &self.p;
        let mut conn = self.nodes()?.conn().await?;
        let limit = Limit::per_window(p.user_limit, p.window_ms);
        let base = ctx.unique_client("cl", id, trial);
        let mut side = Vec::with_capacity(p.users as usize);
        for u in 0..p.users {
            let user = format!("{base}-u{u}");
            let mut error = None;
            for _ in 0..p.decisions_per_user.unwrap_or(1) {
                if let Err(e) = strategy
                    .decide(&mut conn, &Request::now(&user, limit))
                    .await
                {
                    error.get_or_insert(e.caller_text());
                }
            }
            side.push(UserRow {
                cell: id.to_string(),
                trial,
                user,
                ok: error.is_none(),
                error: error.unwrap_or_default(),
                ..Default::default()
            });
        }
        let row = Row {
            cell: id.to_string(),
            trial,
            seed: ctx.seed,
            kind: "strategy".into(),
            nodes: self.masters as u64,
            strategy: name.to_string(),
            limit: p.user_limit,
            // Where a strategy's keys live is not known here.
            same_node: 0,
            ok_same_node: 0,
            ok_other_node: 0,
            ..users_counts(&side)
        };
        Ok(TrialRows::with_side(vec![row], side))
    }

    /// One decision per user; the row's counts are summed from the users' rows.
    #[allow(clippy::too_many_arguments)]
    async fn users_trial(
        &self,
        ctx: &RunContext,
        id: &str,
        nodes: usize,
        variant: &str,
        flags: &str,
        strategy: &Arc<dyn Strategy>,
        trial: u64,
    ) -> Result<TrialRows<Row, UserRow>> {
        let p = &self.p;
        let fleet = self.fleet()?;
        fleet.flush_all().await?;
        let mut conn = fleet.conn().await?;
        let limit = Limit::per_window(p.user_limit, p.window_ms);
        let mut side = Vec::with_capacity(p.users as usize);
        for u in 0..p.users {
            let user = format!("user{u}");
            let mut r = user_decision(&mut conn, strategy.as_ref(), variant, limit, &user, u).await;
            r.cell = id.to_string();
            r.trial = trial;
            side.push(r);
        }
        let row = Row {
            cell: id.to_string(),
            trial,
            seed: ctx.seed,
            kind: "users".into(),
            nodes: nodes as u64,
            variant: variant.to_string(),
            flags: flags.to_string(),
            ..users_counts(&side)
        };
        Ok(TrialRows::with_side(vec![row], side))
    }

    async fn concurrency_trial(
        &self,
        ctx: &RunContext,
        id: &str,
        nodes: usize,
        name: &str,
        strategy: &Arc<dyn Strategy>,
        trial: u64,
    ) -> Result<TrialRows<Row, UserRow>> {
        let p = &self.p;
        let client = unique_client("cc", id, trial);
        let limit = Limit::per_window(p.limit, 3_600_000);
        let admitted = crate::check::concurrent(
            strategy.clone(),
            self.fleet()?,
            &client,
            limit,
            p.workers,
            p.offered,
        )
        .await?;
        Ok(TrialRows::one(Row {
            cell: id.to_string(),
            trial,
            seed: ctx.seed,
            kind: "concurrency".into(),
            nodes: nodes as u64,
            strategy: name.to_string(),
            workers: p.workers as u64,
            limit: p.limit,
            offered: p.offered,
            admitted,
            exact: admitted == p.limit,
            ..Default::default()
        }))
    }
}

impl Sweep for Cluster {
    type Cell = Cell;
    /// The cell's strategy, loaded on every master.
    type Setup = Arc<dyn Strategy>;
    type Row = Row;
    type Side = UserRow;
    const SIDE: Option<&'static str> = Some("users");

    fn cell_id(&self, cell: &Cell) -> String {
        match cell {
            Cell::Users {
                nodes,
                variant,
                flags,
            } => format!("users/n{nodes}/{variant}/{flags}"),
            Cell::Concurrency { nodes, strategy } => format!("concurrency/n{nodes}/{strategy}"),
            Cell::Strategy { nodes: 0, strategy } => format!("strategy/external/{strategy}"),
            Cell::Strategy { nodes, strategy } => format!("strategy/n{nodes}/{strategy}"),
        }
    }

    fn trials(&self, cell: &Cell) -> u64 {
        match cell {
            Cell::Users { .. } => self.p.trials,
            Cell::Concurrency { .. } => self.p.concurrency_trials,
            Cell::Strategy { .. } => self.p.trials,
        }
    }

    async fn setup(&mut self, ctx: &RunContext, cell: &Cell) -> Result<Arc<dyn Strategy>> {
        let strategy = match cell {
            Cell::Users { variant, flags, .. } => variant_strategy(variant, flags)?,
            Cell::Concurrency { strategy, .. } => {
                let opts = if strategy == "fixed-window-derived-key" {
                    Options::default().with("hash_tag", true)
                } else {
                    Options::default()
                };
                ctx.build_strategy(strategy, &opts)?
            }
            Cell::Strategy { strategy, .. } => ctx.build_strategy(strategy, &Options::default())?,
        };
        self.masters = self
            .cluster_of(ctx, cell.nodes())
            .await?
            .prepare(strategy.as_ref())
            .await?;
        Ok(strategy)
    }

    async fn trial(
        &mut self,
        ctx: &RunContext,
        cell: &Cell,
        strategy: &mut Arc<dyn Strategy>,
        trial: u64,
    ) -> Result<TrialRows<Row, UserRow>> {
        let id = self.cell_id(cell);
        match cell {
            Cell::Users {
                nodes,
                variant,
                flags,
            } => {
                self.users_trial(ctx, &id, *nodes, variant, flags, strategy, trial)
                    .await
            }
            Cell::Concurrency {
                nodes,
                strategy: name,
            } => {
                self.concurrency_trial(ctx, &id, *nodes, name, strategy, trial)
                    .await
            }
            Cell::Strategy { strategy: name, .. } => {
                self.strategy_trial(ctx, &id, name, strategy, trial).await
            }
        }
    }
}

pub async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    let strategies = ctx.named_strategies(p.strategies.as_deref().unwrap_or(&[]))?;
    let cells = cells(&p, &strategies, ctx.cluster_url.is_some())?;
    let mut sweep = Cluster {
        p,
        cluster: None,
        masters: 0,
    };
    sweep::run(ctx, &mut sweep, &cells).await
}
