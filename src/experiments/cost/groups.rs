//! The rounds split into `groups` cells (`rounds-1` .. `rounds-G`), so that
//! a sharded run spreads the cost experiment over its machines while every
//! ratio stays within one machine.
//!
//! Each group is a cell of its own on its own pinned server: its trial is
//! one run of GET (its own baseline, with redis-benchmark beside it) and
//! one run of each of its variants, interleaved as the one `rounds` cell
//! did. A shard runs whole cells, so a group's GET and variants are always
//! measured by one shard on one machine (`limitbench merge` checks it from
//! the rows' `group` column).
//!
//! Which variants share a group: those a claim divides by each other
//! besides GET. The token bucket's EVALSHA, EVAL, FCALL and abusive runs
//! (B6.1, B2.6), GCRA's EVALSHA and abusive (B2.6), the MULTI fixed window
//! and the Lua one (B2.4), the prefilled sliding logs' limits (B2.5): a
//! variant's *family* is its strategy (the MULTI fixed window's is the Lua
//! fixed window's), and a family is never split. The families are placed
//! largest first, each into the group with the fewest runs so far (ties:
//! the lower group), which balances the groups by run time (every run is
//! `warmup_s + run_s`). The Lua strategies' spread (B2.1, B2.2) compares
//! strategies of different groups: it is taken on each one's ratio to its
//! own group's GET (`analyze/lua.rs`).
//!
//! The number of groups is a parameter, never the shard count, so cell ids
//! and keys are the same at every shard count. With one group the cell is
//! `rounds` and the GET `get`, as before the split; with more, group `k`'s
//! cell is `rounds-k` and its GET `get|rounds-k`: a key (cell, trial) must
//! be unique in the experiment's table, and the GET is the one variant
//! every group has.

use super::{Plan, RequestSource, Rounds};
use limitbench_base::error::{Error, Result};

/// The cell of group `k` (from 1) of `groups`.
fn cell_of(k: usize, groups: usize) -> String {
    if groups == 1 {
        "rounds".into()
    } else {
        format!("rounds-{k}")
    }
}

pub(super) fn is_get(p: &Plan) -> bool {
    matches!(&p.request, RequestSource::Command { name: "get", .. })
}

/// The family a variant is compared within (besides its GET).
fn family(p: &Plan) -> String {
    match &p.request {
        RequestSource::Command { name, .. } => name.to_string(),
        RequestSource::Strategy { name, .. } if name == "fixed-window-multi" => {
            "fixed-window-lua".into()
        }
        RequestSource::Strategy { name, .. } => name.clone(),
    }
}

/// `main`'s variants in `groups` cells, each with its own GET first and
/// its variants in their planned order; a group left without a variant
/// (fewer families than groups) is no cell.
pub(super) fn split(main: Vec<Plan>, groups: usize) -> Result<Vec<Rounds>> {
    if groups == 0 {
        return Err(Error::Other("cost: `groups` must be at least 1".into()));
    }
    let get = main.iter().find(|p| is_get(p)).cloned();
    let rest: Vec<Plan> = main.into_iter().filter(|p| !is_get(p)).collect();
    if groups > 1 && get.is_none() {
        return Err(Error::Other(
            "cost: `groups` > 1 needs `get` in `scale_commands` (every group's ratios are to its own GET)".into(),
        ));
    }
    // Families in the order they first appear, with their runs per trial.
    let mut families: Vec<(String, usize)> = Vec::new();
    for p in &rest {
        let f = family(p);
        match families.iter_mut().find(|(g, _)| *g == f) {
            Some(x) => x.1 += 1,
            None => families.push((f, 1)),
        }
    }
    let mut order: Vec<usize> = (0..families.len()).collect();
    // Largest first; a stable sort keeps the planned order among equals.
    order.sort_by_key(|&i| std::cmp::Reverse(families[i].1));
    let mut load = vec![0usize; groups];
    let mut group_of = std::collections::HashMap::new();
    for i in order {
        let g = (0..groups).min_by_key(|&g| (load[g], g)).unwrap_or(0);
        load[g] += families[i].1;
        group_of.insert(families[i].0.clone(), g);
    }
    let mut cells = Vec::new();
    for g in 0..groups {
        let id = cell_of(g + 1, groups);
        let mine: Vec<Plan> = rest
            .iter()
            .filter(|p| group_of.get(&family(p)) == Some(&g))
            .cloned()
            .map(|p| Plan {
                group: id.clone(),
                ..p
            })
            .collect();
        if mine.is_empty() && groups > 1 {
            continue;
        }
        let mut variants = Vec::new();
        if let Some(get) = &get {
            let cell = if groups == 1 {
                get.cell.clone()
            } else {
                format!("{}|{id}", get.cell)
            };
            variants.push(Plan {
                cell,
                group: id.clone(),
                ..get.clone()
            });
        }
        variants.extend(mine);
        if !variants.is_empty() {
            cells.push(Rounds { id, variants });
        }
    }
    Ok(cells)
}

/// A run folder whose `cost.csv` was written before the groups (no
/// `group` column: one `rounds` cell, one `get`) cannot be resumed by this
/// code: its cells are not these, so every round would run again beside
/// the old rows, under another header. An error saying so.
pub(super) fn refuse_ungrouped(run: &std::path::Path) -> Result<()> {
    let Some(p) = limitbench_base::files::find_table(run, "cost.csv") else {
        return Ok(());
    };
    let bytes = limitbench_base::files::read_maybe_compressed(&p)?;
    let header = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let header = String::from_utf8_lossy(header);
    if header.trim().is_empty() || header.trim().split(',').any(|c| c == "group") {
        return Ok(());
    }
    Err(Error::Other(format!(
        "cost: {} was measured before the cost rounds were split into groups (one `rounds` cell, no `group` column); resume it with the commit that made it, or start a new run",
        p.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::cost::logs::BeforeRun;

    fn plan(cell: &str, request: RequestSource) -> Plan {
        Plan {
            cell: cell.into(),
            group: String::new(),
            traffic: "uniform",
            keys: 10,
            single_key: None,
            limit: 1,
            window_ms: 1,
            prefill_entries: 0,
            before_run: BeforeRun::Nothing,
            request,
        }
    }

    fn strategy(cell: &str) -> Plan {
        let name = cell.split('|').next().unwrap().to_string();
        plan(
            cell,
            RequestSource::Strategy {
                name,
                invocation: "evalsha".into(),
            },
        )
    }

    fn command(name: &'static str) -> Plan {
        plan(name, RequestSource::Command { name, args: ["X", "k"] })
    }

    /// The full size's variants, in their planned order.
    fn full() -> Vec<Plan> {
        let mut v = vec![command("get"), command("incr")];
        for c in [
            "fixed-window-multi",
            "fixed-window-lua|evalsha",
            "token-bucket|evalsha",
            "sliding-window-counter|evalsha",
            "gcra|evalsha",
            "token-bucket|eval",
            "token-bucket|fcall",
            "sliding-window-log|L100|full",
            "sliding-window-log|L10000|full",
            "gcra|abusive",
            "token-bucket|abusive",
        ] {
            v.push(strategy(c));
        }
        v
    }

    #[test]
    fn groups_keep_families_together_each_with_its_own_get() {
        let cells = split(full(), 3).unwrap();
        let ids: Vec<&str> = cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["rounds-1", "rounds-2", "rounds-3"]);
        let mut seen = std::collections::BTreeSet::new();
        for c in &cells {
            // GET first, with an id of its group's; every plan names the group.
            assert_eq!(c.variants[0].cell, format!("get|{}", c.id));
            assert!(c.variants.iter().all(|p| p.group == c.id));
            // Balanced by runs: 12 variants in 3 groups of 4 (+ GET).
            assert_eq!(c.variants.len(), 5, "{}", c.id);
            for p in &c.variants {
                assert!(seen.insert(p.cell.clone()), "{} twice", p.cell);
            }
        }
        assert_eq!(seen.len(), 12 + 3);
        let group = |cell: &str| {
            cells
                .iter()
                .find(|c| c.variants.iter().any(|p| p.cell == cell))
                .map(|c| c.id.clone())
                .unwrap()
        };
        // What claims divide by each other shares a group.
        for (a, b) in [
            ("token-bucket|evalsha", "token-bucket|eval"),
            ("token-bucket|evalsha", "token-bucket|fcall"),
            ("token-bucket|evalsha", "token-bucket|abusive"),
            ("gcra|evalsha", "gcra|abusive"),
            ("fixed-window-multi", "fixed-window-lua|evalsha"),
            ("sliding-window-log|L100|full", "sliding-window-log|L10000|full"),
        ] {
            assert_eq!(group(a), group(b), "{a} and {b}");
        }
        // The planned order within a group.
        let g1: Vec<&str> = cells[0].variants.iter().map(|p| p.cell.as_str()).collect();
        assert_eq!(
            g1,
            [
                "get|rounds-1",
                "token-bucket|evalsha",
                "token-bucket|eval",
                "token-bucket|fcall",
                "token-bucket|abusive"
            ]
        );
    }

    #[test]
    fn one_group_is_the_old_rounds_cell_and_no_group_is_left_empty() {
        let cells = split(full(), 1).unwrap();
        assert_eq!(cells.len(), 1);
        assert_eq!(cells[0].id, "rounds");
        assert_eq!(cells[0].variants[0].cell, "get");
        assert_eq!(cells[0].variants.len(), 13);
        // More groups than families: the empty ones are no cells.
        let probe = vec![command("get"), strategy("gcra|evalsha")];
        let cells = split(probe, 3).unwrap();
        assert_eq!(cells.len(), 1);
        assert_eq!(cells[0].variants[0].cell, "get|rounds-1");
        assert!(split(vec![strategy("gcra|evalsha")], 2).is_err(), "no GET");
        assert!(split(full(), 0).is_err());
    }

    #[test]
    fn a_run_folder_from_before_the_groups_is_not_resumed() {
        let dir = tempfile::tempdir().unwrap();
        refuse_ungrouped(dir.path()).unwrap();
        let csv = dir.path().join("cost.csv");
        std::fs::write(&csv, "cell,trial,variant,group,strategy\n").unwrap();
        refuse_ungrouped(dir.path()).unwrap();
        std::fs::write(&csv, "cell,trial,variant,strategy\nget,0,get,get\n").unwrap();
        let e = refuse_ungrouped(dir.path()).unwrap_err().to_string();
        assert!(e.contains("before the cost rounds were split"), "{e}");
    }
}
