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
}
