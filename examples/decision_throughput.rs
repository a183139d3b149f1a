//! Decisions per second and allocations per decision of the general decision
//! path (`Driver::decide` -> `Strategy::decide` -> `Conn` -> RESP).
//!
//! Starts its own redis-server through the fleet (loopback, default config),
//! then:
//! 1. closed loop (`load::closed_loop`), 16 workers on their own connections,
//!    `token-bucket` by EVALSHA, one hot key with a limit no run reaches, a
//!    fixed number of decisions: decisions/s, heap allocations per decision
//!    (everything the process allocated during the loop, workers included)
//!    and the harness's own CPU time per decision (`getrusage`);
//! 2. one worker, sequential: allocations per `Driver::decide` and per bare
//!    `Strategy::decide`, where nothing else runs, so the count is exact.
//!
//! ```sh
//! cargo run --release --example decision_throughput [decisions] [strategy]
//! ```
//!
//! Allocations are counted by a counting global allocator (every `alloc`,
//! `alloc_zeroed` and `realloc` call); it adds one relaxed atomic add per
//! allocation, the same before and after any change measured with it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use limitbench_core::clock::Clock;
use limitbench_core::fleet::{Fleet, RedisBinary, ServerConfig};
use limitbench_core::load::{self, Driver, TrialClock};
use limitbench_core::strategy::{self, Limit, Options, Request};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// CPU time (user + system) this process has used, in microseconds: the
/// harness's own cost per decision, which other load on the machine does not
/// inflate the way it inflates wall-clock rates.
fn cpu_us() -> i64 {
    // SAFETY: getrusage only writes the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let us = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    us(ru.ru_utime) + us(ru.ru_stime)
}

const WORKERS: u32 = 16;
const SEQUENTIAL: u64 = 10_000;

#[tokio::main]
async fn main() -> limitbench_base::Result<()> {
    let mut argv = std::env::args().skip(1);
    let decisions: u64 = argv
        .next()
        .map(|s| s.parse().expect("decisions must be a number"))
        .unwrap_or(300_000);
    let name = argv.next().unwrap_or_else(|| "token-bucket".into());

    let fleet = Fleet::standalone(&RedisBinary::locate(None)?, ServerConfig::default()).await?;
    let s = strategy::build(&name, None, &Options::default())?;
    for mut node in fleet.node_connections().await? {
        s.prepare(&mut node).await?;
    }
    // A limit no run reaches: every decision takes the admitting (writing) path.
    let limit = Limit::bucket(1 << 40, 1e12);

    // 1. Closed loop, 16 workers.
    let mut drivers = Vec::new();
    for w in 0..WORKERS {
        drivers.push(Driver::new(
            w,
            s.clone(),
            fleet.conn().await?,
            Clock::default(),
        ));
    }
    let (a0, c0) = (allocations(), cpu_us());
    let t0 = Instant::now();
    let (events, _tc, _drivers) =
        load::closed_loop(drivers, "bench-hot", limit, 1, decisions, None).await?;
    let secs = t0.elapsed().as_secs_f64();
    let allocs = allocations() - a0;
    let cpu = cpu_us() - c0;
    let errors = events.iter().filter(|e| e.error.is_some()).count();
    println!(
        "closed loop: {name}, {WORKERS} workers, {} decisions in {secs:.3} s: {:.0} decisions/s, {:.2} allocations/decision (whole loop), {:.2} us harness CPU/decision, {errors} errors",
        events.len(),
        events.len() as f64 / secs,
        allocs as f64 / events.len() as f64,
        cpu as f64 / events.len() as f64
    );

    // 2. One worker, sequential: the decision path alone.
    let mut d = Driver::new(0, s.clone(), fleet.conn().await?, Clock::default());
    let tc = TrialClock::start();
    for _ in 0..100 {
        d.decide(&tc, "bench-seq", limit, 1, 0).await; // warm the buffers
    }
    let a0 = allocations();
    for _ in 0..SEQUENTIAL {
        let ev = d.decide(&tc, "bench-seq", limit, 1, 0).await;
        assert!(ev.error.is_none(), "{:?}", ev.error);
    }
    let per_driver = (allocations() - a0) as f64 / SEQUENTIAL as f64;
    let a0 = allocations();
    for i in 0..SEQUENTIAL {
        let req = Request {
            client: "bench-seq",
            limit,
            cost: 1,
            now_us: Clock::system_now_us(),
            request_id: i,
        };
        s.decide(&mut d.conn, &req).await?;
    }
    let per_strategy = (allocations() - a0) as f64 / SEQUENTIAL as f64;
    println!(
        "sequential: {per_driver:.2} allocations per Driver::decide, {per_strategy:.2} per Strategy::decide"
    );
    Ok(())
}
