//! CPU pinning, one module for the whole harness: the cost experiments put
//! Redis on one core and the load on another.
//!
//! - [`pin_current_thread`]: the calling thread only. It makes one system
//!   call and allocates nothing, so the reaper also calls it in a forked
//!   child between fork and exec (pinning the redis-server it starts).
//! - [`pin_process_to`]: every thread of this process (threads created later
//!   inherit it).
//! - [`PinGuard`]: pins this process while it lives and, on drop, puts every
//!   thread back on the CPUs the process had before (also on errors).
//!
//! The experiments' CPU parameters (`redis_cpu`, `load_cpu`, `probe_cpu`,
//! `harness_cpu`, a `bio_cpulist` entry, `pin_redis_cpu`) are not CPU
//! numbers but positions in the CPUs this process was allowed when it
//! started ([`startup_cpus`], its `sched_getaffinity`): position 0 is the
//! first CPU it may run on. On a machine that allows every CPU nothing
//! changes; a container given cores 4 and 5 (the static CPU manager) runs
//! Redis on 4 and the load on 5. [`resolve_cpu`] is the one place a
//! position becomes a CPU, with an error naming the allowed set when the
//! position is past its end.

use limitbench_base::error::{Error, Result};

/// A set of CPUs as the kernel takes it.
type CpuSet = libc::cpu_set_t;

fn cpu_set(cpus: &[usize]) -> CpuSet {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: CpuSet = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: CPU_SET bounds-checks `c` against the set's size.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set
}

/// sched_setaffinity of thread `tid` (0: the calling thread). No allocation.
fn set_affinity(tid: i32, set: &CpuSet) -> std::io::Result<()> {
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<CpuSet>(), set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Pin the calling thread to `cpu`. Async-signal-safe (one system call, no
/// allocation): usable between fork and exec.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    set_affinity(0, &cpu_set(&[cpu]))
}

/// The CPUs the calling thread may run on.
pub fn current_cpus() -> Result<Vec<usize>> {
    let set = current_set()?;
    Ok(cpus_of(&set))
}

fn current_set() -> Result<CpuSet> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    let mut set: CpuSet = unsafe { std::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<CpuSet>(), &mut set) } != 0 {
        return Err(Error::io(
            "reading this thread's CPU affinity",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(set)
}

fn cpus_of(set: &CpuSet) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads the set within its size.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

/// The CPUs this process was allowed when it started, recorded once.
static STARTUP_CPUS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();

/// Record the CPUs this process may run on now as its start set (what CPU
/// positions count in). The binary calls it first thing in `main`, before
/// anything pins; a later call keeps the first record.
pub fn record_startup_cpus() -> Result<()> {
    startup_cpus().map(|_| ())
}

/// The CPUs this process was allowed when it started, ascending: recorded
/// by [`record_startup_cpus`], else (a library user, a test) on first use.
pub fn startup_cpus() -> Result<&'static [usize]> {
    if let Some(v) = STARTUP_CPUS.get() {
        return Ok(v);
    }
    let now = current_cpus()?;
    Ok(STARTUP_CPUS.get_or_init(|| now))
}

/// The CPU at `position` in `allowed` (ascending CPU numbers); `what` names
/// the parameter for the error when `allowed` has no such position.
pub fn cpu_at(what: &str, position: usize, allowed: &[usize]) -> Result<usize> {
    allowed
        .get(position)
        .copied()
        .ok_or_else(|| Error::CpuPosition {
            what: what.to_string(),
            position,
            allowed: cpu_list(allowed),
            count: allowed.len(),
            last: allowed.len().saturating_sub(1),
        })
}

/// The CPU a CPU parameter names: `position` in [`startup_cpus`]. Every pin
/// of Redis, the load, the probe and the harness takes its CPU from here.
pub fn resolve_cpu(what: &str, position: usize) -> Result<usize> {
    cpu_at(what, position, startup_cpus()?)
}

/// CPUs in the kernel's list format (`0-3,6`), as `Cpus_allowed_list` and
/// `taskset -c` write them; `cpus` ascending.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Give every thread of this process the affinity `set`.
fn set_process(set: &CpuSet) -> Result<()> {
    let tasks = std::fs::read_dir("/proc/self/task")
        .map_err(|e| Error::io("reading /proc/self/task", e))?;
    for t in tasks.flatten() {
        let tid: i32 = t.file_name().to_string_lossy().parse().unwrap_or(0);
        match set_affinity(tid, set) {
            // The thread exited since the directory was read (tokio's
            // blocking threads come and go): nothing to pin.
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
            r => r,
        }
        .map_err(|e| {
            Error::io(
                format!(
                    "setting the CPU affinity of thread {tid} to {:?}",
                    cpus_of(set)
                ),
                e,
            )
        })?;
    }
    Ok(())
}

/// Pin every thread of this process (and, by inheritance, threads created
/// later) to `cpu`.
pub fn pin_process_to(cpu: usize) -> Result<()> {
    set_process(&cpu_set(&[cpu]))
}

/// Pins the whole process to one CPU while it lives (the load generator's
/// core); on drop every thread gets back the CPUs the process had when it
/// was pinned (the calling thread's mask then), not simply all CPUs.
pub struct PinGuard {
    /// The CPU pinned to; `None` if this process may not run there (nothing pinned).
    pub cpu: Option<usize>,
    saved: CpuSet,
}

impl PinGuard {
    /// Pin to `cpu` if this process may run there; `cpu: None` in the guard otherwise.
    pub fn pin(cpu: usize) -> Result<Self> {
        let saved = current_set()?;
        if !cpus_of(&saved).contains(&cpu) {
            return Ok(PinGuard { cpu: None, saved });
        }
        pin_process_to(cpu)?;
        Ok(PinGuard {
            cpu: Some(cpu),
            saved,
        })
    }
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        if self.cpu.is_some() {
            let _ = set_process(&self.saved);
        }
    }
}

/// Pin thread `tid` of any process (a `/proc/<pid>/task` entry) to `cpus`.
pub fn pin_thread(tid: i32, cpus: &[usize]) -> std::io::Result<()> {
    set_affinity(tid, &cpu_set(cpus))
}

/// One thread of a process: its id, its name (`comm`) and the CPUs it may
/// run on (`Cpus_allowed_list`, as the kernel writes it: "0", "0-1").
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadPlace {
    pub tid: i32,
    pub name: String,
    pub cpus: String,
}

/// Every thread of process `pid`, in thread-id order (the main thread first).
pub fn threads_of(pid: u32) -> Result<Vec<ThreadPlace>> {
    let dir = format!("/proc/{pid}/task");
    let mut out = Vec::new();
    for t in std::fs::read_dir(&dir)
        .map_err(|e| Error::io(format!("reading {dir}"), e))?
        .flatten()
    {
        let Ok(tid) = t.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        // A thread that exited since the directory was read has no files.
        let Ok(name) = std::fs::read_to_string(t.path().join("comm")) else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(t.path().join("status")) else {
            continue;
        };
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default();
        out.push(ThreadPlace {
            tid,
            name: name.trim().to_string(),
            cpus,
        });
    }
    out.sort_by_key(|t| t.tid);
    Ok(out)
}

/// Make the calling thread real-time (SCHED_FIFO at `priority`, 1-99): it
/// then runs as soon as it is runnable, before any ordinary thread on its
/// CPU. Needs CAP_SYS_NICE (root) and real-time time in the cgroup.
pub fn set_current_fifo(priority: i32) -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param; 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's scheduling policy as the kernel reports it:
/// `fifo:<priority>`, `rr:<priority>` or `other`.
pub fn current_policy() -> String {
    // SAFETY: plain queries of the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    let mut param = libc::sched_param { sched_priority: 0 };
    let _ = unsafe { libc::sched_getparam(0, &mut param) };
    match policy {
        libc::SCHED_FIFO => format!("fifo:{}", param.sched_priority),
        libc::SCHED_RR => format!("rr:{}", param.sched_priority),
        _ => "other".into(),
    }
}

/// CPUs this process's affinity allows (the harness's share of the machine).
pub fn num_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// The CPUs a process may run on (from /proc/<pid>/status), for the manifest.
pub fn allowed_cpus(pid: u32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests change this process's affinity: one at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn the_guard_restores_the_saved_mask() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let saved = current_cpus().unwrap();
        // The last allowed CPU: with two or more, pinning changes the mask.
        let cpu = *saved.last().unwrap();
        {
            let g = PinGuard::pin(cpu).unwrap();
            assert_eq!(g.cpu, Some(cpu));
            assert_eq!(current_cpus().unwrap(), vec![cpu]);
        }
        assert_eq!(current_cpus().unwrap(), saved);
        // A CPU the process may not use: nothing pinned, nothing changed.
        let g = PinGuard::pin(libc::CPU_SETSIZE as usize - 1).unwrap();
        assert_eq!(g.cpu, None);
        drop(g);
        assert_eq!(current_cpus().unwrap(), saved);
    }

    #[test]
    fn a_position_is_the_nth_allowed_cpu_or_an_error_naming_the_set() {
        // Every CPU allowed: position n is CPU n.
        assert_eq!(cpu_at("redis_cpu", 0, &[0, 1]).unwrap(), 0);
        assert_eq!(cpu_at("load_cpu", 1, &[0, 1]).unwrap(), 1);
        // A pod given cores 4 and 6 by the static CPU manager.
        assert_eq!(cpu_at("redis_cpu", 0, &[4, 6]).unwrap(), 4);
        assert_eq!(cpu_at("load_cpu", 1, &[4, 6]).unwrap(), 6);
        // One CPU allowed, position 1 asked for.
        let e = cpu_at("load_cpu", 1, &[1]).unwrap_err().to_string();
        assert!(e.contains("`load_cpu` = 1"), "{e}");
        assert!(e.contains("(1: 1 CPU(s), positions 0 to 0)"), "{e}");
        assert_eq!(cpu_at("probe_cpu", 3, &[2, 3, 4, 8]).unwrap(), 8);
        let e = cpu_at("probe_cpu", 4, &[2, 3, 4, 8])
            .unwrap_err()
            .to_string();
        assert!(e.contains("(2-4,8: 4 CPU(s), positions 0 to 3)"), "{e}");
        assert_eq!(cpu_list(&[0]), "0");
        assert_eq!(cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(cpu_list(&[]), "");
        // This process: position 0 is its first allowed CPU.
        let start = startup_cpus().unwrap();
        assert!(!start.is_empty());
        assert_eq!(resolve_cpu("redis_cpu", 0).unwrap(), start[0]);
        assert!(resolve_cpu("redis_cpu", start.len()).is_err());
    }

    #[test]
    fn pinning_the_current_thread_only_moves_that_thread() {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let saved = current_cpus().unwrap();
        let cpu = saved[0];
        std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            assert_eq!(current_cpus().unwrap(), vec![cpu]);
        })
        .join()
        .unwrap();
        assert_eq!(current_cpus().unwrap(), saved);
    }

    #[test]
    fn a_thread_lists_itself_and_can_be_made_real_time_or_says_why_not() {
        let me = threads_of(std::process::id()).unwrap();
        assert_eq!(me[0].tid as u32, std::process::id(), "{me:?}");
        assert!(me.iter().all(|t| !t.name.is_empty() && !t.cpus.is_empty()));
        std::thread::spawn(|| {
            assert_eq!(current_policy(), "other");
            match set_current_fifo(10) {
                Ok(()) => assert_eq!(current_policy(), "fifo:10"),
                // Not root, or no real-time time in this cgroup: refused, unchanged.
                Err(e) => {
                    assert!(matches!(e.raw_os_error(), Some(libc::EPERM)), "{e}");
                    assert_eq!(current_policy(), "other");
                }
            }
        })
        .join()
        .unwrap();
        // Only that thread was real-time.
        assert_eq!(current_policy(), "other");
    }
}
