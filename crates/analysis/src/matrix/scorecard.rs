//! The servers' scorecards side by side (`matrix-scorecard.md`), from each
//! server's `scorecard.csv`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

/// The columns of a row of `scorecard.csv` the matrix shows (the value as
/// written, not parsed: the table repeats it).
#[derive(Debug, Deserialize)]
struct ScorecardCell {
    strategy: String,
    property: String,
    value: String,
    unit: String,
    verdict: String,
}

/// Every server's scorecard cells: (strategy, property) -> server ->
/// (verdict, value as written, unit).
pub type CardCells = BTreeMap<(String, String), BTreeMap<String, (String, String, String)>>;

/// The servers' scorecards as read from each `<server>/scorecard.csv`.
#[derive(Debug, Clone, Default)]
pub struct Cards {
    /// The servers that have a scorecard, in column order.
    pub servers: Vec<String>,
    /// The strategies in the order of the first scorecard that has them.
    pub strategies: Vec<String>,
    /// The properties in the same order.
    pub properties: Vec<String>,
    pub cells: CardCells,
}

impl Cards {
    /// Does the (strategy, property) cell's verdict differ between servers?
    pub fn differs(&self, key: &(String, String)) -> bool {
        self.cells.get(key).is_some_and(|per| {
            let mut v = per.values().map(|x| &x.0);
            let first = v.next();
            v.any(|x| Some(x) != first)
        })
    }
}

/// The scorecards of `servers` in `run_dir`; None when none has one (a
/// scorecard.csv that does not parse is left out, as a missing one).
pub fn read_cards(run_dir: &Path, servers: &[String]) -> Option<Cards> {
    let mut cards = Cards::default();
    for s in servers {
        let Ok(Some((_, rows, _))) =
            crate::read_table::<ScorecardCell>(&run_dir.join(s), "scorecard.csv")
        else {
            continue;
        };
        cards.servers.push(s.clone());
        for c in rows {
            if !cards.strategies.contains(&c.strategy) {
                cards.strategies.push(c.strategy.clone());
            }
            if !cards.properties.contains(&c.property) {
                cards.properties.push(c.property.clone());
            }
            cards
                .cells
                .entry((c.strategy, c.property))
                .or_default()
                .insert(s.clone(), (c.verdict, c.value, c.unit));
        }
    }
    (!cards.servers.is_empty()).then_some(cards)
}

/// The scorecards of the servers side by side (`matrix-scorecard.md`): per
/// strategy and server the verdict counts, then every cell whose verdict
/// differs between servers with each server's value. None without scorecards.
pub fn scorecard_table(run_dir: &Path, servers: &[String]) -> Option<String> {
    let Cards {
        servers: with_card,
        strategies: order,
        cells,
        ..
    } = read_cards(run_dir, servers)?;
    let mut md = format!(
        "| strategy | {} |\n|---|{}\n",
        with_card.join(" | "),
        "---|".repeat(with_card.len())
    );
    for strategy in &order {
        let counts: Vec<String> = with_card
            .iter()
            .map(|s| {
                let mut n: BTreeMap<&str, usize> = BTreeMap::new();
                for ((st, _), per) in &cells {
                    if st == strategy
                        && let Some((v, _, _)) = per.get(s)
                    {
                        *n.entry(v.as_str()).or_default() += 1;
                    }
                }
                n.iter()
                    .map(|(v, c)| format!("{v} {c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .collect();
        let _ = writeln!(md, "| {strategy} | {} |", counts.join(" | "));
    }
    let differing: Vec<_> = cells
        .iter()
        .filter(|(_, per)| {
            let mut v = per.values().map(|x| &x.0);
            let first = v.next();
            v.any(|x| Some(x) != first)
        })
        .collect();
    let _ = writeln!(
        md,
        "\n{} of {} (strategy, property) cells have a verdict that differs between servers{}\n",
        differing.len(),
        cells.len(),
        if differing.is_empty() { "." } else { ":" }
    );
    if !differing.is_empty() {
        let _ = writeln!(
            md,
            "| strategy | property | {} |\n|---|---|{}",
            with_card.join(" | "),
            "---|".repeat(with_card.len())
        );
        for ((st, prop), per) in differing {
            let row: Vec<String> = with_card
                .iter()
                .map(|s| {
                    per.get(s)
                        .map(|(v, x, u)| {
                            // The scorecard's raw value, as a reader writes it.
                            let x = x
                                .parse::<f64>()
                                .map(crate::claims::short)
                                .unwrap_or_else(|_| x.clone());
                            format!("{v} ({x} {u})")
                                .replace("  ", " ")
                                .replace(" )", ")")
                        })
                        .unwrap_or_else(|| "-".into())
                })
                .collect();
            let _ = writeln!(md, "| {st} | {prop} | {} |", row.join(" | "));
        }
    }
    Some(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scorecards_side_by_side_list_the_cells_that_differ() {
        let dir = tempfile::tempdir().unwrap();
        let head = "strategy,property,value,unit,threshold,verdict,detail\n";
        for (server, memory) in [("redis-7.0", "pass"), ("valkey-9.1", "warn")] {
            std::fs::create_dir_all(dir.path().join(server)).unwrap();
            std::fs::write(
                dir.path().join(server).join("scorecard.csv"),
                format!("{head}gcra,works,1,,x,pass,d\ngcra,memory,80,B/key,x,{memory},d\n"),
            )
            .unwrap();
        }
        let md = scorecard_table(dir.path(), &["redis-7.0".into(), "valkey-9.1".into()]).unwrap();
        assert!(md.contains("| gcra | pass 2 | pass 1, warn 1 |"), "{md}");
        assert!(md.contains("1 of 2 (strategy, property) cells"), "{md}");
        assert!(
            md.contains("| gcra | memory | pass (80 B/key) | warn (80 B/key) |"),
            "{md}"
        );
        assert!(scorecard_table(dir.path(), &["valkey-8.1".into()]).is_none());
    }
}
