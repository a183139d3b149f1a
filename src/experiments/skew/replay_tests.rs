//! A4.3's comparator: the script's bucket replayed on Redis's readings
//! (`analyze/replay.rs`), by hand and against a real redis-server.

use super::super::analyze::*;
use super::super::rows::{HistoryRow, Row};
use super::row;

const REDIS: &str = "token-bucket";

fn decided(r: &Row, redis_us: i64, admitted: bool) -> HistoryRow {
    HistoryRow {
        cell: r.cell.clone(),
        trial: r.trial,
        worker: 0,
        intended_us: redis_us - 100,
        sent_us: redis_us - 100,
        replied_us: redis_us + 100,
        redis_time_us: Some(redis_us),
        admitted,
        error: false,
    }
}

#[test]
fn the_script_refills_by_whole_milliseconds_of_the_absolute_clock() {
    // Capacity 2 at 1 token/s: a burst of three passes two; 999.999 ms
    // later the refill depends on where the ms boundary falls.
    let t = [0, 0, 0, 999_999];
    // Phase 0: 0 and 999 ms -> 0.999 tokens, refused (the burst's three
    // calls ran within one ms; the replays below space them 10 us apart).
    assert_eq!(script_bucket(&t, 0, 2.0, 1.0), [true, true, false, false]);
    // Phase 1 us: 0 and 1000 ms -> 1 token, admitted.
    assert_eq!(script_bucket(&t, 1, 2.0, 1.0), [true, true, false, true]);
    // Redis's order, not the order sent: sorted by Redis's time.
    let r = Row {
        capacity: 2,
        rate_per_s: 1.0,
        admitted: 3,
        ..row(REDIS, 0.0, 1.0, 0, 3)
    };
    let mut h = vec![
        decided(&r, 999_999, true),
        decided(&r, 0, true),
        decided(&r, 10, true),
        decided(&r, 20, false),
    ];
    // Sent in another order than Redis ran them.
    h[0].sent_us = -1_000;
    // Recorded phase 1: the replay admits 3, as the trial did.
    let at1 = replay(&Row { start_unix_us: Some(1_700_000_000_000_001), ..r.clone() }, &h).unwrap();
    assert_eq!((at1.replay_admitted, at1.decisions_off, at1.phase_us), (3, 0, Some(1)));
    assert!(!at1.off(3));
    // Recorded phase 0: it admits 2, so this trial is off by one.
    let at0 = replay(&Row { start_unix_us: Some(1_700_000_000_000_000), ..r.clone() }, &h).unwrap();
    assert_eq!((at0.replay_admitted, at0.decisions_off), (2, 1));
    assert!(at0.off(3));
    // Unrecorded: the first phase that gives every decision is found.
    let found = replay(&r, &h).unwrap();
    assert_eq!((found.phase_us, found.phase_recorded), (Some(1), false));
    assert!(!found.off(3));
    // A bucket that invents a token (the burst's third admitted) is off at
    // every phase.
    let mut bad = h.clone();
    bad[3].admitted = true;
    let none = replay(&Row { admitted: 4, ..r.clone() }, &bad).unwrap();
    assert_eq!(none.phase_us, None);
    assert!(none.off(4));
    // A decision without Redis's time: no replay; errors are left out.
    let mut no_time = h.clone();
    no_time[1].redis_time_us = None;
    assert!(replay(&r, &no_time).is_none());
    no_time[1].error = true;
    assert!(replay(&r, &no_time).is_some());
}

#[test]
fn the_check_would_count_a_bucket_on_skewed_clocks_off() {
    // Capacity 2 at 1 token/s; server 1's clock 1.5 s ahead of server 0's.
    // On Redis's clock: a burst of two at 0, one token back by 1.000 s
    // (admitted), then 1.001 s and 1.002 s refused: 3 admitted.
    let r = Row {
        capacity: 2,
        rate_per_s: 1.0,
        admitted: 3,
        offsets_us: "0;1500000".into(),
        start_unix_us: Some(1_700_000_000_000_000),
        ..row(REDIS, 1500.0, 1.0, 0, 3)
    };
    let mut h = vec![
        decided(&r, 0, true),
        decided(&r, 10, true),
        decided(&r, 1_000_000, true),
        decided(&r, 1_001_000, false),
        decided(&r, 1_002_000, false),
    ];
    h[2].worker = 1;
    h[4].worker = 1;
    let p = replay(&r, &h).unwrap();
    assert!(!p.off(3), "the trial is the script's bucket on Redis's clock: {p:?}");
    // On the skewed clocks server 1 reads 2.5 s (full again, admitted),
    // server 0 then reads 1.001 s (a negative refill: refused) and server 1
    // 2.502 s (1.002 tokens: admitted): 4 admitted, so counted off.
    assert_eq!(p.skewed_off, Some(true), "{p:?}");
    // Every server at offset 0: there is no alternative to tell apart.
    let flat = replay(&Row { offsets_us: "0;0".into(), ..r.clone() }, &h).unwrap();
    assert_eq!(flat.skewed_off, None);
}

#[test]
fn a4_3_counts_the_trials_off_the_replay_and_a_late_trial_makes_it_invalid() {
    let r = |trial: u64, admitted: u64| Row {
        capacity: 2,
        rate_per_s: 1.0,
        start_unix_us: Some(0),
        ..row(REDIS, 0.0, 1.0, trial, admitted)
    };
    let rows = vec![r(0, 2), r(1, 3)];
    let h = |row: &Row, third: bool| {
        vec![
            decided(row, 0, true),
            decided(row, 10, true),
            decided(row, 20, third),
        ]
    };
    let mut hist = std::collections::BTreeMap::new();
    hist.insert((rows[0].cell.clone(), 0), h(&rows[0], false));
    hist.insert((rows[1].cell.clone(), 1), h(&rows[1], true));
    let rp = replays(&rows, &hist);
    assert_eq!(a4_3(&rows, &rp), vec![(0, 0.0), (1, 1.0)]);
    let m = measured_a4_3(&rows, &rp, &[2.0, 2.0]).unwrap();
    assert_eq!(m.values, vec![1.0]);
    assert_eq!(m.intervals, vec![(1.0, 1.0)]);
    assert!(m.invalid.is_empty());
    // A4.3 rests on every Redis-clock trial's cell: a disturbed trial of
    // one (schedule cell without the strategy) makes it no finding.
    assert!(!m.rests_on.is_empty());
    let schedule = |p99: u64| {
        limitbench_analysis::disturbance::Disturbances::of(&[limitbench_analysis::rows::ScheduleRow {
            experiment: "skew".into(),
            cell: rows[1].cell.split_once('/').unwrap().1.into(),
            trial: 1,
            attempt: 2,
            slip_max_us: p99,
            slip_p99_us: p99,
            slip_bound_us: Some(3000),
            beside: String::new(),
            committed: true,
            other_cpu_cores: None,
            beside_lanes_cpu_cores: None,
            other_cpu_bound: None,
            disturbed: String::new(),
            steal_cores: None,
        }])
    };
    assert_eq!(schedule(100).reason("skew", &m.rests_on), None);
    let why = schedule(9000).reason("skew", &m.rests_on).unwrap();
    assert!(why.starts_with("disturbed: 1 committed trial"), "{why}");
}

/// On a real redis-server: the Redis-clock bucket's decisions, replayed on
/// the Redis times it returned with the trial's recorded start, come out
/// the same one by one; and a Lua number passed to redis.call is stored as
/// text that reads back as the same double (the level's round trip).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replay_gives_every_decision_of_the_script_on_redis() {
    use limitbench_core::args;
    use limitbench_core::clock::Clock;
    use limitbench_core::fleet::{Fleet, RedisBinary, ServerConfig};
    use limitbench_core::load::TrialClock;
    use limitbench_core::strategy::{self, Limit, Options};
    let bin = RedisBinary::locate(None).expect("redis-server installed");
    let fleet = Fleet::standalone(&bin, ServerConfig::default())
        .await
        .unwrap();
    // The stored level's precision: 0.1 + 0.2 is not 0.3 in doubles; the
    // text Redis stores must say so, and read back equal in Lua.
    let mut c = fleet.conn().await.unwrap();
    let lua = "redis.call('HSET', KEYS[1], 'v', 0.1 + 0.2) local s = redis.call('HGET', KEYS[1], 'v') return {s, tostring(tonumber(s) == 0.1 + 0.2)}";
    let back = c
        .call("lvl", &args!["EVAL", lua, "1", "lvl"])
        .await
        .unwrap()
        .as_redis_cli();
    assert!(back.contains("0.30000000000000004") && back.contains("true"), "{back}");

    let strat = strategy::build(REDIS, None, &Options::default()).unwrap();
    fleet.prepare(strat.as_ref()).await.unwrap();
    let clocks = Clock::spread(1, 0);
    let mut drivers = crate::experiments::testbed::drivers(fleet.primary_addr(), &strat, &clocks)
        .await
        .unwrap();
    // Capacity 5 at 100/s (0.1 token per ms): a burst empties it, then
    // requests every ~3 ms find fractional levels.
    let limit = Limit::bucket(5, 100.0);
    let tc = TrialClock::start();
    let mut events = Vec::new();
    for k in 0..80u64 {
        let e = drivers[0].decide(&tc, "replay-unit", limit, 1, 0).await;
        assert!(e.error.is_none(), "{:?}", e.error);
        events.push(e);
        if k >= 10 {
            tokio::time::sleep(std::time::Duration::from_micros(2_700)).await;
        }
    }
    let admitted = events.iter().filter(|e| e.admitted).count() as u64;
    let r = Row {
        capacity: 5,
        rate_per_s: 100.0,
        start_unix_us: Some(tc.start_unix_us),
        ..row(REDIS, 0.0, 1.0, 0, admitted)
    };
    let h = crate::experiments::decisions::history_rows(&r.cell, 0, true, &events);
    let p = replay(&r, &h).expect("every decision has Redis's time");
    assert_eq!(p.decisions_off, 0, "{p:?}");
    assert_eq!(p.replay_admitted, admitted);
    assert!(admitted > 5 && admitted < 80, "admitted {admitted}");
}

#[test]
fn a4_3_says_how_many_trials_could_show_an_error_of_a_token_or_1_percent() {
    // Capacity 2 at 1 token/s, phase 0. Trial 0 is refused at 995 ms with
    // 0.995 tokens: a bucket refilling 1% fast (1.005) would admit it, one
    // starting a token short would refuse the second call, so the trial
    // tells both apart. Trial 1 is refused at 20 us: a 1% faster refill
    // decides alike, so it could not show that error.
    let r = |trial: u64| Row {
        capacity: 2,
        rate_per_s: 1.0,
        start_unix_us: Some(0),
        ..row(REDIS, 0.0, 1.0, trial, 2)
    };
    let rows = vec![r(0), r(1)];
    let mut hist = std::collections::BTreeMap::new();
    for (row, last) in rows.iter().zip([995_000, 20]) {
        hist.insert(
            (row.cell.clone(), row.trial),
            vec![decided(row, 0, true), decided(row, 10, true), decided(row, last, false)],
        );
    }
    let rp = replays(&rows, &hist);
    let tells: Vec<bool> = rp.iter().map(|p| p.as_ref().unwrap().tells_small_error).collect();
    assert_eq!(tells, [true, false]);
    let m = measured_a4_3(&rows, &rp, &[2.0, 2.0]).unwrap();
    assert_eq!(m.values, vec![0.0]);
    assert!(
        m.note.starts_with(
            "0 of 2 Redis-clock trials differ from the script's own bucket replayed on Redis's clock; 1 of them could have shown an error of one token or 1% in refill rate"
        ),
        "{}",
        m.note
    );
}
