//! `redis-benchmark` beside the harness's GET runs: the same connections and
//! key space on the same (load) CPU, and what it cost Redis, to tell whether
//! the harness's own load generator is the bottleneck.

use std::net::SocketAddr;
use std::time::Instant;

use limitbench_base::error::{Error, Result};
use limitbench_core::load::replay::{self, CpuCost};
use limitbench_core::resp::Connection;

/// `redis-benchmark -t get` with the same connections and key space, on the
/// load CPU; returns its rate and what it cost Redis.
pub(super) async fn redis_benchmark(
    admin: &mut Connection,
    addr: SocketAddr,
    conns: usize,
    keys: u64,
    requests: u64,
    cpu: Option<usize>,
) -> Result<(f64, CpuCost)> {
    let port = addr.port().to_string();
    let (c, r, n) = (conns.to_string(), keys.to_string(), requests.to_string());
    let args: Vec<&str> = vec![
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-c",
        &c,
        "-r",
        &r,
        "-t",
        "get",
        "-n",
        &n,
        "--csv",
    ];
    let mut cmd = match cpu.map(|c| c.to_string()) {
        Some(c) if which("taskset") => {
            let mut cmd = tokio::process::Command::new("taskset");
            cmd.args(["-c", c.as_str(), "redis-benchmark"]).args(&args);
            cmd
        }
        _ => {
            let mut cmd = tokio::process::Command::new("redis-benchmark");
            cmd.args(&args);
            cmd
        }
    };
    let (cpu0, _) = replay::redis_snapshot(admin).await?;
    let t0 = Instant::now();
    let out = cmd
        .output()
        .await
        .map_err(|e| Error::io("running redis-benchmark", e))?;
    let wall = t0.elapsed().as_secs_f64();
    let (cpu1, _) = replay::redis_snapshot(admin).await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rps = parse_benchmark_csv(&text, "GET").ok_or_else(|| {
        Error::Other(format!(
            "cannot read the GET rate from redis-benchmark's output: {} {}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    })?;
    Ok((rps, replay::cpu_cost(&cpu0, &cpu1, requests, wall)))
}

fn which(bin: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(bin).is_file()))
        .unwrap_or(false)
}

/// The rps of `test` in redis-benchmark's `--csv` output.
pub fn parse_benchmark_csv(text: &str, test: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let mut f = l.split(',').map(|x| x.trim().trim_matches('"'));
        (f.next()? == test).then(|| f.next()?.parse().ok())?
    })
}
