//! What a run owns on a Redis it did not start: the keys that start with
//! its prefix and the function libraries named with it. Nothing else is
//! touched, and everything owned is removed at the end.
//!
//! - The prefix (`check_prefix`): derived from the run id by default
//!   (`lb:<run-id>:`); a prefix that is empty, short or does not hold the
//!   run id is refused, because the clean-up deletes what it matches.
//! - The namespace that every key and library name of the run carries is
//!   in `crate::namespace` (the strategies read it too); it is set to the
//!   prefix when the server is the user's (`external.rs`).
//! - Ownership is `key.starts_with(prefix)`, never "contains": a foreign
//!   `sess:lb:<run>:1` is not ours.
//! - Clean-up (`clean_up_node`): SCAN MATCH `<escaped prefix>*`, each key
//!   checked again with `starts_with`, UNLINKed in batches; then the
//!   function libraries whose name carries the namespace.

use crate::namespace::{libraries, library_stem};
use crate::resp::Connection;
use limitbench_base::error::{Error, Result};

/// The shortest prefix accepted (`lb:` plus a few characters of a run id).
pub const MIN_PREFIX_LEN: usize = 6;

/// The default prefix of a run on a server the user runs.
pub fn default_prefix(run_id: &str) -> String {
    format!("lb:{run_id}:")
}

/// Refuse a prefix the clean-up could not safely delete by: empty, shorter
/// than [`MIN_PREFIX_LEN`], without the run id (when there is one), or
/// holding glob characters or braces (a brace would change a key's
/// cluster slot; a glob would widen the SCAN).
pub fn check_prefix(prefix: &str, run_id: Option<&str>) -> Result<()> {
    check_prefix_suggesting(
        prefix,
        run_id,
        &default_prefix(run_id.unwrap_or("<run-id>")),
    )
}

/// [`check_prefix`], suggesting `suggestion` (the caller's own default) in
/// the refusal.
pub fn check_prefix_suggesting(prefix: &str, run_id: Option<&str>, suggestion: &str) -> Result<()> {
    let why = if prefix.is_empty() {
        Some("it is empty (every key of the database would be the run's)".to_string())
    } else if prefix.len() < MIN_PREFIX_LEN {
        Some(format!(
            "it is shorter than {MIN_PREFIX_LEN} characters (other applications' keys may start with it)"
        ))
    } else if prefix.contains(['*', '?', '[', ']', '\\', '{', '}'])
        || prefix.contains(char::is_whitespace)
    {
        Some("it holds glob characters, braces or white space".to_string())
    } else {
        run_id
            .filter(|id| !prefix.contains(*id))
            .map(|id| format!("it does not contain the run id `{id}`"))
    };
    match why {
        Some(why) => Err(Error::Other(format!(
            "the key prefix `{prefix}` is refused: {why}; give a prefix that contains the run id, e.g. `{suggestion}`"
        ))),
        None => Ok(()),
    }
}

/// Refuse an output folder that cannot be written, before any work
/// (creates it if missing, then writes and removes a probe file).
pub fn check_writable(dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    let probe = dir.join(format!(".limitbench-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| Error::io(format!("{} is not writable", dir.display()), e))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// `prefix` with SCAN's glob characters escaped, then `*`.
pub fn scan_pattern(prefix: &str) -> String {
    let mut p = String::with_capacity(prefix.len() + 2);
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('*');
    p
}

/// Every key of this node that starts with `prefix` (SCAN, then a
/// `starts_with` check of each: the pattern is a filter, the check decides).
pub async fn keys_with_prefix(conn: &mut Connection, prefix: &str) -> Result<Vec<String>> {
    if prefix.is_empty() {
        return Err(Error::Other(
            "refusing to list keys under an empty prefix".into(),
        ));
    }
    let mut keys = scan_keys(conn, &scan_pattern(prefix)).await?;
    keys.retain(|k| k.starts_with(prefix));
    Ok(keys)
}

/// Every key of this node that SCAN MATCH `pattern` returns (a glob).
pub async fn scan_keys(conn: &mut Connection, pattern: &str) -> Result<Vec<String>> {
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    loop {
        let r = conn
            .call(&crate::args![
                "SCAN",
                cursor.as_str(),
                "MATCH",
                pattern,
                "COUNT",
                1000u64
            ])
            .await?;
        let mut parts = r.into_array().unwrap_or_default();
        let keys = parts.pop().and_then(|k| k.into_array()).unwrap_or_default();
        cursor = parts
            .pop()
            .and_then(|c| c.as_string())
            .unwrap_or_else(|| "0".into());
        out.extend(keys.iter().filter_map(|k| k.as_string()));
        if cursor == "0" {
            return Ok(out);
        }
    }
}

/// How many keys one UNLINK takes.
const UNLINK_BATCH: usize = 500;

/// What a clean-up removed from one node.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Removed {
    pub keys: u64,
    pub libraries: u64,
}

/// Remove from one node every key that starts with `prefix` (UNLINK in
/// batches; in a cluster each key is UNLINKed alone, as keys of one batch
/// may sit in different slots) and every function library the namespace
/// owns. An empty prefix is refused.
pub async fn clean_up_node(conn: &mut Connection, prefix: &str, cluster: bool) -> Result<Removed> {
    check_prefix(prefix, None)?;
    let mut removed = Removed::default();
    let keys = keys_with_prefix(conn, prefix).await?;
    let batch = if cluster { 1 } else { UNLINK_BATCH };
    for chunk in keys.chunks(batch) {
        let mut args = vec![crate::resp::Arg::S("UNLINK")];
        args.extend(chunk.iter().map(|k| crate::resp::Arg::S(k.as_str())));
        let n = conn.call(&args).await?.as_i64().unwrap_or(0);
        removed.keys += n.max(0) as u64;
    }
    let libs = match libraries(conn).await {
        Ok(l) => l,
        // A user whose ACL refuses FUNCTION LIST (`-function`, as on many
        // managed servers) on a run that loaded no library: the keys were
        // all the run had there.
        Err(Error::Reply(e))
            if e.starts_with("NOPERM") && !crate::namespace::loaded_a_library() =>
        {
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    for lib in libs {
        if library_stem_matches(&lib, prefix) {
            conn.call(&crate::args!["FUNCTION", "DELETE", lib.as_str()])
                .await?;
            removed.libraries += 1;
        }
    }
    Ok(removed)
}

fn library_stem_matches(lib: &str, prefix: &str) -> bool {
    !prefix.is_empty() && lib.starts_with(&library_stem(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_that_could_match_foreign_keys_are_refused() {
        assert!(check_prefix("", None).is_err());
        assert!(check_prefix("lb:", Some("r1")).is_err());
        assert!(check_prefix("limitbench:x:", Some("run-7")).is_err());
        assert!(check_prefix("lb:run-7:", Some("run-7")).is_ok());
        assert!(check_prefix("lb:{run-7}:", Some("run-7")).is_err());
        assert!(check_prefix("lb:ru*n7:", None).is_err());
        // The refusal suggests the caller's own default.
        let e = check_prefix_suggesting("x", Some("r1"), "limitbench:r1:")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("e.g. `limitbench:r1:`"), "{e}");
    }

    #[test]
    fn scan_patterns_escape_globs() {
        assert_eq!(scan_pattern("lb:run:"), "lb:run:*");
        assert_eq!(scan_pattern("a?b"), "a\\?b*");
    }
}

/// A server (or the nodes of a cluster) on which the run writes under a
/// prefix: cleaned at the end, and on Ctrl-C or a panic by the reaper.
#[derive(Debug, Clone)]
struct Claim {
    nodes: Vec<std::net::SocketAddr>,
    prefix: String,
    cluster: bool,
}

static CLAIMS: std::sync::Mutex<Vec<Claim>> = std::sync::Mutex::new(Vec::new());

/// Remember that the run writes under `prefix` on `nodes` (every master of
/// a cluster), so [`release_all`] (or the reaper) removes it all.
pub fn claim(nodes: Vec<std::net::SocketAddr>, prefix: &str, cluster: bool) -> Result<()> {
    check_prefix(prefix, None)?;
    CLAIMS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Claim {
            nodes,
            prefix: prefix.to_string(),
            cluster,
        });
    Ok(())
}

/// Whether any server is claimed (a run on a server the user runs).
pub fn has_claims() -> bool {
    !CLAIMS.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
}

/// Remove everything written under every claim, then forget the claims and
/// the namespace. Each node gets 15 s (a stalled server must not hang
/// the exit); a failure names the node and what is left.
pub async fn release_all() -> Result<Removed> {
    let claims: Vec<Claim> = std::mem::take(&mut *CLAIMS.lock().unwrap_or_else(|p| p.into_inner()));
    let mut total = Removed::default();
    let mut failed = Vec::new();
    for c in &claims {
        for &addr in &c.nodes {
            let one = async {
                let mut conn = Connection::connect(addr).await?;
                conn.timeout = Some(std::time::Duration::from_secs(10));
                clean_up_node(&mut conn, &c.prefix, c.cluster).await
            };
            match tokio::time::timeout(std::time::Duration::from_secs(15), one).await {
                Ok(Ok(r)) => {
                    total.keys += r.keys;
                    total.libraries += r.libraries;
                }
                Ok(Err(e)) => failed.push(format!("{addr}: {e}")),
                Err(_) => failed.push(format!("{addr}: no answer within 15 s")),
            }
        }
    }
    if failed.is_empty() {
        Ok(total)
    } else {
        Err(Error::Other(crate::redact::text(&format!(
            "could not remove the run's keys (prefix `{}`) from {}; delete them by hand: redis-cli --scan --pattern '{}' | xargs redis-cli unlink",
            claims.first().map(|c| c.prefix.as_str()).unwrap_or(""),
            failed.join("; "),
            claims
                .first()
                .map(|c| scan_pattern(&c.prefix))
                .unwrap_or_default()
        ))))
    }
}

/// [`release_all`] from a signal handler, a panic hook or a `Drop`: on a
/// thread of its own with its own runtime (the caller may be inside one),
/// waited for. Prints what it removed.
/// With `halt` (Ctrl-C, a panic of the binary), no other thread sends a
/// command any more: workers still running must not write while or after
/// the clean-up runs.
pub fn release_all_blocking(halt: bool) {
    if !has_claims() {
        return;
    }
    if halt {
        // What is already on the wire lands before the clean-up's SCAN.
        crate::resp::halt_commands();
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let t = std::thread::spawn(|| {
        crate::resp::mark_cleanup_thread();
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("limitbench: cannot clean up the server: {e}");
                return;
            }
        };
        match rt.block_on(release_all()) {
            Ok(r) => eprintln!(
                "limitbench: removed {} key(s) and {} function library(ies) of this run from the server",
                r.keys, r.libraries
            ),
            Err(e) => eprintln!("limitbench: {e}"),
        }
    });
    let _ = t.join();
}
