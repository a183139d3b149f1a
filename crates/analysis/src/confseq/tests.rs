//! The coverage test: many simulated sequences from known distributions
//! (the shapes the experiments produce: a symmetric spread, counts with a
//! floor, a skewed ratio, a rare event's fraction), looked at after every
//! trial from the fifteenth (the least a cell runs before its first look) to
//! the fiftieth and stopped as soon as the interval is wholly inside or
//! wholly outside a region whose edge lies at the truth (the hardest case:
//! every decision there is a miss, so the miss rate is the chance that the
//! interval ever leaves the truth). The interval at the
//! stopping time must miss the true mean at most alpha of the time (plus a
//! Monte Carlo margin); the fixed-n bootstrap interval under the same rule
//! must miss more often (the negative control).
//!
//! Measured (1,500 sequences each, edge at the truth, `rates`): the
//! asymptotic sequence misses 0.024 (symmetric), 0.042 (counts with a
//! floor), 0.031 (a ratio with a log-sd of 0.3), 0.030 (a rare event's
//! fraction); first looked at after 10 trials it missed 0.067 on the
//! floored counts, and on a heavily skewed ratio (log-sd 0.75) it misses
//! 0.096 even from 15: such a metric needs the bounded sequence or more
//! trials before its first look. The empirical-Bernstein sequence never
//! missed, but at 10 trials it is 20-40 times wider than the asymptotic
//! one when the bounds are far apart (`widths`).

use rand::{RngExt, SeedableRng};

use super::*;
use crate::stats::mean_ci;

const FIRST_LOOK: usize = 15;
const CAP: usize = 50;

/// A known distribution: a sampler and its true mean and sd.
struct Shape {
    name: &'static str,
    mean: f64,
    sd: f64,
    bounds: (f64, f64),
    draw: fn(&mut rand::rngs::ChaCha8Rng) -> f64,
}

fn normal(r: &mut rand::rngs::ChaCha8Rng) -> f64 {
    // Box-Muller.
    let (u, v): (f64, f64) = (r.random::<f64>().max(1e-300), r.random::<f64>());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// Mean and sd of a draw, by simulation (for shapes without a closed form).
fn moments(draw: fn(&mut rand::rngs::ChaCha8Rng) -> f64) -> (f64, f64) {
    let mut r = rand::rngs::ChaCha8Rng::seed_from_u64(99);
    let xs: Vec<f64> = (0..100_000).map(|_| draw(&mut r)).collect();
    let m = xs.iter().sum::<f64>() / xs.len() as f64;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64;
    (m, v.sqrt())
}

fn shapes() -> Vec<Shape> {
    // Admitted by a limiter of 100 under races: never below the limit.
    let floor: fn(&mut rand::rngs::ChaCha8Rng) -> f64 =
        |r| (100.0 + 1.5 + 3.0 * normal(r)).round().max(100.0);
    // A cost ratio: skewed to the right.
    let ratio: fn(&mut rand::rngs::ChaCha8Rng) -> f64 = |r| (0.3 * normal(r)).exp();
    let heavy: fn(&mut rand::rngs::ChaCha8Rng) -> f64 = |r| (0.75 * normal(r)).exp();
    // A rare event's share of 20 (e.g. trials not exact).
    let rare: fn(&mut rand::rngs::ChaCha8Rng) -> f64 =
        |r| (0..20).filter(|_| r.random::<f64>() < 0.1).count() as f64 / 20.0;
    let sym: fn(&mut rand::rngs::ChaCha8Rng) -> f64 = |r| 128.7 + 4.0 * normal(r);
    // A count that nearly always reads the same (A2.1's lockstep: 22 of
    // 100), one more 5% of the time and two more 1% of the time: the shape
    // the claim review of issue 32 found the plug-in sd collapses on.
    let near_constant: fn(&mut rand::rngs::ChaCha8Rng) -> f64 = |r| {
        let u = r.random::<f64>();
        22.0 + f64::from(u8::from(u < 0.06)) + f64::from(u8::from(u < 0.01))
    };
    let mk = |name, draw, bounds| {
        let (mean, sd) = moments(draw);
        Shape {
            name,
            mean,
            sd,
            bounds,
            draw,
        }
    };
    vec![
        mk("symmetric", sym, (100.0, 228.0)),
        mk("counts with a floor", floor, (100.0, 228.0)),
        mk("skewed ratio", ratio, (0.0, 40.0)),
        mk("rare fraction", rare, (0.0, 1.0)),
        mk("heavy skew", heavy, (0.0, 40.0)),
        mk("near-constant count", near_constant, (0.0, 100.0)),
    ]
}

/// Run `k` sequences of `shape` under the stopping rule, at most `cap`
/// trials each, with the interval `at` (the trials so far -> interval) and
/// return the share whose interval at the stopping time misses the true
/// mean. The region is "at most edge", its edge at the truth.
fn miss_rate(shape: &Shape, k: usize, cap: usize, at: &mut dyn FnMut(&[f64]) -> (f64, f64)) -> f64 {
    let edge = shape.mean;
    let mut r = rand::rngs::ChaCha8Rng::seed_from_u64(7);
    let mut missed = 0;
    for _ in 0..k {
        let mut xs = Vec::with_capacity(cap);
        let (mut lo, mut hi) = (f64::NAN, f64::NAN);
        while xs.len() < cap {
            xs.push((shape.draw)(&mut r));
            if xs.len() < FIRST_LOOK {
                continue;
            }
            (lo, hi) = at(&xs);
            if hi <= edge || lo > edge {
                break;
            }
        }
        if !(lo <= shape.mean && shape.mean <= hi) {
            missed += 1;
        }
    }
    missed as f64 / k as f64
}

/// The interval of a confidence sequence fed one trial per look (the looks
/// of one sequence come in order, the first with `FIRST_LOOK` trials).
fn incremental<C: ConfSeq>(make: impl Fn() -> C) -> impl FnMut(&[f64]) -> (f64, f64) {
    let mut cs = make();
    move |xs: &[f64]| {
        if xs.len() == FIRST_LOOK {
            cs = make();
            xs.iter().for_each(|&x| cs.push(x));
        } else {
            cs.push(xs[xs.len() - 1]);
        }
        cs.interval()
    }
}

/// The share of `k` sequences of `shape` whose interval misses the true
/// mean at the stopping time, looked at on the design's schedule: first at
/// `PLANNED_N` trials, then after every round `next_look` plans, up to
/// `cap`; stopped when the interval is decisive against a region whose edge
/// is the truth.
fn miss_rate_on_schedule(
    shape: &Shape,
    k: usize,
    cap: u64,
    at: &dyn Fn(&[f64]) -> (f64, f64),
) -> f64 {
    let mut looks = vec![PLANNED_N as u64];
    while *looks.last().unwrap() < cap {
        looks.push(next_look(*looks.last().unwrap(), cap));
    }
    let mut r = rand::rngs::ChaCha8Rng::seed_from_u64(11);
    let mut missed = 0;
    for _ in 0..k {
        let xs: Vec<f64> = (0..cap).map(|_| (shape.draw)(&mut r)).collect();
        let (mut lo, mut hi) = (f64::NAN, f64::NAN);
        for &n in &looks {
            (lo, hi) = at(&xs[..n as usize]);
            if hi <= shape.mean || lo > shape.mean {
                break;
            }
        }
        if !(lo <= shape.mean && shape.mean <= hi) {
            missed += 1;
        }
    }
    missed as f64 / k as f64
}

/// Three Monte Carlo standard errors of a rate alpha over `k` sequences.
fn margin(k: usize) -> f64 {
    3.0 * (ALPHA * (1.0 - ALPHA) / k as f64).sqrt()
}

#[test]
fn the_asymptotic_sequence_covers_at_the_stopping_time_and_the_rechecked_bootstrap_does_not() {
    let k = 1500;
    let mut report = Vec::new();
    // Not the near-constant count: the bare sequence misses it 0.38 of the
    // time (its plug-in sd is zero until an odd trial comes), which is why
    // `mean_interval` gives no interval on fewer than three distinct values
    // (the test below covers it through `mean_interval`).
    for s in shapes()
        .into_iter()
        .filter(|s| s.name != "heavy skew" && s.name != "near-constant count")
    {
        // Incremental: the sequence of the same trials, pushed one by one.
        let asym = miss_rate(&s, k, CAP, &mut incremental(|| Asymptotic::new(ALPHA, 10)));
        report.push(format!("{}: asymptotic {asym:.3}", s.name));
        assert!(asym <= ALPHA + margin(k), "{}: {asym} ({report:?})", s.name);
    }
    // The negative control: the fixed-n bootstrap interval, looked at after
    // every trial (here up to the 30th, to keep the test short), misses
    // more often than alpha allows.
    let s = &shapes()[0];
    let boot = miss_rate(s, 150, 30, &mut |xs| mean_ci(xs));
    assert!(boot > ALPHA + margin(150), "bootstrap rechecked: {boot}");
    eprintln!("{report:?}; bootstrap rechecked on {}: {boot:.3}", s.name);
}

/// The verdicts' own design (`mean_interval`, looks at 10, 20 and 30 trials,
/// the full run's cap): the interval at the stopping time covers on every
/// shape but the heavy skew (a log-sd of 0.75: measured 0.090); on the
/// near-constant count it never misses (no interval until three distinct
/// values, then a wide one); the fixed-n bootstrap under the same three
/// looks misses about 0.17 (the negative control).
#[test]
fn the_verdicts_design_covers_on_the_harness_schedule_and_the_rechecked_bootstrap_does_not() {
    let k = 3000;
    let mut report = Vec::new();
    for s in shapes().into_iter().filter(|s| s.name != "heavy skew") {
        let cs = miss_rate_on_schedule(&s, k, 30, &|xs| mean_interval(xs, 1.0 - ALPHA));
        report.push(format!("{}: {cs:.3}", s.name));
        assert!(cs <= ALPHA + margin(k), "{}: {cs} ({report:?})", s.name);
    }
    let s = &shapes()[1];
    let boot = miss_rate_on_schedule(s, 300, 30, &|xs| mean_ci(xs));
    assert!(
        boot > ALPHA + margin(300),
        "bootstrap on the schedule: {boot}"
    );
    eprintln!(
        "{report:?}; bootstrap on the same looks, {}: {boot:.3}",
        s.name
    );
}

#[test]
fn the_bounded_sequence_covers_at_the_stopping_time() {
    let k = 1500;
    for s in shapes() {
        let (lo, hi) = s.bounds;
        let eb = miss_rate(
            &s,
            k,
            CAP,
            &mut incremental(|| EmpiricalBernstein::new(ALPHA, lo, hi)),
        );
        assert!(eb <= ALPHA + margin(k), "{}: {eb}", s.name);
    }
}

#[test]
fn the_sequences_are_wider_than_a_fixed_n_interval_but_usable_at_ten_trials() {
    let xs: Vec<f64> = (0..10).map(|i| 128.0 + (i % 5) as f64 - 2.0).collect();
    let (blo, bhi) = mean_ci(&xs);
    let (lo, hi) = Asymptotic::over(&xs, ALPHA, 10);
    assert!(lo < blo && hi > bhi, "{lo} {hi} vs {blo} {bhi}");
    // About a third wider than a t interval at the planned n, not more than twice.
    let sd = (xs.iter().map(|x| (x - 128.0).powi(2)).sum::<f64>() / 9.0).sqrt();
    assert!((hi - lo) / 2.0 < 1.2 * sd, "{} vs sd {sd}", (hi - lo) / 2.0);
    // The bounded one never widens once narrowed (running intersection).
    let mut cs = EmpiricalBernstein::new(ALPHA, 100.0, 228.0);
    let mut last = f64::INFINITY;
    for &x in &xs {
        cs.push(x);
        let (l, h) = cs.interval();
        assert!(h - l <= last);
        last = h - l;
    }
    // The bounded one holds its bounds.
    let (l, h) = EmpiricalBernstein::over(&xs, ALPHA, 100.0, 228.0);
    assert!(l >= 100.0 && h <= 228.0 && l < 128.0 && 128.0 < h);
}

/// Diagnostics: the half-widths of the three intervals at n = 5..200.
#[test]
#[ignore]
fn widths() {
    for s in shapes() {
        let mut r = rand::rngs::ChaCha8Rng::seed_from_u64(3);
        let xs: Vec<f64> = (0..200).map(|_| (s.draw)(&mut r)).collect();
        for n in [5, 10, 20, 50, 100, 200] {
            let (l, h) = EmpiricalBernstein::over(&xs[..n], ALPHA, s.bounds.0, s.bounds.1);
            let (al, ah) = Asymptotic::over(&xs[..n], ALPHA, 10);
            let (bl, bh) = mean_ci(&xs[..n]);
            eprintln!(
                "{} n={n}: sd {:.3} eb ±{:.3} asym ±{:.3} boot ±{:.3}",
                s.name,
                s.sd,
                (h - l) / 2.0,
                (ah - al) / 2.0,
                (bh - bl) / 2.0
            );
        }
    }
}

/// Diagnostics: the miss rates at the stopping time of every shape.
#[test]
#[ignore]
fn rates() {
    for s in shapes() {
        let a = miss_rate(&s, 1500, CAP, &mut |xs| Asymptotic::over(xs, ALPHA, 10));
        let a30 = miss_rate(&s, 1500, CAP, &mut |xs| Asymptotic::over(xs, ALPHA, 30));
        let e = miss_rate(&s, 1500, CAP, &mut |xs| {
            EmpiricalBernstein::over(xs, ALPHA, s.bounds.0, s.bounds.1)
        });
        eprintln!("{}: asym(10) {a:.3} asym(30) {a30:.3} eb {e:.3}", s.name);
    }
}

#[test]
fn the_betting_sequence_covers_and_is_too_wide_for_the_claims_at_ten_trials() {
    // Few sequences: it never misses (a grid of 1,000 means per push makes it
    // the slowest sequence here).
    let k = 200;
    for s in shapes() {
        let (lo, hi) = s.bounds;
        let b = miss_rate(
            &s,
            k,
            CAP,
            &mut incremental(|| Betting::new(ALPHA, lo, hi, 0.5)),
        );
        assert!(b <= ALPHA + margin(k), "{}: {b}", s.name);
    }
    // A sample of one value on the unit range: what docs/verdicts.md and
    // claims.toml's interval_basis quote (a fifth either side at 10 trials,
    // about a tenth at 30).
    let half = |n: usize, v: f64| {
        let (l, h) = Betting::over(&vec![v; n], ALPHA, 0.0, 1.0);
        (h - l) / 2.0
    };
    for v in [0.0, 0.3] {
        let (h10, h30) = (half(10, v), half(30, v));
        eprintln!("one value {v}: half-width {h10:.3} at 10 trials, {h30:.3} at 30");
        assert!((0.15..0.26).contains(&h10), "{h10}");
        assert!((0.07..0.12).contains(&h30), "{h30}");
    }
    // Tighter than the empirical-Bernstein one on the same sample.
    let xs: Vec<f64> = (0..20).map(|i| 0.3 + 0.01 * (i % 3) as f64).collect();
    let (bl, bh) = Betting::over(&xs, ALPHA, 0.0, 1.0);
    let (el, eh) = EmpiricalBernstein::over(&xs, ALPHA, 0.0, 1.0);
    assert!(bh - bl < eh - el, "{bl}..{bh} vs {el}..{eh}");
}
