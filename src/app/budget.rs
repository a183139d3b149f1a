//! What the rounds of `--until-decisive` (`app::adaptive`) may spend, per
//! size: the most trials a cell gets, the time the rounds may take, and
//! the look schedule they follow. The one place these numbers live.
//!
//! A full run is held to 30 minutes as a whole (issue 32): its first
//! session runs every cell at the fewest trials that draw it (the `[full]`
//! counts of `experiments/*.toml`), and the rounds get what that session
//! left, each round less what judging and starting it takes. The rounds
//! raise only the cells a still-inconclusive claim rests on, cheapest claim
//! first; a claim whose next look does not fit stays `inconclusive`, its
//! note saying the budget stopped it. Stopping on a budget is valid for the
//! verdicts' confidence sequences (they hold at any stopping time).

use crate::experiments::Size;

/// The most trials a cell gets from the rounds, per size, and why.
pub fn trial_cap(size: Size) -> (u64, &'static str) {
    match size {
        // A smoke run checks that everything runs; extra trials would only
        // make it slow, and its tiny cells decide nothing anyway.
        Size::Smoke => (
            0,
            "smoke: no extra trials (a smoke run checks that everything runs)",
        ),
        // 10 is the least that decides (claims::MIN_TRIALS): a quick run can
        // reach a verdict, but no more.
        Size::Quick => (
            10,
            "quick: up to 10 trials per cell, the least that decides (MIN_TRIALS)",
        ),
        // 30: the looks at 10, 20 and 30; the interval's half-width shrinks
        // as 1/sqrt(n), so 30 trials narrow a 10-trial interval by about
        // 1.7x. Claims whose power calculation asks for more (A1.2 40, A3.3
        // about 140, B5.3 140/90/25 per rate) need `--max-trials` and
        // `--round-budget 0`, which a 30-minute run cannot hold.
        Size::Full => (
            30,
            "full: up to 30 trials per cell, the looks at 10, 20 and 30 (more needs --max-trials and --round-budget 0)",
        ),
    }
}

/// A full run's whole time, seconds: the first session and its rounds
/// (issue 32: 30 minutes on the project's 2-core machine).
pub const FULL_RUN_S: u64 = 1800;

/// What a round costs beyond its cells' trials and set-up, seconds:
/// judging the run before and after it (the analysis) and starting the
/// round's sessions. Measured on the idle full run of stop 47
/// (`full-idle-1`): its one round spent 179 s where 142 s were left and
/// its funded trials were estimated at most 97 s, so at least 82 s went to
/// judging and starting (45 s was the first guess; that run took 30.65
/// minutes). The idle quick run of stop 46 spent 33 s so.
pub const ROUND_OVERHEAD_S: f64 = 90.0;

/// The rounds' budget per size, seconds (None: only the cap), and why;
/// `first_session_s`: what the run's first session took (a full run's
/// budget is the run's, so the rounds get what that session left).
pub fn round_budget(size: Size, first_session_s: f64) -> (Option<u64>, String) {
    match size {
        Size::Smoke => (None, "smoke: no rounds".to_string()),
        // `./run_all.sh --quick` in at most 12 minutes with its scorecard
        // (docs/running.md): 150 s, then 60, 30 since stop 46, whose idle
        // run spent 89 s in its round on 60 (56 s in the sessions, as
        // estimated; 33 s judging and starting them, not estimated).
        Size::Quick => (
            Some(30),
            "quick: 30 s of trial time in rounds (the run with its scorecard in 12 minutes: 11.4 measured idle at 30 s, 13.1 at 60 s, whose round took 89 s; docs/running.md)".to_string(),
        ),
        Size::Full => {
            let left = (FULL_RUN_S as f64 - first_session_s).max(0.0);
            (
                Some(left.floor() as u64),
                format!(
                    "full: the whole run in {FULL_RUN_S} s (30 minutes): the rounds get what the first session ({first_session_s:.0} s) left, each round less {ROUND_OVERHEAD_S:.0} s for judging and starting it"
                ),
            )
        }
    }
}

/// What each round is charged beyond its estimate, per size: only a run
/// held to a whole-run budget counts it (quick's 30 s were set with it
/// outside, as measured).
pub fn round_overhead_s(size: Size) -> f64 {
    match size {
        Size::Full => ROUND_OVERHEAD_S,
        Size::Smoke | Size::Quick => 0.0,
    }
}

/// The next floor of an experiment whose cells hold at least `have` trials
/// (or were floored at `have`): the next look of the verdicts' design
/// (`confseq::next_look`: double, at least `MIN_TRIALS`, never past `cap`).
pub fn next_floor(have: u64, cap: u64) -> u64 {
    limitbench_analysis::confseq::next_look(have, cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_runs_rounds_get_what_its_first_session_left() {
        assert!(round_budget(Size::Quick, 0.0).0.is_some_and(|b| b > 0));
        assert_eq!(round_budget(Size::Full, 600.0).0, Some(1200));
        assert_eq!(round_budget(Size::Full, 2500.0).0, Some(0));
        assert!(round_budget(Size::Full, 600.0).1.contains("600 s"));
        assert_eq!(round_budget(Size::Smoke, 0.0).0, None);
        assert!(round_overhead_s(Size::Full) > 0.0);
        assert_eq!(round_overhead_s(Size::Quick), 0.0);
    }

    #[test]
    fn the_floor_doubles_from_ten_and_stops_at_the_cap() {
        assert_eq!(next_floor(0, 30), 10);
        assert_eq!(next_floor(3, 30), 10);
        assert_eq!(next_floor(10, 30), 20);
        assert_eq!(next_floor(20, 30), 30);
        assert_eq!(next_floor(1, 2), 2);
    }

    #[test]
    fn smoke_adds_nothing_and_quick_reaches_the_least_that_decides() {
        assert_eq!(trial_cap(Size::Smoke).0, 0);
        assert_eq!(
            trial_cap(Size::Quick).0,
            limitbench_analysis::claims::MIN_TRIALS as u64
        );
        assert!(trial_cap(Size::Full).0 > trial_cap(Size::Quick).0);
    }
}
