//! A real batch engine (issue 32): `deploy/slurm/` unchanged on a one-node
//! Slurm that this test installs (Debian's slurm-wlm and munge, when
//! missing) and starts in a temporary folder: the shard array at smoke size
//! with 4 tasks, then the merge job that depends on it; the merged run holds
//! the (cell, trial, seed) keys of an unsharded smoke run of every
//! experiment. It runs only when asked (`LIMITBENCH_SLURM_TEST=1`: it needs
//! root and apt, and takes minutes); otherwise it passes, saying why it was
//! skipped.
//!
//! Nothing of the system's configuration is touched: slurm.conf, the munge
//! key, the state and spool folders, logs and pid files live in the
//! temporary folder; the daemons are this test's children (in the
//! foreground) and are stopped when it ends, failing or not.

mod common;

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{column, keys, small_experiments};

const ENABLE: &str = "LIMITBENCH_SLURM_TEST";
const SHARDS: usize = 4;
/// The array and the merge together (measured here: 150 s), unless
/// `LIMITBENCH_SLURM_TIMEOUT` gives other seconds.
const TIMEOUT: Duration = Duration::from_secs(15 * 60);
const TOOLS: [&str; 6] = ["sbatch", "squeue", "sinfo", "slurmctld", "slurmd", "munged"];

fn manifest(run: &Path) -> serde_json::Value {
    let p = run.join("manifest.json");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

fn found(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
        || ["/usr/sbin", "/sbin"]
            .iter()
            .any(|d| Path::new(d).join(tool).is_file())
}

/// Debian's slurm-wlm and munge, when a tool is missing.
fn install_missing() {
    let missing: Vec<&str> = TOOLS.iter().copied().filter(|t| !found(t)).collect();
    if missing.is_empty() {
        return;
    }
    println!("installing slurm-wlm and munge (missing: {missing:?})");
    let apt = |args: &[&str]| {
        let st = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .unwrap_or_else(|e| panic!("apt-get (needed to install {missing:?}): {e}"));
        assert!(st.success(), "apt-get {args:?} failed: {st}");
    };
    apt(&["update", "-qq"]);
    apt(&["install", "-y", "-qq", "slurm-wlm", "munge"]);
    let still: Vec<&str> = TOOLS.iter().copied().filter(|t| !found(t)).collect();
    assert!(still.is_empty(), "still missing after apt-get: {still:?}");
}

/// A job state from which the job may still run (squeue's long names).
fn running(state: &str) -> bool {
    matches!(
        state,
        "PENDING"
            | "CONFIGURING"
            | "RUNNING"
            | "COMPLETING"
            | "SUSPENDED"
            | "STOPPED"
            | "REQUEUED"
            | "REQUEUE_HOLD"
            | "RESIZING"
            | "SIGNALING"
            | "STAGE_OUT"
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn short_hostname() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    assert!(out.status.success(), "hostname -s failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The last `n` lines of a file, for a failure's message.
fn tail(p: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| format!("({e})"));
    let lines: Vec<&str> = text.lines().collect();
    format!(
        "--- {} ---\n{}",
        p.display(),
        lines[lines.len().saturating_sub(n)..].join("\n")
    )
}

/// The one-node cluster: its folder, configuration and daemons. Dropping it
/// cancels the jobs it was given and stops the daemons (SIGTERM, then
/// SIGKILL after 10 s); on a failure the folder is kept for its logs.
struct Cluster {
    dir: Option<tempfile::TempDir>,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
    jobs: Vec<String>,
}

impl Cluster {
    fn path(&self) -> &Path {
        self.dir.as_ref().unwrap().path()
    }

    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        // munged wants every folder above its socket open to all.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let d = dir.path().to_path_buf();
        let conf = d.join("slurm.conf");
        let mut c = Cluster {
            dir: Some(dir),
            conf: conf.clone(),
            daemons: vec![],
            jobs: vec![],
        };
        let munge = d.join("munge");
        for sub in ["munge", "state", "spool"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        std::fs::set_permissions(&munge, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut key = vec![0u8; 1024];
        File::open("/dev/urandom")
            .unwrap()
            .read_exact(&mut key)
            .unwrap();
        let key_file = munge.join("munge.key");
        std::fs::write(&key_file, &key).unwrap();
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o400)).unwrap();
        let socket = munge.join("munge.socket");

        let host = short_hostname();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let p = |name: &str| d.join(name).display().to_string();
        let text = format!(
            "# A one-node Slurm for tests/slurm.rs (written by the test).\n\
             ClusterName=limitbench-test\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             SlurmctldPort={ctld}\n\
             SlurmdPort={slurmd}\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             StateSaveLocation={state}\n\
             SlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={ctld_pid}\n\
             SlurmdPidFile={slurmd_pid}\n\
             SlurmctldLogFile={ctld_log}\n\
             SlurmdLogFile={slurmd_log}\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             SchedulerType=sched/backfill\n\
             DependencyParameters=kill_invalid_depend\n\
             MinJobAge=3600\n\
             MpiDefault=none\n\
             ReturnToService=2\n\
             JobCompType=jobcomp/none\n\
             AccountingStorageType=accounting_storage/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             SwitchType=switch/none\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1024 State=UNKNOWN\n\
             PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            ctld = free_port(),
            slurmd = free_port(),
            socket = socket.display(),
            state = p("state"),
            spool = p("spool"),
            ctld_pid = p("slurmctld.pid"),
            slurmd_pid = p("slurmd.pid"),
            ctld_log = p("slurmctld.log"),
            slurmd_log = p("slurmd.log"),
        );
        std::fs::write(&conf, text).unwrap();

        let s = |x: &Path| x.display().to_string();
        c.daemon(
            "munged",
            &[
                "-F",
                "-S",
                &s(&socket),
                &format!("--key-file={}", s(&key_file)),
                &format!("--log-file={}", s(&munge.join("munged.log"))),
                &format!("--pid-file={}", s(&munge.join("munged.pid"))),
                &format!("--seed-file={}", s(&munge.join("munged.seed"))),
            ],
        );
        c.wait_for("munged's socket", Duration::from_secs(20), |_| {
            socket.exists()
        });
        c.daemon("slurmctld", &["-D", "-f", &s(&conf)]);
        c.daemon("slurmd", &["-D", "-f", &s(&conf)]);
        c.wait_for(
            "the node to be idle in sinfo",
            Duration::from_secs(60),
            |c| {
                c.slurm("sinfo", &["-h", "-N", "-o", "%T"])
                    .is_some_and(|o| o.trim() == "idle")
            },
        );
        c
    }

    /// Start `name` in the foreground as this test's child, its output
    /// into <dir>/<name>.out.
    fn daemon(&mut self, name: &'static str, args: &[&str]) {
        let out = File::create(self.path().join(format!("{name}.out"))).unwrap();
        let child = Command::new(name)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        self.daemons.push((name, child));
    }

    /// Wait until `ready`, checking that every daemon still runs.
    fn wait_for(&mut self, what: &str, limit: Duration, ready: impl Fn(&Cluster) -> bool) {
        let t0 = Instant::now();
        loop {
            if ready(self) {
                return;
            }
            let exited = self
                .daemons
                .iter_mut()
                .find_map(|(n, c)| c.try_wait().ok().flatten().map(|st| (*n, st)));
            if let Some((name, st)) = exited {
                panic!(
                    "{name} exited ({st}) while waiting for {what}\n{}",
                    self.logs()
                );
            }
            assert!(
                t0.elapsed() < limit,
                "no {what} after {limit:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// A Slurm client command against this cluster; its stdout if it
    /// succeeded.
    fn slurm(&self, cmd: &str, args: &[&str]) -> Option<String> {
        let out = Command::new(cmd)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Submit a deploy script from `submit_dir` with `env`; the job's id.
    fn sbatch(&mut self, submit_dir: &Path, env: &[(&str, &str)], args: &[&str]) -> String {
        let mut cmd = Command::new("sbatch");
        cmd.arg("--parsable")
            .args(args)
            .current_dir(submit_dir)
            .env("SLURM_CONF", &self.conf);
        // The scripts read these when set: the defaults are what is tested.
        for v in [
            "LIMITBENCH_ROOT",
            "LIMITBENCH_DATA",
            "LIMITBENCH_PROJECT_DIR",
            "LIMITBENCH_SHARD_COUNT",
            "JOB_COMPLETION_INDEX",
            "RESUME",
        ] {
            cmd.env_remove(v);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "sbatch {args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        let id = String::from_utf8(out.stdout).unwrap();
        let id = id.trim().split(';').next().unwrap().to_string();
        self.jobs.push(id.clone());
        id
    }

    /// Every job's (id, state), finished ones included (`MinJobAge` keeps
    /// them an hour).
    fn states(&self) -> Vec<(String, String)> {
        self.slurm("squeue", &["-h", "-t", "all", "-o", "%i %T"])
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(i, s)| (i.to_string(), s.trim().to_string()))
            .collect()
    }

    fn logs(&self) -> String {
        let d = self.path();
        ["slurmctld.log", "slurmd.log", "munged.out"]
            .iter()
            .map(|f| tail(&d.join(f), 15))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.jobs.is_empty() {
            let active = |c: &Cluster| c.states().iter().any(|(_, s)| running(s));
            if active(self) {
                let _ = self.slurm(
                    "scancel",
                    &self.jobs.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                );
                let t0 = Instant::now();
                while active(self) && t0.elapsed() < Duration::from_secs(30) {
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
        // slurmd, slurmctld, munged: the reverse of their start.
        for (name, child) in self.daemons.iter_mut().rev() {
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            let t0 = Instant::now();
            while matches!(child.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(100));
            }
            if matches!(child.try_wait(), Ok(None)) {
                eprintln!("{name} did not stop on SIGTERM: killed");
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        if std::thread::panicking()
            && let Some(d) = self.dir.take()
        {
            eprintln!("the cluster's folder is kept: {}", d.keep().display());
        }
    }
}

/// A project folder for the jobs: the test's experiment files (a small
/// `concurrency`), the repository's claims and scripts, and the test
/// binary where the scripts look for it (`target/release/limitbench`).
fn project(dir: &Path) -> PathBuf {
    let root = dir.join("project");
    std::fs::create_dir_all(root.join("target/release")).unwrap();
    small_experiments(&root);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["analysis", "lua"] {
        std::os::unix::fs::symlink(repo.join(name), root.join(name)).unwrap();
    }
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_limitbench"),
        root.join("target/release/limitbench"),
    )
    .unwrap();
    root
}

#[test]
fn the_slurm_array_and_merge_hold_the_unsharded_keys() {
    if std::env::var(ENABLE).as_deref() != Ok("1") {
        println!(
            "skipped: set {ENABLE}=1 to install and start a one-node Slurm (needs root and apt)"
        );
        return;
    }
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "{ENABLE}=1: the one-node Slurm runs as root (SlurmUser=root)"
    );
    let t0 = Instant::now();
    install_missing();
    let mut cluster = Cluster::start();
    println!(
        "one-node Slurm up in {:.0?}: {}",
        t0.elapsed(),
        cluster.path().display()
    );

    let root = project(cluster.path());
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/slurm");
    let array = format!("--array=0-{}", SHARDS - 1);
    let shards_script = deploy.join("limitbench-shards.sbatch");
    let merge_script = deploy.join("limitbench-merge.sbatch");
    let env = [("LIMITBENCH_SIZE", "smoke")];
    let t_jobs = Instant::now();
    let jid = cluster.sbatch(&root, &env, &[&array, shards_script.to_str().unwrap()]);
    let mid = cluster.sbatch(
        &root,
        &env,
        &[
            &format!("--dependency=afterok:{jid}"),
            merge_script.to_str().unwrap(),
        ],
    );
    println!("submitted the array {jid} ({SHARDS} tasks) and the merge {mid}");

    let last = std::cell::RefCell::new(String::new());
    let timeout = std::env::var("LIMITBENCH_SLURM_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(TIMEOUT, Duration::from_secs);
    cluster.wait_for("the array and the merge to end", timeout, |c| {
        let st = c.states();
        let line = format!("{st:?}");
        if *last.borrow() != line {
            println!("[{:>4.0?}] {line}", t_jobs.elapsed());
            *last.borrow_mut() = line;
        }
        st.len() == SHARDS + 1 && st.iter().all(|(_, s)| !running(s))
    });
    let states = cluster.states();
    let job_logs = || {
        let mut logs: Vec<String> = (0..SHARDS)
            .map(|i| tail(&root.join(format!("limitbench-{jid}-{i}.log")), 20))
            .collect();
        logs.push(tail(&root.join(format!("limitbench-merge-{mid}.log")), 20));
        logs.join("\n")
    };
    for (id, s) in &states {
        assert_eq!(s, "COMPLETED", "job {id}: {states:?}\n{}", job_logs());
    }
    let tasks: Vec<&String> = states
        .iter()
        .map(|(i, _)| i)
        .filter(|i| i.starts_with(&format!("{jid}_")))
        .collect();
    assert_eq!(tasks.len(), SHARDS, "array tasks: {states:?}");
    println!("array and merge completed in {:.0?}", t_jobs.elapsed());

    // The scripts' defaults: <root>/data/slurm-<array id>/shard-<i>, merged.
    let data = root.join(format!("data/slurm-{jid}"));
    let merged = data.join("merged");
    assert!(
        merged.join("claims.csv").is_file(),
        "the merge job analysed {}\n{}",
        merged.display(),
        job_logs()
    );
    let mm = manifest(&merged);
    assert_eq!(
        mm["merged_from"].as_array().map(|a| a.len()),
        Some(SHARDS),
        "merged_from: {}",
        mm["merged_from"]
    );

    // The same experiments unsharded, with the same (default) seed.
    let t_whole = Instant::now();
    let whole_data = cluster.path().join("unsharded");
    let out = Command::new(root.join("target/release/limitbench"))
        .args(["--project-dir", root.to_str().unwrap(), "run", "all"])
        .args(["--size", "smoke", "--run-id", "whole", "--data-dir"])
        .arg(&whole_data)
        .env_remove("LIMITBENCH_SHARD_COUNT")
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the unsharded run:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("unsharded smoke run in {:.0?}", t_whole.elapsed());
    let whole = whole_data.join("whole");
    let wm = manifest(&whole);
    let exps: Vec<String> = wm["experiments"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert!(
        exps.len() >= 10,
        "the unsharded run's experiments: {exps:?}"
    );
    assert_eq!(mm["seed"], wm["seed"], "one seed");
    let mut split = 0;
    for e in &exps {
        let w = keys(&whole, e);
        assert!(!w.is_empty(), "{e}: the unsharded run holds rows");
        let parts: Vec<Vec<String>> = (0..SHARDS)
            .map(|i| keys(&data.join(format!("shard-{i}")), e))
            .collect();
        split += usize::from(parts.iter().filter(|p| !p.is_empty()).count() > 1);
        let mut joined: Vec<String> = parts.concat();
        joined.sort();
        assert_eq!(
            joined, w,
            "{e}: the shards' keys are the unsharded run's, each once"
        );
        assert_eq!(
            keys(&merged, e),
            w,
            "{e}: the merged run's keys are the unsharded run's"
        );
    }
    // The cost experiment's groups (each its own GET and variants) are
    // spread over the shards, each group whole in one shard.
    let cost_groups: Vec<std::collections::BTreeSet<String>> = (0..SHARDS)
        .map(|i| column(&data.join(format!("shard-{i}")), "cost", "group"))
        .collect();
    let holding = cost_groups.iter().filter(|g| !g.is_empty()).count();
    assert!(
        holding > 1,
        "cost: its groups in more than one shard: {cost_groups:?}"
    );
    let all: Vec<&String> = cost_groups.iter().flatten().collect();
    let distinct: std::collections::BTreeSet<&String> = all.iter().copied().collect();
    assert_eq!(
        all.len(),
        distinct.len(),
        "cost: each group in one shard: {cost_groups:?}"
    );
    println!("cost: groups per shard {cost_groups:?}");
    println!(
        "{} experiments ({split} split across shards): merged keys = unsharded keys; {:.0?} in all",
        exps.len(),
        t0.elapsed()
    );
}
