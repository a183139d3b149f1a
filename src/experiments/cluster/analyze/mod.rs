//! Analysis of `cluster` (B7.1, B7.2): the fraction of users for whom each
//! script variant works, by shebang flags and cluster size, the error texts,
//! and the concurrency check on the cluster.
//!
//! Metrics (rows -> numbers): `UsersRows` (selection by size, variant and
//! flags), `main_nodes`, `error_cores`, `b71`, `b72`. Presentation:
//! `variant_table`, `concurrency_table`, `figure` and `analyze`.
//!
//! Unit tests of the metrics: `tests.rs` in this folder.

pub mod scorecard;

use super::rows::Row;
use limitbench_analysis::figure::{Anchor, Axis, Figure, Panel, Pt, Reference, Series};
use limitbench_analysis::figure::{ClaimReference, SummaryPoint, WriteFigure};
use limitbench_analysis::stats::Summary;
use limitbench_analysis::table::{distinct, error_core, f, md_table};
use limitbench_analysis::{AnalysisCtx, Measured, Section};
use limitbench_base::error::Result;

/// The `kind=users` rows, selected by cluster size, variant and flags.
pub struct UsersRows<'a> {
    pub rows: Vec<&'a Row>,
    /// Cluster sizes, ascending.
    pub nodes: Vec<u64>,
    pub variants: Vec<String>,
    pub flags: Vec<String>,
}

impl<'a> UsersRows<'a> {
    pub fn of(rows: &'a [Row]) -> Self {
        let users: Vec<&Row> = rows.iter().filter(|r| r.kind == "users").collect();
        let mut nodes = distinct(users.iter().map(|r| r.nodes));
        nodes.sort();
        UsersRows {
            variants: distinct(users.iter().map(|r| r.variant.clone())),
            flags: distinct(users.iter().map(|r| r.flags.clone())),
            rows: users,
            nodes,
        }
    }

    pub fn sel(&self, nodes: u64, variant: &str, flags: &str) -> Vec<&'a Row> {
        self.rows
            .iter()
            .copied()
            .filter(|r| r.nodes == nodes && r.variant == variant && r.flags == flags)
            .collect()
    }
}

/// The cluster size the claims are judged at: 3 masters (the study's), else
/// the smallest that ran.
pub fn main_nodes(nodes: &[u64]) -> u64 {
    if nodes.contains(&3) {
        3
    } else {
        nodes.first().copied().unwrap_or(0)
    }
}

/// The distinct error texts of some trials (`text (xN) | ...` split), each
/// without its `(xN)` count and, with `core`, without the per-script suffix.
pub fn error_cores(rows: &[&Row], core: bool) -> Vec<String> {
    distinct(
        rows.iter()
            .flat_map(|r| r.errors.split(" | "))
            .map(|e| {
                let text = e.rsplit_once(" (x").map(|x| x.0).unwrap_or(e);
                if core {
                    error_core(text)
                } else {
                    e.to_string()
                }
            })
            .filter(|e| !e.is_empty()),
    )
}

/// Does an error reply mean what the study's error means: the script
/// touched a key this node does not serve? Servers word it differently
/// (Redis 7.0 and 8.2, Valkey 8.1: "Script attempted to access a non local
/// key in a cluster node"; Valkey 9.1: "Attempted to access a non local
/// key in a cluster node"), and a cluster may answer with the redirection
/// or cross-slot family instead ("MOVED", "CROSSSLOT", "Script attempted
/// to access keys that do not hash to the same slot"); all are the same
/// finding.
pub fn is_non_local_key_error(text: &str) -> bool {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_prefix("err ").unwrap_or(&t);
    t.contains("non local key")
        || t.contains("non-local key")
        || t.starts_with("moved ")
        || t.starts_with("ask ")
        || t.starts_with("crossslot")
        || t.contains("hash to the same slot")
}

/// B7.1: the fraction of users whose decision works with the derived-key
/// script and no shebang, on the main cluster size.
pub fn b71(u: &UsersRows) -> Option<Measured> {
    let main_n = main_nodes(&u.nodes);
    let plain = u.sel(main_n, "derived-plain", "none");
    if plain.is_empty() {
        return None;
    }
    let fr = Summary::of(&plain.iter().map(|r| r.fraction_ok).collect::<Vec<_>>());
    let texts = error_cores(&plain, false);
    let all_non_local = !texts.is_empty() && texts.iter().all(|t| is_non_local_key_error(t));
    let same = plain
        .iter()
        .all(|r| r.ok == r.ok_same_node + r.ok_other_node && r.ok_other_node == 0);
    // The users are the sample: each user's keys hash to slots, and whether
    // its derived key lands on its base key's node is one draw. Every trial
    // names the same users on a cluster of the same slot split, so trials
    // repeat one measurement (in the reference every trial read the same
    // fraction) and pooling them would count each user again. The interval
    // is the exact binomial one over the first trial's users: n fixed by
    // the experiment's table before the run, never extended by rounds.
    let first = plain
        .iter()
        .min_by_key(|r| (r.trial, r.cell.clone()))
        .expect("not empty");
    let users_interval =
        limitbench_analysis::binomial::clopper_pearson(first.ok, first.users, 0.05);
    let repeats = plain
        .iter()
        .filter(|r| r.fraction_ok == first.fraction_ok)
        .count();
    let users_method = format!(
        "95% Clopper-Pearson (exact binomial) over the {} users of the first trial ({} ok); users' key names hash to slots, taken as independent draws; fixed n, never extended ({} of {} trials read the same fraction: they repeat the same users)",
        first.users,
        first.ok,
        repeats,
        plain.len()
    );
    Some(
        Measured::new(
            "B7.1",
            vec![first.ok as f64 / first.users.max(1) as f64],
            format!(
                "{} of users work on {main_n} masters; errors: {}",
                fr.show(3),
                distinct(texts.iter().map(|t| error_core(t.rsplit_once(" (x").map(|x| x.0).unwrap_or(t)))).join(" / ")
            ),
            format!("cluster.csv kind=users nodes={main_n} variant=derived-plain flags=none; cluster-users.csv"),
        )
        .intervals(vec![users_interval], users_method)
        .condition(
            "every failure is the published error: a key not on this node (non-local key, MOVED/ASK or CROSSSLOT, in any server's wording)",
            all_non_local,
        )
        .condition("a user works exactly when the derived key is on the base key's node", same)
        .rests_on(plain.iter().map(|r| r.cell.as_str()))
        .note("Redis 7.0.15 prefixes the text with ERR and appends the script's SHA and line; Valkey 9.1 words it `ERR Attempted to access a non local key in a cluster node`"),
    )
}

/// B7.2: the hash-tagged variant works for every user (min over trials),
/// whatever the script's first line.
pub fn b72(u: &UsersRows) -> Option<Measured> {
    let main_n = main_nodes(&u.nodes);
    let tagged = u.sel(main_n, "derived-tagged", "none");
    if tagged.is_empty() {
        return None;
    }
    let fr = Summary::of(&tagged.iter().map(|r| r.fraction_ok).collect::<Vec<_>>());
    let every_flag = u.flags.iter().all(|fl| {
        u.sel(main_n, "derived-tagged", fl)
            .iter()
            .all(|r| r.fraction_ok == 1.0)
    });
    Some(
        Measured::new(
            "B7.2",
            vec![fr.min],
            format!(
                "{} of users work (min over trials) on {main_n} masters",
                fr.show(3)
            ),
            format!("cluster.csv kind=users nodes={main_n} variant=derived-tagged flags=none"),
        )
        .intervals(
            vec![(fr.min, fr.max)],
            format!(
                "min to max over {} trials (the claim is about every trial)",
                fr.n
            ),
        )
        .condition(
            "all users work with the hash tag under every script first line",
            every_flag,
        )
        .rests_on(
            u.flags
                .iter()
                .flat_map(|fl| u.sel(main_n, "derived-tagged", fl))
                .chain(tagged.iter().copied())
                .map(|r| r.cell.as_str()),
        ),
    )
}

/// Per size x variant x flags: fraction ok, keys on one node, error texts.
fn variant_table(u: &UsersRows) -> String {
    let mut t = Vec::new();
    for &n in &u.nodes {
        for v in &u.variants {
            for fl in &u.flags {
                let rs = u.sel(n, v, fl);
                if rs.is_empty() {
                    continue;
                }
                let fr = Summary::of(&rs.iter().map(|r| r.fraction_ok).collect::<Vec<_>>());
                let same = Summary::of(
                    &rs.iter()
                        .map(|r| r.same_node as f64 / r.users.max(1) as f64)
                        .collect::<Vec<_>>(),
                );
                t.push(vec![
                    n.to_string(),
                    v.clone(),
                    fl.clone(),
                    fr.show(3),
                    f(same.mean, 3),
                    rs.iter().map(|r| r.ok_other_node).sum::<u64>().to_string(),
                    error_cores(&rs, true).join(" / "),
                ]);
            }
        }
    }
    md_table(
        &[
            "masters",
            "variant",
            "flags",
            "fraction ok (mean, min, max, n trials)",
            "derived key on base key's node (fraction)",
            "ok with key on another node",
            "error texts (script suffix cut)",
        ],
        &t,
    )
}

/// Per strategy: admitted and exact trials of the concurrency check.
fn concurrency_table(conc: &[&Row]) -> String {
    let mut t = Vec::new();
    for s in distinct(conc.iter().map(|r| r.strategy.clone())) {
        let rs: Vec<&Row> = conc.iter().copied().filter(|r| r.strategy == s).collect();
        t.push(vec![
            s.clone(),
            rs[0].nodes.to_string(),
            rs[0].workers.to_string(),
            rs[0].limit.to_string(),
            rs[0].offered.to_string(),
            Summary::of(&rs.iter().map(|r| r.admitted as f64).collect::<Vec<_>>()).show(1),
            format!("{}/{}", rs.iter().filter(|r| r.exact).count(), rs.len()),
        ]);
    }
    md_table(
        &[
            "strategy",
            "masters",
            "workers",
            "limit",
            "offered",
            "admitted",
            "exact trials",
        ],
        &t,
    )
}

/// A script's first line in words.
fn flags_words(fl: &str) -> String {
    match fl {
        "none" => "no shebang (legacy mode)".into(),
        "lua" => "#!lua (undeclared keys refused)".into(),
        "allow-cross-slot" => "flag allow-cross-slot-keys (with #!lua)".into(),
        x => x.to_string(),
    }
}

/// The fraction of users that work per cluster size: a panel per variant,
/// a series per script first line, the expected 1/N marked.
fn figure(ctx: &AnalysisCtx, u: &UsersRows) -> Result<String> {
    // Masters as categories, so the series at the same value stand side
    // by side instead of on one another (and off the published line).
    let cats: Vec<String> = u.nodes.iter().map(|n| n.to_string()).collect();
    let at = |n: u64| u.nodes.iter().position(|m| *m == n).unwrap_or(0) as f64;
    let mut fig = Figure::new(
        "cluster-users-that-work",
        &["B7.1", "B7.2"],
        "Redis Cluster: the fraction of users whose decision works, per cluster size and key design",
        format!(
            "Fraction of {} users per trial whose decision succeeded, mean with min-max whiskers over n = {} trials per point, the script variants side by side at each N; grey dashes: 1/N, the share of derived keys that land on the base key's node by chance; the claims are judged at 3 masters.",
            u.rows.first().map(|r| r.users).unwrap_or(0),
            u.rows.iter().map(|r| r.trial).max().map(|t| t + 1).unwrap_or(0)
        ),
    )
    .columns(3);
    for v in &u.variants {
        let mut p = Panel::new(
            match v.as_str() {
                "derived-plain" => "key derived inside the script".to_string(),
                "derived-tagged" => "derived, base key hash-tagged".to_string(),
                "declared" => "every key declared".to_string(),
                x => x.to_string(),
            },
            Axis::new("masters N"),
            Axis::new("fraction of users that work").range(-0.04, 1.08),
        )
        .categories(cats.clone());
        for fl in &u.flags {
            let pts = u
                .nodes
                .iter()
                .filter_map(|n| {
                    let s = Summary::of(
                        &u.sel(*n, v, fl)
                            .iter()
                            .map(|r| r.fraction_ok)
                            .collect::<Vec<_>>(),
                    );
                    (s.n > 0).then(|| Pt::summary(at(*n), &s))
                })
                .collect();
            p = p.series(Series::points(flags_words(fl), pts));
        }
        if v == "derived-plain" {
            for n in &u.nodes {
                p = p.reference(
                    Reference::expected("1/N (by chance on the base key's node)", 1.0 / *n as f64)
                        .over(at(*n) - 0.48, at(*n) + 0.48),
                );
            }
            if let Some(c) = ctx.claim("B7.1") {
                let m = at(main_nodes(&u.nodes));
                p = p.reference(Reference::published(c, 0).over(m - 0.48, m + 0.48));
            }
        }
        if v == "derived-tagged"
            && let Some(c) = ctx.claim("B7.2")
        {
            // Across the panel: visible between the markers at 1.
            p = p.reference(Reference::published(c, 0));
        }
        fig = fig.panel(p);
    }
    // The judged values: the legacy script (no shebang) at the main size,
    // B7.1 with the key derived inside it, B7.2 with the base key tagged.
    let main = at(main_nodes(&u.nodes));
    let anchors = [("B7.1", "derived-plain"), ("B7.2", "derived-tagged")]
        .iter()
        .filter_map(|(id, v)| {
            let panel = u.variants.iter().position(|x| x == v)?;
            Some(Anchor::new(id, panel, main).on(flags_words("none")))
        })
        .collect();
    fig.write_anchored(ctx, anchors)
}

/// Compact: fraction that works per variant/flags (rows) and size (columns).
/// The mean fraction of users that worked at `nodes` masters, variant and
/// script first line, to three places (`None`: no such trial).
fn mean_ok(u: &UsersRows, nodes: u64, variant: &str, flags: &str) -> Option<String> {
    let s = Summary::of(
        &u.sel(nodes, variant, flags)
            .iter()
            .map(|r| r.fraction_ok)
            .collect::<Vec<_>>(),
    );
    (s.n > 0).then(|| format!("{:.3}", s.mean))
}

fn pivot(u: &UsersRows) -> String {
    let mut header = vec!["key design".to_string(), "script first line".to_string()];
    header.extend(u.nodes.iter().map(|n| format!("{n} masters")));
    let mut t = Vec::new();
    for v in &u.variants {
        for fl in &u.flags {
            let mut row = vec![v.clone(), flags_words(fl)];
            row.extend(
                u.nodes
                    .iter()
                    .map(|n| mean_ok(u, *n, v, fl).unwrap_or_default()),
            );
            t.push(row);
        }
    }
    md_table(&header.iter().map(|s| s.as_str()).collect::<Vec<_>>(), &t)
}

pub fn analyze(ctx: &AnalysisCtx) -> Result<(Vec<Measured>, Section)> {
    let Some(rows) = ctx.read_csv::<Row>("cluster.csv")? else {
        return Ok((vec![], Section::new("cluster", "Not run.\n")));
    };
    let u = UsersRows::of(&rows);
    let conc: Vec<&Row> = rows.iter().filter(|r| r.kind == "concurrency").collect();
    let mut md = format!(
        "Redis Cluster of n masters (slots split evenly), one decision per user, window keys derived from Redis's clock. \
         Seed(s): {}. Users per trial: {}.\n\n",
        distinct(rows.iter().map(|r| r.seed.to_string())).join(", "),
        distinct(u.rows.iter().map(|r| r.users.to_string())).join(", ")
    );
    let mut appendix = String::from(
        "Fraction of users whose decision worked, per cluster size, variant and script first line \
                 (`none`: no shebang; `lua`: `#!lua`; `allow-cross-slot`: `#!lua flags=allow-cross-slot-keys`):\n\n",
    );
    appendix.push_str(&variant_table(&u));
    if !u.rows.is_empty() {
        md.push_str(&figure(ctx, &u)?);
        md.push_str("Mean fraction of users that work:\n\n");
        md.push_str(&pivot(&u));
    }
    let out = [b71(&u), b72(&u)].into_iter().flatten().collect();
    if !conc.is_empty() {
        md.push_str("\nStudy A's concurrency check on the cluster, hash-tagged keys (every worker released together):\n\n");
        md.push_str(&concurrency_table(&conc));
    }
    let at3 = |v: &str, fl: &str| mean_ok(&u, 3, v, fl).unwrap_or_else(|| "n/a".into());
    let finding = format!(
        "on 3 masters a script that builds its key inside worked for a fraction {} of the users (1/N by chance), {} with a hash tag on the base key, and {} with the first line `#!lua` and no flags.",
        at3("derived-plain", "none"),
        at3("derived-tagged", "none"),
        at3("derived-plain", "lua"),
    );
    Ok((
        out,
        Section::new("cluster", md)
            .finding(finding)
            .appendix(appendix),
    ))
}
