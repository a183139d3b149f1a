//! `limitbench merge <out> <run>...`: join the folders of a sharded run's
//! shards (`run::shard`) into one run folder that `limitbench analyze` reads
//! like any other.
//!
//! The shards must be parts of one run: the same commit, tree and
//! uncommitted state, size, seed, inputs (strategy filter, folder and the
//! digest of every script), experiment parameters and redis-server (product,
//! version, allocator, build id and the rest of its identity), one shard
//! of each index of one count, each finished without a failed experiment.
//! Anything else is an error naming both values, because rows measured with
//! a different script or seed would be judged as if they were one run's.
//!
//! The tables are concatenated in shard order (a table's header must be the
//! same in every shard). No (cell, trial) can be in two shards, and merging
//! checks it: a key twice is an error.
//!
//! A main table with a `group` column (the cost experiment's: a group's
//! variants are divided by its own GET, run by run) must hold each group's
//! rows from one shard, so from one machine: rows of one group from two
//! shards is an error naming the group, both shards and their machines.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use crate::run::manifest::{RunInputs, RunManifest};
use crate::run::record::{RunDir, now_rfc3339};
use crate::run::shard::Shard;
use limitbench_base::error::{Error, Result};

/// One shard's folder and manifest.
struct Part {
    dir: RunDir,
    manifest: RunManifest,
    shard: Shard,
}

impl Part {
    fn name(&self) -> String {
        format!(
            "shard {} (run {})",
            self.shard.label(),
            self.dir.path.display()
        )
    }
}

/// What a merge wrote.
#[derive(Debug)]
pub struct Merged {
    pub dir: RunDir,
    /// Per table: rows written.
    pub tables: BTreeMap<String, usize>,
}

/// A machine's label in a merged run: its host name, else its CPU model.
pub fn machine_label(machine: &serde_json::Value) -> String {
    match machine["hostname"].as_str().filter(|h| !h.is_empty()) {
        Some(h) => h.to_string(),
        None => machine["cpu_model"]
            .as_str()
            .unwrap_or("unknown")
            .to_string(),
    }
}

/// Script digests keyed by folder and file name (`lua/gcra.lua`): a shard
/// on another machine has the checkout at another path.
fn portable_scripts(inputs: &RunInputs) -> BTreeMap<String, String> {
    inputs
        .scripts
        .iter()
        .map(|(path, sha)| {
            let p = Path::new(path);
            let tail: Vec<String> = p
                .iter()
                .rev()
                .take(2)
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            (
                tail.into_iter().rev().collect::<Vec<_>>().join("/"),
                sha.clone(),
            )
        })
        .collect()
}

/// The redis-server's identity: everything the manifest records of it but
/// where it was (its path differs between machines) and how it was chosen.
fn server_identity(v: &serde_json::Value) -> serde_json::Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        for k in ["path", "binary", "source"] {
            o.remove(k);
        }
    }
    v
}

/// The fields of the server's identity compared one by one, so that a
/// refusal names the field: (manifest key, what it is).
const SERVER_FIELDS: [(&str, &str); 4] = [
    ("product", "the redis-server's product"),
    ("version", "the redis-server's version"),
    (
        "mem_allocator",
        "the redis-server's allocator (mem_allocator)",
    ),
    ("build_id", "the redis-server's build id (redis_build_id)"),
];

/// Error unless `get` gives the same value for every part.
fn agree<T: PartialEq + std::fmt::Debug>(
    parts: &[Part],
    what: &str,
    get: impl Fn(&Part) -> T,
) -> Result<()> {
    let first = get(&parts[0]);
    for p in &parts[1..] {
        let v = get(p);
        if v != first {
            return Err(Error::Other(format!(
                "the shards are not parts of one run: {what} is {first:?} in {} but {v:?} in {}",
                parts[0].name(),
                p.name()
            )));
        }
    }
    Ok(())
}

fn load_parts(runs: &[PathBuf]) -> Result<Vec<Part>> {
    if runs.len() < 2 {
        return Err(Error::Other(
            "merge needs the folders of at least two shards".into(),
        ));
    }
    let mut parts = Vec::new();
    for path in runs {
        if !path.is_dir() {
            return Err(Error::Other(format!(
                "{} is not a run folder",
                path.display()
            )));
        }
        let dir = RunDir::open(Path::new("."), &path.display().to_string())?;
        let manifest = RunManifest::load(&dir)?.ok_or_else(|| {
            Error::Other(format!(
                "{} has no manifest.json; it is not a run folder",
                path.display()
            ))
        })?;
        let shard = manifest.shard.ok_or_else(|| {
            Error::Other(format!(
                "{} is not a shard (its manifest has no `shard`; run it with --shard I/N)",
                path.display()
            ))
        })?;
        if manifest.ended.is_none() {
            return Err(Error::Other(format!(
                "{} (shard {}) has not finished; resume it (limitbench run ... --shard {} --resume {}) before merging",
                path.display(),
                shard.label(),
                shard.label(),
                path.display()
            )));
        }
        for (name, e) in &manifest.experiments {
            let outcome = e
                .get("outcome")
                .and_then(|o| o.as_str())
                .unwrap_or("not finished");
            if outcome != "done" {
                return Err(Error::Other(format!(
                    "{} (shard {}): experiment `{name}` is {outcome}; resume the shard before merging",
                    path.display(),
                    shard.label()
                )));
            }
        }
        parts.push(Part {
            dir,
            manifest,
            shard,
        });
    }
    parts.sort_by_key(|p| p.shard.index);
    Ok(parts)
}

/// Check that the parts are every shard of one run.
fn check_parts(parts: &[Part]) -> Result<()> {
    agree(parts, "the shard count", |p| p.shard.count)?;
    for w in parts.windows(2) {
        if w[0].shard.index == w[1].shard.index {
            return Err(Error::Other(format!(
                "{} and {} are the same shard",
                w[0].name(),
                w[1].name()
            )));
        }
    }
    let count = parts[0].shard.count;
    let have: BTreeSet<u64> = parts.iter().map(|p| p.shard.index).collect();
    let missing: Vec<String> = (0..count)
        .filter(|i| !have.contains(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Other(format!(
            "shard {} of the {count} shards is missing; merge every shard",
            missing.join(", ")
        )));
    }
    agree(parts, "the commit", |p| p.manifest.git_commit.clone())?;
    agree(parts, "the commit's tree (git_tree)", |p| {
        p.manifest.git_tree.clone()
    })?;
    agree(parts, "uncommitted changes (git_dirty)", |p| {
        p.manifest.git_dirty
    })?;
    agree(parts, "the size", |p| p.manifest.size.clone())?;
    agree(parts, "the seed", |p| p.manifest.seed)?;
    for (key, what) in SERVER_FIELDS {
        agree(parts, what, |p| match p.manifest.redis_server.get(key) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => "not recorded".into(),
        })?;
    }
    agree(parts, "the redis-server", |p| {
        server_identity(&p.manifest.redis_server)
    })?;
    agree(parts, "the strategy filter (--strategy)", |p| {
        p.manifest
            .inputs
            .as_ref()
            .map(|i| i.strategy_filter.clone())
    })?;
    agree(parts, "the strategy folder (--dir)", |p| {
        p.manifest.inputs.as_ref().map(|i| {
            i.strategy_dir.as_ref().map(|d| {
                Path::new(d)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
        })
    })?;
    agree(parts, "the scripts' digests", |p| {
        p.manifest.inputs.as_ref().map(portable_scripts)
    })?;
    agree(parts, "the experiments run", |p| {
        p.manifest.experiments.keys().cloned().collect::<Vec<_>>()
    })?;
    for name in parts[0].manifest.experiments.keys() {
        agree(parts, &format!("experiment `{name}`'s parameters"), |p| {
            p.manifest.experiments[name].get("parameters").cloned()
        })?;
    }
    Ok(())
}

/// The run's tables in one folder: `noise.csv` and every `<experiment>.csv`
/// and `<experiment>-<side>.csv` (plain or compressed); the analysis'
/// outputs (claims.csv, figures/) are not tables of the run.
fn tables_of(dir: &Path, experiments: &[&str]) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let rd =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let plain = limitbench_base::files::plain_name(&name).to_string();
        let Some(stem) = plain.strip_suffix(".csv") else {
            continue;
        };
        let ours = stem == "noise"
            || stem == "schedule"
            || stem == "trial-times"
            || experiments
                .iter()
                .any(|x| stem == *x || stem.strip_prefix(x).is_some_and(|r| r.starts_with('-')));
        if ours {
            out.push((plain, e.path()));
        }
    }
    Ok(out)
}

/// Split a table into its header line and body (both with their newlines).
fn split_header(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|&b| b == b'\n') {
        Some(i) => (&bytes[..=i], &bytes[i + 1..]),
        None => (bytes, &[]),
    }
}

/// A CSV reader over a table's header and body, and the header.
fn reader(
    table: &str,
    header: &[u8],
    body: &[u8],
) -> Result<(csv::StringRecord, csv::Reader<std::io::Cursor<Vec<u8>>>)> {
    let mut data = header.to_vec();
    data.extend_from_slice(body);
    let mut rdr = csv::Reader::from_reader(std::io::Cursor::new(data));
    let h = rdr
        .headers()
        .map_err(|e| Error::Other(format!("{table}: {e}")))?
        .clone();
    Ok((h, rdr))
}

/// The (cell, trial) keys of a table's body, or None if it has no such columns.
fn keys_of(table: &str, header: &[u8], body: &[u8]) -> Result<Option<Vec<(String, String)>>> {
    let (h, mut rdr) = reader(table, header, body)?;
    let (Some(ci), Some(ti)) = (
        h.iter().position(|x| x == "cell"),
        h.iter().position(|x| x == "trial"),
    ) else {
        return Ok(None);
    };
    let mut keys = Vec::new();
    for r in rdr.records() {
        let r = r.map_err(|e| Error::Other(format!("{table}: {e}")))?;
        keys.push((r[ci].to_string(), r[ti].to_string()));
    }
    Ok(Some(keys))
}

/// The `group` column of a table's body, or None if it has none.
fn groups_of(table: &str, header: &[u8], body: &[u8]) -> Result<Option<BTreeSet<String>>> {
    let (h, mut rdr) = reader(table, header, body)?;
    let Some(gi) = h.iter().position(|x| x == "group") else {
        return Ok(None);
    };
    let mut out = BTreeSet::new();
    for r in rdr.records() {
        let r = r.map_err(|e| Error::Other(format!("{table}: {e}")))?;
        if !r[gi].is_empty() {
            out.insert(r[gi].to_string());
        }
    }
    Ok(Some(out))
}

/// Error if a group of rows compared with each other (`group` column) has
/// rows from more than one part: its ratios would divide one machine's
/// measurement by another's. `owners`: group -> the parts holding its rows.
fn one_part_per_group(
    table: &str,
    parts: &[Part],
    owners: &BTreeMap<String, BTreeSet<usize>>,
) -> Result<()> {
    for (group, who) in owners {
        if who.len() > 1 {
            let names: Vec<String> = who
                .iter()
                .map(|&i| {
                    format!(
                        "{} on {}",
                        parts[i].name(),
                        machine_label(&parts[i].manifest.machine)
                    )
                })
                .collect();
            return Err(Error::Other(format!(
                "{table}: group `{group}` has rows from {} shards ({}); a group's variants are compared with its own GET run by run, so all its rows must come from one shard on one machine; these are not shards of one run",
                who.len(),
                names.join(" and ")
            )));
        }
    }
    Ok(())
}

/// Join the shard folders `runs` into a new run folder `out`.
/// `experiments` are the registered experiments' names (which tables are
/// the run's). Main tables (`<experiment>.csv`) must not hold a (cell,
/// trial) from two shards.
pub fn merge(out: &Path, runs: &[PathBuf], experiments: &[&str]) -> Result<Merged> {
    let parts = load_parts(runs)?;
    check_parts(&parts)?;
    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(Error::Other(format!(
            "{} exists and is not empty; merge into a new folder",
            out.display()
        )));
    }
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("creating {}", out.display()), e))?;
    // One merge into a folder at a time (and no analysis of it meanwhile).
    let _lock = super::lock::RunLock::take(out, "merge")?;
    let dir = RunDir::open(Path::new("."), &out.display().to_string())?;

    // table -> shard index -> path
    let mut tables: BTreeMap<String, Vec<(usize, PathBuf)>> = BTreeMap::new();
    for (i, p) in parts.iter().enumerate() {
        for (name, path) in tables_of(&p.dir.path, experiments)? {
            tables.entry(name).or_default().push((i, path));
        }
    }
    // Which machines committed rows of each experiment.
    let mut machines: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut written = BTreeMap::new();
    for (name, files) in &tables {
        let mut header: Option<(Vec<u8>, String)> = None;
        let mut body = Vec::new();
        let mut seen: HashSet<(String, String)> = HashSet::new();
        let mut owners: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
        let main_of = experiments
            .iter()
            .find(|x| name.as_str() == format!("{x}.csv"))
            .copied();
        let mut rows = 0;
        for (i, path) in files {
            let part = &parts[*i];
            let bytes = limitbench_base::files::read_maybe_compressed(path)?;
            let (h, b) = split_header(&bytes);
            if h.is_empty() {
                continue;
            }
            match &header {
                None => header = Some((h.to_vec(), part.name())),
                Some((h0, who)) if h0.as_slice() != h => {
                    return Err(Error::Other(format!(
                        "{name} has different columns in {who} ({}) and {} ({})",
                        String::from_utf8_lossy(h0).trim(),
                        part.name(),
                        String::from_utf8_lossy(h).trim()
                    )));
                }
                Some(_) => {}
            }
            let keys = keys_of(name, h, b)?;
            let n = match &keys {
                Some(k) => k.len(),
                None => b.iter().filter(|&&c| c == b'\n').count(),
            };
            if let (Some(exp), Some(keys)) = (main_of, keys) {
                if !keys.is_empty() {
                    machines
                        .entry(exp.to_string())
                        .or_default()
                        .insert(machine_label(&part.manifest.machine));
                }
                // A trial commits one or more rows, all in one shard: a key
                // repeats within a shard, never across shards.
                let mine: HashSet<(String, String)> = keys.into_iter().collect();
                if let Some(k) = mine.iter().find(|k| seen.contains(*k)) {
                    return Err(Error::Other(format!(
                        "{name}: cell `{}` trial {} is in two shards (the second: {}); these are not shards of one run",
                        k.0,
                        k.1,
                        part.name()
                    )));
                }
                seen.extend(mine);
                for g in groups_of(name, h, b)?.unwrap_or_default() {
                    owners.entry(g).or_default().insert(*i);
                }
            }
            rows += n;
            body.extend_from_slice(b);
            if !body.is_empty() && !body.ends_with(b"\n") {
                body.push(b'\n');
            }
        }
        one_part_per_group(name, &parts, &owners)?;
        let mut data = header.map(|(h, _)| h).unwrap_or_default();
        data.extend_from_slice(&body);
        let target = dir.file(name);
        std::fs::write(&target, data)
            .map_err(|e| Error::io(format!("writing {}", target.display()), e))?;
        written.insert(name.clone(), rows);
    }
    write_manifest(&dir, &parts, &machines)?;
    dir.compress_large_csvs()?;
    Ok(Merged {
        dir,
        tables: written,
    })
}

/// The merged run's manifest: the shared identity of the parts, each part
/// named in `merged_from`, per experiment the seconds each shard took and
/// the machines that measured it.
fn write_manifest(
    dir: &RunDir,
    parts: &[Part],
    machines: &BTreeMap<String, BTreeSet<String>>,
) -> Result<()> {
    let first = &parts[0].manifest;
    let mut m = RunManifest {
        run_id: dir.run_id.clone(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        shard: None,
        started: parts
            .iter()
            .map(|p| p.manifest.started.clone())
            .min()
            .unwrap_or_default(),
        ended: parts.iter().filter_map(|p| p.manifest.ended.clone()).max(),
        merged_from: parts
            .iter()
            .map(|p| {
                serde_json::json!({
                    "run_id": p.manifest.run_id,
                    "shard": p.shard.label(),
                    "machine": p.manifest.machine,
                    "merged": now_rfc3339(),
                })
            })
            .collect(),
        ..first.clone()
    };
    let distinct: BTreeSet<String> = parts
        .iter()
        .map(|p| machine_label(&p.manifest.machine))
        .collect();
    if distinct.len() > 1 {
        m.machine = serde_json::json!({
            "cpu_model": format!("{} machines", distinct.len()),
            "machines": distinct.iter().collect::<Vec<_>>(),
            "cores": first.machine["cores"],
        });
    }
    for (name, e) in m.experiments.iter_mut() {
        let per_shard: Vec<f64> = parts
            .iter()
            .map(|p| {
                p.manifest.experiments[name]["seconds"]
                    .as_f64()
                    .unwrap_or(0.0)
            })
            .collect();
        // The wall time of the merged run is its slowest shard's.
        let wall = per_shard.iter().cloned().fold(0.0, f64::max);
        e.insert("seconds".into(), wall.into());
        e.insert("seconds_per_shard".into(), per_shard.into());
        e.remove("sessions");
        let ms: Vec<String> = machines
            .get(name)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        e.insert("machines".into(), ms.into());
    }
    m.save(dir)
}
