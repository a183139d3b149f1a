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

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

static LIVE: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

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
    LIVE.lock().unwrap().insert(child.id());
    Ok(child)
}

/// Kill and reap one child, and forget it.
pub fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
    LIVE.lock().unwrap().remove(&child.id());
}

/// Forget a child that already exited on its own (after `wait`).
pub fn forget(pid: u32) {
    LIVE.lock().unwrap().remove(&pid);
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

/// How many servers are alive right now (for tests and progress output).
pub fn live_count() -> usize {
    LIVE.lock().map(|g| g.len()).unwrap_or(0)
}

/// Install the Ctrl-C/SIGTERM/SIGHUP handler and the panic hook. Called once
/// by the binary (not by the library's tests, whose panics are expected).
pub fn install_handlers() {
    let _ = ctrlc::set_handler(|| {
        eprintln!(
            "\nlimitbench: interrupted; stopping the redis-server processes it started (finished trials are kept)"
        );
        kill_all();
        std::process::exit(130);
    });
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        kill_all();
        prev(info);
    }));
}
