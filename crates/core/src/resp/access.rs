//! Which addresses a connection may reach and how it introduces itself:
//! loopback only unless the user named the address (`allow_remote`), the
//! AUTH/SELECT registered per address (`register_auth`), and the halt that
//! stops every command but the clean-up's on Ctrl-C (`halt_commands`).

use std::net::SocketAddr;

use limitbench_base::error::{Error, Result};

static HALTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

std::thread_local! {
    static CLEANING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// From now on no command is sent, except from a thread marked with
/// [`mark_cleanup_thread`]: on Ctrl-C the run's workers must not write
/// while (or after) the clean-up removes what they wrote.
pub fn halt_commands() {
    HALTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// This thread runs the clean-up: its commands go through after a halt.
pub fn mark_cleanup_thread() {
    CLEANING.with(|c| c.set(true));
}

pub(super) fn halted() -> bool {
    HALTED.load(std::sync::atomic::Ordering::Relaxed) && !CLEANING.with(|c| c.get())
}

/// Credentials and database for connections to one address (a Redis the
/// user named with `redis://user:password@host:port/db`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Auth {
    pub user: Option<String>,
    pub password: Option<String>,
    pub db: Option<u32>,
}

fn auth_table() -> &'static std::sync::RwLock<std::collections::HashMap<SocketAddr, Auth>> {
    static T: std::sync::OnceLock<std::sync::RwLock<std::collections::HashMap<SocketAddr, Auth>>> =
        std::sync::OnceLock::new();
    T.get_or_init(Default::default)
}

fn remote_table() -> &'static std::sync::RwLock<std::collections::HashSet<SocketAddr>> {
    static T: std::sync::OnceLock<std::sync::RwLock<std::collections::HashSet<SocketAddr>>> =
        std::sync::OnceLock::new();
    T.get_or_init(Default::default)
}

/// Every later connection to `addr` sends AUTH (and SELECT) first.
pub fn register_auth(addr: SocketAddr, auth: Auth) {
    if let Some(p) = &auth.password {
        crate::redact::remember_secret(p);
    }
    auth_table().write().unwrap().insert(addr, auth);
}

/// The credentials registered for `addr`, if any.
pub fn auth_for(addr: &SocketAddr) -> Option<Auth> {
    auth_table().read().unwrap().get(addr).cloned()
}

/// Connections to `to` (a delay proxy in front of `from`, a cluster node
/// found from a seed) authenticate as those to `from` do.
pub fn inherit_auth(from: &SocketAddr, to: SocketAddr) {
    if let Some(a) = auth_for(from) {
        register_auth(to, a);
    }
}

/// Allow connections to `addr`, which need not be loopback: only for a Redis
/// the user named (`--redis-url`, `--cluster-url`, and the cluster nodes
/// its seed lists). The harness's own servers stay on loopback.
pub fn allow_remote(addr: SocketAddr) {
    remote_table().write().unwrap().insert(addr);
}

pub fn is_allowed_remote(addr: &SocketAddr) -> bool {
    remote_table().read().unwrap().contains(addr)
}

/// Refuse anything but loopback: the harness only ever talks to 127.0.0.1/::1,
/// and to the addresses a user named explicitly (`allow_remote`).
pub fn require_loopback(addr: &SocketAddr) -> Result<()> {
    if addr.ip().is_loopback() || is_allowed_remote(addr) {
        Ok(())
    } else {
        Err(Error::NotLoopback(addr.to_string()))
    }
}
