//! The hot loop: `conns` connections, each with one decision in flight,
//! replaying one template in a closed loop on a current-thread runtime in a
//! thread of its own (pinned to the load CPU if asked). Decisions, admissions
//! and errors are counted on the client side in shared atomics, so the caller
//! can bracket a measurement window with Redis snapshots while it runs.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::reply::scan_reply;
use super::template::{ID_BASE, Template, client_name};
use crate::conn::Conn;
use crate::strategy::{Limit, Request, Strategy};
use limitbench_base::error::{Error, Result};

/// What the load generator counted (client side).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Counts {
    pub decisions: u64,
    pub admitted: u64,
    pub errors: u64,
}

impl Counts {
    pub fn since(&self, before: &Counts) -> Counts {
        Counts {
            decisions: self.decisions - before.decisions,
            admitted: self.admitted - before.admitted,
            errors: self.errors - before.errors,
        }
    }
}

/// The counters every connection of a hot loop adds to.
#[derive(Default)]
struct Shared {
    decisions: AtomicU64,
    admitted: AtomicU64,
    errors: AtomicU64,
    next_id: AtomicU64,
    stop: AtomicBool,
    recording: AtomicBool,
    first_error: Mutex<Option<String>>,
}

/// Where the hot loop sends and which keys it picks.
#[derive(Debug, Clone)]
pub struct HotSpec {
    pub addr: SocketAddr,
    /// Connections, each with one request in flight.
    pub conns: usize,
    /// Client indices are drawn uniformly from `0..keys`.
    pub keys: u64,
    /// Every request goes to this client index instead (the abusive client).
    pub single_key: Option<u64>,
    pub seed: u64,
    /// Pin the load thread to this CPU.
    pub pin_cpu: Option<usize>,
}

/// A running closed loop: `conns` connections replaying one template.
pub struct HotLoad {
    shared: Arc<Shared>,
    handle: Option<std::thread::JoinHandle<Result<Histogram<u64>>>>,
}

/// Latency histogram in nanoseconds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

/// splitmix64: a fast, allocation-free key picker.
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// What each connection of a hot loop sends.
#[derive(Clone)]
enum Source {
    /// A captured template's bytes (one round trip a decision).
    Template(Arc<Template>),
    /// The strategy's own `decide`, for designs of several round trips a
    /// decision (a read, then a write that depends on it), which no
    /// template can replay; the limit is the template's `limit` argument.
    Decide(Arc<dyn Strategy>, Limit),
}

impl HotLoad {
    /// Connect and start sending; returns once every connection is up.
    pub async fn start(tpl: Arc<Template>, spec: HotSpec) -> Result<Self> {
        Self::start_source(Source::Template(tpl), spec).await
    }

    /// The same closed loop, each connection calling `strategy.decide` for
    /// client [`client_name`]`(i)` (the template's key), `i` drawn as the
    /// template loop draws it: what a strategy of several round trips a
    /// decision costs, measured the way its callers run it. Slower per
    /// decision on the client side than a replay (it allocates), so its
    /// rows say `load_bound` when Redis is not the bottleneck.
    pub async fn start_decide(
        strategy: Arc<dyn Strategy>,
        limit: Limit,
        spec: HotSpec,
    ) -> Result<Self> {
        Self::start_source(Source::Decide(strategy, limit), spec).await
    }

    async fn start_source(src: Source, spec: HotSpec) -> Result<Self> {
        crate::resp::require_loopback(&spec.addr)?;
        let shared = Arc::new(Shared::default());
        shared.next_id.store(ID_BASE, Relaxed);
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Result<()>>();
        let sh = shared.clone();
        let handle = std::thread::Builder::new()
            .name("cost-hot-loop".into())
            .spawn(move || -> Result<Histogram<u64>> {
                if let Some(cpu) = spec.pin_cpu {
                    crate::pin::pin_current_thread(cpu).map_err(|e| {
                        Error::io(format!("pinning the load thread to CPU {cpu}"), e)
                    })?;
                }
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::io("building the hot-loop runtime", e))?;
                rt.block_on(run_connections(src, spec, sh, ready_tx))
            })
            .map_err(|e| Error::io("spawning the hot-loop thread", e))?;
        match ready_rx.await {
            Ok(Ok(())) => Ok(HotLoad {
                shared,
                handle: Some(handle),
            }),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(e)
            }
            Err(_) => match handle.join() {
                Ok(Err(e)) => Err(e),
                _ => Err(Error::Other("hot-loop thread died before starting".into())),
            },
        }
    }

    pub fn counts(&self) -> Counts {
        Counts {
            decisions: self.shared.decisions.load(Relaxed),
            admitted: self.shared.admitted.load(Relaxed),
            errors: self.shared.errors.load(Relaxed),
        }
    }

    /// Record latencies only inside the measurement window.
    pub fn set_recording(&self, on: bool) {
        self.shared.recording.store(on, Relaxed);
    }

    /// The first error reply or I/O error seen, if any.
    pub fn first_error(&self) -> Option<String> {
        self.shared.first_error.lock().unwrap().clone()
    }

    /// Stop every connection and return the latency histogram of the
    /// recorded window.
    pub async fn stop(mut self) -> Result<Histogram<u64>> {
        self.shared.stop.store(true, Relaxed);
        let h = self.handle.take().expect("stopped once");
        tokio::task::spawn_blocking(move || h.join())
            .await
            .map_err(|e| Error::Other(format!("joining the hot loop: {e}")))?
            .map_err(|_| Error::Other("the hot-loop thread panicked".into()))?
    }
}

impl Drop for HotLoad {
    fn drop(&mut self) {
        self.shared.stop.store(true, Relaxed);
    }
}

/// On the hot-loop thread: connect every connection (then report ready),
/// run one worker per connection until stopped, merge their histograms.
async fn run_connections(
    src: Source,
    spec: HotSpec,
    sh: Arc<Shared>,
    ready: tokio::sync::oneshot::Sender<Result<()>>,
) -> Result<Histogram<u64>> {
    enum Link {
        Raw(TcpStream),
        Conn(Conn),
    }
    let mut links = Vec::with_capacity(spec.conns);
    for _ in 0..spec.conns {
        // The decide loop's connections are the strategy's own kind (AUTH,
        // round-trip counting); the template loop writes raw bytes.
        let link = match &src {
            Source::Template(_) => TcpStream::connect(spec.addr)
                .await
                .map(|s| {
                    s.set_nodelay(true).ok();
                    Link::Raw(s)
                })
                .map_err(|e| Error::io("hot loop connect", e)),
            Source::Decide(..) => Conn::connect(spec.addr).await.map(Link::Conn),
        };
        match link {
            Ok(l) => links.push(l),
            Err(e) => {
                let _ = ready.send(Err(e));
                return Ok(new_histogram());
            }
        }
    }
    let _ = ready.send(Ok(()));
    let mut tasks = Vec::new();
    for (i, link) in links.into_iter().enumerate() {
        let seed = spec.seed ^ (i as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
        let (keys, single_key, sh) = (spec.keys.max(1), spec.single_key, sh.clone());
        tasks.push(match (&src, link) {
            (Source::Template(tpl), Link::Raw(s)) => {
                tokio::spawn(worker(s, tpl.clone(), sh, keys, single_key, seed))
            }
            (Source::Decide(strategy, limit), Link::Conn(c)) => tokio::spawn(decide_worker(
                c,
                strategy.clone(),
                *limit,
                sh,
                keys,
                single_key,
                seed,
            )),
            _ => unreachable!("each source connects its own kind of link"),
        });
    }
    let mut hist = new_histogram();
    for t in tasks {
        let h = t
            .await
            .map_err(|e| Error::Other(format!("hot loop worker: {e}")))??;
        hist.add(&h)
            .map_err(|e| Error::Other(format!("merging histograms: {e}")))?;
    }
    Ok(hist)
}

fn note_error(sh: &Shared, e: String) {
    let mut g = sh.first_error.lock().unwrap();
    if g.is_none() {
        *g = Some(e);
    }
}

/// One connection's closed loop: fill the template, write it, read its
/// replies (reusing one read buffer), count the decision.
async fn worker(
    mut stream: TcpStream,
    tpl: Arc<Template>,
    sh: Arc<Shared>,
    keys: u64,
    single_key: Option<u64>,
    seed: u64,
) -> Result<Histogram<u64>> {
    let mut hist = new_histogram();
    let mut rng = Mix(seed);
    let mut wbuf = tpl.bytes.clone();
    let mut rbuf = vec![0u8; 64 * 1024];
    while !sh.stop.load(Relaxed) {
        let client = single_key.unwrap_or_else(|| rng.next() % keys);
        let id = if tpl.id_slots.is_empty() {
            0
        } else {
            sh.next_id.fetch_add(1, Relaxed)
        };
        tpl.fill(&mut wbuf, client, id);
        let t0 = Instant::now();
        if let Err(e) = stream.write_all(&wbuf).await {
            note_error(&sh, format!("write: {e}"));
            return Err(Error::io("hot loop write", e));
        }
        let mut have = 0usize;
        let mut pos = 0usize;
        let mut got = 0usize;
        let mut last_first = None;
        let mut last_at = 0..0;
        let mut any_err = false;
        while got < tpl.frames {
            match scan_reply(&rbuf[pos..have]) {
                Some(s) => {
                    if s.error && !any_err {
                        note_error(
                            &sh,
                            String::from_utf8_lossy(&rbuf[pos..pos + s.len.min(200)]).into_owned(),
                        );
                    }
                    any_err |= s.error;
                    last_first = s.first_int;
                    last_at = pos..pos + s.len;
                    pos += s.len;
                    got += 1;
                }
                None => {
                    if pos > 0 {
                        rbuf.copy_within(pos..have, 0);
                        have -= pos;
                        pos = 0;
                    }
                    if have == rbuf.len() {
                        rbuf.resize(rbuf.len() * 2, 0);
                    }
                    let n = match stream.read(&mut rbuf[have..]).await {
                        Ok(0) => {
                            note_error(&sh, "connection closed by server".into());
                            return Err(Error::Other("hot loop: connection closed".into()));
                        }
                        Ok(n) => n,
                        Err(e) => {
                            note_error(&sh, format!("read: {e}"));
                            return Err(Error::io("hot loop read", e));
                        }
                    };
                    have += n;
                }
            }
        }
        let ns = t0.elapsed().as_nanos() as u64;
        if sh.recording.load(Relaxed) {
            let _ = hist.record(ns.max(1));
        }
        if any_err {
            sh.errors.fetch_add(1, Relaxed);
        } else {
            // The last reply's bytes are still in the buffer: the loop
            // above only moves them when it must read more.
            match tpl.rule.admits_reply(&rbuf[last_at.clone()], last_first) {
                Ok(true) => {
                    sh.admitted.fetch_add(1, Relaxed);
                }
                Ok(false) => {}
                Err(e) => {
                    note_error(&sh, e);
                    sh.errors.fetch_add(1, Relaxed);
                }
            }
        }
        sh.decisions.fetch_add(1, Relaxed);
    }
    Ok(hist)
}

/// One connection's closed loop of the strategy's own decisions (any number
/// of round trips each), counted as the template loop counts.
async fn decide_worker(
    mut conn: Conn,
    strategy: Arc<dyn Strategy>,
    limit: Limit,
    sh: Arc<Shared>,
    keys: u64,
    single_key: Option<u64>,
    seed: u64,
) -> Result<Histogram<u64>> {
    let mut hist = new_histogram();
    let mut rng = Mix(seed);
    while !sh.stop.load(Relaxed) {
        let client = client_name(single_key.unwrap_or_else(|| rng.next() % keys));
        let req = Request {
            client: &client,
            limit,
            cost: 1,
            now_us: crate::clock::Clock::system_now_us(),
            request_id: sh.next_id.fetch_add(1, Relaxed),
        };
        let t0 = Instant::now();
        let out = strategy.decide(&mut conn, &req).await;
        let ns = t0.elapsed().as_nanos() as u64;
        if sh.recording.load(Relaxed) {
            let _ = hist.record(ns.max(1));
        }
        match out {
            Ok(d) if d.admitted => {
                sh.admitted.fetch_add(1, Relaxed);
            }
            Ok(_) => {}
            // A connection that broke stops its loop, as a template worker's does.
            Err(e @ (Error::Io { .. } | Error::Timeout(_))) => {
                note_error(&sh, e.to_string());
                return Err(e);
            }
            Err(e) => {
                note_error(&sh, e.to_string());
                sh.errors.fetch_add(1, Relaxed);
            }
        }
        sh.decisions.fetch_add(1, Relaxed);
    }
    Ok(hist)
}
