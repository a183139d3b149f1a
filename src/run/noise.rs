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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use super::rows::NoiseRow;
use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System};

use crate::fleet::reaper;

#[derive(Clone)]
struct Interval {
    /// When the interval ended.
    end: Instant,
    seconds: f64,
    other_cores: f64,
    busiest: Option<(String, f64)>,
}

/// A running sampler; `stop` returns what it saw.
pub struct NoiseSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<Interval>>>,
}

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
        let handle = std::thread::Builder::new()
            .name("limitbench-noise".into())
            .spawn(move || {
                let mut out = Vec::new();
                let Ok(mut sys) = System::new() else {
                    return out;
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
                    out.push(Interval {
                        end: Instant::now(),
                        seconds: last.elapsed().as_secs_f64(),
                        other_cores,
                        busiest,
                    });
                    last = Instant::now();
                    if stopping {
                        return out;
                    }
                }
            })
            .ok();
        NoiseSampler { stop, handle }
    }

    fn finish(mut self) -> Vec<Interval> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }

    /// Stop, and summarise each `(cell, start, end)` span from the sampling
    /// intervals that overlap it. One sampler runs for a whole experiment,
    /// because a process's CPU is only measured between refreshes at least
    /// ~0.2 s apart: a cell shorter than a second gets the second around it.
    pub fn stop_spans(
        self,
        experiment: &str,
        spans: &[(String, Instant, Instant)],
    ) -> Vec<NoiseRow> {
        let intervals = self.finish();
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
