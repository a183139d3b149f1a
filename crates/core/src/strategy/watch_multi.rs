//! `watch-multi`: optimistic transaction. WATCH the window's counter, GET it,
//! decide in the client, then MULTI/INCRBY/PEXPIRE/EXEC in one round trip.
//! If another client wrote the key in between, EXEC returns nil (an abort)
//! and the whole decision is retried, up to `retry_budget` retries; when the
//! budget runs out the request is refused (`retries_exhausted`), which is
//! counted apart from refusals by the limit.
//!
//! Options: `retry_budget` (default 1000), `backoff_us` (default 0: retry at
//! once), `backoff` (`fixed`, default: sleep `backoff_us` before every retry;
//! `full-jitter`: sleep a uniform draw in [0, min(`backoff_cap_us`,
//! `backoff_us` * 2^(retry-1))], the randomised exponential backoff of the
//! AWS architecture blog), `budget_includes_first` (default false: a budget
//! of n allows n retries after the first try; true: n tries in all),
//! `unwatch` (default false: an aborted EXEC already dropped the WATCH, so
//! the retry starts with WATCH; true: send UNWATCH after an abort anyway,
//! one more round trip per attempt, as clients that always pair WATCH with
//! UNWATCH do). The studies state none of these, so all are parameters.
//! The full-jitter draws are not seeded: like the network's timing, they
//! are not meant to be replayed.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{
    Builtin, ClientKey, ClockSource, Decision, Info, Kind, Options, Request, Strategy, multi_exec,
    window_index,
};
use crate::args;
use crate::conn::Conn;
use limitbench_base::error::Result;

pub struct WatchMulti {
    info: Info,
    backoff: Duration,
    /// Full jitter (randomised exponential) instead of a fixed pause.
    full_jitter: bool,
    backoff_cap: Duration,
    unwatch: bool,
    /// Aborts allowed before giving up.
    max_aborts: u32,
}

pub const BUILTIN: Builtin = Builtin {
    name: "watch-multi",
    build: |opts: &Options| {
        let mut r = opts.reader("watch-multi");
        let retry_budget = r.get("retry_budget", 1000u32)?;
        let backoff_us = r.get("backoff_us", 0u64)?;
        let includes_first = r.get("budget_includes_first", false)?;
        let full_jitter = r.one_of("backoff", "fixed", &["fixed", "full-jitter"])? == "full-jitter";
        let cap_us = r.get("backoff_cap_us", 100_000u64)?;
        let unwatch = r.get("unwatch", false)?;
        r.finish()?;

        let max_aborts = if includes_first {
            retry_budget.saturating_sub(1)
        } else {
            retry_budget
        };
        Ok(Arc::new(WatchMulti {
            info: Info {
                name: "watch-multi".into(),
                kind: Kind::Transaction,
                modes: vec![],
                keys: "rl:{client}:fw:<window index> (counter)".into(),
                atomic: true,
                known_bug: None,
                clock: ClockSource::Caller,
                reports_redis_time: false,
                promise: None,
                window_whole_seconds: false,
                takes_cost: true,
            },
            backoff: Duration::from_micros(backoff_us),
            full_jitter,
            backoff_cap: Duration::from_micros(cap_us),
            unwatch,
            max_aborts,
        }))
    },
};

impl WatchMulti {
    /// The pause before retry number `retry` (1-based).
    fn pause(&self, retry: u32) -> Duration {
        if !self.full_jitter || self.backoff.is_zero() {
            return self.backoff;
        }
        let ceiling = self
            .backoff
            .saturating_mul(1u32 << (retry - 1).min(20))
            .min(self.backoff_cap);
        use rand::RngExt;
        ceiling.mul_f64(rand::rng().random_range(0.0..=1.0))
    }
}

#[async_trait]
impl Strategy for WatchMulti {
    fn info(&self) -> &Info {
        &self.info
    }

    async fn decide(&self, conn: &mut Conn, req: &Request<'_>) -> Result<Decision> {
        let w = window_index(req.now_us, req.limit.window_ms);
        let key = ClientKey(req.client, format_args!("fw:{w}")).to_string();
        let limit = req.limit.limit as i64;
        let mut aborts = 0u32;
        loop {
            conn.call(&key, &args!["WATCH", &key]).await?;
            let seen = conn
                .call(&key, &args!["GET", &key])
                .await?
                .as_i64()
                .unwrap_or(0);
            if seen + req.cost as i64 > limit {
                conn.call(&key, &args!["UNWATCH"]).await?;
                return Ok(Decision {
                    admitted: false,
                    remaining: Some((limit - seen).max(0)),
                    aborts,
                    ..Default::default()
                });
            }
            match multi_exec::incr_expire(conn, &key, req.cost, req.limit.window_ms).await? {
                Some(results) => {
                    let count = results
                        .first()
                        .and_then(|r| r.as_i64())
                        .unwrap_or(seen + req.cost as i64);
                    return Ok(Decision {
                        admitted: true,
                        remaining: Some((limit - count).max(0)),
                        aborts,
                        ..Default::default()
                    });
                }
                None => {
                    aborts += 1;
                    if aborts > self.max_aborts {
                        return Ok(Decision {
                            admitted: false,
                            aborts,
                            retries_exhausted: true,
                            ..Default::default()
                        });
                    }
                    if self.unwatch {
                        conn.call(&key, &args!["UNWATCH"]).await?;
                    }
                    let pause = self.pause(aborts);
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                }
            }
        }
    }
}
