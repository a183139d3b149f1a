//! `manifest.json`: what ran, where, with what. Written at the start of a
//! run and updated as experiments start and finish, so a killed run still
//! says what it did.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::run::record::{RunDir, now_rfc3339};
use limitbench_base::error::{Error, Result};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunManifest {
    pub run_id: String,
    /// The project's commit, tree and uncommitted state
    /// (`run::provenance`: the project folder's, not the current
    /// directory's), and how they were read.
    pub git_commit: String,
    pub git_dirty: bool,
    /// `HEAD^{tree}` (absent in runs made before it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub git_tree: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub git_source: String,
    pub seed: u64,
    pub size: String,
    pub command: String,
    pub machine: serde_json::Value,
    pub redis_server: serde_json::Value,
    pub started: String,
    pub ended: Option<String>,
    /// When a session was interrupted (Ctrl-C, SIGTERM), if one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// What a resume must match: the strategy filter and folder, and the
    /// SHA-1 of every script and manifest (absent in runs made before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<RunInputs>,
    /// The shard this run folder holds (`limitbench run --shard I/N`);
    /// absent for an unsharded run and for a merged one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::run::shard::Shard>,
    /// A merged run's parts (`limitbench merge`): each shard's run id, shard
    /// and machine. Per experiment, `experiments.<name>.machines` lists the
    /// machines whose shards committed its rows; the report marks a
    /// machine-kind claim judged on rows from more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<serde_json::Value>,
    /// How many latency-bound experiments ran at once and how that was
    /// chosen (`run::parallel`); absent in runs made before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<serde_json::Value>,
    /// The machine before the run (`app::session::preflight`): others'
    /// CPU, the busiest other process, the bound, and whether the run was
    /// allowed to go on busy (`--allow-busy`); of a resumed run, the
    /// busiest session's, with the number of sessions measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<serde_json::Value>,
    /// `limitbench run --until-decisive`: the cap on trials per cell, its
    /// basis, every round of extra trials and why the rounds stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_decisive: Option<UntilDecisive>,
    /// Per experiment: started, ended, seconds (summed over sessions),
    /// sessions (each session's start, seconds and the commit it ran at),
    /// parameters and notes.
    pub experiments: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    /// Every other top-level field of a manifest read back (e.g. the
    /// `supplements` a reviewer documented by hand), kept as it was when a
    /// resumed run saves the manifest again: nothing in it is the
    /// harness's to drop.
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// The record of `--until-decisive` (see `app::adaptive`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UntilDecisive {
    /// No cell gets more trials than this from the rounds.
    pub cap_per_cell: u64,
    /// Why that cap (the size's, or `--max-trials`).
    pub cap_basis: String,
    pub rounds: Vec<DecisiveRound>,
    /// Why the rounds stopped (absent while they run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Claims still inconclusive whose experiments reached the cap.
    #[serde(default)]
    pub capped_claims: Vec<String>,
    /// The rounds' budget of trial time (seconds; absent: none) and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<u64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub budget_basis: String,
    /// The seconds the rounds took so far.
    #[serde(default)]
    pub spent_s: f64,
    /// The seconds of the run's sessions before the first round (a full
    /// run's budget is the whole run's: the rounds get what they left).
    #[serde(default)]
    pub first_session_s: f64,
    /// Claims still inconclusive, below the cap, whose next round (its
    /// estimated trial time) did not fit in what was left of the budget.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfunded_claims: Vec<String>,
    /// Per experiment and cell raised by a round: the rounds, the claims
    /// that asked for it, the trials it holds and why it stopped.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cells: BTreeMap<String, BTreeMap<String, CellRounds>>,
}

/// One cell's part in the rounds of `--until-decisive`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellRounds {
    /// The rounds that raised it.
    pub rounds: Vec<u64>,
    /// The inconclusive claims resting on it when it was raised.
    pub claims: Vec<String>,
    /// The trials it holds when the rounds stopped (0 while they run).
    #[serde(default)]
    pub trials: u64,
    /// Why it got no more: its claims decided, or the cap.
    #[serde(default)]
    pub stopped: String,
}

/// One round: the experiments given more trials, the floor each got, and
/// the claims that were inconclusive when it started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DecisiveRound {
    pub round: u64,
    pub trial_floor: BTreeMap<String, u64>,
    /// The cells raised on their own: experiment -> cell -> floor.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cell_floor: BTreeMap<String, BTreeMap<String, u64>>,
    pub inconclusive: Vec<String>,
    /// The resumed session's outcome (`done` or the failure).
    #[serde(default)]
    pub outcome: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInputs {
    pub strategy_filter: Option<Vec<String>>,
    pub strategy_dir: Option<String>,
    pub scripts: BTreeMap<String, String>,
}

impl RunInputs {
    /// What differs from `now`, in words.
    pub fn differences(&self, now: &RunInputs) -> Vec<String> {
        let mut d = Vec::new();
        // The same strategies in another order are the same filter.
        let sorted = |f: &Option<Vec<String>>| {
            f.clone().map(|mut v| {
                v.sort();
                v.dedup();
                v
            })
        };
        let shown = |f: &Option<Vec<String>>| match f {
            None => "not given (every strategy)".to_string(),
            Some(v) => format!("`{}`", v.join(",")),
        };
        if sorted(&self.strategy_filter) != sorted(&now.strategy_filter) {
            d.push(format!(
                "--strategy was {}, now {}",
                shown(&self.strategy_filter),
                shown(&now.strategy_filter)
            ));
        }
        if self.strategy_dir != now.strategy_dir {
            let dir = |d: &Option<String>| d.clone().unwrap_or_else(|| "not given".into());
            d.push(format!(
                "--dir was {}, now {}",
                dir(&self.strategy_dir),
                dir(&now.strategy_dir)
            ));
        }
        for (f, sha) in &self.scripts {
            match now.scripts.get(f) {
                Some(s) if s == sha => {}
                Some(_) => d.push(format!("{f} changed")),
                None => d.push(format!("{f} is gone")),
            }
        }
        for f in now
            .scripts
            .keys()
            .filter(|f| !self.scripts.contains_key(*f))
        {
            d.push(format!("{f} is new"));
        }
        d
    }
}

impl RunManifest {
    pub fn load(run: &RunDir) -> Result<Option<Self>> {
        let p = run.file("manifest.json");
        if !p.exists() {
            return Ok(None);
        }
        let text =
            std::fs::read_to_string(&p).map_err(|e| Error::io("reading manifest.json", e))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| Error::Other(format!("{}: {e}", p.display())))
    }

    pub fn save(&self, run: &RunDir) -> Result<()> {
        let p = run.file("manifest.json");
        let tmp = run.file("manifest.json.tmp");
        // Every string of the manifest (the command line, the server's URL
        // and CONFIG, error outcomes) goes through the one redaction.
        let value = serde_json::to_value(self).map_err(|e| Error::Other(e.to_string()))?;
        let text = serde_json::to_string_pretty(&limitbench_core::redact::json(&value))
            .map_err(|e| Error::Other(e.to_string()))?;
        std::fs::write(&tmp, text).map_err(|e| Error::io("writing manifest.json", e))?;
        std::fs::rename(&tmp, &p).map_err(|e| Error::io("writing manifest.json", e))
    }

    /// Record `value` under `key` for `experiment`. A value an earlier
    /// session noted (a resumed run's round-trip calibration, its server)
    /// is not lost: the first time this session notes `key`, the earlier
    /// value moves under `notes` into the entry of the latest earlier
    /// session that noted it, or that may have (one written before sessions
    /// listed what they `noted`).
    pub fn note(&mut self, experiment: &str, key: &str, value: serde_json::Value) {
        // Whether a session noted `key`; None for a session written before
        // sessions listed what they noted.
        let noted = |s: &serde_json::Value| {
            s.get("noted")
                .and_then(|v| v.as_array())
                .map(|l| l.iter().any(|k| k == key))
        };
        let e = self.experiments.entry(experiment.to_string()).or_default();
        let old = e.get(key).cloned();
        if let Some(list) = e.get_mut("sessions").and_then(|v| v.as_array_mut())
            && let Some(i) = list.len().checked_sub(1)
            && noted(&list[i]) != Some(true)
        {
            if let Some(old) = old.filter(|o| *o != value)
                && let Some(owner) = (0..i)
                    .rev()
                    .find(|&j| noted(&list[j]) != Some(false))
                    .or(i.checked_sub(1))
            {
                let prev = &mut list[owner];
                if !prev.get("notes").is_some_and(|n| n.is_object()) {
                    prev["notes"] = serde_json::json!({});
                }
                prev["notes"][key] = old;
            }
            if !list[i].get("noted").is_some_and(|n| n.is_array()) {
                list[i]["noted"] = serde_json::json!([]);
            }
            list[i]["noted"]
                .as_array_mut()
                .expect("set above")
                .push(key.into());
        }
        e.insert(key.to_string(), value);
    }

    pub fn started_experiment(&mut self, experiment: &str, params: &toml::Table) {
        let e = self.experiments.entry(experiment.to_string()).or_default();
        e.insert("started".into(), now_rfc3339().into());
        e.insert(
            "parameters".into(),
            serde_json::to_value(params).unwrap_or_default(),
        );
        e.remove("ended");
        let sessions = e
            .entry("sessions")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(list) = sessions.as_array_mut() {
            // A resumed run may add rows from another build: each session
            // says which commit measured it.
            let p = crate::run::provenance::project();
            list.push(serde_json::json!({
                "started": now_rfc3339(),
                "seconds": 0.0,
                "git_commit": p.commit,
                "git_dirty": p.dirty,
                "git_tree": p.tree,
                // What this session notes (`note`); absent in sessions
                // written before it was listed.
                "noted": [],
            }));
        }
    }

    /// This session of `experiment` has run `seconds` so far; the
    /// experiment's `seconds` is the sum over its sessions, so a run killed
    /// and resumed reports all the time it took.
    pub fn session_time(&mut self, experiment: &str, seconds: f64) {
        let e = self.experiments.entry(experiment.to_string()).or_default();
        let round = |x: f64| (x * 10.0).round() / 10.0;
        let mut total = 0.0;
        if let Some(list) = e.get_mut("sessions").and_then(|v| v.as_array_mut()) {
            if let Some(last) = list.last_mut() {
                last["seconds"] = round(seconds).into();
            }
            total = list
                .iter()
                .filter_map(|s| s["seconds"].as_f64())
                .sum::<f64>();
        }
        e.insert("seconds".into(), round(total).into());
    }

    /// The session was interrupted (Ctrl-C, SIGTERM): every experiment that
    /// started and did not end says so, and the run records when.
    pub fn interrupted(&mut self) {
        let now = now_rfc3339();
        for e in self.experiments.values_mut() {
            if e.contains_key("started") && !e.contains_key("ended") {
                e.insert("outcome".into(), format!("interrupted at {now}").into());
            }
        }
        self.interrupted = Some(now);
    }

    pub fn ended_experiment(&mut self, experiment: &str, seconds: f64, outcome: &str) {
        self.session_time(experiment, seconds);
        let e = self.experiments.entry(experiment.to_string()).or_default();
        e.insert("ended".into(), now_rfc3339().into());
        e.insert("outcome".into(), outcome.into());
    }
}

/// The machine, from sysinfo: CPU model, logical and physical cores,
/// memory, OS and kernel; plus the CPUs this process may run on.
pub fn machine_info() -> serde_json::Value {
    use sysinfo::{CpuRefreshKind, MemoryRefreshKind, RefreshKind, System};
    let sys = System::new_with_specifics(
        RefreshKind::nothing()
            .with_cpu(CpuRefreshKind::nothing())
            .with_memory(MemoryRefreshKind::nothing().with_ram()),
    )
    .ok();
    let model = sys
        .as_ref()
        .and_then(|s| s.cpus().first().map(|c| c.brand().trim().to_string()))
        .unwrap_or_else(|| "unknown".into());
    serde_json::json!({
        "cpu_model": model,
        "cores": sys.as_ref().map(|s| s.cpus().len()).unwrap_or(0),
        "physical_cores": System::physical_core_count().ok(),
        "kernel": System::kernel_version().unwrap_or_default(),
        "os": System::long_os_version().unwrap_or_default(),
        "hostname": System::host_name().unwrap_or_default(),
        "memory_mib": sys.as_ref().map(|s| s.total_memory() / (1024 * 1024)).unwrap_or(0),
        "harness_cpus_allowed": limitbench_core::pin::allowed_cpus(std::process::id()),
        // What CPU parameters are positions in (each experiment's `cpus` note).
        "harness_cpus_at_start": limitbench_core::pin::startup_cpus()
            .ok()
            .map(limitbench_core::pin::cpu_list),
        "rustc": option_env!("LIMITBENCH_RUSTC_VERSION").unwrap_or("unknown"),
    })
}

#[cfg(test)]
mod tests {
    use super::RunManifest;

    #[test]
    fn a_resumed_manifest_keeps_the_fields_it_does_not_know() {
        // A manifest read back and written again (what a resume does) keeps
        // a field the harness does not model, e.g. hand-documented
        // supplements; losing it silently would lose the run's provenance.
        let text = serde_json::json!({
            "run_id": "r", "git_commit": "c", "git_dirty": false, "seed": 1,
            "size": "smoke", "command": "run", "machine": {}, "redis_server": {},
            "started": "t", "ended": null, "experiments": {},
            "supplements": [{"what": "rows added by hand", "trials_from": {"concurrency": 20}}]
        });
        let m: RunManifest = serde_json::from_value(text).unwrap();
        let back = serde_json::to_value(&m).unwrap();
        assert_eq!(
            back["supplements"][0]["trials_from"]["concurrency"],
            serde_json::json!(20),
            "{back}"
        );
        assert_eq!(back["run_id"], serde_json::json!("r"));
        assert!(back.get("other").is_none(), "flattened, not nested: {back}");
    }

    #[test]
    fn a_manifest_from_before_the_tree_was_recorded_loads_and_saves_without_it() {
        let p =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/reference/manifest.json");
        let Ok(text) = std::fs::read_to_string(&p) else {
            return;
        };
        let before: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(before.get("git_tree").is_none(), "an old manifest");
        let m: RunManifest = serde_json::from_str(&text).unwrap();
        assert_eq!(m.git_tree, "");
        assert_eq!(m.git_commit, before["git_commit"].as_str().unwrap());
        let back = serde_json::to_value(&m).unwrap();
        assert!(back.get("git_tree").is_none(), "{}", back["git_commit"]);
        assert!(back.get("git_source").is_none());
    }

    #[test]
    fn a_resumed_session_keeps_what_an_earlier_session_noted() {
        // A resume recalibrates its round trips: the first session's
        // calibration must stay readable, under that session.
        let mut m = RunManifest::default();
        let t = toml::Table::new();
        m.started_experiment("retries", &t);
        m.note("retries", "round_trips", serde_json::json!({"1": 977}));
        m.note("retries", "round_trips", serde_json::json!({"1": 978}));
        m.started_experiment("retries", &t);
        m.started_experiment("retries", &t);
        m.note("retries", "round_trips", serde_json::json!({"1": 1021}));
        m.note(
            "retries",
            "round_trips",
            serde_json::json!({"1": 1021, "6.7": 6686}),
        );
        let e = &m.experiments["retries"];
        assert_eq!(
            e["round_trips"],
            serde_json::json!({"1": 1021, "6.7": 6686})
        );
        let s = e["sessions"].as_array().unwrap();
        assert_eq!(s.len(), 3);
        // Kept under the session that noted it, not the one in between.
        assert_eq!(
            s[0]["notes"]["round_trips"],
            serde_json::json!({"1": 978}),
            "{s:?}"
        );
        assert!(s[1].get("notes").is_none(), "{s:?}");
        assert!(s[2].get("notes").is_none(), "{s:?}");
        assert_eq!(s[2]["noted"], serde_json::json!(["round_trips"]));
        // A later session after one from before the `noted` lists: the
        // value goes to that one, not back to the first session.
        let mut m = RunManifest::default();
        m.started_experiment("retries", &t);
        m.note("retries", "round_trips", serde_json::json!({"1": 1}));
        m.started_experiment("retries", &t);
        m.experiments
            .get_mut("retries")
            .unwrap()
            .get_mut("sessions")
            .unwrap()[1]
            .as_object_mut()
            .unwrap()
            .remove("noted");
        m.experiments.get_mut("retries").unwrap()["round_trips"] = serde_json::json!({"1": 2});
        m.started_experiment("retries", &t);
        m.note("retries", "round_trips", serde_json::json!({"1": 3}));
        let s = m.experiments["retries"]["sessions"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(
            s[1]["notes"]["round_trips"],
            serde_json::json!({"1": 2}),
            "{s:?}"
        );
        assert!(s[0].get("notes").is_none(), "{s:?}");
    }
}
