//! A4.3's comparator: the exact bucket that `lua/token-bucket.lua` computes,
//! replayed on the Redis clock readings it returned, in the order Redis ran
//! the calls (by that reading), with the script's own arithmetic:
//!
//! - now_ms = floor(TIME in us / 1000), on Redis's absolute clock. The
//!   history keeps Redis's time relative to the trial start
//!   (`start_unix_us`, µs, not aligned to a millisecond), so the replay
//!   needs the start's sub-millisecond phase, `start_unix_us mod 1000`:
//!   floor((t + start) / 1000) differs from floor((t + phase) / 1000) by a
//!   constant that cancels in every difference. (Lua divides in doubles;
//!   at ~1.7e15 us the quotient's error is ~2e-4, far from the next integer
//!   at a distance of at least 1e-3, so the floor is the integer division.)
//! - level = min(capacity, level + ((now_ms - last_ms) * rate) / 1000) in
//!   doubles; admit and subtract 1 when level >= 1; the key starts full.
//! - the level is stored with HSET and read back with tonumber: Redis 7.0
//!   turns a Lua number argument of redis.call into text with "%.17g", which
//!   reads back as the same double (the skew tests check it on a real
//!   redis-server), so the stored precision loses nothing.
//! - the key's PEXPIRE (capacity / rate, in ms) never changes a decision:
//!   Redis expires a key only once its time is past the deadline, i.e. after
//!   at least that many ms of idle, when the refill has filled it anyway.
//!
//! Runs from before `start_unix_us` was recorded have no phase: for those
//! the replay tries every phase (0..999 us) and a trial agrees when one
//! phase reproduces every one of its recorded decisions (so also its
//! count); a bucket that lost or invented a token is off at every phase.

use std::collections::BTreeMap;

use super::super::rows::{HistoryRow, Row};
use super::REDIS;
use limitbench_analysis::Measured;

/// The decisions of the script's bucket on Redis times `times_us` (trial
/// clock, already in execution order) at sub-ms phase `phase_us`.
pub fn script_bucket(times_us: &[i64], phase_us: i64, capacity: f64, rate_per_s: f64) -> Vec<bool> {
    let mut out = Vec::with_capacity(times_us.len());
    first_mismatch(
        times_us,
        phase_us,
        capacity,
        capacity,
        rate_per_s,
        |_, a| {
            out.push(a);
            true
        },
    );
    out
}

/// Replays the script (the key starting at `start` tokens) and hands each
/// decision to `agree(i, admitted)`; stops at the first it rejects and
/// returns its index.
fn first_mismatch(
    times_us: &[i64],
    phase_us: i64,
    start: f64,
    capacity: f64,
    rate_per_s: f64,
    mut agree: impl FnMut(usize, bool) -> bool,
) -> Option<usize> {
    let mut state: Option<(f64, i64)> = None;
    for (i, t) in times_us.iter().enumerate() {
        let now_ms = (t + phase_us).div_euclid(1000);
        let (level, last_ms) = state.unwrap_or((start, now_ms));
        let mut level = capacity.min(level + ((now_ms - last_ms) as f64 * rate_per_s) / 1000.0);
        let admitted = level >= 1.0;
        if admitted {
            level -= 1.0;
        }
        state = Some((level, now_ms));
        if !agree(i, admitted) {
            return Some(i);
        }
    }
    None
}

/// One Redis-clock trial against the replay.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialReplay {
    /// What the replayed bucket admits (at the recorded phase; unrecorded:
    /// at the phase that reproduces the decisions, else at phase 0).
    pub replay_admitted: u64,
    /// Recorded decisions that differ from the replay's.
    pub decisions_off: u64,
    /// The phase used; None: unrecorded and no phase reproduces the trial.
    pub phase_us: Option<i64>,
    /// Whether the phase was recorded (else searched).
    pub phase_recorded: bool,
    /// Searched trials only: whether the recorded decisions tell a wrong
    /// bucket (one token short at the start, or refilling 1% fast) from the
    /// script's at the phase found, and whether such a wrong bucket is then
    /// still found at another phase (what the search could hide).
    pub wrong_bucket: Option<(bool, bool)>,
    /// Every trial that replays: whether its recorded decisions tell the
    /// script's bucket from one starting a token short and from one
    /// refilling 1% fast, at the phase used (so an error that small would
    /// have shown in this trial).
    pub tells_small_error: bool,
    /// The check's power against the study's own alternative, for a trial
    /// whose servers' clocks were drawn apart: the same bucket run on each
    /// server's skewed clock (Redis's time plus that server's offset, as
    /// the caller-clock bucket reads it), same arrivals and order, at the
    /// same phase. Some(true): its count differs from the recorded one, so
    /// the check would count such a bucket off in this trial.
    pub skewed_off: Option<bool>,
}

impl TrialReplay {
    /// The trial is off the exact bucket: its count differs from the
    /// replay's at the recorded phase, or no phase reproduces it.
    pub fn off(&self, admitted: u64) -> bool {
        self.phase_us.is_none() || self.replay_admitted != admitted
    }
}

/// Replays one trial's decisions (errored ones left out: the script may
/// or may not have run). None when a decision has no Redis time.
pub fn replay(r: &Row, history: &[HistoryRow]) -> Option<TrialReplay> {
    let mut h: Vec<(i64, i64, bool, u32)> = history
        .iter()
        .filter(|x| !x.error)
        .map(|x| {
            x.redis_time_us
                .map(|t| (t, x.sent_us, x.admitted, x.worker))
        })
        .collect::<Option<_>>()?;
    if h.is_empty() {
        return None;
    }
    // Redis's order; a tie (two scripts in one us: not seen) keeps the send order.
    h.sort_by_key(|x| (x.0, x.1));
    let times: Vec<i64> = h.iter().map(|x| x.0).collect();
    let recorded: Vec<bool> = h.iter().map(|x| x.2).collect();
    let (cap, rate) = (r.capacity as f64, r.rate_per_s);
    let at = |phase: i64| {
        let d = script_bucket(&times, phase, cap, rate);
        let off = d.iter().zip(&recorded).filter(|(a, b)| a != b).count() as u64;
        (d.iter().filter(|a| **a).count() as u64, off)
    };
    // The skewed-clock alternative: each server's offset added to the
    // times it sent (None when the draw puts every server at 0, or a
    // worker has no offset).
    let offsets: Vec<i64> = r
        .offsets_us
        .split(';')
        .filter(|x| !x.trim().is_empty())
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    let skewed_times: Option<Vec<i64>> = if offsets.iter().all(|o| *o == 0) {
        None
    } else {
        h.iter()
            .map(|x| offsets.get(x.3 as usize).map(|o| x.0 + o))
            .collect()
    };
    let recorded_admitted = recorded.iter().filter(|a| **a).count();
    let skewed_off = |phase: i64| {
        skewed_times.as_ref().map(|t| {
            script_bucket(t, phase, cap, rate)
                .iter()
                .filter(|a| **a)
                .count()
                != recorded_admitted
        })
    };
    // A bucket one token short at the start, or refilling 1% fast: does
    // it differ from the recorded decisions at phase `p`?
    let wrong = [(cap - 1.0, rate), (cap, rate * 1.01)];
    let tells_apart = |p: i64| {
        wrong.iter().all(|(st, rt)| {
            first_mismatch(&times, p, *st, cap, *rt, |i, a| recorded[i] == a).is_some()
        })
    };
    if let Some(start) = r.start_unix_us {
        let phase = start.rem_euclid(1000);
        let (replay_admitted, decisions_off) = at(phase);
        return Some(TrialReplay {
            replay_admitted,
            decisions_off,
            phase_us: Some(phase),
            phase_recorded: true,
            wrong_bucket: None,
            tells_small_error: tells_apart(phase),
            skewed_off: skewed_off(phase),
        });
    }
    let matches = |start: f64, rate: f64| {
        (0..1000).find(|&p| {
            first_mismatch(&times, p, start, cap, rate, |i, a| recorded[i] == a).is_none()
        })
    };
    let found = matches(cap, rate);
    let (replay_admitted, decisions_off) = at(found.unwrap_or(0));
    // The search's power: a bucket one token short at the start, or
    // refilling 1% fast. Does it differ from the recorded decisions at the
    // phase found (the trial can tell the buckets apart at all), and is it
    // still found at some other phase (what the search hides)?
    let tells_apart = found.is_some_and(tells_apart);
    let hidden = tells_apart && wrong.iter().any(|(st, rt)| matches(*st, *rt).is_some());
    Some(TrialReplay {
        replay_admitted,
        decisions_off,
        phase_us: found,
        phase_recorded: false,
        wrong_bucket: Some((tells_apart, hidden)),
        tells_small_error: tells_apart,
        skewed_off: skewed_off(found.unwrap_or(0)),
    })
}

/// The replay of every row (None: not the Redis-clock bucket, or a decision
/// without Redis's time), its history looked up by (cell, trial).
pub fn replays(
    rows: &[Row],
    hist: &BTreeMap<(String, u64), Vec<HistoryRow>>,
) -> Vec<Option<TrialReplay>> {
    rows.iter()
        .map(|r| {
            if r.strategy != REDIS {
                return None;
            }
            replay(
                r,
                hist.get(&(r.cell.clone(), r.trial))
                    .map(Vec::as_slice)
                    .unwrap_or(&[]),
            )
        })
        .collect()
}

/// Requests the Redis-clock bucket admitted off its replay, per Redis-clock
/// trial that replays: (row index, |admitted - replay|).
pub fn a4_3(rows: &[Row], replays: &[Option<TrialReplay>]) -> Vec<(usize, f64)> {
    rows.iter()
        .zip(replays)
        .enumerate()
        .filter(|(_, (r, _))| r.strategy == REDIS)
        .filter_map(|(i, (r, p))| {
            p.as_ref()
                .map(|p| (i, (r.admitted as f64 - p.replay_admitted as f64).abs()))
        })
        .collect()
}

/// A4.3: the count of Redis-clock trials off the script's exact bucket.
pub fn measured_a4_3(
    rows: &[Row],
    replays: &[Option<TrialReplay>],
    ideal: &[f64],
) -> Option<Measured> {
    let redis: Vec<usize> = (0..rows.len())
        .filter(|i| rows[*i].strategy == REDIS)
        .collect();
    if redis.is_empty() {
        return None;
    }
    let n = redis.len();
    let done: Vec<(usize, &TrialReplay)> = redis
        .iter()
        .filter_map(|i| replays[*i].as_ref().map(|p| (*i, p)))
        .collect();
    let off = done
        .iter()
        .filter(|(i, p)| p.off(rows[*i].admitted))
        .count();
    let decisions_off: u64 = done.iter().map(|(_, p)| p.decisions_off).sum();
    let searched: Vec<&TrialReplay> = done
        .iter()
        .filter(|(_, p)| !p.phase_recorded)
        .map(|x| x.1)
        .collect();
    let send_off = redis
        .iter()
        .filter(|i| (rows[**i].admitted as f64 - ideal[**i]).abs() > 0.0)
        .count();
    let mut m = Measured::new(
        "A4.3",
        vec![off as f64],
        format!(
            "{off} of {n} Redis-clock trials off the script's exact bucket ({decisions_off} decisions off in all)"
        ),
        "skew.csv strategy=token-bucket, every setting, against lua/token-bucket.lua's bucket replayed on the Redis times in skew-history.csv (execution order, now truncated to ms on Redis's absolute clock, doubles), phase from skew.csv start_unix_us",
    )
    .intervals(
        vec![(off as f64, off as f64)],
        format!("a count over all {n} Redis-clock trials (every trial, no sampling)"),
    )
    .trials(n)
    .setting(&[("settings", "every skew, load, run length, capacity, server count and offset draw")]);
    let phases = if searched.is_empty() {
        "every trial's sub-ms start phase recorded (start_unix_us)".to_string()
    } else {
        format!(
            "{} trials have no recorded start phase (a run from before start_unix_us): for each, the first of the 1,000 phases (0..999 us) under which the replay gives every recorded decision was used; {} of them need a phase other than 0, {} have none",
            searched.len(),
            searched
                .iter()
                .filter(|p| p.phase_us.is_some_and(|x| x != 0))
                .count(),
            searched.iter().filter(|p| p.phase_us.is_none()).count(),
        ) + &format!(
            "; the search's power against a wrong bucket (one token short at the start, or refilling 1% fast): the recorded decisions tell it apart at the phase found in {} of those {} trials (in the others every bucket near the script's gives the same decisions: no refusal falls where they differ), and the search would still find a phase for it in {} of those {}",
            searched
                .iter()
                .filter(|p| p.wrong_bucket.is_some_and(|w| w.0))
                .count(),
            searched.len(),
            searched
                .iter()
                .filter(|p| p.wrong_bucket.is_some_and(|w| w.1))
                .count(),
            searched
                .iter()
                .filter(|p| p.wrong_bucket.is_some_and(|w| w.0))
                .count(),
        )
    };
    let skewed: Vec<bool> = done.iter().filter_map(|(_, p)| p.skewed_off).collect();
    let mut by_skew: BTreeMap<i64, (usize, usize)> = BTreeMap::new();
    for (i, p) in &done {
        if let Some(off) = p.skewed_off {
            let e = by_skew.entry(rows[*i].skew_ms.round() as i64).or_default();
            e.0 += off as usize;
            e.1 += 1;
        }
    }
    let power = format!(
        "; the check's power against the study's alternative (the same bucket on each server's skewed clock, Redis's time plus that server's offset in the trial's draw, same arrivals and order): its count differs from the recorded one in {} of the {} trials whose clocks were drawn apart (by skew: {}), so a caller-clock bucket there would be counted off",
        skewed.iter().filter(|x| **x).count(),
        skewed.len(),
        by_skew
            .iter()
            .map(|(k, (a, b))| format!("{k} ms {a}/{b}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let phases = phases + &power;
    // The count in words first, with how many trials could have shown an
    // error of one token or 1% in refill rate at all.
    let could = done.iter().filter(|(_, p)| p.tells_small_error).count();
    let lead = format!(
        "{off} of {n} Redis-clock trials differ from the script's own bucket replayed on Redis's clock; {could} of them could have shown an error of one token or 1% in refill rate (their recorded decisions differ from a bucket starting a token short and from one refilling 1% fast; in the others no refusal falls where those buckets differ)"
    );
    m = m.explained(
        format!(
            "{off} of {n} trials off the script's own bucket ({could} could show a 1-token error)"
        ),
        lead,
    );
    m = m.note(format!(
        "comparator: the script's own bucket (Redis's TIME truncated to ms, refill in doubles, level stored exactly through %.17g) replayed in the order Redis ran the calls; {phases}. The ideal bucket on the send times (continuous us) differs from the Redis-clock bucket in {send_off} of {n} trials: it is another bucket (other clock readings, no ms truncation), not what \"exact\" compares with"
    ));
    let unreplayable = n - done.len();
    if unreplayable > 0 {
        m = m.invalid(format!(
            "{unreplayable} of {n} Redis-clock trials have a decision without Redis's time, so the script's bucket cannot be replayed on them"
        ));
    }
    // Every Redis-clock trial's cell: a disturbed one makes the count no
    // measurement (`disturbance`).
    m = m.rests_on(redis.iter().map(|i| rows[*i].cell.as_str()));
    Some(m)
}
