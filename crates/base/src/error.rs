//! The library's error type. Every variant says what went wrong and, where the
//! user can do something about it, what to do.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Not a failure: a run in validation mode stops an experiment here,
    /// right after its parameters parsed (see `RunContext::validate_only`).
    #[error("parameters are valid (validation only)")]
    Validated,

    #[error(
        "redis-server not found on PATH (looked for `{0}`): install the Debian/Ubuntu package `redis-server` (and `redis-tools`), e.g. `apt-get install -y redis-server redis-tools`, or point --redis-server at a binary"
    )]
    RedisServerMissing(String),

    #[error(
        "redis-server {found} is too old: limitbench needs Redis 7.0 or newer (functions, PEXPIRE NX, PEXPIRETIME)"
    )]
    RedisTooOld { found: String },

    #[error(
        "port 127.0.0.1:{port} is already in use; stop whatever listens there or let limitbench pick a free port"
    )]
    PortInUse { port: u16 },

    #[error(
        "redis-server on port {port} died or did not come up ({what}); last lines of its log:\n{log_tail}"
    )]
    ServerDied {
        port: u16,
        what: String,
        log_tail: String,
    },

    #[error(
        "unknown strategy `{name}`; known: {known} (an external strategy is named by its manifest's `name` in --dir; `check` also takes the manifest's path: limitbench check path/to/limiter.toml)"
    )]
    UnknownStrategy { name: String, known: String },

    #[error(
        "strategy `{strategy}` does not support invocation `{mode}` (it supports: {supported})"
    )]
    UnsupportedInvocation {
        strategy: String,
        mode: String,
        supported: String,
    },

    #[error("strategy `{strategy}`: bad option `{option}`: {problem}")]
    BadOption {
        strategy: String,
        option: String,
        problem: String,
    },

    #[error("unknown experiment `{name}`; known: {known}")]
    UnknownExperiment { name: String, known: String },

    #[error("{}: field `{field}`: {problem}", file.display())]
    Manifest {
        file: PathBuf,
        field: String,
        problem: String,
    },

    #[error("only loopback addresses are allowed, got `{0}`")]
    NotLoopback(String),

    #[error("redis replied with an error: {0}")]
    Reply(String),

    #[error("unexpected reply from redis: {0}")]
    Protocol(String),

    #[error("timed out: {0}")]
    Timeout(String),

    /// A strategy the replay loop (`load::replay`, the cost experiment's
    /// method) cannot measure: its decision is more than one request.
    #[error(
        "strategy `{strategy}` makes {round_trips} round trips per decision; the cost hot loop only replays one-round-trip strategies"
    )]
    NotReplayable { strategy: String, round_trips: u64 },

    /// A CPU parameter (`redis_cpu`, `load_cpu`, ...) is a position in the
    /// CPUs this process was allowed when it started; this one is past
    /// their end (`pin::cpu_at`).
    #[error(
        "`{what}` = {position} is a position in the CPUs this process was allowed when it started ({allowed}: {count} CPU(s), positions 0 to {last}), and there is no position {position}: give it more CPUs (e.g. a pod with more exclusive cores, or a wider `taskset -c`) or lower `{what}`"
    )]
    CpuPosition {
        what: String,
        position: usize,
        /// The allowed set in the kernel's list format (`0-1`, `4,6`).
        allowed: String,
        count: usize,
        last: usize,
    },

    // The OS error is part of the message, not a `source` (see `cause`).
    #[error("{context}: {cause}")]
    Io {
        context: String,
        /// Not named `source`: thiserror would make it the error's source and
        /// anyhow's `{:#}` would print the OS error twice.
        cause: std::io::Error,
    },

    #[error("{0}")]
    Other(String),
}

impl Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            cause: source,
        }
    }

    /// The error text of a Redis error reply, if this is one.
    pub fn reply_text(&self) -> Option<&str> {
        match self {
            Error::Reply(s) => Some(s),
            _ => None,
        }
    }

    /// True for a `NOSCRIPT` reply: the script cache does not hold the SHA.
    pub fn is_noscript(&self) -> bool {
        self.reply_text().is_some_and(|s| s.starts_with("NOSCRIPT"))
    }

    /// The text a caller would see: Redis's own error reply verbatim where
    /// there is one, else this error's message. Experiments record it as is.
    pub fn caller_text(&self) -> String {
        match self.reply_text() {
            Some(t) => t.to_string(),
            None => self.to_string(),
        }
    }

    /// The first word of a Redis error (`NOSCRIPT`, `READONLY`, `ERR`, ...),
    /// or a class for errors that are not replies (`timeout`, `io`, `other`).
    pub fn class(&self) -> String {
        match self {
            Error::Reply(t) => t.split_whitespace().next().unwrap_or("ERR").to_string(),
            Error::Timeout(_) => "timeout".into(),
            Error::Io { .. } => "io".into(),
            _ => "other".into(),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io {
            context: "I/O".into(),
            cause: e,
        }
    }
}
