//! The report's table of what each claim's interval rests on
//! (`interval_basis` in `analysis/claims.toml`).

use super::md_escape;
use crate::claims::Judged;

/// What each claim's interval is and what it needs to be valid
/// (`interval_basis` in claims.toml), beside the method it was computed by.
pub fn interval_bases(rows: &[Judged]) -> String {
    let mut out = String::from(
        "\n### What each interval rests on\n\nEvery interval a verdict reads is valid only under what it needs: the asymptotic confidence sequence assumes finite variance and its normal limit at the trials a cell runs; a count over every trial needs nothing but says nothing beyond those trials (docs/verdicts.md).\n\n| claim | interval | rests on |\n|---|---|---|\n",
    );
    for j in rows.iter().filter(|j| !j.spec.interval_basis.is_empty()) {
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            j.spec.id,
            md_escape(
                j.measured
                    .as_ref()
                    .map(|m| m.interval_method.as_str())
                    .unwrap_or("-")
            ),
            md_escape(&j.spec.interval_basis)
        ));
    }
    out
}
