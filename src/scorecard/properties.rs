//! The scorecard's columns, and which experiment's probe fills which.
//!
//! A column is filled by exactly one experiment: its probe (the `[probe]`
//! table of `experiments/<name>.toml`) runs for the strategy, and its judge
//! (`src/experiments/<name>/analyze/scorecard.rs`, in the analysis crate) reads the rows back. Adding a column: its name and meaning
//! in [`PROPERTIES`], the cell in the experiment's probe table, the column
//! in that probe's `properties` below and its value in the judge. A burst
//! pattern is one line of `limitbench_analysis::scorecard::PROMISE_PATTERNS` (and its variant in the
//! bursts probe table).

use super::{Config, ScorecardServer};
use crate::experiments;
use crate::run::Size;
use limitbench_analysis::scorecard::{CellOutcome, ColumnOutcome, ProbeRows};
use limitbench_base::error::Result;

/// Every property, in the table's column order (most important first).
pub const PROPERTIES: &[(&str, &str)] = &[
    ("works", "a first decision succeeds"),
    (
        "exact-0ms",
        "admitted / limit, 64 workers, 0 ms round trip (concurrency)",
    ),
    (
        "exact-6.7ms",
        "admitted / limit, 64 workers, 6.7 ms round trip through the delay proxy (concurrency)",
    ),
    (
        "straddle",
        "max admitted in any window / limit: two bursts of L around a boundary (bursts)",
    ),
    (
        "quiet-burst",
        "max admitted in any window / limit: a quiet spell then a 3x flood (bursts)",
    ),
    (
        "burst-sustained",
        "max admitted in any window / limit: a burst of L then traffic at the rate (bursts)",
    ),
    (
        "anchored",
        "max admitted in any window / limit: one request, then bursts of L just before and just after one window later, for windows that start at a key's first request (bursts)",
    ),
    (
        "clock-10ms",
        "admitted % of the ideal bucket, +/-10 ms caller skew minus unskewed (points; skew)",
    ),
    ("clock-100ms", "the same at +/-100 ms"),
    ("clock-1s", "the same at +/-1 s"),
    (
        "cost-x-get",
        "Redis CPU per decision / Redis CPU per GET, same run, Redis and the load pinned (cost)",
    ),
    (
        "decisions-per-s",
        "decisions/s of 16 replaying connections, as a fraction of GETs/s (cost)",
    ),
    (
        "memory",
        "bytes per busy client (at its limit of 100), used_memory growth per client (memory)",
    ),
    (
        "replication",
        "fraction of keys whose replica state (fields or DUMP, PEXPIRETIME) equals the primary's (replication)",
    ),
    (
        "failover",
        "admitted above the limit across a failover (primary killed, replica promoted, 50 ms replication link) / limit (failover)",
    ),
    (
        "cluster",
        "fraction of users that work on a 3-master cluster (cluster)",
    ),
    (
        "survive-restart",
        "fraction of invocation modes that still decide after SHUTDOWN SAVE + restart (script-survival)",
    ),
    (
        "survive-promotion",
        "fraction of invocation modes that decide on a promoted replica (script-survival)",
    ),
    (
        "slow-redis",
        "fraction decided by Redis at a 3 ms round trip with a 10 ms deadline (fail-open)",
    ),
    (
        "gone-redis",
        "fraction of decisions that follow the policy (open: admit, closed: refuse) within the deadline + 20 ms when Redis is gone (fail-open)",
    ),
];

/// One experiment's probe: the columns it fills and when it runs.
pub struct Probe {
    pub experiment: &'static str,
    /// The columns its judge fills, in the table's order.
    pub properties: &'static [&'static str],
    /// Runs at size smoke too (the others start several servers or wait
    /// out phases: they run from quick on).
    pub at_smoke: bool,
    /// Runs on the cluster you run when the scorecard has `--cluster-url`
    /// (at any size), not on servers of its own only.
    pub on_cluster_url: bool,
    /// Runs alone: one strategy at a time with no other strategy's probe
    /// beside it (it times CPU or throughput, or its value depends on what
    /// else the process does), after the lanes. The others run in lanes
    /// (`lanes.rs`): several strategies at once, each on its own servers.
    /// A probe in lanes is its experiment's latency-bound one (the
    /// registry's `bound`, whose slip bound the sweep checks per trial) or
    /// measures no time at all (memory's bytes; a test checks its probe
    /// table has no CPU cells).
    pub alone: bool,
    pub judge: fn(&ProbeRows) -> Vec<ColumnOutcome>,
}

/// The first column: the strategy decides at all (`baseline`'s probe).
pub const WORKS: &str = "works";

/// Every probe, in the columns' order; `works` first (a strategy that
/// fails it is not probed further).
pub const PROBES: &[Probe] = &[
    Probe {
        experiment: "baseline",
        properties: experiments::baseline::analyze::scorecard::COLUMNS,
        at_smoke: true,
        on_cluster_url: false,
        // The first decision, before anything else of the strategy runs.
        alone: true,
        judge: experiments::baseline::analyze::scorecard::judge,
    },
    Probe {
        experiment: "concurrency",
        properties: experiments::concurrency::analyze::scorecard::COLUMNS,
        at_smoke: true,
        on_cluster_url: false,
        // Its 0 ms cells race the workers on CPU (the registry: alone).
        alone: true,
        judge: experiments::concurrency::analyze::scorecard::judge,
    },
    Probe {
        experiment: "bursts",
        properties: experiments::bursts::analyze::scorecard::COLUMNS,
        at_smoke: true,
        on_cluster_url: false,
        // Waits on real windows; latency-bound, slip at most 10 ms.
        alone: false,
        judge: experiments::bursts::analyze::scorecard::judge,
    },
    Probe {
        experiment: "skew",
        properties: experiments::skew::analyze::scorecard::COLUMNS,
        at_smoke: true,
        on_cluster_url: false,
        // Waits on real windows; latency-bound, slip at most 3 ms.
        alone: false,
        judge: experiments::skew::analyze::scorecard::judge,
    },
    Probe {
        experiment: "cost",
        properties: experiments::cost::analyze::scorecard::COLUMNS,
        at_smoke: true,
        on_cluster_url: false,
        // Redis CPU per decision and decisions/s: timed, pinned.
        alone: true,
        judge: experiments::cost::analyze::scorecard::judge,
    },
    Probe {
        experiment: "memory",
        properties: experiments::memory::analyze::scorecard::COLUMNS,
        at_smoke: true,
        on_cluster_url: false,
        // Bytes per client on its own server, a 1 h window: no time
        // measured (its probe table has no CPU cells).
        alone: false,
        judge: experiments::memory::analyze::scorecard::judge,
    },
    Probe {
        experiment: "replication",
        properties: experiments::replication::analyze::scorecard::COLUMNS,
        at_smoke: false,
        on_cluster_url: false,
        // Latency-bound, slip at most 10 ms.
        alone: false,
        judge: experiments::replication::analyze::scorecard::judge,
    },
    Probe {
        experiment: "failover",
        properties: experiments::failover::analyze::scorecard::COLUMNS,
        at_smoke: false,
        on_cluster_url: false,
        // When the kill lands against the replication stream is timing
        // lanes disturb (the registry: alone).
        alone: true,
        judge: experiments::failover::analyze::scorecard::judge,
    },
    Probe {
        experiment: "cluster",
        properties: experiments::cluster::analyze::scorecard::COLUMNS,
        at_smoke: false,
        on_cluster_url: true,
        // Its users' keys take a process-wide counter: which slots they
        // hash to would depend on the other lanes (the registry: alone).
        alone: true,
        judge: experiments::cluster::analyze::scorecard::judge,
    },
    Probe {
        experiment: "script-survival",
        properties: experiments::script_survival::analyze::scorecard::COLUMNS,
        at_smoke: false,
        on_cluster_url: false,
        // Latency-bound, slip at most 50 ms.
        alone: false,
        judge: experiments::script_survival::analyze::scorecard::judge,
    },
    Probe {
        experiment: "fail-open",
        properties: experiments::fail_open::analyze::scorecard::COLUMNS,
        at_smoke: false,
        on_cluster_url: false,
        // Alone, though latency-bound in the registry: its columns time a
        // kill and a delay against 100 decisions/s, and in 3 lanes (quick,
        // 2026-12-03) the kill landed up to ~160 ms late (16 of 25
        // decisions of the first gone bin answered by Redis; at most 1
        // when the strategies ran one after another) while the slip probe
        // saw p99 2.8 ms, max 7.8 ms: likely a runtime worker held by
        // another lane, which the one timer task does not see.
        alone: true,
        judge: experiments::fail_open::analyze::scorecard::judge,
    },
];

impl Probe {
    /// Why this probe does not run for `cfg` (`None`: it runs).
    pub fn skip(&self, cfg: &Config) -> Option<String> {
        let smoke = cfg.size == Size::Smoke && !self.at_smoke;
        match &cfg.target {
            ScorecardServer::External(x) if self.on_cluster_url => {
                x.cluster.is_none().then(|| "no --cluster-url given".into())
            }
            ScorecardServer::External(_) => {
                let own_servers = experiments::find(self.experiment)
                    .map(|e| !e.allows_external)
                    .unwrap_or(true);
                if own_servers {
                    Some(format!(
                        "external Redis: the `{}` experiment starts and controls its own servers",
                        self.experiment
                    ))
                } else {
                    smoke.then(|| "size smoke".into())
                }
            }
            ScorecardServer::Own(_) => smoke.then(|| "size smoke".into()),
        }
    }

    /// Every column of this probe with the same outcome.
    pub fn all(&self, f: impl Fn() -> Result<CellOutcome>) -> Vec<ColumnOutcome> {
        self.properties.iter().map(|p| (*p, f())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use limitbench_analysis::scorecard::{Declared, PROMISE_PATTERNS};

    #[test]
    fn every_column_is_filled_by_exactly_one_probe_in_the_columns_order() {
        let filled: Vec<&str> = PROBES
            .iter()
            .flat_map(|p| p.properties.iter().copied())
            .collect();
        let columns: Vec<&str> = PROPERTIES.iter().map(|(p, _)| *p).collect();
        assert_eq!(PROBES[0].properties, [WORKS]);
        assert_eq!(filled, columns);
        for p in PROBES {
            assert!(experiments::find(p.experiment).is_ok(), "{}", p.experiment);
        }
        let bursts = PROBES.iter().find(|p| p.experiment == "bursts").unwrap();
        let promise: Vec<&str> = PROMISE_PATTERNS.iter().map(|(c, _)| *c).collect();
        assert_eq!(bursts.properties, promise.as_slice());
    }

    #[test]
    fn every_judge_fills_exactly_its_probes_columns() {
        // A probe folder with no rows: every judge answers each of its
        // columns (with the error), in the probe's order.
        let dir = tempfile::tempdir().unwrap();
        let declared = Declared {
            promise: None,
            clock: "redis".into(),
            reports_redis_time: true,
        };
        for p in PROBES {
            let rows = ProbeRows::new(dir.path(), "token-bucket", &declared);
            let judged: Vec<&str> = (p.judge)(&rows).iter().map(|(c, _)| *c).collect();
            assert_eq!(judged, p.properties, "{}", p.experiment);
            assert!((p.judge)(&rows).iter().all(|(_, r)| r.is_err()));
        }
    }

    /// A probe runs in lanes only where that is valid: its experiment is
    /// latency-bound in the registry (the sweep then checks its slip per
    /// trial), or it is memory's, whose probe table (at every size) has no
    /// CPU cells: bytes on its own server, nothing timed. Every probe that
    /// times CPU or throughput (cost) runs alone.
    #[test]
    fn only_latency_bound_or_untimed_probes_run_in_lanes() {
        use crate::run::parallel::Bound;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for p in PROBES {
            let e = experiments::find(p.experiment).unwrap();
            if p.alone || matches!(e.bound, Bound::Latency { .. }) {
                continue;
            }
            assert_eq!(p.experiment, "memory", "{} runs in lanes", p.experiment);
            let text = std::fs::read_to_string(root.join("experiments/memory.toml")).unwrap();
            let t: toml::Table = text.parse().unwrap();
            let probe = t["probe"].as_table().unwrap();
            let empty = |v: Option<&toml::Value>| {
                v.is_none_or(|v| v.as_array().is_some_and(|a| a.is_empty()))
            };
            assert!(
                probe.get("cpu_sizes").is_some() && empty(probe.get("cpu_sizes")),
                "memory's [probe] must set cpu_sizes = []"
            );
            for size in ["smoke", "quick", "full"] {
                let sub = probe.get(size).and_then(|v| v.as_table());
                assert!(
                    empty(sub.and_then(|s| s.get("cpu_sizes"))),
                    "memory's [probe.{size}] has CPU cells"
                );
            }
        }
        for name in [
            WORKS,
            "cost-x-get",
            "decisions-per-s",
            "exact-0ms",
            "cluster",
        ] {
            let p = PROBES
                .iter()
                .find(|p| p.properties.contains(&name))
                .unwrap();
            assert!(p.alone, "{name}");
        }
    }
}
