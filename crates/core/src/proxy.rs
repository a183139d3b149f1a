//! A userspace TCP proxy that adds delay, for network round trips without
//! netem (this kernel has none).
//!
//! Every byte chunk read from one side is stamped with `read time + delay`
//! and written to the other side at that time, by a writer thread per
//! direction per connection, in FIFO order: the delay never reorders bytes
//! of one connection, and it holds at any number of connections because no
//! connection waits for another. Threads (not tokio tasks) because tokio's
//! timer has a ~1 ms grid; these threads sleep on Linux's high-resolution
//! timers with a 1 ns timer slack.
//!
//! Optional jitter: each chunk's delay gets an extra uniform draw in
//! `[0, jitter]` (per direction, per chunk), so that round trips vary the way
//! a real network's do; a chunk never leaves before the one read before it
//! (FIFO, as TCP delivers), so a long draw also holds back what follows.
//! `calibrate` measures the median, so the jitter's mean is compensated.
//!
//! `calibrate` sets the per-direction delay so that the PING round trip
//! measured *through the proxy* matches the target, and `measure_rtt`
//! reports what was actually achieved; experiments record the measured
//! values, never the configured ones.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use crate::resp::{Connection, require_loopback};
use limitbench_base::error::{Error, Result};

struct Shared {
    /// Delay added to each direction, nanoseconds.
    one_way_ns: AtomicU64,
    /// Width of the uniform extra delay per chunk, nanoseconds (0: none).
    jitter_ns: AtomicU64,
    stop: AtomicBool,
    /// The sockets of every open connection (by connection number), to shut
    /// them down on drop; a connection's entry goes when both its directions
    /// have ended, so a long-lived proxy does not accumulate descriptors.
    sockets: Mutex<HashMap<u64, [TcpStream; 2]>>,
    connections: AtomicU64,
}

pub struct DelayProxy {
    pub listen: SocketAddr,
    pub upstream: SocketAddr,
    shared: Arc<Shared>,
    accept_thread: Option<std::thread::JoinHandle<()>>,
}

/// Round trips measured through the proxy, microseconds.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct RttStats {
    pub samples: u32,
    pub rtt_median_us: f64,
    pub rtt_p99_us: f64,
    pub rtt_mean_us: f64,
    /// Standard deviation of the samples: the achieved jitter of the round trip.
    pub rtt_sd_us: f64,
}

/// A small generator for the jitter draws (xorshift64*): network jitter is
/// not meant to be reproducible, only uniform and cheap on the pump thread.
struct Jitter(u64);

impl Jitter {
    fn new(seed: u64) -> Self {
        Jitter(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in [0, width_ns].
    fn draw(&mut self, width_ns: u64) -> u64 {
        if width_ns == 0 {
            return 0;
        }
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((x >> 11) as f64 / (1u64 << 53) as f64 * width_ns as f64) as u64
    }
}

fn low_timer_slack() {
    // SAFETY: plain prctl on the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1u64);
    }
}

fn pump(from: TcpStream, to: TcpStream, shared: Arc<Shared>, seed: u64) {
    let mut jitter = Jitter::new(seed);
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer_shared = shared.clone();
    let mut to_w = to;
    let writer = std::thread::spawn(move || {
        low_timer_slack();
        for (due, chunk) in rx {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if to_w.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to_w.shutdown(Shutdown::Write);
        let _ = writer_shared;
    });
    let mut from = from;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let delay = Duration::from_nanos(
                    shared.one_way_ns.load(Ordering::Relaxed)
                        + jitter.draw(shared.jitter_ns.load(Ordering::Relaxed)),
                );
                if tx
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
        }
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
    }
    drop(tx);
    let _ = writer.join();
}

impl DelayProxy {
    /// Listen on a free 127.0.0.1 port and forward to `upstream` with no delay yet.
    pub fn start(upstream: SocketAddr) -> Result<Self> {
        require_loopback(&upstream)?;
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| Error::io("binding the delay proxy", e))?;
        let listen = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared {
            one_way_ns: AtomicU64::new(0),
            jitter_ns: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            sockets: Mutex::new(HashMap::new()),
            connections: AtomicU64::new(0),
        });
        let s2 = shared.clone();
        let accept_thread = std::thread::spawn(move || {
            while !s2.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        let Ok(server) = TcpStream::connect(upstream) else {
                            let _ = client.shutdown(Shutdown::Both);
                            continue;
                        };
                        client.set_nodelay(true).ok();
                        server.set_nodelay(true).ok();
                        let id = s2.connections.fetch_add(1, Ordering::Relaxed);
                        let (Ok(c2), Ok(sv2), Ok(c3), Ok(sv3)) = (
                            client.try_clone(),
                            server.try_clone(),
                            client.try_clone(),
                            server.try_clone(),
                        ) else {
                            let _ = client.shutdown(Shutdown::Both);
                            let _ = server.shutdown(Shutdown::Both);
                            continue;
                        };
                        s2.sockets.lock().unwrap().insert(id, [c3, sv3]);
                        // Both directions share `open`; the last to end forgets the sockets.
                        let open = Arc::new(AtomicU64::new(2));
                        for (dir, (from, to)) in
                            [(client, server), (sv2, c2)].into_iter().enumerate()
                        {
                            let (sh, open) = (s2.clone(), open.clone());
                            std::thread::spawn(move || {
                                pump(from, to, sh.clone(), id * 2 + dir as u64);
                                if open.fetch_sub(1, Ordering::AcqRel) == 1 {
                                    sh.sockets.lock().unwrap().remove(&id);
                                }
                            });
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        Ok(DelayProxy {
            listen,
            upstream,
            shared,
            accept_thread: Some(accept_thread),
        })
    }

    /// Cut every open connection now: bytes still waiting out their delay
    /// are dropped, as on a link that is partitioned at this moment. New
    /// connections are still accepted (and forwarded, if the upstream is up).
    pub fn cut(&self) {
        for (_, pair) in self.shared.sockets.lock().unwrap().drain() {
            for s in pair {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }

    /// Set the delay added to each direction.
    pub fn set_one_way(&self, d: Duration) {
        self.shared
            .one_way_ns
            .store(d.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Set the width of the uniform extra delay each chunk gets, per direction.
    pub fn set_jitter(&self, d: Duration) {
        self.shared
            .jitter_ns
            .store(d.as_nanos() as u64, Ordering::Relaxed);
    }

    pub fn jitter(&self) -> Duration {
        Duration::from_nanos(self.shared.jitter_ns.load(Ordering::Relaxed))
    }

    pub fn one_way(&self) -> Duration {
        Duration::from_nanos(self.shared.one_way_ns.load(Ordering::Relaxed))
    }

    /// Connections currently open through the proxy.
    pub fn connections_open(&self) -> usize {
        self.shared.sockets.lock().unwrap().len()
    }

    pub fn connections_accepted(&self) -> u64 {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// PING through the proxy `n` times on one connection.
    pub async fn measure_rtt(&self, n: u32) -> Result<RttStats> {
        measure_rtt(self.listen, n).await
    }

    /// Set the per-direction delay so that the measured PING round trip is
    /// `target` (the jitter, if set, stays; the proxy's own cost and the server's reply time are measured
    /// with no delay and subtracted), refine once, and return what was achieved.
    pub async fn calibrate(&self, target: Duration, samples: u32) -> Result<RttStats> {
        self.set_one_way(Duration::ZERO);
        if target.is_zero() {
            return self.measure_rtt(samples).await;
        }
        let base = self.measure_rtt(samples.min(50)).await?.rtt_median_us;
        let mut one_way_us = ((target.as_secs_f64() * 1e6 - base) / 2.0).max(0.0);
        self.set_one_way(Duration::from_secs_f64(one_way_us / 1e6));
        for _ in 0..2 {
            let got = self.measure_rtt(samples.min(50)).await?.rtt_median_us;
            one_way_us = (one_way_us + (target.as_secs_f64() * 1e6 - got) / 2.0).max(0.0);
            self.set_one_way(Duration::from_secs_f64(one_way_us / 1e6));
        }
        self.measure_rtt(samples).await
    }
}

/// Median, p99 (`limitbench_base::stats`' quantile) and mean of round trips, us; sorts `v`.
/// PING `samples` times (at least once) on one new connection to `addr`,
/// after one unmeasured PING.
pub async fn measure_rtt(addr: SocketAddr, samples: u32) -> Result<RttStats> {
    let mut c = Connection::connect(addr).await?;
    c.call(&crate::args!["PING"]).await?;
    let mut v = Vec::with_capacity(samples.max(1) as usize);
    for _ in 0..samples.max(1) {
        let t = Instant::now();
        c.call(&crate::args!["PING"]).await?;
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(rtt_stats(&mut v))
}

pub fn rtt_stats(v: &mut [f64]) -> RttStats {
    if v.is_empty() {
        return RttStats::default();
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| limitbench_base::stats::quantile_sorted(v, p);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    RttStats {
        samples: v.len() as u32,
        rtt_median_us: q(0.5),
        rtt_p99_us: q(0.99),
        rtt_mean_us: mean,
        rtt_sd_us: (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt(),
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for (_, pair) in self.shared.sockets.lock().unwrap().drain() {
            for s in pair {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        if let Some(t) = self.accept_thread.take() {
            let _ = t.join();
        }
    }
}
