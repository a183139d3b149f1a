//! An experiment's parameters: read from its file (`[defaults]` with the
//! size's table over it, or the scorecard's probe tables), range-checked by
//! name, then parsed into the experiment's own type, every error naming the
//! file and the table the parameter comes from.

use std::path::Path;

use serde::de::DeserializeOwned;

use super::{RunContext, Size};
use limitbench_base::error::{Error, Result};

impl RunContext {
    /// Which table of the experiment file a parameter comes from.
    fn table_of(&self, key: &str) -> String {
        let text = std::fs::read_to_string(&self.params_file).unwrap_or_default();
        let doc: toml::Table = toml::from_str(&text).unwrap_or_default();
        let has = |t: Option<&toml::Value>| {
            t.and_then(|t| t.as_table())
                .is_some_and(|t| t.contains_key(key))
        };
        let size = self.size.as_str();
        if self.probe {
            let probe = doc.get("probe");
            if has(probe.and_then(|p| p.get(size))) {
                return format!("probe.{size}");
            }
            if has(probe) {
                return "probe".into();
            }
        } else if has(doc.get(size)) {
            return size.into();
        }
        "defaults".into()
    }

    /// The parameters as the experiment's own type; unknown or missing
    /// fields are errors naming the file.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T> {
        // Ranges before types: `trials = 0` must not run "0 trials ... done".
        if let Some((path, problem)) = out_of_range(&self.params) {
            let key = path.split(['.', '[']).next().unwrap_or("").to_string();
            return Err(Error::Manifest {
                file: self.params_file.clone(),
                field: format!("[{}] {path}", self.table_of(&key)),
                problem,
            });
        }
        // A connection count this process cannot open fails here, naming
        // the parameter, not after the first trials with "Too many open files".
        if let Some((path, n)) = self.largest_connection_count() {
            let budget = connection_budget();
            if n > budget {
                let key = path.split(['.', '[']).next().unwrap_or("").to_string();
                return Err(Error::Manifest {
                    file: self.params_file.clone(),
                    field: format!("[{}] {path}", self.table_of(&key)),
                    problem: format!(
                        "is {n} connections, more than this process can open ({budget}: its open-file limit, less room for the harness's own files, over 3 descriptors per connection through the delay proxy; raise `ulimit -n` or lower it)"
                    ),
                });
            }
        }
        let p = serde_path_to_error::deserialize(toml::Value::Table(self.params.clone())).map_err(
            |e| {
                let path = e.path().to_string();
                let key = path.split(['.', '[']).next().unwrap_or("").to_string();
                Error::Manifest {
                    file: self.params_file.clone(),
                    field: format!("[{}] {path}", self.table_of(&key)),
                    problem: e.into_inner().message().to_string(),
                }
            },
        )?;
        if self.validating {
            return Err(Error::Validated);
        }
        Ok(p)
    }
}

/// What a numeric parameter must be, by its name: a count (trials,
/// workers, repetitions) at least 1; a rate, a window, a duration, a limit
/// greater than 0. Other names are not range-checked here.
/// What a range rule says a value must be, and the test of it.
type RangeRule = (&'static str, fn(f64) -> bool);

fn range_rule(name: &str) -> Option<RangeRule> {
    let count = name == "trials"
        || name.ends_with("_trials")
        || name == "workers"
        || name.ends_with("_workers")
        || matches!(
            name,
            "reps" | "runs" | "conns" | "drivers" | "users" | "groups"
        )
        || name.ends_with("_samples");
    let positive = name.contains("rate")
        || name.ends_with("per_s")
        || name == "window_ms"
        || name.ends_with("_window_ms")
        || name.contains("duration")
        || matches!(name, "limit" | "capacity");
    if count {
        Some(("a count, at least 1", |v| v >= 1.0))
    } else if positive {
        Some(("greater than 0", |v| v > 0.0))
    } else {
        None
    }
}

/// Whether a parameter of this name counts connections the harness opens
/// at once (a worker or driver holds one each).
pub fn counts_connections(name: &str) -> bool {
    name == "workers" || name.ends_with("_workers") || matches!(name, "conns" | "drivers")
}

/// How many connections this process can hold at once: its soft open-file
/// limit, less 256 for its own files, over 3 (a connection through the
/// delay proxy takes the client's socket and the proxy's two).
pub fn connection_budget() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0;
    let soft = if ok { r.rlim_cur } else { 1024 };
    soft.saturating_sub(256) / 3
}

impl RunContext {
    /// The largest connection count among the parameters ([`counts_connections`]),
    /// with its path: what the run will open at once at most.
    pub fn largest_connection_count(&self) -> Option<(String, u64)> {
        // The first of the largest, in the parameters' order.
        numbers(&self.params)
            .into_iter()
            .filter(|(name, _, _)| counts_connections(name))
            .filter_map(|(_, path, v)| Some((path, v.as_integer().filter(|i| *i > 0)? as u64)))
            .fold(None, |best: Option<(String, u64)>, c| match best {
                Some(b) if b.1 >= c.1 => Some(b),
                _ => Some(c),
            })
    }
}

/// Every number among the parameters, looking into arrays and nested
/// tables (a group's `workers`): the name that governs it (its key; an
/// array's items take the array's), its path, its value.
fn numbers(table: &toml::Table) -> Vec<(&str, String, &toml::Value)> {
    fn walk<'a>(
        name: &'a str,
        path: String,
        v: &'a toml::Value,
        out: &mut Vec<(&'a str, String, &'a toml::Value)>,
    ) {
        match v {
            toml::Value::Integer(_) | toml::Value::Float(_) => out.push((name, path, v)),
            toml::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(name, format!("{path}[{i}]"), x, out);
                }
            }
            toml::Value::Table(t) => {
                for (k, x) in t {
                    walk(k, format!("{path}.{k}"), x, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (k, v) in table {
        walk(k, k.clone(), v, &mut out);
    }
    out
}

/// The first parameter (path, problem) outside its range.
fn out_of_range(table: &toml::Table) -> Option<(String, String)> {
    numbers(table).into_iter().find_map(|(name, path, v)| {
        let x = v.as_float().or_else(|| v.as_integer().map(|i| i as f64))?;
        let (what, ok) = range_rule(name)?;
        (!ok(x)).then(|| (path, format!("is {v}, must be {what}")))
    })
}

/// An experiment file, its top-level keys checked.
fn read_definition(file: &Path) -> Result<toml::Table> {
    let text = std::fs::read_to_string(file).map_err(|e| Error::Manifest {
        file: file.to_path_buf(),
        field: "(file)".into(),
        problem: format!("cannot read the experiment definition: {e}"),
    })?;
    let doc: toml::Table = toml::from_str(&text).map_err(|e| Error::Manifest {
        file: file.to_path_buf(),
        field: "(TOML syntax)".into(),
        problem: e.to_string(),
    })?;
    for k in doc.keys() {
        if !["description", "defaults", "smoke", "quick", "full", "probe"].contains(&k.as_str()) {
            return Err(Error::Manifest {
                file: file.to_path_buf(),
                field: k.clone(),
                problem: "unknown top-level key (allowed: description, defaults, smoke, quick, full, probe; claim IDs live in analysis/claims.toml)".into(),
            });
        }
    }
    Ok(doc)
}

/// `doc[name]` as a table (absent: empty); `what` names it in the error.
fn table_in(file: &Path, doc: &toml::Table, name: &str, what: &str) -> Result<toml::Table> {
    match doc.get(name) {
        None => Ok(toml::Table::new()),
        Some(toml::Value::Table(t)) => Ok(t.clone()),
        Some(_) => Err(Error::Manifest {
            file: file.to_path_buf(),
            field: what.into(),
            problem: "must be a table".into(),
        }),
    }
}

/// The scorecard's probe: `[defaults]`, then `[probe]` (without its size
/// tables), then `[probe.<size>]`.
pub(super) fn load_probe_params(file: &Path, size: Size) -> Result<toml::Table> {
    let doc = read_definition(file)?;
    if doc.get("probe").is_none() {
        return Err(Error::Manifest {
            file: file.to_path_buf(),
            field: "probe".into(),
            problem: "no [probe] table: the scorecard has no cell of this experiment to run".into(),
        });
    }
    let mut merged = table_in(file, &doc, "defaults", "defaults")?;
    let probe = table_in(file, &doc, "probe", "probe")?;
    let sizes = ["smoke", "quick", "full"];
    for (k, v) in &probe {
        if !sizes.contains(&k.as_str()) {
            merged.insert(k.clone(), v.clone());
        }
    }
    let field = format!("probe.{}", size.as_str());
    for (k, v) in table_in(file, &probe, size.as_str(), &field)? {
        merged.insert(k, v);
    }
    Ok(merged)
}

pub(super) fn load_params(file: &Path, size: Size) -> Result<toml::Table> {
    let doc = read_definition(file)?;
    let table = |name: &str| table_in(file, &doc, name, name);
    if doc.get(size.as_str()).is_none() {
        return Err(Error::Manifest {
            file: file.to_path_buf(),
            field: size.as_str().into(),
            problem: "no table for this size".into(),
        });
    }
    let mut merged = table("defaults")?;
    for (k, v) in table(size.as_str())? {
        merged.insert(k, v);
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::run::record::RunDir;

    const FILE: &str = r#"
description = "x"
[defaults]
limit = 100
trials = 9
[smoke]
[quick]
trials = 5
[probe]
trials = 1
workers = [64]
[probe.smoke]
workers = [8]
"#;

    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.toml");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    fn int(t: &toml::Table, k: &str) -> Option<i64> {
        t.get(k).and_then(|v| v.as_integer())
    }

    #[test]
    fn a_probe_is_defaults_then_probe_then_probe_at_the_size() {
        let (_d, p) = file(FILE);
        let q = load_probe_params(&p, Size::Quick).unwrap();
        assert_eq!((int(&q, "limit"), int(&q, "trials")), (Some(100), Some(1)));
        assert_eq!(q["workers"].as_array().unwrap()[0].as_integer(), Some(64));
        // The run's own size tables do not reach the probe, nor its size
        // tables the parameters.
        assert!(!q.contains_key("smoke") && !q.contains_key("quick"));
        let s = load_probe_params(&p, Size::Smoke).unwrap();
        assert_eq!(s["workers"].as_array().unwrap()[0].as_integer(), Some(8));
        // The run is unchanged by the probe table.
        let r = load_params(&p, Size::Quick).unwrap();
        assert_eq!(
            (int(&r, "trials"), r.contains_key("workers")),
            (Some(5), false)
        );
    }

    #[test]
    fn a_file_without_a_probe_table_cannot_be_probed() {
        let (_d, p) = file("[defaults]\nlimit = 1\n[quick]\n");
        let e = load_probe_params(&p, Size::Quick).unwrap_err().to_string();
        assert!(e.contains("no [probe] table"), "{e}");
        let (_d, p) = file("[defaults]\n[quick]\n[probes]\n");
        let e = load_params(&p, Size::Quick).unwrap_err().to_string();
        assert!(
            e.contains("unknown top-level key") && e.contains("probe"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_probe_parameter_names_its_table() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct P {
            limit: u64,
            trials: u64,
            workers: Vec<u64>,
        }
        let (d, p) = file(&FILE.replace("workers = [8]", "workers = [\"8\"]"));
        let run = RunDir::scratch(d.path());
        let manifest = Arc::new(Mutex::new(crate::run::manifest::RunManifest::default()));
        let dir = p.parent().unwrap();
        let ctx = RunContext::new(
            "x",
            run,
            Size::Smoke,
            1,
            None,
            None,
            None,
            None,
            dir,
            manifest,
        )
        .unwrap()
        .probe()
        .unwrap();
        let e = ctx.params::<P>().unwrap_err().to_string();
        assert!(e.contains("[probe.smoke] workers"), "{e}");
        let ctx = ctx.with_key_prefix("lb:run:");
        assert!(ctx.fresh_client("conc", "c", 0).starts_with("lb:run:conc-"));
        assert!(ctx.unique_client("fo", "c", 0).starts_with("lb:run:fo-"));
    }
}
