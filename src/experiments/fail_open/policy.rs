//! The client-side policy the study describes: a deadline on every decision
//! and, when Redis does not answer in time or fails, admit (`fail-open`) or
//! refuse (`fail-closed`) and count the miss.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use limitbench_core::conn::Conn;
use limitbench_base::error::{Error, Result};
use limitbench_core::strategy::{Request, Strategy};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    FailOpen,
    FailClosed,
}

impl Policy {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "fail-open" => Ok(Policy::FailOpen),
            "fail-closed" => Ok(Policy::FailClosed),
            o => Err(Error::Other(format!(
                "fail-open: unknown policy `{o}` (fail-open, fail-closed)"
            ))),
        }
    }
    pub fn as_str(&self) -> &'static str {
        match self {
            Policy::FailOpen => "fail-open",
            Policy::FailClosed => "fail-closed",
        }
    }
}

/// One decision as the policy made it.
#[derive(Debug, Clone, Default)]
pub struct PolicyOutcome {
    pub admitted: bool,
    /// Redis decided (false: the policy decided because Redis did not).
    pub by_redis: bool,
    pub timeout: bool,
    /// Error class when Redis failed (not a timeout): `io`, `ERR`, ...
    pub error: Option<String>,
}

/// A strategy behind a deadline and a fail-open/closed policy.
pub struct PolicyClient {
    pub strategy: Arc<dyn Strategy>,
    pub addr: SocketAddr,
    pub timeout: Duration,
    pub policy: Policy,
    conn: Option<Conn>,
    /// Decisions the policy made instead of Redis (the "misses" an SDK records).
    pub misses: u64,
}

impl PolicyClient {
    pub fn new(
        strategy: Arc<dyn Strategy>,
        addr: SocketAddr,
        timeout: Duration,
        policy: Policy,
    ) -> Self {
        PolicyClient {
            strategy,
            addr,
            timeout,
            policy,
            conn: None,
            misses: 0,
        }
    }

    fn fallback(&mut self, timeout: bool, error: Option<String>) -> PolicyOutcome {
        self.conn = None;
        self.misses += 1;
        PolicyOutcome {
            admitted: self.policy == Policy::FailOpen,
            by_redis: false,
            timeout,
            error,
        }
    }

    pub async fn decide(&mut self, req: &Request<'_>) -> PolicyOutcome {
        let deadline = Instant::now() + self.timeout;
        if self.conn.is_none() {
            match tokio::time::timeout(self.timeout, Conn::connect(self.addr)).await {
                Ok(Ok(c)) => self.conn = Some(c),
                Ok(Err(e)) => return self.fallback(false, Some(e.class())),
                Err(_) => return self.fallback(true, None),
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return self.fallback(true, None);
        }
        let conn = self.conn.as_mut().unwrap();
        conn.set_timeout(Some(left));
        match self.strategy.decide(conn, req).await {
            Ok(d) => PolicyOutcome {
                admitted: d.admitted,
                by_redis: true,
                timeout: false,
                error: None,
            },
            Err(Error::Timeout(_)) => self.fallback(true, None),
            Err(e) => self.fallback(false, Some(e.class())),
        }
    }
}
