//! CPU pinning of the harness itself (the load generator), so that cost
//! experiments can put Redis on one core and the load on the other.

use crate::error::{Error, Result};

/// Pin every thread of this process (and, by inheritance, threads created
/// later) to `cpu`.
pub fn pin_process_to(cpu: usize) -> Result<()> {
    let tasks = std::fs::read_dir("/proc/self/task")
        .map_err(|e| Error::io("reading /proc/self/task", e))?;
    for t in tasks.flatten() {
        let tid: i32 = t.file_name().to_string_lossy().parse().unwrap_or(0);
        set_affinity(tid, &[cpu])?;
    }
    Ok(())
}

/// Undo `pin_process_to`: every thread may run on every CPU.
pub fn unpin_process() -> Result<()> {
    let all: Vec<usize> = (0..num_cpus()).collect();
    let tasks = std::fs::read_dir("/proc/self/task")
        .map_err(|e| Error::io("reading /proc/self/task", e))?;
    for t in tasks.flatten() {
        let tid: i32 = t.file_name().to_string_lossy().parse().unwrap_or(0);
        set_affinity(tid, &all)?;
    }
    Ok(())
}

pub fn num_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn set_affinity(tid: i32, cpus: &[usize]) -> Result<()> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(Error::io(
                format!("pinning thread {tid} to {cpus:?}"),
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(())
}

/// The CPUs a process may run on (from /proc/<pid>/status), for the manifest.
pub fn allowed_cpus(pid: u32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}
