//! Noisy neighbours: these machines are shared, so while a cell runs a
//! sampler thread measures the CPU taken by every process that is not the
//! harness's own, and by the harness's other lanes beside the cell. The
//! sweep engine writes one row per cell (not per trial: the sampler's
//! intervals are about a second, longer than many trials) to `noise.csv`;
//! the analysis warns about cells where another process took more than a
//! tenth of a core.
//!
//! Attribution is by process tree (`run::proctree`): once a second the
//! sampler reads every `/proc/<pid>/stat` (parent, CPU time). A process
//! whose ancestry leads to the harness root (this process: its
//! redis-servers, redis-benchmark, any child of theirs) is the harness's
//! own; every other process is other (`other_cpu_cores_*`,
//! `busiest_other`). A process born inside an interval counts all its CPU
//! time; one that exits inside an interval loses its last moments.
//!
//! Lanes: a lane is one concurrent run of an experiment (`--parallel N`,
//! [`lane`]). A lane registers its run's start and end, and every process
//! it starts through the reaper is recorded as its (`reaper::as_owner`).
//! For a cell, `beside_lanes` counts the other lanes whose run overlapped
//! the cell, and `beside_lanes_cpu_cores_mean` is the CPU of the processes
//! those lanes started (their redis-servers and their children) plus their
//! share of the harness process's own CPU. That process's threads serve
//! every lane on one runtime (clients, in-process delay proxies, timers),
//! so its CPU cannot be told apart per lane: it is split evenly between the
//! lanes that ran in the interval (an estimate; how late that runtime ran
//! is measured per trial by `schedule.csv`'s slip). A process the harness
//! starts outside the reaper (redis-benchmark) is its own but no lane's,
//! and counts with the harness process. Alone, a cell's beside figures
//! are 0.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use limitbench_analysis::rows::NoiseRow;

use super::proctree;
use limitbench_core::fleet::reaper;

#[derive(Clone)]
struct Interval {
    /// When the interval ended.
    end: Instant,
    seconds: f64,
    other_cores: f64,
    /// The machine's stolen time ([`proctree::steal_ticks`]) over the
    /// interval, in cores (0 where the kernel does not report it).
    steal_cores: f64,
    busiest: Option<(String, f64)>,
    /// CPU of the processes each lane started, in cores.
    lanes: BTreeMap<String, f64>,
    /// CPU of the harness's own processes that no lane started (the
    /// harness process itself: every lane's clients, proxies, timers).
    harness: f64,
    /// The lanes that ran at some time during the interval.
    active: Vec<String>,
}

/// A running sampler; `stop_spans` returns what it saw.
pub struct NoiseSampler {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
    handle: Option<JoinHandle<()>>,
    /// The lane this sampler's cells run in (none: beside every lane).
    own_lane: Option<String>,
    /// The harness process.
    root: u32,
}

/// What the sampler thread has seen, behind one lock so that a reader
/// never counts a stretch of time twice.
#[derive(Default)]
struct Seen {
    /// Every interval so far, oldest first (about one per second of a run).
    intervals: Vec<Interval>,
    /// The last reading: where the next interval starts.
    latest: Option<Reading>,
}

/// What the sampler reads at one moment: every process, and the machine's
/// stolen time.
#[derive(Clone)]
struct Reading {
    at: Instant,
    procs: proctree::Snapshot,
    steal_ticks: Option<u64>,
}

impl Reading {
    fn now() -> Reading {
        let procs = proctree::snapshot();
        let steal_ticks = proctree::steal_ticks();
        Reading {
            at: Instant::now(),
            procs,
            steal_ticks,
        }
    }
}

/// Others' and the other lanes' CPU during one trial ([`NoiseSampler::during`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrialNoise {
    /// CPU of processes that are not the harness's, in cores.
    pub other_cores: f64,
    /// CPU of the harness's other lanes, in cores.
    pub beside_cores: f64,
    /// The machine's stolen time (the hypervisor running another guest
    /// while this one's CPUs waited), in cores.
    pub steal_cores: f64,
    /// The other process that took the most, "name (pid) cores".
    pub busiest: String,
    /// The seconds the figures cover (at least [`MIN_TRIAL_WINDOW`]).
    pub seconds: f64,
}

/// The shortest stretch a trial's figures cover: CPU times come in 10 ms
/// ticks, so a shorter trial is judged on the second that ends with it.
pub const MIN_TRIAL_WINDOW: Duration = Duration::from_secs(1);

/// A cell's id and when it started and ended.
pub type Span = (String, Instant, Instant);

/// Every lane run so far: label, start, end (none: running).
static LANES: Mutex<Vec<(String, Instant, Option<Instant>)>> = Mutex::new(Vec::new());

/// Ends a lane's entry in [`LANES`] when dropped.
struct LaneGuard(usize);

impl Drop for LaneGuard {
    fn drop(&mut self) {
        if let Ok(mut v) = LANES.lock()
            && let Some(e) = v.get_mut(self.0)
        {
            e.2 = Some(Instant::now());
        }
    }
}

/// Run `fut` as the lane `label` (unique among lanes that may overlap):
/// its start and end are recorded, and every process it starts through the
/// reaper is the lane's.
pub async fn lane<F: std::future::Future>(label: String, fut: F) -> F::Output {
    let i = {
        let mut v = LANES.lock().unwrap_or_else(|p| p.into_inner());
        v.push((label.clone(), Instant::now(), None));
        v.len() - 1
    };
    let _guard = LaneGuard(i);
    reaper::as_owner(label, fut).await
}

/// The lanes that ran at some time in `[start, end]` (one entry per run).
fn lanes_during(start: Instant, end: Instant) -> Vec<String> {
    let v = LANES.lock().unwrap_or_else(|p| p.into_inner());
    v.iter()
        .filter(|(_, s, e)| *s < end && e.is_none_or(|e| e > start))
        .map(|(l, _, _)| l.clone())
        .collect()
}

/// How many lanes other than `own` ran at some time in `[start, end]`.
fn lanes_beside(own: Option<&str>, start: Instant, end: Instant) -> u64 {
    let during = lanes_during(start, end);
    during.iter().filter(|l| Some(l.as_str()) != own).count() as u64
}

/// The interval between two readings, `root` being the harness.
fn interval(prev: &Reading, cur: &Reading, root: u32) -> Interval {
    let (start, end) = (prev.at, cur.at);
    let seconds = (end - start).as_secs_f64();
    let s = proctree::split(&prev.procs, &cur.procs, seconds, root, &reaper::owners());
    let steal_cores = match (prev.steal_ticks, cur.steal_ticks) {
        (Some(a), Some(b)) if seconds > 0.0 => {
            b.saturating_sub(a) as f64 / proctree::ticks_per_second() / seconds
        }
        _ => 0.0,
    };
    let other_cores = s.others.iter().map(|x| x.2).sum();
    let busiest = s
        .others
        .into_iter()
        .filter(|x| x.2 > 0.0)
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(pid, name, c)| (format!("{name} ({pid})"), c));
    Interval {
        end,
        seconds,
        other_cores,
        steal_cores,
        busiest,
        lanes: s.lanes,
        harness: s.harness,
        active: lanes_during(start, end),
    }
}

/// The CPU of the lanes beside `own` in one interval: what their processes
/// took, and the share of the harness process's own CPU that is theirs,
/// split evenly between the lanes that ran in the interval (the process's
/// threads serve every lane on one runtime; an even split is an estimate).
fn beside_cores(i: &Interval, own: Option<&str>) -> f64 {
    let processes = i
        .lanes
        .iter()
        .filter(|(l, _)| Some(l.as_str()) != own)
        // (not `sum`: an empty sum of floats is -0.0)
        .fold(0.0, |a, (_, c)| a + c);
    let n = i.active.iter().filter(|l| Some(l.as_str()) != own).count() as f64;
    processes + i.harness * n / (n + 1.0)
}

impl NoiseSampler {
    /// Start sampling (a thread; it never touches the measured path), with
    /// this process as the harness and the current task's lane as its own.
    pub fn start() -> Self {
        Self::start_for(std::process::id(), reaper::current_owner())
    }

    /// Start sampling with `root` as the harness process and `own_lane` as
    /// the lane of the cells it will summarise.
    pub fn start_for(root: u32, own_lane: Option<String>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let first = Reading::now();
        let seen = Arc::new(Mutex::new(Seen {
            intervals: Vec::new(),
            latest: Some(first.clone()),
        }));
        let out = seen.clone();
        let handle = std::thread::Builder::new()
            .name("limitbench-noise".into())
            .spawn(move || {
                let mut prev = first;
                loop {
                    let stopping = wait_or_stop(&flag, Duration::from_secs(1));
                    // CPU times are in clock ticks (10 ms): a short last
                    // interval waits, to read more than a few ticks.
                    let min = Duration::from_millis(250);
                    if prev.at.elapsed() < min {
                        std::thread::sleep(min - prev.at.elapsed());
                    }
                    let cur = Reading::now();
                    let i = interval(&prev, &cur, root);
                    if let Ok(mut v) = out.lock() {
                        v.intervals.push(i);
                        v.latest = Some(cur.clone());
                    }
                    prev = cur;
                    if stopping {
                        return;
                    }
                }
            })
            .ok();
        NoiseSampler {
            stop,
            seen,
            handle,
            own_lane,
            root,
        }
    }

    fn intervals(&self) -> Vec<Interval> {
        self.seen
            .lock()
            .map(|v| v.intervals.clone())
            .unwrap_or_default()
    }

    /// Others' and the other lanes' CPU during a trial that ran from
    /// `start` to `end` (now, or a moment ago): the sampler's intervals
    /// that overlap it, and a snapshot taken now for the stretch since the
    /// last one, each weighted by its length. A trial shorter than
    /// [`MIN_TRIAL_WINDOW`] is judged on the window that ends with it.
    pub async fn during(&self, start: Instant, end: Instant) -> TrialNoise {
        let from = start.min(end.checked_sub(MIN_TRIAL_WINDOW).unwrap_or(start));
        let (mut over, latest) = {
            let Ok(v) = self.seen.lock() else {
                return TrialNoise::default();
            };
            let over: Vec<Interval> = v
                .intervals
                .iter()
                .rev()
                .take_while(|i| i.end > from)
                .cloned()
                .collect();
            (over, v.latest.clone())
        };
        // CPU times come in 10 ms ticks: a window that began less than a
        // quarter second ago (the sampler just started) is waited out.
        let covered_from = over
            .last()
            .map(|i| i.end - Duration::from_secs_f64(i.seconds))
            .or(latest.as_ref().map(|l| l.at));
        if let Some(f) = covered_from {
            let min = Duration::from_millis(250);
            if f.elapsed() < min {
                tokio::time::sleep(min - f.elapsed()).await;
            }
        }
        let snap = tokio::task::spawn_blocking(Reading::now).await;
        if let (Ok(cur), Some(prev)) = (snap, latest)
            && cur.at > prev.at
        {
            over.push(interval(&prev, &cur, self.root));
        }
        let seconds = over.iter().map(|i| i.seconds).sum();
        let row = summarise("", "", seconds, &over, self.own_lane.as_deref());
        TrialNoise {
            other_cores: row.other_cpu_cores_mean,
            beside_cores: row.beside_lanes_cpu_cores_mean,
            steal_cores: row.steal_cores_mean,
            busiest: row.busiest_other,
            seconds,
        }
    }

    fn finish(mut self) -> Vec<Interval> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.intervals()
    }

    /// The rows of the spans the sampler has already seen to their end
    /// (an interval ended after them), removed from `spans`; the others
    /// wait for a later call or [`stop_spans`](Self::stop_spans).
    pub fn take_ready(&self, experiment: &str, spans: &mut Vec<Span>) -> Vec<NoiseRow> {
        let intervals = self.intervals();
        let Some(latest) = intervals.last().map(|i| i.end) else {
            return Vec::new();
        };
        let (ready, waiting): (Vec<Span>, Vec<Span>) = spans.drain(..).partition(|s| s.2 <= latest);
        *spans = waiting;
        summarise_spans(experiment, &ready, &intervals, self.own_lane.as_deref())
    }

    /// Stop, and summarise each `(cell, start, end)` span from the sampling
    /// intervals that overlap it. One sampler runs for a whole experiment,
    /// because a process's CPU is only measured between refreshes at least
    /// ~0.2 s apart: a cell shorter than a second gets the second around it.
    pub fn stop_spans(self, experiment: &str, spans: &[Span]) -> Vec<NoiseRow> {
        let own = self.own_lane.clone();
        let intervals = self.finish();
        summarise_spans(experiment, spans, &intervals, own.as_deref())
    }
}

/// Each span's row from the intervals that overlap it.
fn summarise_spans(
    experiment: &str,
    spans: &[Span],
    intervals: &[Interval],
    own_lane: Option<&str>,
) -> Vec<NoiseRow> {
    spans
        .iter()
        .map(|(cell, start, end)| {
            let over: Vec<Interval> = intervals
                .iter()
                .filter(|i| {
                    let i_start = i.end - std::time::Duration::from_secs_f64(i.seconds);
                    i.end > *start && i_start < *end
                })
                .cloned()
                .collect();
            let mut row = summarise(
                experiment,
                cell,
                (*end - *start).as_secs_f64(),
                &over,
                own_lane,
            );
            row.beside_lanes = lanes_beside(own_lane, *start, *end);
            row
        })
        .collect()
}

/// A row of `noise.csv` as written before the lane columns: a resumed run
/// whose table has that header goes on in that shape (one table, one
/// shape; the analysis reads the missing columns as 0).
#[derive(Debug, serde::Serialize)]
pub struct NoiseRowWithoutLanes {
    pub experiment: String,
    pub cell: String,
    pub seconds: f64,
    pub other_cpu_cores_mean: f64,
    pub other_cpu_cores_max: f64,
    pub busiest_other: String,
}

/// Whether the table at `path` takes rows with the lane columns: it is new
/// (missing or empty) or its header has them.
pub fn takes_lane_columns(path: &std::path::Path) -> bool {
    use std::io::BufRead;
    let Ok(f) = std::fs::File::open(path) else {
        return true;
    };
    let mut header = String::new();
    let _ = std::io::BufReader::new(f).read_line(&mut header);
    header.trim().is_empty() || header.contains("beside_lanes")
}

/// `rows` in the shape of a table written before the lane columns.
pub fn without_lanes(rows: &[NoiseRow]) -> Vec<NoiseRowWithoutLanes> {
    rows.iter()
        .map(|r| NoiseRowWithoutLanes {
            experiment: r.experiment.clone(),
            cell: r.cell.clone(),
            seconds: r.seconds,
            other_cpu_cores_mean: r.other_cpu_cores_mean,
            other_cpu_cores_max: r.other_cpu_cores_max,
            busiest_other: r.busiest_other.clone(),
        })
        .collect()
}

/// Others' CPU on the machine over the next `d` (the preflight of a run):
/// the cores every process that is not this one's (or its children's)
/// took, and the busiest of them, "name (pid) cores".
pub async fn others_now(d: Duration) -> (f64, String) {
    let root = std::process::id();
    let run = tokio::task::spawn_blocking(move || {
        let prev = Reading::now();
        std::thread::sleep(d);
        interval(&prev, &Reading::now(), root)
    })
    .await;
    match run {
        Ok(i) => (
            i.other_cores,
            i.busiest
                .map(|(n, c)| format!("{n} {c:.2}"))
                .unwrap_or_default(),
        ),
        Err(_) => (0.0, String::new()),
    }
}

/// Sleep up to `d`, waking early when asked to stop; true if stopping.
fn wait_or_stop(flag: &AtomicBool, d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if flag.load(Ordering::Relaxed) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    flag.load(Ordering::Relaxed)
}

/// A cell's row from the intervals over it (`beside_lanes` is the caller's).
fn summarise(
    experiment: &str,
    cell: &str,
    seconds: f64,
    iv: &[Interval],
    own_lane: Option<&str>,
) -> NoiseRow {
    let span: f64 = iv.iter().map(|i| i.seconds).sum();
    let mean_of = |f: &dyn Fn(&Interval) -> f64| {
        if span > 0.0 {
            iv.iter().map(|i| f(i) * i.seconds).sum::<f64>() / span
        } else {
            0.0
        }
    };
    let mean = mean_of(&|i| i.other_cores);
    let beside = mean_of(&|i| beside_cores(i, own_lane));
    let steal = mean_of(&|i| i.steal_cores);
    let max = iv.iter().map(|i| i.other_cores).fold(0.0, f64::max);
    let busiest = iv
        .iter()
        .filter_map(|i| i.busiest.clone())
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(n, c)| format!("{n} {c:.2}"))
        .unwrap_or_default();
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    NoiseRow {
        experiment: experiment.into(),
        cell: cell.into(),
        seconds: r3(seconds),
        other_cpu_cores_mean: r3(mean),
        other_cpu_cores_max: r3(max),
        busiest_other: busiest,
        beside_lanes_cpu_cores_mean: r3(beside),
        beside_lanes: 0,
        steal_cores_mean: r3(steal),
    }
}

#[cfg(test)]
mod tests;
