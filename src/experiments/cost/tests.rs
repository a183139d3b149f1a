//! The cost analysis's metrics on hand-written rows: one test per claim's
//! metric, each with exact expected values.

use super::analyze::*;
use super::rows::CostRow;

/// A row of `cell`, run `trial`, with CPU per decision and rate; EVALSHA
/// over uniform traffic unless the cell says otherwise.
fn row(cell: &str, trial: u64, cpu_us: f64, rate: f64) -> CostRow {
    let strategy = cell.split('|').next().unwrap().to_string();
    let invocation = match cell.split('|').nth(1) {
        Some(inv @ ("eval" | "evalsha" | "fcall")) => inv.to_string(),
        Some(_) => "evalsha".into(),
        None => "command".into(),
    };
    CostRow {
        cell: cell.into(),
        trial,
        variant: cell.into(),
        strategy,
        invocation,
        traffic: if cell.ends_with("|abusive") {
            "single-key"
        } else {
            "uniform"
        }
        .into(),
        redis_cpu_us_per_decision: cpu_us,
        decisions_per_s: rate,
        redis_busy_fraction: 0.95,
        decisions: 100,
        admitted: 100,
        ..Default::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn b21_each_lua_variant_over_get() {
    let rows = [
        row("get", 0, 2.0, 0.0),
        row("get", 1, 4.0, 0.0),
        row("token-bucket|evalsha", 0, 6.0, 0.0),
        row("gcra|evalsha", 0, 9.0, 0.0),
        // Not EVALSHA over uniform traffic: left out.
        row("token-bucket|eval", 0, 30.0, 0.0),
        row("gcra|abusive", 0, 30.0, 0.0),
    ];
    let (get, ratios) = cpu_vs_get(&Variants::of(&rows)).unwrap();
    assert_eq!(get, 3.0);
    assert_eq!(
        ratios,
        [
            ("token-bucket|evalsha".to_string(), 2.0),
            ("gcra|evalsha".to_string(), 3.0)
        ]
    );
    // Without GET there is no scale.
    assert!(cpu_vs_get(&Variants::of(&rows[2..])).is_none());
}

#[test]
fn b21_split_is_paired_by_run_and_sums_to_the_ratio() {
    let mut rows = vec![
        row("get", 0, 2.0, 0.0),
        row("get", 1, 4.0, 0.0),
        row("gcra|evalsha", 0, 6.0, 0.0),
        row("gcra|evalsha", 1, 8.0, 0.0),
    ];
    for (r, cmd) in rows.iter_mut().zip([0.5, 1.0, 3.0, 2.0]) {
        r.cmd_usec_per_decision = cmd;
    }
    let (get, lua) = b21_split(&Variants::of(&rows)).unwrap();
    // GET against itself: 1x, its command a quarter of it in both runs.
    assert!(close(get.total.0, 1.0) && close(get.cmd.0, 0.25));
    assert!(close(get.rest_us, 2.25));
    let g = &lua[0];
    // Run 0: 6/2 = 3x (command 1.5x, rest 1.5x); run 1: 8/4 = 2x (0.5x, 1.5x).
    assert!(close(g.total.0, 2.5) && close(g.cmd.0, 1.0) && close(g.rest.0, 1.5));
    assert_eq!(g.total.2, 2);
    // The interval is the judged one of the per-run ratios (3x and 2x).
    assert_eq!(g.total.1, limitbench_analysis::stats::mean_cs(&[3.0, 2.0]));
    assert!(g.total.1.0 < 2.5 && 2.5 < g.total.1.1);
    assert!(close(g.cmd.0 + g.rest.0, g.total.0));
}

#[test]
fn b22_lua_rates_and_the_lowest_busy_fraction() {
    let mut rows = vec![
        row("token-bucket|evalsha", 0, 6.0, 1000.0),
        row("token-bucket|evalsha", 1, 6.0, 3000.0),
        row("gcra|evalsha", 0, 6.0, 5000.0),
        row("get", 0, 1.0, 90000.0),
    ];
    rows[1].redis_busy_fraction = 0.8;
    // GET is not a Lua variant: its lower busy fraction does not count.
    rows[3].redis_busy_fraction = 0.1;
    let v = Variants::of(&rows);
    assert_eq!(lua_rates(&v), [2000.0, 5000.0]);
    assert_eq!(lua_busy_min(&v), 0.8);
}

#[test]
fn b23_script_time_and_cpu_per_lua_variant() {
    let mut rows = vec![
        row("token-bucket|evalsha", 0, 6.0, 0.0),
        row("token-bucket|evalsha", 1, 8.0, 0.0),
        row("gcra|evalsha", 0, 5.0, 0.0),
    ];
    rows[0].cmd_usec_per_call = 3.0;
    rows[1].cmd_usec_per_call = 4.0;
    rows[2].cmd_usec_per_call = 2.5;
    let (script, cpu) = lua_script_times(&Variants::of(&rows));
    assert_eq!(script, [3.5, 2.5]);
    assert_eq!(cpu, [7.0, 5.0]);
}

#[test]
fn b24_multi_against_lua_on_means_and_paired_runs() {
    let rows = [
        row("fixed-window-multi", 0, 1.0, 110.0),
        row("fixed-window-multi", 1, 1.0, 120.0),
        row("fixed-window-lua|evalsha", 0, 1.0, 100.0),
        row("fixed-window-lua|evalsha", 1, 1.0, 100.0),
    ];
    let (pct, paired) = multi_vs_lua(&Variants::of(&rows)).unwrap();
    assert!(close(pct, 15.0), "{pct}");
    assert_eq!(paired.len(), 2);
    assert!(
        close(paired[0], 10.0) && close(paired[1], 20.0),
        "{paired:?}"
    );
    assert!(multi_vs_lua(&Variants::of(&rows[..2])).is_none());
}

#[test]
fn b25_difference_between_the_prefilled_logs() {
    let rows = [
        row("sliding-window-log|L100|full", 0, 10.0, 0.0),
        row("sliding-window-log|L100|full", 1, 10.0, 0.0),
        row("sliding-window-log|L10000|full", 0, 11.0, 0.0),
        row("sliding-window-log|L10000|full", 1, 13.0, 0.0),
    ];
    let (diff, spread) = prefilled_difference(&Variants::of(&rows)).unwrap();
    assert!(close(diff, 0.2), "{diff}");
    // sd of {11, 13} is sqrt(2), over the mean 12; L100's sd is 0.
    assert!(close(spread, 2f64.sqrt() / 12.0), "{spread}");
    assert!(prefilled_difference(&Variants::of(&rows[..2])).is_none());
}

#[test]
fn b26_abusive_client_against_normal_traffic() {
    let mut rows = vec![
        row("gcra|abusive", 0, 2.0, 0.0),
        row("gcra|evalsha", 0, 4.0, 0.0),
        // No normal twin: left out.
        row("token-bucket|abusive", 0, 9.0, 0.0),
    ];
    rows[0].admitted = 10;
    let ab = abusive_ratios(&Variants::of(&rows));
    assert_eq!(
        ab,
        [Abusive {
            strategy: "gcra".into(),
            ratio: 0.5,
            abusive_us: 2.0,
            normal_us: 4.0,
            refused_pct: 90.0
        }]
    );
}

#[test]
fn b61_eval_against_evalsha_and_fcall_within_noise() {
    let rows = [
        row("token-bucket|evalsha", 0, 10.0, 1000.0),
        row("token-bucket|eval", 0, 12.0, 900.0),
        row("token-bucket|fcall", 0, 10.2, 1000.0),
    ];
    let v = Variants::of(&rows);
    let (extra, lost) = eval_vs_evalsha(&v).unwrap();
    assert!(close(extra, 2.0) && close(lost, 10.0), "{extra} {lost}");
    let (d, noise) = fcall_vs_evalsha(&v).unwrap();
    // One run each: no spread, so the 3% floor is the noise.
    assert!(close(d, 0.02) && close(noise, 0.03), "{d} {noise}");
    assert!(eval_vs_evalsha(&Variants::of(&rows[..1])).is_none());
}

#[test]
fn the_busy_share_is_read_from_b2_2s_published_text() {
    assert_eq!(percent_in("1k-2k/s, >=42% busy"), Some(42.0));
    assert_eq!(percent_in("no percentage"), None);
}

#[test]
fn an_unsaturated_run_names_itself_and_makes_the_claim_invalid() {
    let mut rows = vec![
        row("gcra|evalsha", 0, 12.0, 80_000.0),
        row("gcra|evalsha", 1, 12.0, 80_000.0),
        row("get", 1, 4.0, 200_000.0),
    ];
    let v = Variants::of(&rows);
    assert_eq!(validity::unsaturated(&v, ["gcra|evalsha", "get"]), None);
    rows[1].redis_busy_fraction = 0.52;
    rows[1].redis_main_thread_busy_fraction = 0.52;
    let v = Variants::of(&rows);
    let why = validity::unsaturated(&v, ["gcra|evalsha", "get"]).unwrap();
    assert!(why.contains("gcra|evalsha run 1: 0.52"), "{why}");
    // A variant the claim does not rest on is not its concern.
    assert_eq!(validity::unsaturated(&v, ["get"]), None);
}

#[test]
fn b25_is_judged_where_the_smaller_limit_binds_and_fails_where_l_matters() {
    // normal: every decision admitted at both limits (L never binds), 18%
    // apart; steady: L=100 refuses some, 25% apart; full: refuses all, 1%.
    let mut rows = Vec::new();
    for t in 0..10 {
        let k = 1.0 + 0.01 * (t % 3) as f64;
        for (cell, cpu, admitted) in [
            ("sliding-window-log|L100|full", 10.0, 0),
            ("sliding-window-log|L10000|full", 10.1, 0),
            ("sliding-window-log|L100|normal", 11.0, 100),
            ("sliding-window-log|L10000|normal", 13.0, 100),
            ("sliding-window-log|L100|steady", 12.0, 80),
            ("sliding-window-log|L10000|steady", 15.0, 100),
        ] {
            // The larger limit's runs wobble a little on their own, so the
            // per-run ratios spread (a constant ratio gives no interval).
            let own = if cell.contains("L10000") {
                1.0 + if t % 2 == 0 { 0.002 } else { -0.002 }
            } else {
                1.0
            };
            let mut r = row(cell, t, cpu * k * own, 90_000.0);
            r.admitted = admitted;
            rows.push(r);
        }
    }
    let m = b25(&Variants::of(&rows)).unwrap();
    // Judged: steady (15/12 - 1 = 25%) and full (1%); normal only shown.
    assert_eq!(m.values.len(), 2, "{:?}", m.values);
    assert!((m.values[0] - 25.0).abs() < 0.01, "{:?}", m.values);
    assert!((m.values[1] - 1.0).abs() < 0.01, "{:?}", m.values);
    assert!(m.setting.contains(&("swl_fill".into(), "steady+full".into())), "{:?}", m.setting);
    assert!(m.sweep.is_empty(), "a fill level is scope, not a setting to pick");
    // The steady level's 25% is far outside its noise bound: the claim fails.
    assert_eq!(m.failed_conditions().len(), 1, "{:?}", m.conditions);
    assert!(m.failed_conditions()[0].starts_with("steady"), "{:?}", m.conditions);
    assert!(m.display.contains("never binds"), "{}", m.display);
    // Without an effect (steady as close as full) it passes.
    let flat: Vec<_> = rows
        .iter()
        .cloned()
        .map(|mut r| {
            if r.cell == "sliding-window-log|L10000|steady" {
                r.redis_cpu_us_per_decision = r.redis_cpu_us_per_decision * 12.1 / 15.0;
            }
            r
        })
        .collect();
    let m = b25(&Variants::of(&flat)).unwrap();
    assert!(m.failed_conditions().is_empty() && m.undecided.is_empty(), "{:?}", m.conditions);
    // An older folder with the full logs only has not covered the scope.
    let full: Vec<_> = rows.iter().filter(|r| r.cell.ends_with("|full")).cloned().collect();
    let m = b25(&Variants::of(&full)).unwrap();
    assert!(m.undecided.iter().any(|u| u.contains("steady")), "{:?}", m.undecided);
    // Only levels where L never binds: no test of L, so no finding.
    let normal: Vec<_> = rows.iter().filter(|r| r.cell.ends_with("|normal")).cloned().collect();
    let m = b25(&Variants::of(&normal)).unwrap();
    assert!(!m.invalid.is_empty() && m.values.is_empty());
}

/// `row` in group `g`.
fn in_group(g: &str, cell: &str, trial: u64, cpu_us: f64, rate: f64) -> CostRow {
    let mut r = row(cell, trial, cpu_us, rate);
    if cell.starts_with("get|") {
        r.strategy = "get".into();
        r.invocation = "command".into();
    }
    r.group = g.into();
    r
}

#[test]
fn grouped_ratios_pair_each_variant_with_the_get_of_its_own_group() {
    // Two groups on two machines: group 2's GET is twice as dear, and so
    // is everything measured there.
    let rows = [
        in_group("rounds-1", "get|rounds-1", 0, 2.0, 100.0),
        in_group("rounds-1", "get|rounds-1", 1, 2.0, 100.0),
        in_group("rounds-1", "token-bucket|evalsha", 0, 6.0, 30.0),
        in_group("rounds-1", "token-bucket|evalsha", 1, 6.0, 30.0),
        in_group("rounds-2", "get|rounds-2", 0, 4.0, 50.0),
        in_group("rounds-2", "get|rounds-2", 1, 4.0, 50.0),
        in_group("rounds-2", "gcra|evalsha", 0, 8.0, 20.0),
        in_group("rounds-2", "gcra|evalsha", 1, 8.0, 20.0),
    ];
    let v = Variants::of(&rows);
    // 6/2 and 8/4, not 6/3 and 8/3 (a pooled GET) nor 8/2.
    let (pooled, ratios) = cpu_vs_get(&v).unwrap();
    assert_eq!(pooled, 3.0);
    assert_eq!(
        ratios,
        [
            ("token-bucket|evalsha".to_string(), 3.0),
            ("gcra|evalsha".to_string(), 2.0)
        ]
    );
    let (_, splits) = b21_split(&v).unwrap();
    assert_eq!(splits[0].total.0, 3.0);
    assert_eq!(splits[1].total.0, 2.0);
    // The scorecard's ratio and the rate against the own group's GET.
    assert_eq!(against_get(&v, "gcra|evalsha"), Some((2.0, 0.4)));
    // The spreads compare strategies of two groups on their ratios to
    // their own GET: CPU 3x over 2x = 1.5 (not 8/6 of the raw values); rate:
    // gcra at 20/50 = 0.4 of its GET over the token bucket's 30/100 = 0.3.
    let (cpu, rate) = lua_spreads(&v);
    assert!(close(cpu.unwrap(), 1.5), "{cpu:?}");
    assert!(close(rate.unwrap(), 0.4 / 0.3), "{rate:?}");
    // In one group, the raw values' ratio as before.
    let one = [
        in_group("rounds-1", "get|rounds-1", 0, 2.0, 100.0),
        in_group("rounds-1", "token-bucket|evalsha", 0, 6.0, 30.0),
        in_group("rounds-1", "gcra|evalsha", 0, 8.0, 20.0),
    ];
    let (cpu, rate) = lua_spreads(&Variants::of(&one));
    assert!(close(cpu.unwrap(), 8.0 / 6.0) && close(rate.unwrap(), 1.5));
    // A trial of another group never pairs: gcra has no GET in rounds-1.
    let lonely = [
        in_group("rounds-1", "get|rounds-1", 0, 2.0, 100.0),
        in_group("rounds-2", "gcra|evalsha", 0, 8.0, 20.0),
    ];
    assert_eq!(against_get(&Variants::of(&lonely), "gcra|evalsha"), None);
    let (_, s) = b21_split(&Variants::of(&lonely)).unwrap();
    assert_eq!(s[0].total.2, 0, "no ratio across groups");
}

#[test]
fn rows_without_a_group_are_one_group_with_get() {
    // Runs made before the groups: one `get`, no `group` column in cost.csv.
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(row("get", 0, 2.0, 100.0)).unwrap();
    w.serialize(row("gcra|evalsha", 0, 5.0, 40.0)).unwrap();
    let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
    let gi = text.lines().next().unwrap().split(',').position(|c| c == "group").unwrap();
    let old: Vec<String> = text
        .lines()
        .map(|l| {
            let mut f: Vec<&str> = l.split(',').collect();
            f.remove(gi);
            f.join(",")
        })
        .collect();
    assert!(!old[0].contains("group"));
    let rows: Vec<CostRow> = csv::Reader::from_reader(old.join("\n").as_bytes())
        .deserialize()
        .map(|r| r.unwrap())
        .collect();
    assert!(rows.iter().all(|r| r.group.is_empty()));
    assert_eq!(against_get(&Variants::of(&rows), "gcra|evalsha"), Some((2.5, 0.4)));
}
