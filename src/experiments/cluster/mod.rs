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

pub mod analyze;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::study_b_topo_util::{error_text, unique_client};
use super::{Experiment, RunContext};
use crate::clock::Clock;
use crate::conn::{Conn, key_slot};
use crate::error::{Error, Result};
use crate::fleet::{Fleet, ServerConfig};
use crate::strategy::lua::{LuaStrategy, STANDARD_REPLY};
use crate::strategy::{Limit, Options, Request, Script, Strategy, client_key, window_index};

pub const EXPERIMENT: Experiment = Experiment {
    name: "cluster",
    study: "B",
    allows_external: false,
    run: |ctx: &RunContext| Box::pin(run(ctx)),
    analyze: analyze::analyze,
};

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
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    pub trial: u64,
    pub seed: u64,
    /// `users` (one decision per user) or `concurrency`.
    pub kind: String,
    pub nodes: u64,
    pub variant: String,
    pub flags: String,
    pub users: u64,
    pub ok: u64,
    pub failed: u64,
    pub fraction_ok: f64,
    /// Users whose derived key is on the same node as the base key.
    pub same_node: u64,
    pub ok_same_node: u64,
    pub ok_other_node: u64,
    /// Distinct error texts with counts: `text (xN) | ...`.
    pub errors: String,
    pub strategy: String,
    pub workers: u64,
    pub limit: u64,
    pub offered: u64,
    pub admitted: u64,
    pub exact: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UserRow {
    pub cell: String,
    pub trial: u64,
    pub user: String,
    pub base_key: String,
    pub base_slot: u16,
    pub base_node: String,
    pub derived_key: String,
    pub derived_slot: u16,
    pub derived_node: String,
    pub ok: bool,
    pub error: String,
}

/// The shebang line for a `flags` value (`none`: no line at all).
pub fn shebang(flags: &str) -> Result<&'static str> {
    match flags {
        "none" => Ok(""),
        "lua" => Ok("#!lua\n"),
        "allow-cross-slot" => Ok("#!lua flags=allow-cross-slot-keys\n"),
        other => Err(Error::Other(format!(
            "cluster: unknown flags `{other}` (none, lua, allow-cross-slot)"
        ))),
    }
}

/// A variant's base key (what goes in KEYS[1]) and the key the script really writes.
pub fn variant_keys(variant: &str, user: &str, window: i64) -> (String, String) {
    match variant {
        "derived-plain" => {
            let b = format!("rl:{user}:fwd");
            (b.clone(), format!("{b}:{window}"))
        }
        "derived-tagged" => {
            let b = format!("rl:{{{user}}}:fwd");
            (b.clone(), format!("{b}:{window}"))
        }
        _ => {
            let k = client_key(user, &format!("fw:{window}"));
            (k.clone(), k)
        }
    }
}

/// The strategy for a variant, its Lua source with the `flags` first line.
pub fn variant_strategy(variant: &str, flags: &str) -> Result<Arc<dyn Strategy>> {
    let source = match variant {
        "derived-plain" | "derived-tagged" => {
            include_str!("../../../lua/fixed-window-derived-key.lua")
        }
        "declared" => include_str!("../../../lua/fixed-window-lua.lua"),
        other => {
            return Err(Error::Other(format!(
                "cluster: unknown variant `{other}` (derived-plain, derived-tagged, declared)"
            )));
        }
    };
    let name = format!("cluster-{variant}-{flags}");
    let script = Script::new(&name, &format!("{}{source}", shebang(flags)?));
    let variant = variant.to_string();
    LuaStrategy::new(
        LuaStrategy::builtin_info(&name, "see variant_keys", None),
        script,
        STANDARD_REPLY,
        &Options::default().with("invocation", "evalsha"),
        move |_| {
            Ok(Box::new(
                move |req: &Request<'_>, keys: &mut Vec<String>, args: &mut Vec<String>| {
                    let w = window_index(req.now_us, req.limit.window_ms);
                    keys.push(variant_keys(&variant, req.client, w).0);
                    args.push(req.limit.limit.to_string());
                    args.push(req.limit.window_ms.to_string());
                    args.push(req.cost.to_string());
                },
            ))
        },
    )
}

fn owner(conn: &Conn, key: &str) -> String {
    match conn {
        Conn::Cluster(c) => c.owner_of(key).to_string(),
        Conn::Single(c) => c.addr().to_string(),
    }
}

async fn prepare_everywhere(fleet: &Fleet, s: &Arc<dyn Strategy>) -> Result<()> {
    for mut node in fleet.node_connections().await? {
        s.prepare(&mut node).await?;
    }
    Ok(())
}

async fn run(ctx: &RunContext) -> Result<()> {
    let p: Params = ctx.params()?;
    ctx.note("params", serde_json::to_value(&p).unwrap())?;
    let mut log = ctx.trial_log(&["users"])?;
    let mut total = 0;
    for &n in &p.node_counts {
        total += (p.variants.len() * p.flags.len()) as u64 * p.trials;
        if p.concurrency_nodes.contains(&n) {
            total += p.concurrency_strategies.len() as u64 * p.concurrency_trials;
        }
    }
    let mut prog = ctx.progress(total);
    for &nodes in &p.node_counts {
        let fleet = Fleet::cluster(ctx.binary()?, ServerConfig::default(), nodes).await?;
        ctx.note_fleet(&format!("fleet-{nodes}"), &fleet).await?;
        let limit = Limit::per_window(p.user_limit, p.window_ms);
        for variant in &p.variants {
            for flags in &p.flags {
                let cell = format!("users/n{nodes}/{variant}/{flags}");
                let strategy = variant_strategy(variant, flags)?;
                prepare_everywhere(&fleet, &strategy).await?;
                for trial in 0..p.trials {
                    if log.is_done(&cell, trial) {
                        prog.skip(1);
                        continue;
                    }
                    fleet.flush_all().await?;
                    let mut conn = fleet.conn().await?;
                    let mut side = Vec::with_capacity(p.users as usize);
                    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
                    let mut row = Row {
                        cell: cell.clone(),
                        trial,
                        seed: ctx.seed,
                        kind: "users".into(),
                        nodes: nodes as u64,
                        variant: variant.clone(),
                        flags: flags.clone(),
                        users: p.users,
                        ..Default::default()
                    };
                    for u in 0..p.users {
                        let user = format!("user{u}");
                        let now_us = Clock::system_now_us();
                        let (base, derived) =
                            variant_keys(variant, &user, window_index(now_us, p.window_ms));
                        let req = Request {
                            client: &user,
                            limit,
                            cost: 1,
                            now_us,
                            request_id: u,
                        };
                        let out = strategy.decide(&mut conn, &req).await;
                        // Where the script reported Redis's clock, derive the key from
                        // it (the caller's estimate can miss a window boundary).
                        let derived = match &out {
                            Ok(d) => match d.redis_time_us {
                                Some(t) if t > 0 => {
                                    variant_keys(variant, &user, window_index(t, p.window_ms)).1
                                }
                                _ => derived,
                            },
                            Err(_) => derived,
                        };
                        let (bn, dn) = (owner(&conn, &base), owner(&conn, &derived));
                        let same = bn == dn;
                        row.same_node += same as u64;
                        let (ok, error) = match &out {
                            Ok(_) => (true, String::new()),
                            Err(e) => (false, error_text(e)),
                        };
                        if ok {
                            row.ok += 1;
                            if same {
                                row.ok_same_node += 1;
                            } else {
                                row.ok_other_node += 1;
                            }
                        } else {
                            row.failed += 1;
                            *errors.entry(error.clone()).or_default() += 1;
                        }
                        side.push(UserRow {
                            cell: cell.clone(),
                            trial,
                            user,
                            base_slot: key_slot(base.as_bytes()),
                            derived_slot: key_slot(derived.as_bytes()),
                            base_key: base,
                            base_node: bn,
                            derived_key: derived,
                            derived_node: dn,
                            ok,
                            error,
                        });
                    }
                    row.fraction_ok = row.ok as f64 / p.users.max(1) as f64;
                    row.errors = errors
                        .iter()
                        .map(|(t, n)| format!("{t} (x{n})"))
                        .collect::<Vec<_>>()
                        .join(" | ");
                    log.side("users", &side)?;
                    let msg = format!("{cell} #{trial}: {}/{} ok", row.ok, p.users);
                    log.commit(&cell, trial, &[row])?;
                    prog.inc(&msg);
                }
            }
        }
        if p.concurrency_nodes.contains(&nodes) {
            let limit = Limit::per_window(p.limit, 3_600_000);
            for name in &p.concurrency_strategies {
                let opts = if name == "fixed-window-derived-key" {
                    Options::default().with("hash_tag", true)
                } else {
                    Options::default()
                };
                let s = ctx.build_strategy(name, &opts)?;
                prepare_everywhere(&fleet, &s).await?;
                let cell = format!("concurrency/n{nodes}/{name}");
                for trial in 0..p.concurrency_trials {
                    if log.is_done(&cell, trial) {
                        prog.skip(1);
                        continue;
                    }
                    let client = unique_client("cc", &cell, trial);
                    let admitted = crate::check::concurrent(
                        s.clone(),
                        &fleet,
                        &client,
                        limit,
                        p.workers,
                        p.offered,
                    )
                    .await?;
                    let row = Row {
                        cell: cell.clone(),
                        trial,
                        seed: ctx.seed,
                        kind: "concurrency".into(),
                        nodes: nodes as u64,
                        strategy: name.clone(),
                        workers: p.workers as u64,
                        limit: p.limit,
                        offered: p.offered,
                        admitted,
                        exact: admitted == p.limit,
                        ..Default::default()
                    };
                    log.commit(&cell, trial, &[row])?;
                    prog.inc(&format!("{cell} #{trial}: {admitted} admitted"));
                }
            }
        }
        drop(fleet);
    }
    prog.finish();
    Ok(())
}
