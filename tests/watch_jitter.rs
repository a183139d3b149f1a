//! On a real redis-server: the delay proxy's per-packet jitter (round trips
//! spread, never below the base delay, calibration still hits the median)
//! and watch-multi's UNWATCH-after-abort and full-jitter backoff variants
//! (exact with a large budget; UNWATCH sent only by the variant).

mod common;

use std::time::Duration;

use limitbench::check;
use limitbench_core::proxy::DelayProxy;
use limitbench_core::strategy::{self, Limit, Options};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_jitter_spreads_round_trips_above_the_base_delay() {
    let fleet = common::standalone().await;
    let proxy = DelayProxy::start(fleet.primary_addr()).unwrap();
    proxy.set_one_way(Duration::from_millis(1));
    let flat = proxy.measure_rtt(60).await.unwrap();
    proxy.set_jitter(Duration::from_millis(4));
    let jittered = proxy.measure_rtt(60).await.unwrap();
    eprintln!("flat: {flat:?}\njittered: {jittered:?}");
    // Two uniform draws in [0, 4 ms] (one per direction): sd ~1.6 ms; a
    // loaded machine only adds spread, so the floor is safe.
    assert!(
        jittered.rtt_sd_us > 800.0,
        "sd {} us with 4 ms jitter",
        jittered.rtt_sd_us
    );
    assert!(jittered.rtt_mean_us > flat.rtt_mean_us + 1500.0);
    // The calibration keeps the jitter and hits the target's median.
    let got = proxy
        .calibrate(Duration::from_micros(6700), 60)
        .await
        .unwrap();
    assert_eq!(proxy.jitter(), Duration::from_millis(4));
    assert!(
        (got.rtt_median_us - 6700.0).abs() < 1000.0,
        "median {} us",
        got.rtt_median_us
    );
}

async fn unwatch_calls(fleet: &limitbench_core::fleet::Fleet) -> u64 {
    let info = fleet.primary().info("commandstats").await.unwrap();
    info.get("cmdstat_unwatch")
        .and_then(|v| v.split(',').next())
        .and_then(|c| c.strip_prefix("calls="))
        .map(|c| c.parse().unwrap())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_multi_variants_stay_exact_and_only_the_unwatch_one_unwatches() {
    let fleet = common::standalone().await;
    let limit = Limit::per_window(60, 3_600_000);
    let build = |o: Options| strategy::build("watch-multi", None, &o).unwrap();
    // Offered == limit: no refusal by the limit, so no UNWATCH on that path.
    let plain = build(Options::default().with("retry_budget", 100_000));
    let n = check::concurrent(plain, &fleet, "wm-plain", limit, 32, 60)
        .await
        .unwrap();
    assert_eq!(n, 60);
    assert_eq!(unwatch_calls(&fleet).await, 0);
    let variant = build(
        Options::default()
            .with("retry_budget", 100_000)
            .with("unwatch", true)
            .with("backoff", "full-jitter")
            .with("backoff_us", 200),
    );
    let n = check::concurrent(variant, &fleet, "wm-variant", limit, 32, 60)
        .await
        .unwrap();
    assert_eq!(n, 60);
    assert!(
        unwatch_calls(&fleet).await > 0,
        "32 workers on one key must abort at least once"
    );
    let bad = strategy::build(
        "watch-multi",
        None,
        &Options::default().with("backoff", "exponential"),
    );
    assert!(bad.is_err());
}
