//! A minimal RESP2 client: one TCP connection, one request in flight.
//!
//! Why not a general-purpose client: a benchmark must know exactly what goes
//! over the wire. Here a decision is the commands the strategy writes and
//! nothing else: no hidden multiplexer task, no response timeout we did not
//! set, no reconnects, no background `PING`s, and encoding into one reused
//! write buffer and reading into one reused read buffer, so that sending a
//! command allocates nothing (an `ArgList` holds arguments built at run
//! time, also reused); parsing allocates only what a reply holds (an array's
//! `Vec`, a bulk string's bytes). Every
//! round trip is counted (`round_trips`), which is how the harness counts
//! decisions and retries on the client side (Redis's own counters also count
//! the commands run inside scripts and `MULTI`).
//!
//! Layout: `codec.rs` is the wire format (`Reply`, `Arg`, `ArgList`,
//! `encode`, `parse`), `access.rs` which addresses may be reached and with
//! which credentials (and the halt on Ctrl-C), `connection.rs` the
//! `Connection` that writes and reads through them; this file re-exports
//! them as `resp::X` and holds `info_fields`.

mod access;
mod codec;
mod connection;

pub use access::{
    Auth, allow_remote, auth_for, halt_commands, inherit_auth, is_allowed_remote,
    mark_cleanup_thread, register_auth, require_loopback,
};
pub use codec::{Arg, ArgList, Reply, encode, encode_with, parse};
pub use connection::Connection;

/// Parse `INFO` text into (field, value) pairs.
pub fn info_fields(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}
