//! Seeds: every random draw of a trial comes from the run's seed mixed with
//! the cell's id and the trial number, so a resumed or repeated trial draws
//! exactly what it drew the first time. One mixer for the whole harness.

use rand::SeedableRng;

/// The run's seed when none is given (`limitbench run --seed`, and the
/// scorecard's probes, which take none).
pub const DEFAULT_SEED: u64 = 20261129;

/// A 64-bit FNV-1a hash: stable across runs and platforms (unlike `DefaultHasher`).
pub fn fnv(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The seed of one trial: the run's seed mixed with the cell and trial.
/// Rows carry it, so a trial's draws can be regenerated from its row.
pub fn trial_seed(run_seed: u64, cell: &str, trial: u64) -> u64 {
    fnv(&format!("{run_seed}/{cell}/{trial}"))
}

/// The generator every seeded draw uses (schedules, clock offsets, keys).
/// ChaCha8 (rand's `chacha` feature), whose output for a seed is fixed
/// across versions and platforms (rand's `StdRng` is documented as not portable),
/// so the seed in a CSV row regenerates the same schedule anywhere.
pub type TrialRng = rand::rngs::ChaCha8Rng;

/// A generator seeded with `seed` (a value from [`trial_seed`]).
pub fn rng(seed: u64) -> TrialRng {
    TrialRng::seed_from_u64(seed)
}

/// The generator of one (cell, trial).
pub fn trial_rng(run_seed: u64, cell: &str, trial: u64) -> TrialRng {
    rng(trial_seed(run_seed, cell, trial))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_pinned() {
        // FNV-1a of the empty string and of "a" are published constants.
        assert_eq!(fnv(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv("a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(trial_seed(1, "c", 0), trial_seed(1, "c", 1));
        assert_ne!(trial_seed(1, "c", 0), trial_seed(2, "c", 0));
    }

    // The first value is also what rand_chacha 0.3 gave for seed 42 (as
    // documented by other crates): the stream survived a major version.
    const PINNED: [u64; 3] = [
        12578764544318200737,
        17529487244874322312,
        7886285670807131020,
    ];
    const PINNED_SEED: u64 = 11425560092166828876;

    #[test]
    fn the_generator_is_pinned() {
        use rand::Rng;
        // If these change, every seeded schedule changes: a new generator or
        // a new rand_chacha output. Runs with old seeds would not reproduce.
        let mut r = rng(42);
        let v: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        assert_eq!(v, PINNED, "the seeded generator's output changed");
        assert_eq!(
            trial_seed(20261129, "token-bucket/c64/rtt0", 3),
            PINNED_SEED
        );
    }
}
