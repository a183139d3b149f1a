//! The processes of the machine as a tree, from `/proc/<pid>/stat`: each
//! process's parent and CPU time, read once per noise sample
//! (`run::noise`). Between two snapshots each process's CPU is split by
//! ancestry: a process whose parents lead to the harness root (the harness
//! process itself, its redis-servers, its redis-benchmark, any child of
//! theirs) is the harness's own; every other process is other. Among the
//! harness's own, a process started by a lane (`reaper::owners`), or a
//! descendant of one, is that lane's.

use std::collections::{BTreeMap, HashMap};

/// One process as `/proc/<pid>/stat` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Proc {
    pub ppid: u32,
    pub name: String,
    /// User plus system CPU time of all its threads, in clock ticks.
    pub ticks: u64,
    /// When it started, in clock ticks after boot (tells a reused pid apart).
    pub start: u64,
}

/// Every process readable at one moment, by pid.
pub type Snapshot = HashMap<u32, Proc>;

/// One line of `/proc/<pid>/stat`: `pid (comm) state ppid ...`, where comm
/// may hold spaces and parentheses (the last `)` ends it).
pub fn parse_stat(text: &str) -> Option<(u32, Proc)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let name = text.get(open + 1..close)?.to_string();
    // Fields from the 3rd (state) on; utime and stime are the 14th and
    // 15th, starttime the 22nd (proc(5)).
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some((
        pid,
        Proc {
            ppid: field(4)? as u32,
            name,
            ticks: field(14)? + field(15)?,
            start: field(22)?,
        },
    ))
}

/// The processes now. A process that exits while it is read is left out;
/// nothing here fails.
pub fn snapshot() -> Snapshot {
    let mut out = Snapshot::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((p, proc_)) = parse_stat(&text) {
            out.insert(p, proc_);
        }
    }
    out
}

/// The machine's stolen time so far, in clock ticks summed over its CPUs:
/// time a CPU of this guest was ready to run while the hypervisor ran
/// another (`/proc/stat`'s `cpu` line, its 8th value; proc(5)). None where
/// the kernel does not report it. No process's CPU time shows it, so the
/// process tree alone cannot see a machine disturbed from outside.
pub fn steal_ticks() -> Option<u64> {
    parse_steal(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// The steal value of `/proc/stat`'s text ([`steal_ticks`]).
pub fn parse_steal(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    // cpu user nice system idle iowait irq softirq steal guest guest_nice
    line.split_whitespace().nth(8)?.parse().ok()
}

/// Clock ticks per second (`/proc` times are in these).
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// Whose a process is.
#[derive(Debug, Clone, PartialEq)]
pub enum Owner {
    /// Not descended from the harness root.
    Other,
    /// The harness's own, started by no lane (the root itself, or a child
    /// started outside a lane).
    Harness,
    /// The harness's own, started (itself or an ancestor) by this lane.
    Lane(String),
}

/// Servers the run measures that it did not start (`--redis-url` on this
/// machine): their CPU is what the run measures, not noise.
static MEASURED: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Count `pid` (a server the user runs on this machine, which the run
/// measures) and its children as the harness's own.
pub fn measured_server(pid: u32) {
    let mut m = MEASURED.lock().unwrap_or_else(|p| p.into_inner());
    if !m.contains(&pid) {
        m.push(pid);
    }
}

/// What `pid` is: walk its parents up to the root or a measured server
/// (its own) or to a process without a known parent (other). The nearest
/// ancestor that a lane started names the lane.
pub fn owner_of(pid: u32, snap: &Snapshot, root: u32, lanes: &BTreeMap<u32, String>) -> Owner {
    let measured = MEASURED.lock().map(|m| m.clone()).unwrap_or_default();
    owner_with(pid, snap, root, &measured, lanes)
}

fn owner_with(
    pid: u32,
    snap: &Snapshot,
    root: u32,
    measured: &[u32],
    lanes: &BTreeMap<u32, String>,
) -> Owner {
    let mut p = pid;
    let mut lane: Option<&String> = None;
    // A bound on the walk: a pid reused inside a snapshot could make a loop.
    for _ in 0..4096 {
        if lane.is_none() {
            lane = lanes.get(&p);
        }
        if p == root || measured.contains(&p) {
            return match lane {
                Some(l) => Owner::Lane(l.clone()),
                None => Owner::Harness,
            };
        }
        match snap.get(&p) {
            Some(x) if x.ppid != 0 && x.ppid != p => p = x.ppid,
            _ => return Owner::Other,
        }
    }
    Owner::Other
}

/// The CPU of one interval between two snapshots, in cores.
#[derive(Debug, Clone, Default)]
pub struct Split {
    /// Each other process: pid, name, cores.
    pub others: Vec<(u32, String, f64)>,
    /// The harness's own processes started by no lane (the root included).
    pub harness: f64,
    /// The processes each lane started, and their children.
    pub lanes: BTreeMap<String, f64>,
}

/// Split the CPU used between `prev` and `cur` (`seconds` apart). A process
/// in both counts its growth; a process born in between counts all its
/// time (it was born in the interval); one that exited in between is not
/// seen (its last moments are lost).
pub fn split(
    prev: &Snapshot,
    cur: &Snapshot,
    seconds: f64,
    root: u32,
    lanes: &BTreeMap<u32, String>,
) -> Split {
    let mut out = Split::default();
    if seconds <= 0.0 {
        return out;
    }
    let per_tick = 1.0 / ticks_per_second() / seconds;
    let measured = MEASURED.lock().map(|m| m.clone()).unwrap_or_default();
    for (&pid, p) in cur {
        let ticks = match prev.get(&pid) {
            Some(q) if q.start == p.start => p.ticks.saturating_sub(q.ticks),
            _ => p.ticks,
        };
        let cores = ticks as f64 * per_tick;
        match owner_with(pid, cur, root, &measured, lanes) {
            Owner::Other => out.others.push((pid, p.name.clone(), cores)),
            Owner::Harness => out.harness += cores,
            Owner::Lane(l) => *out.lanes.entry(l).or_default() += cores,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_value_of_the_cpu_line() {
        let text =
            "cpu  4322591 0 604998 9103858 17714 0 163741 48187 0 0\ncpu0 1 2 3 4 5 6 7 99 0 0\n";
        assert_eq!(parse_steal(text), Some(48187));
        // An old kernel's line without steal, and no cpu line at all.
        assert_eq!(parse_steal("cpu  1 2 3 4 5 6 7\n"), None);
        assert_eq!(parse_steal("intr 5\n"), None);
        // This machine's own /proc/stat is read.
        assert!(steal_ticks().is_some());
    }

    #[test]
    fn a_stat_line_with_spaces_and_parentheses_in_its_name_is_read() {
        let line = "4242 (tmux: server (x)) S 1 4242 4242 0 -1 4194560 1 0 0 0 \
                    30 12 0 0 20 0 1 0 777 1000 10 18446744073709551615";
        let (pid, p) = parse_stat(line).unwrap();
        assert_eq!(pid, 4242);
        assert_eq!(p.name, "tmux: server (x)");
        assert_eq!((p.ppid, p.ticks, p.start), (1, 42, 777));
        assert!(parse_stat("12 (cut").is_none());
        let me = snapshot();
        let own = me.get(&std::process::id()).expect("this process is listed");
        assert!(own.ppid > 0);
    }

    #[test]
    fn ancestry_decides_whose_a_process_is() {
        let p = |ppid: u32| Proc {
            ppid,
            name: String::new(),
            ticks: 0,
            start: 0,
        };
        // 1 init; 10 harness; 11 its server (lane a); 12 a child of the
        // server; 13 redis-benchmark (no lane); 20 an unrelated shell.
        let snap: Snapshot = [
            (1, p(0)),
            (10, p(1)),
            (11, p(10)),
            (12, p(11)),
            (13, p(10)),
            (20, p(1)),
        ]
        .into_iter()
        .collect();
        let lanes: BTreeMap<u32, String> = [(11, "a".to_string())].into_iter().collect();
        assert_eq!(owner_of(10, &snap, 10, &lanes), Owner::Harness);
        assert_eq!(owner_of(12, &snap, 10, &lanes), Owner::Lane("a".into()));
        assert_eq!(owner_of(13, &snap, 10, &lanes), Owner::Harness);
        assert_eq!(owner_of(20, &snap, 10, &lanes), Owner::Other);
        assert_eq!(owner_of(1, &snap, 10, &lanes), Owner::Other);
        // A process that exited: its orphan's parent is unknown.
        assert_eq!(owner_of(99, &snap, 10, &lanes), Owner::Other);
        // A server the run measures but did not start is its own.
        assert_eq!(owner_with(20, &snap, 10, &[20], &lanes), Owner::Harness);
    }
}
