//! The memory analysis's metrics on hand-written rows: one test per claim's
//! metric, each with exact expected values.

use super::analyze::*;
use super::rows::MemoryRow;

/// A directly filled sliding log: member length, Z, limit, clients, bytes per client.
fn log(m: usize, z: u64, limit: u64, clients: u64, bytes_per_client: f64) -> MemoryRow {
    MemoryRow {
        cell: format!("sliding-window-log|L{limit}|m{m}|z{z}|k{clients}|direct"),
        kind: "bytes".into(),
        strategy: "sliding-window-log".into(),
        fill: "direct".into(),
        limit,
        member_len: m,
        zset_max_listpack_entries: z,
        clients,
        bytes_per_client,
        bytes_per_entry: Some(bytes_per_client / limit as f64),
        encoding: if limit <= z { "listpack" } else { "skiplist" }.into(),
        ..Default::default()
    }
}

/// A CPU row: log size n, Z, encoding before and after, us per decision.
fn cpu(n: u64, z: u64, before: &str, after: &str, us: f64) -> MemoryRow {
    MemoryRow {
        kind: "cpu".into(),
        fill_per_client: n,
        zset_max_listpack_entries: z,
        encoding: before.into(),
        encoding_after: after.into(),
        redis_cpu_us_per_decision: Some(us),
        ..Default::default()
    }
}

#[test]
fn the_main_cell_is_the_one_with_most_clients() {
    let rows = [
        log(16, 128, 128, 10, 9999.0),
        log(0, 128, 128, 100, 1280.0),
        log(0, 128, 128, 50, 7777.0),
    ];
    let cells = LogCells::of(&rows);
    assert_eq!(cells.member_lens, [0, 16]);
    assert_eq!(cells.default_member_len(), 0);
    assert_eq!(cells.get(0, 128, 128).unwrap().clients, 100);
}

#[test]
fn b31_bytes_per_entry_of_a_full_listpack() {
    let rows = [
        log(0, 128, 128, 100, 1280.0),
        log(16, 128, 128, 100, 2560.0),
    ];
    let cells = LogCells::of(&rows);
    assert_eq!(cells.b31_bytes_per_entry(0), Some(10.0));
    assert_eq!(cells.b31_bytes_per_entry(16), Some(20.0));
    assert_eq!(cells.b31_bytes_per_entry(24), None);
}

#[test]
fn b32_jump_from_128_to_129() {
    let rows = [log(0, 128, 128, 100, 1280.0), log(0, 128, 129, 100, 8960.0)];
    assert_eq!(LogCells::of(&rows).b32_jump(0), Some(7.0));
    assert_eq!(LogCells::of(&rows[..1]).b32_jump(0), None);
}

#[test]
fn b33_bytes_per_entry_past_the_cliff_only() {
    let rows = [
        log(0, 128, 128, 100, 1280.0),
        log(0, 128, 1000, 100, 64_000.0),
        log(0, 128, 256, 100, 16_384.0),
        // Another Z: not past the cliff at 128.
        log(0, 256, 257, 100, 99_999.0),
    ];
    let cells = LogCells::of(&rows);
    assert_eq!(cells.past, [256, 1000]);
    assert_eq!(cells.b33_bytes_per_entry(0), [(256, 64.0), (1000, 64.0)]);
}

#[test]
fn b43_megabytes_per_client_at_100k() {
    let rows = [log(0, 128, 100_000, 10, 6_500_000.0)];
    assert_eq!(LogCells::of(&rows).b43_mb_per_client(0), Some(6.5));
}

#[test]
fn b34_cliff_jump_at_each_z() {
    let rows = [
        log(0, 128, 128, 100, 1000.0),
        log(0, 128, 129, 100, 7000.0),
        log(0, 256, 256, 50, 2000.0),
        log(0, 256, 257, 50, 5000.0),
        // Z=512 without L=513: no cliff.
        log(0, 512, 512, 50, 4000.0),
    ];
    let cliffs = LogCells::of(&rows).cliffs(0, &[128, 256, 512]);
    let jumps: Vec<(u64, f64)> = cliffs.iter().map(|c| (c.0, c.3)).collect();
    assert_eq!(jumps, [(128, 7.0), (256, 2.5)]);
}

#[test]
fn the_verification_compares_at_equal_clients() {
    let mut by_strategy = log(0, 128, 16, 10, 400.0);
    by_strategy.fill = "strategy".into();
    let rows = [
        by_strategy,
        log(0, 128, 16, 10, 410.0),
        // Other clients: not the twin.
        log(0, 128, 16, 1000, 1.0),
    ];
    let d = verify_differences(&rows);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].1.clients, 10);
    assert!((d[0].2 - 2.5).abs() < 1e-9, "{}", d[0].2);
}

#[test]
fn b34_listpack_against_skiplist_by_intervals_over_windows() {
    let mut rows = Vec::new();
    for t in 0..4u64 {
        let jitter = t as f64 * 0.1;
        for mut r in [
            cpu(64, 512, "listpack", "listpack", 3.0 + jitter),
            cpu(160, 128, "skiplist", "skiplist", 2.0 + jitter),
            cpu(160, 512, "listpack", "listpack", 5.0 + jitter),
            // Changed encoding during the window: left out.
            cpu(400, 256, "listpack", "skiplist", 9.0),
            cpu(400, 128, "skiplist", "skiplist", 2.1),
        ] {
            r.trial = t;
            rows.push(r);
        }
    }
    let refs: Vec<&MemoryRow> = rows.iter().collect();
    let cells = cpu_cells(&refs);
    // n=400 at Z=256 kept no window: it has no cell.
    assert_eq!(cells.len(), 4);
    let c = |n, z| cells.iter().find(|c| c.n == n && c.z == z).unwrap();
    assert_eq!(c(160, 512).windows.len(), 4);
    // Window t of the listpack over window t of the skiplist.
    let r = ratio(c(160, 512), c(160, 128)).unwrap();
    let want: f64 = (0..4)
        .map(|t| (5.0 + t as f64 * 0.1) / (2.0 + t as f64 * 0.1))
        .sum::<f64>()
        / 4.0;
    assert!((r.v - want).abs() < 1e-12 && r.n == 4 && r.lo <= r.v && r.v <= r.hi);
    // Only n=160 has both encodings.
    let pairs = listpack_vs_skiplist(&cells);
    assert_eq!(pairs.len(), 1);
    assert_eq!((pairs[0].a.n, pairs[0].a.z, pairs[0].b.z), (160, 512, 128));
    // Growth: the largest listpack over the smallest at the same Z (512).
    let g = listpack_growth(&cells).unwrap();
    assert_eq!((g.a.n, g.b.n, g.a.z), (160, 64, 512));
}

#[test]
fn b34_equal_cost_is_not_an_ordering_and_ten_windows_decide() {
    use limitbench_analysis::claims::{self, Check, Outcome, main_outcome};
    let names: Vec<&str> = crate::experiments::REGISTRY
        .iter()
        .map(|e| e.name)
        .collect();
    let claims = claims::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/claims.toml"),
        &names,
    )
    .unwrap();
    let spec = claims.iter().find(|c| c.id == "B3.4").unwrap();
    assert_eq!(spec.check, Check::Shape);
    let dearer = 1.0 + spec.tolerance.at(0);
    let judge = |iv: (f64, f64), n: usize| {
        let m = limitbench_analysis::Measured::new("B3.4", vec![iv.0], "", "")
            .condition("cliff moves", true)
            .band_condition("dearer", iv, (dearer, f64::INFINITY))
            .trials(n);
        main_outcome(spec, &m)
    };
    // A hand-made counter-example: the same cost either way (0.98-1.02x).
    assert_eq!(judge((0.98, 1.02), 10), Outcome::Outside);
    assert_eq!(judge((1.6, 1.8), 10), Outcome::Inside);
    assert_eq!(judge((1.02, 1.2), 10), Outcome::Straddles);
    // One window per cell decides nothing.
    assert_eq!(judge((1.6, 1.8), 1), Outcome::TooFew);
}

#[test]
fn trials_of_the_main_cell_give_the_mean_and_an_interval() {
    let mut rows = vec![
        log(26, 128, 128, 100, 5120.0),
        log(26, 128, 128, 100, 5248.0),
        log(26, 128, 129, 100, 19_200.0),
        log(26, 128, 129, 100, 19_680.0),
        // Another member length, one trial, not flagged.
        log(8, 128, 128, 100, 3200.0),
    ];
    for (i, r) in rows.iter_mut().enumerate().take(4) {
        r.trial = (i % 2) as u64;
        r.default_member = true;
    }
    let cells = LogCells::of(&rows);
    // The flagged length is the default, not the smallest.
    assert_eq!(cells.default_member_len(), 26);
    assert_eq!(cells.others(), [8]);
    let e = cells.b31(26).unwrap();
    assert_eq!((e.v, e.n), (40.5, 2));
    // Two distinct values: their hull widened by their gap (40 and 41).
    assert!(e.lo == 39.0 && e.hi == 42.0, "{e:?}");
    // B3.2 pairs trial i of 129 with trial i of 128: 3.75 both times (one
    // value: known to 1% of itself).
    let j = cells.b32(26).unwrap();
    assert!(
        (j.v - 3.75).abs() < 1e-9 && (j.lo - 3.7125).abs() < 1e-9 && (j.hi - 3.7875).abs() < 1e-9,
        "{j:?}"
    );
    assert_eq!(cells.b31(8).unwrap().n, 1);
}

/// A CPU window with its instruments: Redis busy, EVALSHA's usec per call,
/// Redis's call count, the log's size after the window.
fn window(busy: f64, per: f64, usec: Option<f64>, calls: u64, after: f64) -> MemoryRow {
    MemoryRow {
        decisions: Some(10_000),
        sample_size_mean: Some(160.0),
        sample_size_after: Some(after),
        redis_busy_fraction: Some(busy),
        redis_main_thread_busy_fraction: Some(busy),
        cmd_calls: usec.map(|_| calls),
        cmd_usec_per_call: usec,
        ..cpu(160, 128, "skiplist", "skiplist", per)
    }
}

#[test]
fn b34_a_window_is_fit_only_when_its_instruments_agree() {
    // Saturated, CPU per decision 1.5x the command's time, counts agree, +5%.
    let ok = window(0.98, 15.0, Some(10.0), 10_200, 168.0);
    assert!(window_problems(&ok).is_empty(), "{:?}", window_problems(&ok));
    // Each failure alone, named.
    let cases = [
        (window(0.6, 15.0, Some(10.0), 10_000, 168.0), "busy"),
        // The suspected fault: setup's CPU in the delta, 4.5x the decisions'.
        (window(0.98, 67.5, Some(15.0), 10_000, 168.0), "outside 1/3-3x"),
        (window(0.98, 3.0, Some(10.0), 10_000, 168.0), "outside 1/3-3x"),
        (window(0.98, 15.0, None, 0, 168.0), "no commandstats"),
        (window(0.98, 15.0, Some(10.0), 9_700, 168.0), "counted 9700 calls"),
        (window(0.98, 15.0, Some(10.0), 10_000, 200.0), "grew from 160 to 200"),
    ];
    for (w, what) in &cases {
        let p = window_problems(w);
        assert_eq!(p.len(), 1, "{what}: {p:?}");
        assert!(p[0].contains(what), "{what}: {p:?}");
    }
    // The claim's check: one unfit window of several names itself; a window
    // whose log changed encoding is not judged, so not checked either.
    let mut bad = window(0.6, 15.0, Some(10.0), 10_000, 168.0);
    bad.trial = 3;
    let mut changed = window(0.1, 15.0, None, 0, 300.0);
    changed.encoding_after = "listpack".into();
    let rows = [&ok, &bad, &changed];
    let why = unfit_windows(&rows).unwrap();
    assert!(why.starts_with("1 of 2 CPU windows"), "{why}");
    assert!(why.contains("n=160 Z=128 window 3: Redis 0.60 busy"), "{why}");
    assert_eq!(unfit_windows(&[&ok]), None);
}
