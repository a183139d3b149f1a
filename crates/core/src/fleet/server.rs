//! One `redis-server` process that the harness owns: its config, its private
//! directory, its port; start, wait until ready, restart, stop.

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::conn::Conn;
use crate::resp::Connection;
use limitbench_base::error::{Error, Result};

use super::reaper;

/// The `redis-server` binary and its version.
#[derive(Debug, Clone)]
pub struct RedisBinary {
    pub path: PathBuf,
    pub version: String,
}

impl RedisBinary {
    /// Find `redis-server` (an explicit path, `$LIMITBENCH_REDIS_SERVER`, or PATH)
    /// and check that it is 7.0 or newer.
    pub fn locate(explicit: Option<&Path>) -> Result<Self> {
        let wanted = explicit
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("LIMITBENCH_REDIS_SERVER").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("redis-server"));
        let out = Command::new(&wanted)
            .arg("--version")
            .output()
            .map_err(|_| Error::RedisServerMissing(wanted.display().to_string()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("v="))
            .ok_or_else(|| {
                // A binary that cannot start says why on stderr (a missing
                // shared library, say), not on stdout: show both.
                Error::Other(format!(
                    "cannot read the version from `{} --version` ({}): stdout: {:?}; stderr: {:?}",
                    wanted.display(),
                    out.status,
                    text.trim(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            })?
            .to_string();
        let major: u32 = version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        if major < 7 {
            return Err(Error::RedisTooOld { found: version });
        }
        Ok(RedisBinary {
            path: wanted,
            version,
        })
    }
}

/// How to configure one server. Unset fields keep limitbench's defaults:
/// loopback only, protected mode, no persistence, a private directory.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    /// Extra `redis.conf` directives (`lazyfree-lazy-expire yes`, ...), applied last.
    pub directives: BTreeMap<String, String>,
    /// Pin the server to this CPU (sched_setaffinity before exec).
    pub pin_cpu: Option<usize>,
    /// A fixed port; `None` picks a free one.
    pub port: Option<u16>,
    /// Write only what the harness needs to own the process (port, loopback
    /// bind, protected mode, its directory and log), so `CONFIG GET` reads
    /// the server's own defaults of everything else (src/servers/).
    pub bare: bool,
}

impl ServerConfig {
    pub fn with(mut self, key: &str, value: &str) -> Self {
        self.directives.insert(key.to_string(), value.to_string());
        self
    }
    pub fn pinned(mut self, cpu: usize) -> Self {
        self.pin_cpu = Some(cpu);
        self
    }
}

pub struct Server {
    pub port: u16,
    config: ServerConfig,
    binary: RedisBinary,
    dir: Arc<reaper::OwnedTempDir>,
    child: Option<Child>,
    cluster: bool,
    replica_of: Option<u16>,
}

fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// A free port (and, for cluster nodes, a free bus port at +10000).
fn pick_port(cluster: bool) -> Result<u16> {
    for _ in 0..200 {
        let l =
            TcpListener::bind("127.0.0.1:0").map_err(|e| Error::io("binding 127.0.0.1:0", e))?;
        let p = l.local_addr()?.port();
        drop(l);
        if !cluster || (p < 55535 && port_free(p + 10000)) {
            return Ok(p);
        }
    }
    Err(Error::Other(
        "could not find a free port on 127.0.0.1".into(),
    ))
}

impl Server {
    /// Start a server and wait until it answers PING.
    pub async fn start(
        binary: &RedisBinary,
        config: ServerConfig,
        cluster: bool,
        replica_of: Option<u16>,
    ) -> Result<Self> {
        let dir = Arc::new(
            // Locked by this process while it lives (see reaper::sweep_stale_dirs).
            reaper::OwnedTempDir::create()
                .map_err(|e| Error::io("creating a temp dir for redis-server", e))?,
        );
        let fixed = config.port;
        let mut attempt = 0;
        loop {
            let port = match fixed {
                Some(p) => {
                    if !port_free(p) {
                        return Err(Error::PortInUse { port: p });
                    }
                    p
                }
                None => pick_port(cluster)?,
            };
            let mut s = Server {
                port,
                config: config.clone(),
                binary: binary.clone(),
                dir: dir.clone(),
                child: None,
                cluster,
                replica_of,
            };
            match s.launch().await {
                Ok(()) => return Ok(s),
                // Someone took the port between our probe and the bind: try another.
                Err(Error::PortInUse { .. }) if fixed.is_none() && attempt < 5 => attempt += 1,
                Err(Error::PortInUse { port }) if fixed.is_none() => {
                    return Err(Error::Other(format!(
                        "could not bind redis-server to a free loopback port: {} ports in a row \
                         (the last {port}) were taken between the check and the bind",
                        attempt + 1
                    )));
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    pub fn pinned_cpu(&self) -> Option<usize> {
        self.config.pin_cpu
    }

    pub fn is_replica_of(&self) -> Option<u16> {
        self.replica_of
    }

    fn conf_path(&self) -> PathBuf {
        self.dir.path().join(format!("redis-{}.conf", self.port))
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join(format!("redis-{}.log", self.port))
    }

    fn write_config(&self) -> Result<()> {
        let mut c: BTreeMap<String, String> = BTreeMap::new();
        let mut set = |k: &str, v: String| {
            c.insert(k.to_string(), v);
        };
        set("port", self.port.to_string());
        set("bind", "127.0.0.1".into());
        set("protected-mode", "yes".into());
        set("daemonize", "no".into());
        set("dir", self.dir.path().display().to_string());
        set("dbfilename", format!("dump-{}.rdb", self.port));
        set("logfile", self.log_path().display().to_string());
        if !self.config.bare {
            set("save", "\"\"".into());
            set("appendonly", "no".into());
            set("repl-diskless-sync-delay", "0".into());
            set("latency-monitor-threshold", "1".into());
            if self.cluster {
                set("cluster-enabled", "yes".into());
                set("cluster-config-file", format!("nodes-{}.conf", self.port));
                set("cluster-node-timeout", "5000".into());
            }
            if let Some(p) = self.replica_of {
                set("replicaof", format!("127.0.0.1 {p}"));
            }
            for (k, v) in &self.config.directives {
                let v = if v.is_empty() {
                    "\"\"".to_string()
                } else {
                    v.clone()
                };
                set(k, v);
            }
        }
        let text: String = c.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
        std::fs::write(self.conf_path(), text).map_err(|e| Error::io("writing redis.conf", e))
    }

    async fn launch(&mut self) -> Result<()> {
        self.write_config()?;
        let mut cmd = Command::new(&self.binary.path);
        cmd.arg(self.conf_path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let child = reaper::spawn(cmd, self.config.pin_cpu)
            .map_err(|e| Error::io(format!("starting {}", self.binary.path.display()), e))?;
        reaper::track_dir(self.dir().to_path_buf());
        reaper::label(child.id(), format!("redis-server on {}", self.addr()));
        let pid = child.id();
        self.child = Some(child);
        let ready = self.wait_ready(Duration::from_secs(20)).await;
        if ready.is_ok() {
            reaper::ready(pid);
        }
        ready
    }

    async fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                reaper::forget(child.id());
                // Config errors go to stderr: the log file is not open yet.
                let mut stderr = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut stderr);
                }
                self.child = None;
                let tail = format!("{}{}", stderr.trim_end(), self.log_tail(20));
                if tail.contains("Address already in use") {
                    return Err(Error::PortInUse { port: self.port });
                }
                return Err(Error::ServerDied {
                    port: self.port,
                    what: format!("exited with {status}"),
                    log_tail: tail,
                });
            }
            if let Ok(mut c) = Connection::connect(self.addr()).await {
                match c.call(&crate::args!["PING"]).await {
                    Ok(_) => return Ok(()),
                    // Still loading the RDB: keep waiting.
                    Err(Error::Reply(e)) if e.starts_with("LOADING") => {}
                    Err(_) => {}
                }
            }
            if start.elapsed() > limit {
                return Err(Error::ServerDied {
                    port: self.port,
                    what: format!("not answering PING after {limit:?}"),
                    log_tail: self.log_tail(20),
                });
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The last `n` lines of the server's log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// A fresh connection to this server only (no cluster routing).
    pub async fn connection(&self) -> Result<Connection> {
        Connection::connect(self.addr()).await
    }

    pub async fn conn(&self) -> Result<Conn> {
        Ok(Conn::Single(self.connection().await?))
    }

    /// `INFO <section>` as fields.
    pub async fn info(&self, section: &str) -> Result<BTreeMap<String, String>> {
        let mut c = self.connection().await?;
        crate::info::read(&mut c, &[section]).await
    }

    /// `CONFIG GET *` as a map, for the manifest.
    pub async fn config_get_all(&self) -> Result<BTreeMap<String, String>> {
        let mut c = self.connection().await?;
        let r = c.call(&crate::args!["CONFIG", "GET", "*"]).await?;
        let items = r.into_array().unwrap_or_default();
        Ok(items
            .chunks(2)
            .filter_map(|kv| Some((kv.first()?.as_string()?, kv.get(1)?.as_string()?)))
            .collect())
    }

    /// Is the process still running?
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Kill the process at once (SIGKILL): what a crash looks like. Data that
    /// was not saved is lost. The directory stays, so `start_again` can reuse it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            reaper::kill(&mut c);
        }
    }

    /// Stop with `SHUTDOWN SAVE` (writes the RDB), waiting for the exit.
    pub async fn shutdown_save(&mut self) -> Result<()> {
        if let Some(c) = &self.child {
            reaper::stopping(c.id());
        }
        if let Ok(mut c) = self.connection().await {
            // The server closes the connection instead of replying.
            let _ = c.call(&crate::args!["SHUTDOWN", "SAVE"]).await;
        }
        if let Some(mut child) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    reaper::forget(child.id());
                    break;
                }
                if Instant::now() > deadline {
                    reaper::kill(&mut child);
                    return Err(Error::ServerDied {
                        port: self.port,
                        what: "SHUTDOWN SAVE did not finish in 30 s".into(),
                        log_tail: self.log_tail(20),
                    });
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        Ok(())
    }

    /// Start the same server again on the same port and directory (it loads
    /// its RDB if one was saved).
    pub async fn start_again(&mut self) -> Result<()> {
        self.kill();
        if !port_free(self.port) {
            // The old socket can linger for a moment after the kill.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.launch().await
    }

    /// Restart: `SHUTDOWN SAVE`, then start with the same data directory.
    pub async fn restart_with_rdb(&mut self) -> Result<()> {
        self.shutdown_save().await?;
        self.start_again().await
    }

    /// Turn this replica into a primary (`REPLICAOF NO ONE`).
    pub async fn promote(&mut self) -> Result<()> {
        let mut c = self.connection().await?;
        c.call(&crate::args!["REPLICAOF", "NO", "ONE"]).await?;
        self.replica_of = None;
        Ok(())
    }

    /// Wait until this replica's link is up and the initial sync is done.
    pub async fn wait_in_sync(&self, limit: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            let f = self.info("replication").await?;
            if f.get("master_link_status")
                .map(|s| s == "up")
                .unwrap_or(false)
                && f.get("master_sync_in_progress")
                    .map(|s| s == "0")
                    .unwrap_or(false)
            {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(Error::Timeout(format!(
                    "replica on {} not in sync after {limit:?}: {f:?}",
                    self.port
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
