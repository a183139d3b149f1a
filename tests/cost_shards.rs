//! The cost experiment shards (issue 32): its variants are split into
//! groups (`rounds-1` .. `rounds-G`), each a cell with its own GET. A smoke
//! cost run in two shards puts groups in both, merges to the unsharded
//! run's keys, and its analysis divides every variant by the GET of its own
//! group in the same run; `merge` refuses a group whose rows come from two
//! shards.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::{column, copy_dir, keys, limitbench, small_experiments};
use limitbench::experiments::cost::CostRow;
use limitbench::experiments::cost::analyze::{Variants, b21_split, cpu_vs_get};

fn run(exp: &Path, data: &Path, id: &str, extra: &[&str]) {
    let mut args = vec![
        "run",
        "cost",
        "--size",
        "smoke",
        "--run-id",
        id,
        "--experiments-dir",
        exp.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    limitbench(&args, None).expect_code(0);
}

fn rows(run: &Path) -> Vec<CostRow> {
    let mut rdr = csv::Reader::from_path(run.join("cost.csv")).unwrap();
    rdr.deserialize().map(|r| r.unwrap()).collect()
}

/// Move the rows of `group` from `from`'s cost.csv to the end of `to`'s.
fn move_group(from: &Path, to: &Path, group: &str) {
    let text = std::fs::read_to_string(from.join("cost.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let gi = header.split(',').position(|c| c == "group").unwrap();
    let (moved, kept): (Vec<&str>, Vec<&str>) =
        lines.partition(|l| l.split(',').nth(gi) == Some(group));
    assert!(!moved.is_empty(), "{group} in {}", from.display());
    std::fs::write(
        from.join("cost.csv"),
        format!("{header}\n{}\n", kept.join("\n")),
    )
    .unwrap();
    let mut target = std::fs::read_to_string(to.join("cost.csv")).unwrap();
    for l in moved {
        target.push_str(l);
        target.push('\n');
    }
    std::fs::write(to.join("cost.csv"), target).unwrap();
}

#[test]
fn cost_groups_shard_merge_and_pair_within_their_group() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = small_experiments(tmp.path());
    let data = tmp.path().join("data");
    // One after the other: each pins Redis and the load to the same CPUs.
    run(&exp, &data, "s0", &["--shard", "0/2"]);
    run(&exp, &data, "s1", &["--shard", "1/2"]);
    run(&exp, &data, "whole", &[]);
    let (s0, s1, whole) = (data.join("s0"), data.join("s1"), data.join("whole"));

    // Groups in both shards, none in two.
    let (g0, g1) = (column(&s0, "cost", "group"), column(&s1, "cost", "group"));
    assert!(!g0.is_empty() && !g1.is_empty(), "{g0:?} / {g1:?}");
    assert!(g0.is_disjoint(&g1), "{g0:?} / {g1:?}");
    let all: BTreeSet<String> = g0.union(&g1).cloned().collect();
    assert_eq!(all, column(&whole, "cost", "group"));
    assert!(
        all.contains("rounds-1") && all.contains("swl-fill"),
        "{all:?}"
    );

    let merged = tmp.path().join("merged");
    let m = [
        "merge",
        merged.to_str().unwrap(),
        s0.to_str().unwrap(),
        s1.to_str().unwrap(),
    ];
    limitbench(&m, None).expect_code(0);
    assert_eq!(keys(&merged, "cost"), keys(&whole, "cost"), "merged keys");
    limitbench(&["analyze", merged.to_str().unwrap()], None).expect_code(0);

    // Every rounds group has its own GET; each Lua variant's ratio is to
    // the GET of its group in the same run, never another group's.
    let rs = rows(&merged);
    let get_of: BTreeMap<(String, u64), f64> = rs
        .iter()
        .filter(|r| r.strategy == "get")
        .map(|r| ((r.group.clone(), r.trial), r.redis_cpu_us_per_decision))
        .collect();
    let rounds: Vec<&String> = all.iter().filter(|g| g.starts_with("rounds-")).collect();
    for g in &rounds {
        assert!(
            get_of.contains_key(&((*g).clone(), 0)),
            "{g} has its own GET: {get_of:?}"
        );
    }
    let v = Variants::of(&rs);
    let (_, splits) = b21_split(&v).expect("B2.1's split");
    let (_, means) = cpu_vs_get(&v).unwrap();
    assert!(splits.len() >= 2);
    let mut groups_used = BTreeSet::new();
    for s in &splits {
        let x = rs
            .iter()
            .find(|r| r.cell == s.cell && r.trial == 0)
            .unwrap();
        let own = get_of[&(x.group.clone(), 0)];
        assert_eq!(s.total.0, x.redis_cpu_us_per_decision / own, "{}", s.cell);
        let mean = means.iter().find(|(c, _)| *c == s.cell).unwrap().1;
        assert_eq!(mean, x.redis_cpu_us_per_decision / own, "{}", s.cell);
        groups_used.insert(x.group.clone());
    }
    assert!(
        groups_used.len() > 1,
        "the Lua strategies ran in several groups: {groups_used:?}"
    );
    let claims = std::fs::read_to_string(merged.join("claims.csv")).unwrap();
    let b21 = claims.lines().find(|l| l.starts_with("B2.1,")).unwrap();
    assert!(b21.contains("spread dearest/cheapest"), "{b21}");
    assert!(!b21.contains("NaN"), "{b21}");

    // A group's rows from two shards are refused, naming the group.
    let (t0, t1) = (tmp.path().join("t0"), tmp.path().join("t1"));
    copy_dir(&s0, &t0);
    copy_dir(&s1, &t1);
    let moved = g0.iter().next().unwrap().clone();
    // Half of the group's rows: move them all, then give one back.
    move_group(&t0, &t1, &moved);
    let text = std::fs::read_to_string(t1.join("cost.csv")).unwrap();
    let back = text.lines().last().unwrap().to_string();
    std::fs::write(t1.join("cost.csv"), text.replace(&format!("{back}\n"), "")).unwrap();
    let mut t0_text = std::fs::read_to_string(t0.join("cost.csv")).unwrap();
    t0_text.push_str(&back);
    t0_text.push('\n');
    std::fs::write(t0.join("cost.csv"), t0_text).unwrap();
    let out = tmp.path().join("refused");
    limitbench(
        &[
            "merge",
            out.to_str().unwrap(),
            t0.to_str().unwrap(),
            t1.to_str().unwrap(),
        ],
        None,
    )
    .expect_code(2)
    .expect_output(&format!("group `{moved}` has rows from 2 shards"))
    .expect_output("one shard on one machine");
}
