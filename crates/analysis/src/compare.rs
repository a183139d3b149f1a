//! `limitbench compare <run> <reference>`: the claims of two runs side by
//! side, as a reviewer who reran the artifact wants them: both reproduced
//! values with their 95% intervals, whether the intervals overlap, and the
//! verdicts per claim and whether they agree. Reads the two `claims.csv`
//! files only (run `analyze` first); a claims.csv from before intervals
//! existed compares on values and verdicts alone.

use std::collections::BTreeMap;
use std::path::Path;

use limitbench_base::error::{Error, Result};

/// One claim in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub claim: String,
    pub run: Option<Side>,
    pub reference: Option<Side>,
}

/// One run's row for a claim.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Side {
    pub reproduced: String,
    /// `lo..hi` per value, `; `-separated (empty: no interval).
    pub interval: String,
    /// The verdict with its assumption, e.g. `reproduced-with-assumption (member_len=26)`.
    pub verdict: String,
}

fn parse_intervals(s: &str) -> Option<Vec<(f64, f64)>> {
    if s.trim().is_empty() {
        return None;
    }
    s.split(';')
        .map(|p| {
            let (a, b) = p.trim().split_once("..")?;
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
        })
        .collect()
}

impl Pair {
    /// Same verdict in both (a claim missing from one side disagrees).
    pub fn agrees(&self) -> bool {
        match (&self.run, &self.reference) {
            (Some(a), Some(b)) => a.verdict == b.verdict,
            _ => false,
        }
    }
    /// Both runs measured the claim (neither `not-run` nor absent): only
    /// then can their verdicts disagree (a quick run does not measure the
    /// claims about the full run).
    pub fn both_measured(&self) -> bool {
        let measured = |s: &Option<Side>| {
            s.as_ref()
                .is_some_and(|s| !s.verdict.starts_with("not-run"))
        };
        measured(&self.run) && measured(&self.reference)
    }
    /// Both measured it and judge it differently.
    pub fn differs(&self) -> bool {
        self.both_measured() && !self.agrees()
    }
    /// Whether the two runs' 95% intervals overlap for every value (None
    /// when either run has no interval for the claim).
    pub fn intervals_overlap(&self) -> Option<bool> {
        let a = parse_intervals(&self.run.as_ref()?.interval)?;
        let b = parse_intervals(&self.reference.as_ref()?.interval)?;
        if a.len() != b.len() {
            return None;
        }
        Some(
            a.iter()
                .zip(&b)
                .all(|(x, y)| x.0 <= y.1 + 1e-9 && y.0 <= x.1 + 1e-9),
        )
    }
}

/// claim -> its row from a `claims.csv`.
pub fn read_claims(run_dir: &Path) -> Result<BTreeMap<String, Side>> {
    let p = run_dir.join("claims.csv");
    let bytes = limitbench_base::files::read_maybe_compressed(&p).map_err(|e| {
        Error::Other(format!(
            "{e} (run `limitbench analyze {}` first)",
            run_dir.display()
        ))
    })?;
    let mut rdr = csv::Reader::from_reader(bytes.as_slice());
    let h = rdr
        .headers()
        .map_err(|e| Error::Other(format!("{}: {e}", p.display())))?
        .clone();
    let col = |name: &str| {
        h.iter()
            .position(|x| x == name)
            .ok_or_else(|| Error::Other(format!("{}: no `{name}` column", p.display())))
    };
    let (c, r, v) = (col("claim")?, col("reproduced")?, col("verdict")?);
    // Columns a claims.csv from before intervals and assumptions lacks.
    let (iv, asm) = (col("interval_95").ok(), col("assumption").ok());
    let mut out = BTreeMap::new();
    for (i, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| Error::Other(format!("{}: line {}: {e}", p.display(), i + 2)))?;
        let assumption = asm.map(|a| rec[a].to_string()).unwrap_or_default();
        // Old run folders name verdicts pass / pass-inferred / fail: read
        // them under today's names so the two runs compare.
        let name = crate::claims::Verdict::parse(&rec[v])
            .map(|x| x.as_str().to_string())
            .unwrap_or_else(|| rec[v].to_string());
        let verdict = if assumption.is_empty() {
            name
        } else {
            format!("{name} ({assumption})")
        };
        let side = Side {
            reproduced: rec[r].to_string(),
            interval: iv.map(|x| rec[x].to_string()).unwrap_or_default(),
            verdict,
        };
        out.insert(rec[c].to_string(), side);
    }
    Ok(out)
}

/// Every claim of either run, paired.
pub fn pair(run: &BTreeMap<String, Side>, reference: &BTreeMap<String, Side>) -> Vec<Pair> {
    let mut ids: Vec<&String> = run.keys().chain(reference.keys()).collect();
    ids.sort_by_key(|id| claim_order(id));
    ids.dedup();
    ids.into_iter()
        .map(|id| Pair {
            claim: id.clone(),
            run: run.get(id).cloned(),
            reference: reference.get(id).cloned(),
        })
        .collect()
}

/// A1.2 before A1.10, A before B.
fn claim_order(id: &str) -> (String, Vec<u32>) {
    let letter: String = id.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let nums = id[letter.len()..]
        .split('.')
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    (letter, nums)
}

/// The reviewer's two questions in a line each: how many verdicts agree
/// among the claims measured in both runs, and which claims' 95% intervals
/// do not overlap (of those with intervals in both).
pub fn summary(pairs: &[Pair]) -> String {
    let both: Vec<&Pair> = pairs.iter().filter(|p| p.both_measured()).collect();
    let agree = both.iter().filter(|p| p.agrees()).count();
    let differ: Vec<&str> = both
        .iter()
        .filter(|p| !p.agrees())
        .map(|p| p.claim.as_str())
        .collect();
    let with_iv: Vec<&Pair> = pairs
        .iter()
        .filter(|p| p.intervals_overlap().is_some())
        .collect();
    let apart: Vec<&str> = with_iv
        .iter()
        .filter(|p| p.intervals_overlap() == Some(false))
        .map(|p| p.claim.as_str())
        .collect();
    format!(
        "verdicts agree on {agree} of the {} claims measured in both runs{}; {} not measured in both\n\
         95% intervals do not overlap for {} of the {} claims with intervals in both{}\n",
        both.len(),
        if differ.is_empty() {
            String::new()
        } else {
            format!(" (differ: {})", differ.join(", "))
        },
        pairs.len() - both.len(),
        apart.len(),
        with_iv.len(),
        if apart.is_empty() {
            String::new()
        } else {
            format!(": {}", apart.join(", "))
        }
    )
}

/// The comparison as a markdown table.
pub fn table(pairs: &[Pair]) -> String {
    let cell = |x: &Option<Side>| match x {
        Some(s) if s.interval.is_empty() => (s.reproduced.clone(), s.verdict.clone()),
        Some(s) => (
            format!("{} [95%: {}]", s.reproduced, s.interval),
            s.verdict.clone(),
        ),
        None => ("(absent)".into(), "-".into()),
    };
    let rows: Vec<Vec<String>> = pairs
        .iter()
        .map(|p| {
            let (rv, rverdict) = cell(&p.run);
            let (fv, fverdict) = cell(&p.reference);
            vec![
                p.claim.clone(),
                rv,
                rverdict,
                fv,
                fverdict,
                match p.intervals_overlap() {
                    Some(true) => "yes".into(),
                    Some(false) => "no".into(),
                    None => "-".into(),
                },
                if p.agrees() {
                    "yes".into()
                } else if p.differs() {
                    "**no**".into()
                } else {
                    "not measured in both".into()
                },
            ]
        })
        .collect();
    super::table::md_table(
        &[
            "claim",
            "this run",
            "verdict",
            "reference",
            "verdict",
            "intervals overlap",
            "same verdict",
        ],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: &[(&str, &str, &str)]) -> BTreeMap<String, Side> {
        v.iter()
            .map(|(c, r, x)| {
                let side = Side {
                    reproduced: r.to_string(),
                    interval: format!("{r}..{r}"),
                    verdict: x.to_string(),
                };
                (c.to_string(), side)
            })
            .collect()
    }

    #[test]
    fn verdicts_are_compared_per_claim_in_claim_order() {
        let run = m(&[
            ("A1.10", "1", "pass"),
            ("A1.2", "2", "fail"),
            ("B1", "0", "pass"),
        ]);
        let reference = m(&[
            ("A1.2", "3", "pass"),
            ("B1", "0", "pass"),
            ("A1.10", "1", "pass"),
        ]);
        let p = pair(&run, &reference);
        let ids: Vec<&str> = p.iter().map(|x| x.claim.as_str()).collect();
        assert_eq!(ids, ["A1.2", "A1.10", "B1"]);
        assert!(!p[0].agrees());
        assert!(p[1].agrees() && p[2].agrees());
        let only = pair(&m(&[("A0", "1", "pass")]), &m(&[]));
        assert!(!only[0].agrees() && !only[0].differs());
        let quick = pair(&m(&[("A0", "1", "not-run")]), &m(&[("A0", "1", "pass")]));
        assert!(!quick[0].differs());
        assert!(p[0].differs());
        assert!(
            table(&p)
                .contains("| A1.2 | 2 [95%: 2..2] | fail | 3 [95%: 3..3] | pass | no | **no** |"),
            "{}",
            table(&p)
        );
        assert_eq!(p[2].intervals_overlap(), Some(true));
        let s = summary(&p);
        assert!(
            s.contains("verdicts agree on 2 of the 3 claims measured in both runs (differ: A1.2)"),
            "{s}"
        );
        assert!(
            s.contains("do not overlap for 1 of the 3 claims with intervals in both: A1.2"),
            "{s}"
        );
    }

    #[test]
    fn old_verdict_names_read_as_the_new_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("claims.csv"),
            "claim,reproduced,interval_95,verdict,assumption\nA1,1,1..1,pass,\nA2,2,2..2,pass-inferred,x=1\nA3,3,3..3,fail,\n",
        )
        .unwrap();
        let c = read_claims(dir.path()).unwrap();
        assert_eq!(c["A1"].verdict, "reproduced");
        assert_eq!(c["A2"].verdict, "reproduced-with-assumption (x=1)");
        assert_eq!(c["A3"].verdict, "not-reproduced");
    }
}
