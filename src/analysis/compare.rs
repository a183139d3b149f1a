//! `limitbench compare <run> <reference>`: the claims of two runs side by
//! side, as a reviewer who reran the artifact wants them: both reproduced
//! values and verdicts per claim, and whether the verdicts agree. Reads the
//! two `claims.csv` files only (run `analyze` first).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};

/// One claim in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub claim: String,
    pub run: Option<(String, String)>,
    pub reference: Option<(String, String)>,
}

impl Pair {
    /// Same verdict in both (a claim missing from one side disagrees).
    pub fn agrees(&self) -> bool {
        match (&self.run, &self.reference) {
            (Some(a), Some(b)) => a.1 == b.1,
            _ => false,
        }
    }
}

/// claim -> (reproduced, verdict) from a `claims.csv`.
pub fn read_claims(run_dir: &Path) -> Result<BTreeMap<String, (String, String)>> {
    let p = run_dir.join("claims.csv");
    let bytes = crate::files::read_maybe_gz(&p).map_err(|e| {
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
    let mut out = BTreeMap::new();
    for (i, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| Error::Other(format!("{}: line {}: {e}", p.display(), i + 2)))?;
        out.insert(rec[c].to_string(), (rec[r].to_string(), rec[v].to_string()));
    }
    Ok(out)
}

/// Every claim of either run, paired.
pub fn pair(
    run: &BTreeMap<String, (String, String)>,
    reference: &BTreeMap<String, (String, String)>,
) -> Vec<Pair> {
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

/// The comparison as a markdown table.
pub fn table(pairs: &[Pair]) -> String {
    let cell = |x: &Option<(String, String)>| match x {
        Some((v, verdict)) => (v.clone(), verdict.clone()),
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
                if p.agrees() {
                    "yes".into()
                } else {
                    "**no**".into()
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
            "same verdict",
        ],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: &[(&str, &str, &str)]) -> BTreeMap<String, (String, String)> {
        v.iter()
            .map(|(c, r, x)| (c.to_string(), (r.to_string(), x.to_string())))
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
        assert!(!only[0].agrees());
        assert!(table(&p).contains("| A1.2 | 2 | fail | 3 | pass | **no** |"));
    }
}
