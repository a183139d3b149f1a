//! Running latency-bound experiments side by side.
//!
//! Most of a full run waits: 6.7 ms round trips through the delay proxy,
//! real windows in bursts and skew, Poisson streams. Each experiment
//! declares whether its cells are CPU-bound (the cost hot loop, memory,
//! stalls, concurrency at 0 ms, ts-member's closed loop: run alone) or
//! latency-bound with a bound on how late its schedule may run
//! ([`Bound`]). `limitbench run --parallel N` runs the CPU-bound
//! experiments alone and splits each latency-bound one into N lanes (its
//! cells round robin, as shards split a run: `RunContext::lane`), running N
//! lanes at a time ([`n_at_a_time`]); each lane is the experiment's own run
//! over its cells, so it has its own redis-servers, keys and proxies.
//! Lanes append to the same tables (`record.rs` decides the header at the
//! append and prepares a table once per process).
//!
//! What ran beside what, how late the schedule ran and how much CPU other
//! processes took are recorded per trial in `schedule.csv` (also in a
//! sequential run, so the two can be compared). A cell's work (its setup,
//! each trial, its teardown) runs in turns ([`InFlight::turn`]): the cells
//! beside a trial are those that held a turn at some time during it, not
//! those merely in flight. [`SlipProbe`] measures how late a 1 ms timer
//! fires on the harness's runtime during the trial, the lateness any timed
//! send of the trial could have had, and the noise sampler (`run::noise`)
//! the CPU others took. A trial past its experiment's bounds (the slip,
//! [`Bound`]; others' CPU, the registry's `others_max_cores`) is disturbed
//! (`run::sweep::disturbance`). A disturbed trial of a latency-bound
//! experiment that had other cells beside it is not committed and is
//! redone on fresh keys; its last attempt runs alone: it takes the turn
//! alone, so no other cell's trial, setup or teardown runs during it. A
//! trial still disturbed then (or disturbed with nothing beside it) is
//! committed with its reason, and the analysis judges nothing on its cell.
//!
//! The noise sampler counts the harness's process tree (its servers,
//! redis-benchmark, any child) as its own, not as noise, and reports the
//! other lanes beside each cell separately: each lane runs in
//! `run::noise::lane`, which records its start and end and the processes
//! it starts (`noise.csv`: `beside_lanes`, `beside_lanes_cpu_cores_mean`).

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use serde::Serialize;

/// How an experiment's cells use the machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Bound {
    /// Timing depends on CPU: runs alone.
    Cpu,
    /// Mostly waiting: may run beside other latency-bound experiments, as
    /// long as the harness's timers fire at most `max_slip_ms` late during
    /// a trial (else the trial is redone). Such an experiment must make its
    /// keys with `RunContext::fresh_client` or `unique_client`, so a redo
    /// writes fresh keys (`run::keys::fresh_client` called directly gives
    /// the redo the first attempt's spent keys).
    Latency { max_slip_ms: f64 },
}

/// Which cells of an experiment that declares CPU-bound cells
/// ([`crate::experiments::Experiment::cpu_cells`]) a run of it takes: the
/// CPU-bound ones run alone before the lanes, the rest in lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Cpu,
    Latency,
}

impl Part {
    /// Whether the cell `id` is this part's, given the experiment's test.
    pub fn holds(self, is_cpu: fn(&str) -> bool, id: &str) -> bool {
        is_cpu(id) == (self == Part::Cpu)
    }
}

/// The test both concurrency and retries use: a cell at no added round trip
/// (`rtt0` among the id's `/`-parts) is CPU-bound, the delayed ones wait.
pub fn cells_at_rtt0(id: &str) -> bool {
    id.split('/').any(|p| p == "rtt0")
}

impl Bound {
    pub fn label(&self) -> &'static str {
        match self {
            Bound::Cpu => "cpu",
            Bound::Latency { .. } => "latency",
        }
    }
}

pub use limitbench_analysis::rows::{SCHEDULE_CSV, ScheduleRow};

static NEXT_ID: AtomicU64 = AtomicU64::new(0);
/// Cells in flight (from their setup to their teardown), for the progress display.
static IN_FLIGHT: Mutex<BTreeMap<u64, (String, String)>> = Mutex::new(BTreeMap::new());
/// Cells holding a turn now (running a trial, a setup or a teardown).
static ACTIVE: Mutex<BTreeMap<u64, String>> = Mutex::new(BTreeMap::new());
/// Every cell (`experiment/cell`) that held a turn since each open trial began.
static SEEN: Mutex<BTreeMap<u64, Vec<String>>> = Mutex::new(BTreeMap::new());

fn lock<T>(m: &'static Mutex<T>) -> std::sync::MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A cell in flight, until dropped. Its work (setup, trials, teardown) runs
/// in turns ([`InFlight::turn`]); what ran beside one of its trials is the
/// other cells that held a turn at some time during it. A cell that is in
/// flight but waits (between trials, or for its turn) is not beside.
pub struct InFlight {
    id: u64,
    label: String,
}

impl InFlight {
    pub fn start(experiment: &str, cell: &str) -> Self {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        lock(&IN_FLIGHT).insert(id, (experiment.to_string(), cell.to_string()));
        InFlight {
            id,
            label: format!("{experiment}/{cell}"),
        }
    }

    /// Wait for a turn to work (a trial, a setup, a teardown): beside
    /// others, or `alone` (the last attempt of a trial disturbed beside
    /// other cells: it waits for every turn held now and keeps new ones
    /// out). While held, the cell is beside every trial that is open.
    pub async fn turn(&self, alone: bool) -> Turn {
        let gate = if alone {
            Gate::Alone(TRIAL_GATE.write().await)
        } else {
            Gate::Shared(TRIAL_GATE.read().await)
        };
        lock(&ACTIVE).insert(self.id, self.label.clone());
        for (id, seen) in lock(&SEEN).iter_mut() {
            if *id != self.id && !seen.contains(&self.label) {
                seen.push(self.label.clone());
            }
        }
        Turn {
            id: self.id,
            _gate: gate,
        }
    }

    /// A trial of this cell begins (inside its turn): start collecting the
    /// other cells that hold a turn during it.
    pub fn trial_begins(&self) {
        let now: Vec<String> = lock(&ACTIVE)
            .iter()
            .filter(|(id, _)| **id != self.id)
            .map(|(_, l)| l.clone())
            .collect();
        lock(&SEEN).insert(self.id, now);
    }

    /// The trial ended: the other cells (of other experiments, or of other
    /// lanes of this one) that held a turn at some time during it.
    pub fn trial_ends(&self) -> Vec<String> {
        lock(&SEEN).remove(&self.id).unwrap_or_default()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&IN_FLIGHT).remove(&self.id);
        lock(&SEEN).remove(&self.id);
    }
}

/// Work holds this gate while it runs: shared, or alone for the last
/// attempt of a trial disturbed beside other cells (the writer waits for
/// the turns held now and keeps new ones out; tokio's lock is fair, so it
/// is not starved).
static TRIAL_GATE: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

enum Gate {
    Shared(#[allow(dead_code)] tokio::sync::RwLockReadGuard<'static, ()>),
    Alone(#[allow(dead_code)] tokio::sync::RwLockWriteGuard<'static, ()>),
}

/// A cell's turn, released when dropped.
pub struct Turn {
    id: u64,
    _gate: Gate,
}

impl Drop for Turn {
    fn drop(&mut self) {
        lock(&ACTIVE).remove(&self.id);
    }
}

/// The cells in flight now, `experiment/cell`, for the progress display.
pub fn in_flight() -> Vec<String> {
    lock(&IN_FLIGHT)
        .values()
        .map(|(e, c)| format!("{e}/{c}"))
        .collect()
}

/// How late the harness's timers fired during a trial: a 1 ms tokio timer
/// re-armed for as long as the probe lives, its lateness binned in 100 us
/// steps. The max is what one hiccup gives (a sequential run on this
/// machine sees 4-12 ms of it in many trials, from the scheduler alone);
/// the 99th percentile is how late a timed send usually ran, and is what
/// the bound is checked against.
pub struct SlipProbe {
    bins: Arc<Vec<AtomicU64>>,
    max_us: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// Lateness bins of [`SlipProbe`]: 100 us each; the last takes the rest.
const SLIP_BIN_US: u64 = limitbench_analysis::rows::SLIP_RESOLUTION_US;
const SLIP_BINS: usize = 1001;

/// What [`SlipProbe::take`] saw since the last call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Slip {
    /// Largest lateness (us).
    pub max_us: u64,
    /// 99th percentile of lateness (us, to the bin's upper edge).
    pub p99_us: u64,
    /// Timer firings seen.
    pub ticks: u64,
}

impl SlipProbe {
    pub fn start() -> Self {
        let bins: Arc<Vec<AtomicU64>> =
            Arc::new((0..SLIP_BINS).map(|_| AtomicU64::new(0)).collect());
        let max_us = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (b, m, s) = (bins.clone(), max_us.clone(), stop.clone());
        tokio::spawn(async move {
            let tick = Duration::from_millis(1);
            while !s.load(Ordering::Relaxed) {
                let t = Instant::now();
                tokio::time::sleep(tick).await;
                let late = t.elapsed().saturating_sub(tick).as_micros() as u64;
                m.fetch_max(late, Ordering::Relaxed);
                let i = ((late / SLIP_BIN_US) as usize).min(SLIP_BINS - 1);
                b[i].fetch_add(1, Ordering::Relaxed);
            }
        });
        SlipProbe { bins, max_us, stop }
    }

    /// The lateness since the last call, and reset.
    pub fn take(&self) -> Slip {
        let counts: Vec<u64> = self
            .bins
            .iter()
            .map(|b| b.swap(0, Ordering::Relaxed))
            .collect();
        let max_us = self.max_us.swap(0, Ordering::Relaxed);
        slip_of(&counts, max_us)
    }
}

impl Slip {
    /// The longest single stall a trial beside others may have: ten times
    /// the bound, at least 50 ms (a sequential run on this machine shows up
    /// to about 12 ms in one firing). Past it the runtime stood still for
    /// a noticeable part of the trial, whatever the percentile says.
    pub fn stall_limit_us(bound_us: u64) -> u64 {
        (bound_us * 10).max(50_000)
    }

    /// Within the bound: the 99th percentile's bin not wholly past `bound_us`, and no
    /// single stall past [`Slip::stall_limit_us`].
    pub fn within(&self, bound_us: u64) -> bool {
        // The p99 is its bin's upper edge: past the bound only when the
        // bin's lower edge is (limitbench_analysis::rows::SLIP_RESOLUTION_US).
        self.p99_us <= bound_us + SLIP_BIN_US && self.max_us <= Self::stall_limit_us(bound_us)
    }
}

/// The percentile and count of a lateness histogram (bins of [`SLIP_BIN_US`]).
fn slip_of(counts: &[u64], max_us: u64) -> Slip {
    let ticks: u64 = counts.iter().sum();
    let want = (ticks as f64 * 0.99).ceil() as u64;
    let mut seen = 0;
    let mut p99_us = 0;
    for (i, c) in counts.iter().enumerate() {
        seen += c;
        if seen >= want && ticks > 0 {
            p99_us = ((i as u64 + 1) * SLIP_BIN_US).min(max_us.max(SLIP_BIN_US));
            break;
        }
    }
    Slip {
        max_us,
        p99_us,
        ticks,
    }
}

impl Drop for SlipProbe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How many lanes run at once by default: four per core the other processes
/// leave free, at least 1 and at most 8. Lanes mostly wait (a smoke run of
/// every experiment used 0.2 of a core on average), and a trial whose timers
/// ran late beside other lanes is redone (its last attempt alone), so too
/// many lanes cost redos, not wrong rows; `schedule.csv` counts the redos.
/// `others_cores` is what the noise sampler saw other processes take.
pub fn default_parallel(cores: usize, others_cores: f64) -> usize {
    let free = (cores as f64 - others_cores).max(0.0);
    ((free * 4.0).floor() as usize).clamp(1, 8)
}

pub type Job<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Run `jobs` at most `n` at a time on this task, in order of start;
/// results in the order the jobs finished.
pub async fn n_at_a_time<'a, T>(n: usize, jobs: Vec<Job<'a, T>>) -> Vec<T> {
    let mut queue: VecDeque<Job<'a, T>> = jobs.into();
    let mut running: Vec<Job<'a, T>> = Vec::new();
    let mut done = Vec::new();
    std::future::poll_fn(|cx| {
        loop {
            while running.len() < n.max(1) {
                match queue.pop_front() {
                    Some(j) => running.push(j),
                    None => break,
                }
            }
            let mut finished = false;
            let mut i = 0;
            while i < running.len() {
                if let Poll::Ready(v) = running[i].as_mut().poll(cx) {
                    done.push(v);
                    drop(running.swap_remove(i));
                    finished = true;
                } else {
                    i += 1;
                }
            }
            if running.is_empty() && queue.is_empty() {
                return Poll::Ready(());
            }
            // A job finished: start the next ones now, not on the next wake.
            if !finished {
                return Poll::Pending;
            }
        }
    })
    .await;
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn at_most_n_jobs_run_at_once_and_all_finish() {
        let running = Arc::new(AtomicU64::new(0));
        let peak = Arc::new(AtomicU64::new(0));
        let jobs: Vec<Job<'_, u64>> = (0..7)
            .map(|i| {
                let (r, p) = (running.clone(), peak.clone());
                Box::pin(async move {
                    let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                    p.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20 + 5 * i)).await;
                    r.fetch_sub(1, Ordering::SeqCst);
                    i
                }) as Job<'_, u64>
            })
            .collect();
        let t = Instant::now();
        let mut out = n_at_a_time(3, jobs).await;
        out.sort();
        assert_eq!(out, (0..7).collect::<Vec<_>>());
        assert_eq!(peak.load(Ordering::SeqCst), 3);
        // 7 jobs of 20-50 ms, 3 at a time: well under their sum (245 ms).
        assert!(
            t.elapsed() < Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
    }

    #[tokio::test]
    async fn a_trial_sees_the_cells_that_held_a_turn_beside_it_and_alone_none() {
        let a = InFlight::start("exp-a", "c1");
        let b = InFlight::start("exp-b", "c9");
        // Another lane of the same experiment, in flight but waiting.
        let lane = InFlight::start("exp-a", "c2");
        let b_turn = b.turn(false).await;
        let turn = a.turn(false).await;
        a.trial_begins();
        drop(b_turn);
        drop(turn);
        assert_eq!(a.trial_ends(), vec!["exp-b/c9".to_string()]);
        // A turn taken while the trial is open is beside it too.
        let turn = a.turn(false).await;
        a.trial_begins();
        let lane_turn = lane.turn(false).await;
        drop(lane_turn);
        drop(turn);
        assert_eq!(a.trial_ends(), vec!["exp-a/c2".to_string()]);
        // Alone: the other cells' turns wait until it ends.
        let turn = a.turn(true).await;
        a.trial_begins();
        let waiting = tokio::spawn(async move {
            let t = b.turn(false).await;
            drop(t);
            b
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished());
        let beside = a.trial_ends();
        drop(turn);
        waiting.await.unwrap();
        assert!(beside.is_empty(), "{beside:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_probe_sees_a_blocked_runtime() {
        let probe = SlipProbe::start();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let idle = probe.take();
        // Block both workers for 50 ms: the probe's timer cannot fire.
        let h: Vec<_> = (0..2)
            .map(|_| tokio::spawn(async { std::thread::sleep(Duration::from_millis(50)) }))
            .collect();
        for x in h {
            x.await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        let blocked = probe.take();
        assert!(
            blocked.max_us >= 30_000,
            "blocked runtime: {blocked:?} (idle {idle:?})"
        );
        assert!(
            idle.max_us < blocked.max_us,
            "idle {idle:?}, blocked {blocked:?}"
        );
    }

    #[test]
    fn one_hiccup_moves_the_max_not_the_99th_percentile() {
        let mut counts = vec![0u64; SLIP_BINS];
        counts[0] = 995;
        counts[50] = 5;
        let s = slip_of(&counts, 5_030);
        assert_eq!((s.ticks, s.max_us, s.p99_us), (1000, 5_030, 100));
        // A busy runtime: 2% of the firings 5 ms late.
        counts[50] = 20;
        let s = slip_of(&counts, 5_030);
        assert_eq!(s.p99_us, 5_030);
        assert_eq!(slip_of(&vec![0; SLIP_BINS], 0).p99_us, 0);
        // The runtime stood still for 18 s once: the percentile is fine,
        // the trial is not.
        let stalled = Slip {
            max_us: 18_000_000,
            p99_us: 1_000,
            ticks: 1000,
        };
        assert!(!stalled.within(3_000));
        assert!(
            Slip {
                max_us: 12_000,
                p99_us: 1_000,
                ticks: 1000
            }
            .within(3_000)
        );
        // One bin past the bound may be on it (the bin's lower edge is the
        // bound); two bins past is past.
        assert!(
            Slip {
                max_us: 4_000,
                p99_us: 3_100,
                ticks: 1000
            }
            .within(3_000)
        );
        assert!(
            !Slip {
                max_us: 4_000,
                p99_us: 3_200,
                ticks: 1000
            }
            .within(3_000)
        );
    }

    #[test]
    fn the_default_leaves_room() {
        assert_eq!(default_parallel(2, 0.0), 8);
        assert_eq!(default_parallel(8, 0.0), 8);
        assert_eq!(default_parallel(2, 1.2), 3);
        assert_eq!(default_parallel(2, 1.9), 1);
        assert_eq!(default_parallel(4, 2.6), 5);
        assert_eq!(default_parallel(1, 0.9), 1);
    }
}
