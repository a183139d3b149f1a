//! Shards: one run split over N machines (a CI matrix, a Slurm array, a
//! Kubernetes Indexed Job). Shard `I/N` runs the cells whose position in
//! their experiment's cell list, offset by a hash of the experiment's name,
//! is `I` modulo `N`. Cells, seeds and keys are the unsharded run's: a
//! trial's seed mixes the run's seed with its cell id and trial number
//! (`run::seeds`), never with the shard, so the shards together hold exactly
//! the (cell, trial, seed) keys of one unsharded run. `limitbench merge`
//! joins their folders (`run::merge`).
//!
//! The offset spreads experiments with few cells over the shards (without
//! it shard 0 would get the first cell of every experiment).

use serde::{Deserialize, Serialize};

use crate::run::seeds::fnv;
use limitbench_base::error::{Error, Result};

/// Shard `index` of `count` (0-based, index < count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

/// Where each batch engine puts the index of the task it started.
/// Slurm's array ids may start anywhere (`--array=1-4`): the index is
/// counted from `SLURM_ARRAY_TASK_MIN`.
pub const INDEX_VARS: [&str; 2] = ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"];

/// The shard count when it is not on the command line: our own variable
/// (set it in a Job manifest to `completions`), then Slurm's.
pub const COUNT_VARS: [&str; 2] = ["LIMITBENCH_SHARD_COUNT", "SLURM_ARRAY_TASK_COUNT"];

impl Shard {
    /// `I/N`, e.g. `0/4`.
    pub fn parse(text: &str) -> Result<Shard> {
        let bad = |why: &str| {
            Error::Other(format!(
                "--shard `{text}`: {why} (expected INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4)"
            ))
        };
        let (i, n) = text.split_once('/').ok_or_else(|| bad("no `/`"))?;
        let index: u64 = i
            .trim()
            .parse()
            .map_err(|_| bad("the index is not a number"))?;
        let count: u64 = n
            .trim()
            .parse()
            .map_err(|_| bad("the count is not a number"))?;
        Shard::new(index, count).map_err(|e| bad(&e))
    }

    fn new(index: u64, count: u64) -> std::result::Result<Shard, String> {
        if count == 0 {
            return Err("the count is 0".into());
        }
        if index >= count {
            return Err(format!("the index {index} is not below the count {count}"));
        }
        Ok(Shard { index, count })
    }

    /// The shard of this process: `--shard I/N` if given; else the index from
    /// the batch engine's variable and the count from `--shard-count` or
    /// [`COUNT_VARS`]; else none (an unsharded run). `env` reads a variable
    /// (the process environment in the binary; a map in tests).
    pub fn resolve(
        flag: Option<&str>,
        count_flag: Option<u64>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Shard>> {
        if let Some(f) = flag {
            let s = Shard::parse(f)?;
            if let Some(c) = count_flag
                && c != s.count
            {
                return Err(Error::Other(format!(
                    "--shard {f} says {} shards but --shard-count says {c}",
                    s.count
                )));
            }
            return Ok(Some(s));
        }
        let Some((var, raw)) = INDEX_VARS
            .iter()
            .find_map(|v| env(v).filter(|x| !x.trim().is_empty()).map(|x| (*v, x)))
        else {
            if count_flag.is_some() {
                return Err(Error::Other(format!(
                    "--shard-count is given but no shard index: pass --shard INDEX/COUNT or run under a batch engine that sets {}",
                    INDEX_VARS.join(" or ")
                )));
            }
            return Ok(None);
        };
        let number = |name: &str, x: &str| {
            x.trim()
                .parse::<u64>()
                .map_err(|_| Error::Other(format!("{name}=`{x}` is not a shard number")))
        };
        let mut index = number(var, &raw)?;
        if var == "SLURM_ARRAY_TASK_ID"
            && let Some(min) = env("SLURM_ARRAY_TASK_MIN")
        {
            let min = number("SLURM_ARRAY_TASK_MIN", &min)?;
            index = index.checked_sub(min).ok_or_else(|| {
                Error::Other(format!(
                    "SLURM_ARRAY_TASK_ID={raw} is below SLURM_ARRAY_TASK_MIN={min}"
                ))
            })?;
        }
        let count = match count_flag {
            Some(c) => c,
            None => {
                let (cvar, c) = COUNT_VARS
                    .iter()
                    .find_map(|v| env(v).map(|x| (*v, x)))
                    .ok_or_else(|| {
                        Error::Other(format!(
                            "{var}={raw} gives the shard index but nothing gives the count: pass --shard-count N or set {}",
                            COUNT_VARS.join(" or ")
                        ))
                    })?;
                number(cvar, &c)?
            }
        };
        Shard::new(index, count)
            .map(Some)
            .map_err(|e| Error::Other(format!("shard from {var}={raw}: {e}")))
    }

    /// Does this shard run the cell at `position` of `experiment`'s cells?
    pub fn owns(&self, experiment: &str, position: usize) -> bool {
        let offset = fnv(experiment) % self.count;
        (offset + position as u64 % self.count) % self.count == self.index
    }

    /// `I/N`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn every_cell_belongs_to_exactly_one_shard() {
        for count in 1..6 {
            for exp in ["concurrency", "bursts", "cost"] {
                for pos in 0..40 {
                    let owners = (0..count)
                        .filter(|&i| Shard { index: i, count }.owns(exp, pos))
                        .count();
                    assert_eq!(owners, 1, "{exp} cell {pos} of {count} shards");
                }
            }
        }
        // Round robin within an experiment: 10 cells over 3 shards is 4/3/3.
        let sizes: Vec<usize> = (0..3)
            .map(|i| {
                (0..10)
                    .filter(|&p| Shard { index: i, count: 3 }.owns("x", p))
                    .count()
            })
            .collect();
        let mut sorted = sizes.clone();
        sorted.sort();
        assert_eq!(sorted, vec![3, 3, 4], "{sizes:?}");
    }

    #[test]
    fn the_shard_comes_from_the_flag_or_the_batch_engine() {
        let none = env(&[]);
        assert_eq!(Shard::resolve(None, None, &none).unwrap(), None);
        assert_eq!(
            Shard::resolve(Some("1/3"), None, &none).unwrap(),
            Some(Shard { index: 1, count: 3 })
        );
        let k8s = env(&[
            ("JOB_COMPLETION_INDEX", "2"),
            ("LIMITBENCH_SHARD_COUNT", "4"),
        ]);
        assert_eq!(
            Shard::resolve(None, None, &k8s).unwrap(),
            Some(Shard { index: 2, count: 4 })
        );
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "4"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
        ]);
        assert_eq!(
            Shard::resolve(None, None, &slurm).unwrap(),
            Some(Shard { index: 1, count: 3 })
        );
        // The flag's count wins over the environment's.
        let k8s_only_index = env(&[("JOB_COMPLETION_INDEX", "0")]);
        assert_eq!(
            Shard::resolve(None, Some(2), &k8s_only_index).unwrap(),
            Some(Shard { index: 0, count: 2 })
        );
    }

    #[test]
    fn a_bad_shard_is_an_error_naming_it() {
        let none = env(&[]);
        for (flag, says) in [
            ("3/3", "not below the count"),
            ("1/0", "the count is 0"),
            ("a/2", "index is not a number"),
            ("2", "no `/`"),
        ] {
            let e = Shard::resolve(Some(flag), None, &none)
                .unwrap_err()
                .to_string();
            assert!(e.contains(flag) && e.contains(says), "{flag}: {e}");
        }
        let e = Shard::resolve(Some("1/3"), Some(4), &none)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--shard-count says 4"), "{e}");
        let e = Shard::resolve(None, None, &env(&[("JOB_COMPLETION_INDEX", "1")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("JOB_COMPLETION_INDEX=1") && e.contains("count"),
            "{e}"
        );
        let e = Shard::resolve(None, Some(2), &env(&[("JOB_COMPLETION_INDEX", "x")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("JOB_COMPLETION_INDEX=`x`"), "{e}");
        let e = Shard::resolve(None, Some(2), &none)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no shard index"), "{e}");
    }
}
