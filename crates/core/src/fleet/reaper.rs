//! Nothing the harness starts outlives it.
//!
//! Three layers, because each covers a way of dying the others miss:
//! 1. `Server`'s `Drop` kills and reaps its process (normal exit, `?`, panics
//!    that unwind).
//! 2. A registry of live PIDs that the binary's Ctrl-C/SIGTERM handler and
//!    panic hook kill in one sweep (`kill_all`), for exits that skip `Drop`.
//! 3. Every server is started with `PR_SET_PDEATHSIG = SIGKILL`, so even a
//!    `kill -9` of the harness takes its servers with it. The death signal
//!    fires when the *thread* that forked the child exits, so all servers are
//!    forked from one dedicated thread that lives as long as the process.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

static LIVE: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
/// What each live process is, for messages ("redis-server on 127.0.0.1:7001").
static LABELS: Mutex<BTreeMap<u32, String>> = Mutex::new(BTreeMap::new());

/// The lane (one concurrent run of an experiment, `run::noise::lane`)
/// that started each live process, for the noise sampler's attribution.
static OWNERS: Mutex<BTreeMap<u32, String>> = Mutex::new(BTreeMap::new());

tokio::task_local! {
    /// The lane the current task runs for; [`spawn`] records it.
    static OWNER: String;
}

/// Run `fut` as lane `owner`: every process [`spawn`] starts while it is
/// polled is recorded as that lane's ([`owners`]).
pub async fn as_owner<F: std::future::Future>(owner: String, fut: F) -> F::Output {
    OWNER.scope(owner, fut).await
}

/// The lane the current task runs for, if any.
pub fn current_owner() -> Option<String> {
    OWNER.try_with(|o| o.clone()).ok()
}

/// The lane of each live process started inside [`as_owner`].
pub fn owners() -> BTreeMap<u32, String> {
    OWNERS.lock().map(|g| g.clone()).unwrap_or_default()
}

type SpawnRequest = (Command, Option<usize>, mpsc::Sender<std::io::Result<Child>>);
static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();

/// Start `cmd` from the long-lived spawner thread, with the parent-death
/// signal set and, if asked, pinned to one CPU. The PID is registered.
pub fn spawn(cmd: Command, pin_cpu: Option<usize>) -> std::io::Result<Child> {
    let tx = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("limitbench-spawner".into())
            .spawn(move || {
                for (mut cmd, pin, reply) in rx {
                    // SAFETY: only async-signal-safe calls between fork and exec.
                    unsafe {
                        cmd.pre_exec(move || {
                            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                            // The child's only thread: pins the server process.
                            if let Some(cpu) = pin {
                                crate::pin::pin_current_thread(cpu)?;
                            }
                            Ok(())
                        });
                    }
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("spawn the process-spawner thread");
        Mutex::new(tx)
    });
    let (rtx, rrx) = mpsc::channel();
    tx.lock()
        .unwrap()
        .send((cmd, pin_cpu, rtx))
        .expect("spawner thread alive");
    let child = rrx.recv().expect("spawner thread replies")?;
    // Not watched for deaths until it serves (`ready`): a start that
    // fails exits on purpose, and its caller reports it.
    STOPPING.lock().unwrap().insert(child.id());
    LIVE.lock().unwrap().insert(child.id());
    if let Some(owner) = current_owner() {
        OWNERS.lock().unwrap().insert(child.id(), owner);
    }
    Ok(child)
}

/// Kill and reap one child, and forget it. The child is marked as stopping
/// before the signal: lanes running beside this one check for deaths at any
/// moment, and a deliberate kill seen between the signal and the reaping
/// would otherwise be blamed on their trials.
pub fn kill(child: &mut Child) {
    stopping(child.id());
    let _ = child.kill();
    let _ = child.wait();
    LIVE.lock().unwrap().remove(&child.id());
    STOPPING.lock().unwrap().remove(&child.id());
    OWNERS.lock().unwrap().remove(&child.id());
}

/// Forget a child that already exited on its own (after `wait`).
pub fn forget(pid: u32) {
    LIVE.lock().unwrap().remove(&pid);
    STOPPING.lock().unwrap().remove(&pid);
    OWNERS.lock().unwrap().remove(&pid);
}

/// Children whose exit is not a death: told to exit (killed, SHUTDOWN SAVE)
/// and not yet reaped, or spawned and not yet [`ready`] (a server that cannot
/// bind its port exits at once, and its start is retried). Experiments run
/// side by side check for deaths while another one starts or stops a server.
static STOPPING: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// `pid` is about to exit on purpose; [`died_unexpectedly`] ignores it
/// until it is forgotten.
pub fn stopping(pid: u32) {
    STOPPING.lock().unwrap().insert(pid);
}

/// `pid` serves: from now on its exit is a death unless [`stopping`] says so.
pub fn ready(pid: u32) {
    STOPPING.lock().unwrap().remove(&pid);
}

/// Prefix of the servers' temporary folders (config, log, RDB), followed
/// by the owning process's pid.
pub const TEMP_PREFIX: &str = "limitbench-redis-";

/// Temporary folders to remove if the process is interrupted (a normal exit
/// removes them when their `TempDir` drops; Ctrl-C and panics do not run drops).
static DIRS: Mutex<BTreeSet<std::path::PathBuf>> = Mutex::new(BTreeSet::new());

pub fn track_dir(dir: std::path::PathBuf) {
    if let Ok(mut g) = DIRS.lock() {
        g.insert(dir);
    }
}

fn remove_tracked_dirs() {
    let dirs: Vec<std::path::PathBuf> = match DIRS.lock() {
        Ok(g) => g.iter().cloned().collect(),
        Err(p) => p.into_inner().iter().cloned().collect(),
    };
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The file inside each server folder its owner holds locked (`flock`,
/// exclusive) for as long as the folder lives. A sweep removes a folder only
/// when it can take that lock itself: the owner is gone. The pid in the
/// folder's name cannot say that, because a harness in another PID namespace
/// (a container, `unshare --pid`) sharing /tmp sees other namespaces' pids
/// as missing and would remove a live run's folders.
pub const OWNER_LOCK: &str = ".owner.lock";

/// A server's temporary folder (config, log, RDB), removed when dropped,
/// with its owner lock held until then.
#[derive(Debug)]
pub struct OwnedTempDir {
    // Field order: the lock is released after the folder is removed.
    dir: tempfile::TempDir,
    _lock: std::fs::File,
}

impl OwnedTempDir {
    /// Create `<tmp>/limitbench-redis-<pid>-XXXX/` and lock its owner file.
    pub fn create() -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            // The owner's pid in the name says whose it is in messages and
            // lets a sweep recognise folders made before the lock existed.
            .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
            .tempdir()?;
        let lock = std::fs::File::create(dir.path().join(OWNER_LOCK))?;
        lock.try_lock().map_err(std::io::Error::other)?;
        Ok(OwnedTempDir { dir, _lock: lock })
    }

    pub fn path(&self) -> &std::path::Path {
        self.dir.path()
    }
}

/// A folder younger than this is never swept (its owner may not have
/// locked it yet).
const JUST_MADE: Duration = Duration::from_secs(10);

/// A folder without an owner lock (made by a version before it) is removed
/// only when its pid is gone and it has not changed for this long.
const UNLOCKED_STALE_AFTER: Duration = Duration::from_secs(3600);

/// Remove the temporary server folders of limitbench processes that no
/// longer exist (killed with SIGKILL, which nothing can clean up after):
/// those whose owner lock nobody holds. Returns how many were removed.
pub fn sweep_stale_dirs() -> usize {
    let tmp = std::env::temp_dir();
    let Ok(rd) = std::fs::read_dir(&tmp) else {
        return 0;
    };
    let mut removed = 0;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(TEMP_PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        if owner_gone(&e.path(), pid) && std::fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether the folder's owner is gone: its lock can be taken (and is
/// released at once; the folder is removed next), or, for a folder without
/// a lock file, its pid is not running and it is an hour old.
fn owner_gone(dir: &std::path::Path, pid: u32) -> bool {
    let age = std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok());
    // A folder made a moment ago may not hold its lock yet (its owner
    // creates the lock file, then locks it): another process sweeping in
    // between took the free lock and removed a live server's folder.
    if age.is_none_or(|a| a < JUST_MADE) {
        return false;
    }
    match std::fs::File::open(dir.join(OWNER_LOCK)) {
        Ok(f) => f.try_lock().is_ok(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let old = std::fs::metadata(dir)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= UNLOCKED_STALE_AFTER);
            old && !process_running(pid)
        }
        Err(_) => false,
    }
}

/// Name a live process for messages (the server's address).
pub fn label(pid: u32, what: String) {
    LABELS.lock().unwrap().insert(pid, what);
}

/// Processes the harness started and did not stop on purpose that are no
/// longer running (exited or killed from outside: a zombie counts as dead),
/// as "label (pid N)". A trial during which one died is not a measurement.
pub fn died_unexpectedly() -> Vec<String> {
    let pids: Vec<u32> = match LIVE.lock() {
        Ok(g) => g.iter().copied().collect(),
        Err(p) => p.into_inner().iter().copied().collect(),
    };
    let labels = LABELS.lock().map(|g| g.clone()).unwrap_or_default();
    let in_set = |set: &Mutex<BTreeSet<u32>>, pid: u32| match set.lock() {
        Ok(g) => g.contains(&pid),
        Err(p) => p.into_inner().contains(&pid),
    };
    // The sets are read after the process is seen gone, STOPPING before
    // LIVE: a deliberate exit is marked stopping before its signal and
    // leaves LIVE before STOPPING, so one that ended before this look is
    // either still marked or already out of LIVE.
    pids.into_iter()
        .filter(|&pid| !process_running(pid) && !in_set(&STOPPING, pid) && in_set(&LIVE, pid))
        .map(|pid| match labels.get(&pid) {
            Some(l) => format!("{l} (pid {pid})"),
            None => format!("pid {pid}"),
        })
        .collect()
}

/// Running, per /proc: present and not a zombie.
fn process_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses, which may contain spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
            .unwrap_or(true),
        Err(_) => false,
    }
}

/// SIGKILL every live child. For signal handlers and panic hooks.
pub fn kill_all() {
    let pids: Vec<u32> = match LIVE.lock() {
        Ok(g) => g.iter().copied().collect(),
        Err(p) => p.into_inner().iter().copied().collect(),
    };
    for pid in pids {
        // SAFETY: plain syscall on a PID we started.
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
    }
}

/// The pids of the servers alive right now.
pub fn live_pids() -> Vec<u32> {
    LIVE.lock()
        .map(|g| g.iter().copied().collect())
        .unwrap_or_default()
}

/// How many servers are alive right now (for tests and progress output).
pub fn live_count() -> usize {
    LIVE.lock().map(|g| g.len()).unwrap_or(0)
}

type Hook = Box<dyn Fn() + Send + Sync>;
static HOOKS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// Run `hook` when the process is interrupted (Ctrl-C, SIGTERM), after the
/// servers are stopped: e.g. record the interruption in the manifest.
pub fn on_interrupt(hook: impl Fn() + Send + Sync + 'static) {
    HOOKS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Box::new(hook));
}

fn run_interrupt_hooks() {
    if let Ok(h) = HOOKS.try_lock() {
        for f in h.iter() {
            f();
        }
    }
}

/// Install the Ctrl-C/SIGTERM/SIGHUP handler and the panic hook. Called once
/// by the binary (not by the library's tests, whose panics are expected).
pub fn install_handlers() {
    sweep_stale_dirs();
    let _ = ctrlc::set_handler(|| {
        eprintln!(
            "\nlimitbench: interrupted; stopping the redis-server processes it started (finished trials are kept)"
        );
        kill_all();
        remove_tracked_dirs();
        // On a server the user runs: remove what the run wrote there.
        super::owned::release_all_blocking(true);
        run_interrupt_hooks();
        std::process::exit(130);
    });
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        kill_all();
        remove_tracked_dirs();
        super::owned::release_all_blocking(true);
        prev(info);
    }));
}

#[cfg(test)]
mod sweep_tests {
    use super::*;

    /// A folder named for a pid this process cannot see (as a run in
    /// another PID namespace looks) stays while its owner lock is held, and
    /// is swept once the lock is released.
    #[test]
    fn a_held_owner_lock_keeps_the_folder_whatever_its_pid() {
        let dir = std::env::temp_dir().join(format!(
            "{TEMP_PREFIX}4000000000-sweeptest-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let lock = std::fs::File::create(dir.join(OWNER_LOCK)).unwrap();
        lock.try_lock().unwrap();
        sweep_stale_dirs();
        assert!(
            dir.exists(),
            "a live owner's folder was swept: {}",
            dir.display()
        );
        drop(lock);
        // A folder made a moment ago is never swept (its owner may not have
        // locked it yet): this one was left a minute ago.
        std::fs::File::open(&dir)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - Duration::from_secs(60))
            .unwrap();
        // The lock can still be held for a moment after the drop: a test
        // beside this one forks children (`spawn`), and a child holds a copy
        // of every open file (the lock's too) from its fork until its exec
        // closes it. A sweep during that moment rightly keeps the folder;
        // the next one removes it (CI on 0814806 failed on that race).
        for _ in 0..100 {
            sweep_stale_dirs();
            if !dir.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !dir.exists(),
            "a dead owner's folder was left: {}",
            dir.display()
        );
    }

    /// A lane beside a deliberate kill, checking for deaths all the while,
    /// never sees the killed child as dead (the smoke run of stop 39 failed
    /// three experiments on fail-open's kill of its own server).
    #[test]
    fn a_deliberate_kill_is_never_seen_as_a_death_by_a_lane_beside_it() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let done = Arc::new(AtomicBool::new(false));
        let pids: Arc<Mutex<Vec<u32>>> = Arc::new(Mutex::new(Vec::new()));
        let watcher = {
            let (done, pids) = (done.clone(), pids.clone());
            std::thread::spawn(move || {
                let mut blamed = Vec::new();
                while !done.load(Ordering::SeqCst) {
                    let ours = pids.lock().unwrap().clone();
                    for d in died_unexpectedly() {
                        if ours.iter().any(|p| d == format!("pid {p}")) {
                            blamed.push(d);
                        }
                    }
                }
                blamed
            })
        };
        for _ in 0..100 {
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            let mut child = spawn(cmd, None).unwrap();
            ready(child.id());
            pids.lock().unwrap().push(child.id());
            std::thread::sleep(Duration::from_millis(2));
            kill(&mut child);
        }
        done.store(true, Ordering::SeqCst);
        let blamed = watcher.join().unwrap();
        assert!(
            blamed.is_empty(),
            "deliberate kills were reported as deaths: {blamed:?}"
        );
    }

    #[test]
    fn an_owned_temp_dir_holds_its_lock() {
        let d = OwnedTempDir::create().unwrap();
        let other = std::fs::File::open(d.path().join(OWNER_LOCK)).unwrap();
        assert!(other.try_lock().is_err(), "the owner lock is not held");
        let path = d.path().to_path_buf();
        drop(d);
        assert!(!path.exists());
    }
}
