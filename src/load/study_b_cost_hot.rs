//! A lean closed-loop load generator for study B's cost experiments (`cost`,
//! and the CPU part of `memory`), plus the Redis-side accounting they share.
//!
//! Why not `Driver`/`Event`: measuring what one decision costs *Redis* needs
//! the load generator to keep Redis's one thread saturated from one core. The
//! general driver allocates per decision (keys, arguments, replies, events);
//! here a decision is a memcpy of pre-encoded bytes, a few digits written in
//! place, one write and one read, and a reply scanned without allocating.
//!
//! Layout:
//! - `Template`: the exact bytes a strategy writes for one decision, with the
//!   places where the client id and the request id go. `capture` obtains them
//!   by running the strategy's own `decide` once against a fake server on
//!   loopback, so the hot loop replays what the strategy sends (no second copy
//!   of its KEYS/ARGV mapping to drift from it).
//! - `scan_reply`: finds the end of one RESP reply and its first integer
//!   (the admitted flag or the counter), without allocating.
//! - `HotLoad`: N connections on a current-thread runtime in a thread of its
//!   own, counting decisions on the client side; the caller brackets a
//!   measurement window with Redis snapshots while it runs.
//! - `RawPipe`: pipelined raw bytes, to fill state fast.
//! - `CpuSample`/`cpu_cost`/`command_stats`: INFO cpu/commandstats deltas
//!   turned into CPU per decision and busy fraction (pure functions, tested).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::resp::{self, Arg, Connection, Reply};
use crate::strategy::{Limit, Request, Strategy};

/// Client ids in templates are this many decimal digits (`00001234`).
pub const CLIENT_WIDTH: usize = 8;
/// Request ids in templates are this many decimal digits; ids start at
/// `ID_BASE` so they always have exactly this width.
pub const ID_WIDTH: usize = 16;
pub const ID_BASE: u64 = 1_000_000_000_000_000;
/// Placeholders the capture looks for in the strategy's bytes.
const CLIENT_MARK: &str = "ZQXJZQXJ";
const ID_MARK: u64 = 5_432_109_876_543_210;

/// The client name used for client index `i` everywhere in study B's cost
/// experiments (the key is `rl:{00001234}:...`).
pub fn client_name(i: u64) -> String {
    format!("{i:0w$}", w = CLIENT_WIDTH)
}

/// How a decision's outcome is read from its last reply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AdmitRule {
    /// Not a decision (GET, INCR): every reply counts as admitted.
    Always,
    /// The first integer of the last reply is 1 (Lua `{admitted, ...}`).
    FirstIntIsOne,
    /// The first integer of the last reply is a counter <= limit (EXEC of INCRBY).
    FirstIntAtMost(i64),
}

/// The bytes of one decision, with slots for the client id and request id.
#[derive(Debug, Clone)]
pub struct Template {
    pub bytes: Vec<u8>,
    /// Offsets of `CLIENT_WIDTH`-digit client ids.
    pub client_slots: Vec<usize>,
    /// Offsets of `ID_WIDTH`-digit request ids.
    pub id_slots: Vec<usize>,
    /// Commands in the request (= replies to read).
    pub frames: usize,
    pub rule: AdmitRule,
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return vec![];
    }
    (0..=hay.len() - needle.len())
        .filter(|&i| &hay[i..i + needle.len()] == needle)
        .collect()
}

/// Write `v` as exactly `dst.len()` decimal digits (zero-padded, truncated high digits).
pub fn write_digits(dst: &mut [u8], mut v: u64) {
    for b in dst.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

impl Template {
    fn from_bytes(bytes: Vec<u8>, frames: usize, rule: AdmitRule) -> Self {
        let client_slots = find_all(&bytes, CLIENT_MARK.as_bytes());
        let id_slots = find_all(&bytes, ID_MARK.to_string().as_bytes());
        Template {
            bytes,
            client_slots,
            id_slots,
            frames,
            rule,
        }
    }

    /// A plain command; `{client}` in an argument becomes the client slot.
    pub fn command(args: &[&str], rule: AdmitRule) -> Self {
        let owned: Vec<String> = args
            .iter()
            .map(|a| a.replace("{client}", CLIENT_MARK))
            .collect();
        let argv: Vec<Arg<'_>> = owned.iter().map(|s| Arg::S(s)).collect();
        let mut bytes = Vec::new();
        resp::encode(&mut bytes, &argv);
        Self::from_bytes(bytes, 1, rule)
    }

    /// Put client `client` and request id `id` into `buf` (a copy of `bytes`).
    pub fn fill(&self, buf: &mut [u8], client: u64, id: u64) {
        for &o in &self.client_slots {
            write_digits(&mut buf[o..o + CLIENT_WIDTH], client);
        }
        for &o in &self.id_slots {
            write_digits(&mut buf[o..o + ID_WIDTH], id);
        }
    }

    /// The key (the bulk string holding the client id) this template writes
    /// for client `i`: what a direct fill must write to be hit by the loop.
    pub fn key(&self, i: u64) -> Result<String> {
        let bytes = self.render(i, ID_BASE);
        let slot = *self
            .client_slots
            .first()
            .ok_or_else(|| Error::Protocol("template without a client slot".into()))?;
        let start = bytes[..slot]
            .windows(2)
            .rposition(|w| w == b"\r\n")
            .map(|x| x + 2)
            .ok_or_else(|| Error::Protocol("template without a key".into()))?;
        let end = slot
            + bytes[slot..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or_else(|| Error::Protocol("template without a key end".into()))?;
        Ok(String::from_utf8_lossy(&bytes[start..end]).into_owned())
    }

    /// The request for one decision, as an owned buffer (for fills).
    pub fn render(&self, client: u64, id: u64) -> Vec<u8> {
        let mut b = self.bytes.clone();
        self.fill(&mut b, client, id);
        b
    }
}

/// Run `strategy.decide` once against a fake server on loopback and return
/// the bytes it wrote as a template. The fake server answers every command
/// the way a real one would shape it (`+OK`/`+QUEUED` in MULTI, an integer
/// array for EXEC and scripts). Strategies that need more than one round
/// trip per decision cannot be replayed and are refused.
pub async fn capture(
    strategy: &dyn Strategy,
    limit: Limit,
    now_us: i64,
    rule: AdmitRule,
) -> Result<Template> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| Error::io("binding the capture listener", e))?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(fake_server(listener));
    let mut conn = Conn::connect(addr).await?;
    let req = Request {
        client: CLIENT_MARK,
        limit,
        cost: 1,
        now_us,
        request_id: ID_MARK,
    };
    strategy.decide(&mut conn, &req).await?;
    let round_trips = conn.round_trips();
    drop(conn);
    let (bytes, frames) = server
        .await
        .map_err(|e| Error::Other(format!("capture server: {e}")))??;
    if round_trips != 1 {
        return Err(Error::Other(format!(
            "strategy `{}` makes {round_trips} round trips per decision; the cost hot loop only replays one-round-trip strategies",
            strategy.info().name
        )));
    }
    let t = Template::from_bytes(bytes, frames, rule);
    if t.client_slots.is_empty() {
        return Err(Error::Other(format!(
            "strategy `{}`: the client id does not appear in its command",
            strategy.info().name
        )));
    }
    Ok(t)
}

async fn fake_server(listener: TcpListener) -> Result<(Vec<u8>, usize)> {
    let (mut s, _) = listener
        .accept()
        .await
        .map_err(|e| Error::io("capture accept", e))?;
    let mut rec = Vec::new();
    let mut parsed = 0;
    let mut frames = 0;
    let mut in_multi = false;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = s
            .read(&mut buf)
            .await
            .map_err(|e| Error::io("capture read", e))?;
        if n == 0 {
            return Ok((rec, frames));
        }
        rec.extend_from_slice(&buf[..n]);
        let mut out = Vec::new();
        while let Some((cmd, used)) = resp::parse(&rec[parsed..])? {
            parsed += used;
            frames += 1;
            let name = match &cmd {
                Reply::Array(a) => a
                    .first()
                    .and_then(|r| r.as_string())
                    .unwrap_or_default()
                    .to_ascii_uppercase(),
                _ => String::new(),
            };
            let reply: &[u8] = match name.as_str() {
                "MULTI" => {
                    in_multi = true;
                    b"+OK\r\n"
                }
                "EXEC" => {
                    in_multi = false;
                    b"*2\r\n:1\r\n:1\r\n"
                }
                _ if in_multi => b"+QUEUED\r\n",
                "EVAL" | "EVALSHA" | "EVALSHA_RO" | "EVAL_RO" | "FCALL" | "FCALL_RO" => {
                    b"*3\r\n:1\r\n:1\r\n:1\r\n"
                }
                _ => b":1\r\n",
            };
            out.extend_from_slice(reply);
        }
        s.write_all(&out)
            .await
            .map_err(|e| Error::io("capture write", e))?;
    }
}

/// One RESP reply at the front of `buf`: its length, the first integer in it
/// (depth first) and whether it is or holds an error. `None`: incomplete.
pub fn scan_reply(buf: &[u8]) -> Option<(usize, Option<i64>, bool)> {
    let mut first = None;
    let mut err = false;
    let end = scan_at(buf, 0, &mut first, &mut err)?;
    Some((end, first, err))
}

fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 1 < buf.len() {
        if buf[i] == b'\r' && buf[i + 1] == b'\n' {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn parse_int(b: &[u8]) -> i64 {
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    let mut v: i64 = 0;
    for &d in digits {
        if d.is_ascii_digit() {
            v = v.wrapping_mul(10).wrapping_add((d - b'0') as i64);
        }
    }
    if neg { -v } else { v }
}

fn scan_at(buf: &[u8], pos: usize, first: &mut Option<i64>, err: &mut bool) -> Option<usize> {
    let kind = *buf.get(pos)?;
    let le = line_end(buf, pos + 1)?;
    let after = le + 2;
    match kind {
        b'+' => Some(after),
        b'-' => {
            *err = true;
            Some(after)
        }
        b':' => {
            if first.is_none() {
                *first = Some(parse_int(&buf[pos + 1..le]));
            }
            Some(after)
        }
        b'$' => {
            let n = parse_int(&buf[pos + 1..le]);
            if n < 0 {
                return Some(after);
            }
            let end = after + n as usize + 2;
            (end <= buf.len()).then_some(end)
        }
        b'*' => {
            let n = parse_int(&buf[pos + 1..le]);
            let mut p = after;
            for _ in 0..n.max(0) {
                p = scan_at(buf, p, first, err)?;
            }
            Some(p)
        }
        _ => {
            *err = true;
            Some(after)
        }
    }
}

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

fn pin_current_thread(cpu: usize) -> Result<()> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_setaffinity(0, ..) applies to the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(Error::io(
                format!("pinning the load thread to CPU {cpu}"),
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(())
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

impl HotLoad {
    /// Connect and start sending; returns once every connection is up.
    pub async fn start(tpl: Arc<Template>, spec: HotSpec) -> Result<Self> {
        crate::resp::require_loopback(&spec.addr)?;
        let shared = Arc::new(Shared::default());
        shared.next_id.store(ID_BASE, Relaxed);
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<Result<()>>();
        let sh = shared.clone();
        let handle = std::thread::Builder::new()
            .name("cost-hot-loop".into())
            .spawn(move || -> Result<Histogram<u64>> {
                if let Some(cpu) = spec.pin_cpu {
                    pin_current_thread(cpu)?;
                }
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::io("building the hot-loop runtime", e))?;
                rt.block_on(async move {
                    let mut streams = Vec::with_capacity(spec.conns);
                    for _ in 0..spec.conns {
                        match TcpStream::connect(spec.addr).await {
                            Ok(s) => {
                                s.set_nodelay(true).ok();
                                streams.push(s);
                            }
                            Err(e) => {
                                let _ = ready_tx.send(Err(Error::io("hot loop connect", e)));
                                return Ok(new_histogram());
                            }
                        }
                    }
                    let _ = ready_tx.send(Ok(()));
                    let mut tasks = Vec::new();
                    for (i, s) in streams.into_iter().enumerate() {
                        let seed = spec.seed ^ (i as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
                        tasks.push(tokio::spawn(worker(
                            s,
                            tpl.clone(),
                            sh.clone(),
                            spec.keys.max(1),
                            spec.single_key,
                            seed,
                        )));
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
                })
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

fn note_error(sh: &Shared, e: String) {
    let mut g = sh.first_error.lock().unwrap();
    if g.is_none() {
        *g = Some(e);
    }
}

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
        let mut any_err = false;
        while got < tpl.frames {
            match scan_reply(&rbuf[pos..have]) {
                Some((len, first, err)) => {
                    if err && !any_err {
                        note_error(
                            &sh,
                            String::from_utf8_lossy(&rbuf[pos..pos + len.min(200)]).into_owned(),
                        );
                    }
                    any_err |= err;
                    last_first = first;
                    pos += len;
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
        let admitted = match tpl.rule {
            AdmitRule::Always => true,
            AdmitRule::FirstIntIsOne => last_first == Some(1),
            AdmitRule::FirstIntAtMost(l) => last_first.map(|c| c <= l).unwrap_or(false),
        };
        if any_err {
            sh.errors.fetch_add(1, Relaxed);
        } else if admitted {
            sh.admitted.fetch_add(1, Relaxed);
        }
        sh.decisions.fetch_add(1, Relaxed);
    }
    Ok(hist)
}

/// Pipelined raw commands on one connection (fills).
pub struct RawPipe {
    stream: TcpStream,
    rbuf: Vec<u8>,
}

/// Replies of one pipelined batch.
#[derive(Debug, Clone, Default)]
pub struct PipeOutcome {
    pub errors: u64,
    pub first_error: Option<String>,
    /// First integer of each reply (admitted flags of scripts, ZADD counts).
    pub firsts: Vec<Option<i64>>,
}

impl RawPipe {
    pub async fn connect(addr: SocketAddr) -> Result<Self> {
        crate::resp::require_loopback(&addr)?;
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| Error::io(format!("connecting to {addr}"), e))?;
        stream.set_nodelay(true).ok();
        Ok(RawPipe {
            stream,
            rbuf: Vec::with_capacity(64 * 1024),
        })
    }

    /// Send `bytes` (`frames` commands) and read every reply; writing and
    /// reading run together so a large batch cannot deadlock on full buffers.
    pub async fn send(&mut self, bytes: &[u8], frames: usize) -> Result<PipeOutcome> {
        let (mut rd, mut wr) = self.stream.split();
        let rbuf = &mut self.rbuf;
        let write = async move {
            wr.write_all(bytes)
                .await
                .map_err(|e| Error::io("pipeline write", e))
        };
        let read = async move {
            let mut out = PipeOutcome::default();
            rbuf.clear();
            let mut pos = 0usize;
            let mut chunk = vec![0u8; 64 * 1024];
            while out.firsts.len() < frames {
                match scan_reply(&rbuf[pos..]) {
                    Some((len, first, err)) => {
                        if err {
                            out.errors += 1;
                            if out.first_error.is_none() {
                                out.first_error = Some(
                                    String::from_utf8_lossy(&rbuf[pos..pos + len.min(200)])
                                        .into_owned(),
                                );
                            }
                        }
                        out.firsts.push(first);
                        pos += len;
                    }
                    None => {
                        rbuf.drain(..pos);
                        pos = 0;
                        let n = rd
                            .read(&mut chunk)
                            .await
                            .map_err(|e| Error::io("pipeline read", e))?;
                        if n == 0 {
                            return Err(Error::Other("pipeline: connection closed".into()));
                        }
                        rbuf.extend_from_slice(&chunk[..n]);
                    }
                }
            }
            rbuf.clear();
            Ok(out)
        };
        let (w, r) = tokio::join!(write, read);
        w?;
        r
    }
}

/// Redis's CPU counters from `INFO cpu` (seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuSample {
    pub user_s: f64,
    pub sys_s: f64,
    pub main_user_s: f64,
    pub main_sys_s: f64,
}

impl CpuSample {
    pub fn from_info(f: &BTreeMap<String, String>) -> Self {
        let g = |k: &str| f.get(k).and_then(|v| v.parse().ok()).unwrap_or(0.0);
        CpuSample {
            user_s: g("used_cpu_user"),
            sys_s: g("used_cpu_sys"),
            main_user_s: g("used_cpu_user_main_thread"),
            main_sys_s: g("used_cpu_sys_main_thread"),
        }
    }
}

/// What a measurement window cost Redis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CpuCost {
    /// user+sys of the whole process over the window, us.
    pub cpu_us: f64,
    pub cpu_us_per_decision: f64,
    /// cpu_us / wall: how busy Redis was (1.0 = one core all the time).
    pub busy_fraction: f64,
    /// The same for Redis's main (command) thread alone.
    pub main_thread_busy_fraction: f64,
}

/// INFO cpu deltas over a window of `wall_s` seconds with `decisions`
/// client-counted decisions -> CPU per decision and busy fraction.
pub fn cpu_cost(before: &CpuSample, after: &CpuSample, decisions: u64, wall_s: f64) -> CpuCost {
    let cpu_us = ((after.user_s - before.user_s) + (after.sys_s - before.sys_s)) * 1e6;
    let main_us =
        ((after.main_user_s - before.main_user_s) + (after.main_sys_s - before.main_sys_s)) * 1e6;
    let per = if decisions > 0 {
        cpu_us / decisions as f64
    } else {
        f64::NAN
    };
    let wall_us = wall_s * 1e6;
    let frac = |x: f64| if wall_us > 0.0 { x / wall_us } else { f64::NAN };
    CpuCost {
        cpu_us,
        cpu_us_per_decision: per,
        busy_fraction: frac(cpu_us),
        main_thread_busy_fraction: frac(main_us),
    }
}

/// `cmdstat_<name>` lines of INFO commandstats -> name -> (calls, usec).
pub fn command_stats(f: &BTreeMap<String, String>) -> BTreeMap<String, (u64, f64)> {
    let mut out = BTreeMap::new();
    for (k, v) in f {
        let Some(name) = k.strip_prefix("cmdstat_") else {
            continue;
        };
        let mut calls = 0u64;
        let mut usec = 0f64;
        for part in v.split(',') {
            if let Some((a, b)) = part.split_once('=') {
                match a {
                    "calls" => calls = b.parse().unwrap_or(0),
                    "usec" => usec = b.parse().unwrap_or(0.0),
                    _ => {}
                }
            }
        }
        out.insert(name.to_string(), (calls, usec));
    }
    out
}

/// One snapshot: INFO cpu + commandstats in one call.
pub async fn redis_snapshot(
    admin: &mut Connection,
) -> Result<(CpuSample, BTreeMap<String, (u64, f64)>)> {
    let r = admin
        .call(&crate::args!["INFO", "cpu", "commandstats"])
        .await?;
    let f = resp::info_fields(&r.as_string().unwrap_or_default());
    Ok((CpuSample::from_info(&f), command_stats(&f)))
}

/// One `INFO <section>` field as f64.
pub async fn info_f64(admin: &mut Connection, section: &str, field: &str) -> Result<f64> {
    let r = admin.call(&crate::args!["INFO", section]).await?;
    let f = resp::info_fields(&r.as_string().unwrap_or_default());
    f.get(field)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::Protocol(format!("INFO {section} has no numeric `{field}`")))
}

/// A measured window of a hot load: client counts, Redis CPU, commandstats.
#[derive(Debug, Clone)]
pub struct Window {
    pub counts: Counts,
    pub wall_s: f64,
    pub cpu: CpuCost,
    /// name -> (calls, usec) over the window (deltas of INFO commandstats).
    pub cmdstats: BTreeMap<String, (u64, f64)>,
    pub latency: Histogram<u64>,
    pub first_error: Option<String>,
}

/// Start a hot load, warm up, measure one window, stop. `admin` is a
/// separate connection to the same server (its INFO calls are in the window
/// but negligible: two calls).
pub async fn measure_window(
    admin: &mut Connection,
    tpl: Arc<Template>,
    spec: HotSpec,
    warmup: std::time::Duration,
    window: std::time::Duration,
) -> Result<Window> {
    let load = HotLoad::start(tpl, spec).await?;
    tokio::time::sleep(warmup).await;
    admin.call(&crate::args!["CONFIG", "RESETSTAT"]).await?;
    // Commands between RESETSTAT and this snapshot are subtracted below, so
    // the window's commandstats match the window's client counts.
    let (cpu0, stats0) = redis_snapshot(admin).await?;
    let c0 = load.counts();
    let t0 = Instant::now();
    load.set_recording(true);
    tokio::time::sleep(window).await;
    load.set_recording(false);
    let c1 = load.counts();
    let wall_s = t0.elapsed().as_secs_f64();
    let (cpu1, stats) = redis_snapshot(admin).await?;
    let first_error = load.first_error();
    let latency = load.stop().await?;
    let counts = c1.since(&c0);
    let cmdstats = stats
        .into_iter()
        .map(|(k, (calls, usec))| {
            let (c0, u0) = stats0.get(&k).copied().unwrap_or((0, 0.0));
            (k, (calls.saturating_sub(c0), usec - u0))
        })
        .collect();
    Ok(Window {
        counts,
        wall_s,
        cpu: cpu_cost(&cpu0, &cpu1, counts.decisions, wall_s),
        cmdstats,
        latency,
        first_error,
    })
}

/// Latency quantile of a histogram in microseconds.
pub fn quantile_us(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else {
        h.value_at_quantile(q) as f64 / 1000.0
    }
}

/// Pins the whole harness process to one CPU while it lives (the load
/// generator's core), and lets it run anywhere again on drop, also on errors.
pub struct PinGuard {
    pub cpu: Option<usize>,
}

impl PinGuard {
    /// Pin to `cpu` if the machine has it; `cpu: None` in the guard otherwise.
    pub fn pin(cpu: usize) -> Result<Self> {
        if cpu >= crate::pin::num_cpus() {
            return Ok(PinGuard { cpu: None });
        }
        crate::pin::pin_process_to(cpu)?;
        Ok(PinGuard { cpu: Some(cpu) })
    }
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        if self.cpu.is_some() {
            let _ = crate::pin::unpin_process();
        }
    }
}

/// How sorted-set logs are written directly (without the script): exactly
/// the data the sliding-window-log strategy stores, member = the request id
/// zero-padded to `member_len` (the strategy's own formatting), score = a
/// microsecond timestamp, and the key's TTL if `ttl_ms` is set.
#[derive(Debug, Clone)]
pub struct LogSpec {
    pub entries: u64,
    pub member_len: usize,
    pub first_id: u64,
    pub first_score_us: i64,
    pub score_step_us: i64,
    pub ttl_ms: Option<u64>,
    /// Members per ZADD (<= 128 keeps small logs growing through the same
    /// listpack-then-skiplist path as one-at-a-time inserts).
    pub chunk: usize,
}

/// The member the sliding-window-log strategy writes for request `id`.
pub fn log_member(id: u64, member_len: usize) -> String {
    format!("{:0>width$}", id, width = member_len)
}

/// Fill every key in `keys` with `spec.entries` entries, pipelined in
/// batches of about 512 KB; request ids run on across keys. Returns the next
/// unused id.
pub async fn fill_logs(pipe: &mut RawPipe, keys: &[String], spec: &LogSpec) -> Result<u64> {
    let mut id = spec.first_id;
    let mut buf: Vec<u8> = Vec::with_capacity(600 * 1024);
    let mut frames = 0usize;
    let mut ib = itoa::Buffer::new();
    let chunk = spec.chunk.max(1) as u64;
    for key in keys {
        let mut done = 0u64;
        while done < spec.entries {
            let n = chunk.min(spec.entries - done);
            // *<2 + 2n>\r\n $4 ZADD $<len> key (score member)*
            buf.push(b'*');
            buf.extend_from_slice(ib.format(2 + 2 * n).as_bytes());
            buf.extend_from_slice(b"\r\n$4\r\nZADD\r\n");
            push_bulk(&mut buf, key.as_bytes());
            for j in 0..n {
                let score = spec.first_score_us + (done + j) as i64 * spec.score_step_us;
                push_bulk(&mut buf, ib.format(score).as_bytes());
                let m = log_member(id, spec.member_len);
                push_bulk(&mut buf, m.as_bytes());
                id += 1;
            }
            frames += 1;
            done += n;
            if buf.len() >= 512 * 1024 {
                flush(pipe, &mut buf, &mut frames).await?;
            }
        }
        if let Some(ttl) = spec.ttl_ms {
            resp::encode(&mut buf, &crate::args!["PEXPIRE", key.as_str(), ttl]);
            frames += 1;
        }
    }
    flush(pipe, &mut buf, &mut frames).await?;
    Ok(id)
}

fn push_bulk(buf: &mut Vec<u8>, b: &[u8]) {
    let mut ib = itoa::Buffer::new();
    buf.push(b'$');
    buf.extend_from_slice(ib.format(b.len()).as_bytes());
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(b);
    buf.extend_from_slice(b"\r\n");
}

async fn flush(pipe: &mut RawPipe, buf: &mut Vec<u8>, frames: &mut usize) -> Result<()> {
    if *frames == 0 {
        return Ok(());
    }
    let out = pipe.send(buf, *frames).await?;
    buf.clear();
    *frames = 0;
    if out.errors > 0 {
        return Err(Error::Reply(format!(
            "filling logs: {} error replies, first: {}",
            out.errors,
            out.first_error.unwrap_or_default()
        )));
    }
    Ok(())
}

/// Send many rendered requests of a template pipelined (`per_batch` per
/// round trip); returns (admitted, errors, first error).
pub async fn replay_pipelined(
    pipe: &mut RawPipe,
    tpl: &Template,
    requests: impl Iterator<Item = (u64, u64)>,
    per_batch: usize,
) -> Result<(u64, u64, Option<String>)> {
    let mut buf = Vec::with_capacity(per_batch * (tpl.bytes.len() + 8));
    let mut frames = 0usize;
    let (mut admitted, mut errors, mut first_error) = (0u64, 0u64, None);
    let mut pending = 0usize;
    let mut it = requests.peekable();
    while it.peek().is_some() || pending > 0 {
        if let Some((client, id)) = it.next() {
            let start = buf.len();
            buf.extend_from_slice(&tpl.bytes);
            tpl.fill(&mut buf[start..], client, id);
            frames += tpl.frames;
            pending += 1;
            if pending < per_batch && it.peek().is_some() {
                continue;
            }
        }
        let out = pipe.send(&buf, frames).await?;
        for req in out.firsts.chunks(tpl.frames.max(1)) {
            let last = req.last().copied().flatten();
            let ok = match tpl.rule {
                AdmitRule::Always => true,
                AdmitRule::FirstIntIsOne => last == Some(1),
                AdmitRule::FirstIntAtMost(l) => last.map(|c| c <= l).unwrap_or(false),
            };
            admitted += ok as u64;
        }
        errors += out.errors;
        if first_error.is_none() {
            first_error = out.first_error;
        }
        buf.clear();
        frames = 0;
        pending = 0;
    }
    Ok((admitted, errors, first_error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_replies_without_allocating() {
        let b = b"*3\r\n:1\r\n:99\r\n:1700000000000000\r\n+OK";
        assert_eq!(scan_reply(b), Some((32, Some(1), false)));
        assert_eq!(scan_reply(b"*2\r\n:5\r\n"), None);
        assert_eq!(scan_reply(b"$3\r\nxxx\r\n"), Some((9, None, false)));
        assert_eq!(scan_reply(b"$-1\r\n"), Some((5, None, false)));
        assert_eq!(scan_reply(b"-NOSCRIPT x\r\n"), Some((13, None, true)));
        assert_eq!(
            scan_reply(b"*2\r\n*1\r\n:-7\r\n-ERR\r\n"),
            Some((19, Some(-7), true))
        );
    }

    #[test]
    fn templates_fill_slots() {
        let t = Template::command(&["GET", "key:{client}"], AdmitRule::Always);
        assert_eq!(t.client_slots.len(), 1);
        let b = t.render(42, 0);
        assert_eq!(b, b"*2\r\n$3\r\nGET\r\n$12\r\nkey:00000042\r\n");
    }
}
