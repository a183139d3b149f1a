//! Noisy neighbours: these machines are shared, so while a cell runs a
//! sampler thread measures the CPU taken by every process other than the
//! harness and the redis-server processes it started. The sweep engine
//! writes one row per cell to `noise.csv`; the analysis warns about cells
//! where another process took more than a tenth of a core.
//!
//! sysinfo reports a process's CPU use between two refreshes, so the
//! sampler refreshes at the start, once a second, and at the end; a cell
//! shorter than a second gets one interval. A process counts from the
//! first refresh that saw it (a process born inside an interval is missed
//! for that interval).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use limitbench_analysis::rows::NoiseRow;
use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System};

use limitbench_core::fleet::reaper;

#[derive(Clone)]
struct Interval {
    /// When the interval ended.
    end: Instant,
    seconds: f64,
    other_cores: f64,
    busiest: Option<(String, f64)>,
}

/// A running sampler; `stop_spans` returns what it saw.
pub struct NoiseSampler {
    stop: Arc<AtomicBool>,
    /// Every interval so far, oldest first (a few per second of a run).
    seen: Arc<Mutex<Vec<Interval>>>,
    handle: Option<JoinHandle<()>>,
}

/// A cell's id and when it started and ended.
pub type Span = (String, Instant, Instant);

fn refresh(sys: &mut System) {
    sys.refresh_processes_specifics(
        ProcessesToUpdate::All,
        true,
        ProcessRefreshKind::nothing().with_cpu(),
    );
}

/// CPU of each process other than ours (the harness and the servers it
/// started), in cores, since the previous refresh.
fn others_by_pid(sys: &System) -> Vec<(u32, String, f64)> {
    let own = std::process::id();
    let ours = reaper::live_pids();
    sys.processes()
        .iter()
        // Threads appear as tasks of their process; count processes only.
        .filter(|(pid, p)| {
            let pid = pid.as_u32();
            pid != own && !ours.contains(&pid) && p.thread_kind().is_none()
        })
        .map(|(pid, p)| {
            (
                pid.as_u32(),
                p.name().to_string_lossy().into_owned(),
                f64::from(p.cpu_usage()) / 100.0,
            )
        })
        .collect()
}

/// Their total, and the busiest one.
fn others(sys: &System) -> (f64, Option<(String, f64)>) {
    let v = others_by_pid(sys);
    let total = v.iter().map(|x| x.2).sum();
    let busiest = v
        .into_iter()
        .filter(|x| x.2 > 0.0)
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(pid, name, c)| (format!("{name} ({pid})"), c));
    (total, busiest)
}

impl NoiseSampler {
    /// Start sampling (a thread; it never touches the measured path).
    pub fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let out = seen.clone();
        let handle = std::thread::Builder::new()
            .name("limitbench-noise".into())
            .spawn(move || {
                let Ok(mut sys) = System::new() else {
                    return;
                };
                refresh(&mut sys);
                let mut last = Instant::now();
                loop {
                    let stopping = wait_or_stop(&flag, Duration::from_secs(1));
                    // sysinfo updates a process's CPU only between refreshes
                    // at least ~0.2 s apart: a short last interval waits.
                    let min = Duration::from_millis(250);
                    if last.elapsed() < min {
                        std::thread::sleep(min - last.elapsed());
                    }
                    refresh(&mut sys);
                    let (other_cores, busiest) = others(&sys);
                    if let Ok(mut v) = out.lock() {
                        v.push(Interval {
                            end: Instant::now(),
                            seconds: last.elapsed().as_secs_f64(),
                            other_cores,
                            busiest,
                        });
                    }
                    last = Instant::now();
                    if stopping {
                        return;
                    }
                }
            })
            .ok();
        NoiseSampler { stop, seen, handle }
    }

    fn intervals(&self) -> Vec<Interval> {
        self.seen.lock().map(|v| v.clone()).unwrap_or_default()
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
        summarise_spans(experiment, &ready, &intervals)
    }

    /// Stop, and summarise each `(cell, start, end)` span from the sampling
    /// intervals that overlap it. One sampler runs for a whole experiment,
    /// because a process's CPU is only measured between refreshes at least
    /// ~0.2 s apart: a cell shorter than a second gets the second around it.
    pub fn stop_spans(self, experiment: &str, spans: &[Span]) -> Vec<NoiseRow> {
        let intervals = self.finish();
        summarise_spans(experiment, spans, &intervals)
    }
}

/// Each span's row from the intervals that overlap it.
fn summarise_spans(experiment: &str, spans: &[Span], intervals: &[Interval]) -> Vec<NoiseRow> {
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
            summarise(experiment, cell, (*end - *start).as_secs_f64(), &over)
        })
        .collect()
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

fn summarise(experiment: &str, cell: &str, seconds: f64, iv: &[Interval]) -> NoiseRow {
    let span: f64 = iv.iter().map(|i| i.seconds).sum();
    let mean = if span > 0.0 {
        iv.iter().map(|i| i.other_cores * i.seconds).sum::<f64>() / span
    } else {
        0.0
    };
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_written_once_the_sampler_has_seen_past_its_end() {
        let noise = NoiseSampler::start();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(50));
        let mut spans = vec![("c0".to_string(), t0, Instant::now())];
        // The first interval ends about a second after the start.
        assert!(noise.take_ready("e", &mut spans).is_empty());
        assert_eq!(spans.len(), 1);
        std::thread::sleep(Duration::from_millis(1400));
        let later = vec![("c1".to_string(), Instant::now(), Instant::now())];
        spans.extend(later);
        let ready = noise.take_ready("e", &mut spans);
        assert_eq!(ready.len(), 1, "{ready:?}");
        assert_eq!(ready[0].cell, "c0");
        assert_eq!(spans.len(), 1, "c1 ended after the last interval");
        let rest = noise.stop_spans("e", &spans);
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].cell, "c1");
    }

    #[test]
    fn a_busy_neighbour_is_counted_and_our_own_work_is_not() {
        let mut sys = System::new().unwrap();
        refresh(&mut sys);
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("while :; do :; done")
            .spawn()
            .unwrap();
        // A process's use is measured from the first refresh that saw it
        // with some CPU time already (sysinfo needs a non-zero baseline).
        std::thread::sleep(Duration::from_millis(300));
        refresh(&mut sys);
        // Keep our own thread busy too: it must not count.
        let t0 = Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < Duration::from_millis(1200) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        refresh(&mut sys);
        let seen = others_by_pid(&sys);
        let _ = child.kill();
        let _ = child.wait();
        assert!(x > 0);
        assert!(
            !seen.iter().any(|p| p.0 == std::process::id()),
            "the harness itself was counted as a neighbour"
        );
        let c = seen
            .iter()
            .find(|p| p.0 == child.id())
            .expect("the busy child is listed");
        // On an idle machine this is ~1 core; other work may take some of it.
        assert!(
            c.2 > 0.2,
            "a busy loop should take a good part of a core: {c:?}"
        );
        let row = summarise(
            "t",
            "c",
            2.0,
            &[
                Interval {
                    end: Instant::now(),
                    seconds: 1.0,
                    other_cores: 0.2,
                    busiest: Some(("a (1)".into(), 0.2)),
                },
                Interval {
                    end: Instant::now(),
                    seconds: 3.0,
                    other_cores: 0.6,
                    busiest: Some(("b (2)".into(), 0.5)),
                },
            ],
        );
        assert_eq!(row.other_cpu_cores_mean, 0.5);
        assert_eq!(row.other_cpu_cores_max, 0.6);
        assert_eq!(row.busiest_other, "b (2) 0.50");
    }
}
