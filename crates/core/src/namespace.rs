//! The run's key namespace: on a Redis the user runs, every key a strategy
//! builds and every function library it loads carries the run's prefix, so
//! that the clean-up (`fleet::owned`) can find and remove exactly what the
//! run wrote. Shared by the fleet (which sets it and cleans up under it) and
//! the strategies (which build keys and library names with it).
//!
//! - The namespace (`set_namespace`, `namespace`): while set, every key a
//!   strategy builds (`strategy::ClientKey`, the templated keys of external
//!   manifests) starts with it, for every experiment and for `check`; it is
//!   set only when the server is the user's ("" on the harness's own).
//! - Function libraries (`library_name`, `owns_library`, `libraries`,
//!   `check_library_free`): named with the namespace (sanitised), and a
//!   library of the same name that the run did not load is never replaced.

use std::sync::RwLock;

use crate::resp::Connection;
use limitbench_base::error::{Error, Result};

static NAMESPACE: RwLock<String> = RwLock::new(String::new());

/// Whether this process has loaded a function library (`FUNCTION LOAD`) on
/// any server: without one, a server that refuses FUNCTION LIST holds
/// nothing of the run's but keys.
static LOADED_A_LIBRARY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Called after every successful `FUNCTION LOAD`.
pub fn note_library_loaded() {
    LOADED_A_LIBRARY.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether [`note_library_loaded`] was ever called in this process.
pub fn loaded_a_library() -> bool {
    LOADED_A_LIBRARY.load(std::sync::atomic::Ordering::SeqCst)
}

/// Every key built from now on starts with `prefix` (empty: none). Set
/// when the server is the user's, before any strategy is built (function
/// library names read it when the strategy is built).
pub fn set_namespace(prefix: &str) {
    *NAMESPACE.write().unwrap() = prefix.to_string();
}

/// The current key namespace ("" on the harness's own servers).
pub fn namespace() -> String {
    NAMESPACE.read().unwrap().clone()
}

/// Write the namespace (no allocation): for key formatting.
pub fn write_namespace(f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    let ns = NAMESPACE.read().unwrap();
    if ns.is_empty() {
        Ok(())
    } else {
        f.write_str(&ns)
    }
}

/// A key (any `Display`) under the current namespace.
pub struct Namespaced<T>(pub T);

impl<T: std::fmt::Display> std::fmt::Display for Namespaced<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_namespace(f)?;
        self.0.fmt(f)
    }
}

/// The function-library name fragment of a namespace. Libraries may hold
/// only letters, digits and underscores, so every other byte (the
/// underscore included) is written `_` and two hex digits: the encoding is
/// reversible and a prefix code, so one namespace's stem starts another's
/// only if the namespace itself does (`limitbench:lbt:` no longer owns the
/// libraries of `limitbench:lbt-2:`; a namespace ends with `:`, which a run
/// id never holds).
pub(crate) fn library_stem(ns: &str) -> String {
    let mut out = String::with_capacity(ns.len() * 2);
    for b in ns.bytes() {
        if b.is_ascii_alphanumeric() {
            out.push(b as char);
        } else {
            out.push_str(&format!("_{b:02x}"));
        }
    }
    out
}

/// A function (and library) name under the current namespace: `lb_<name>`
/// on the harness's own servers, `<namespace>lb_<name>` (sanitised) on the
/// user's.
pub fn library_name(base: &str) -> String {
    format!("{}{base}", library_stem(&namespace()))
}

/// Whether a library of this name belongs to the current namespace.
pub fn owns_library(name: &str) -> bool {
    let ns = namespace();
    !ns.is_empty() && name.starts_with(&library_stem(&ns))
}

/// The names of the function libraries on a node (none where FUNCTION is
/// unknown, as on Redis < 7).
pub async fn libraries(conn: &mut Connection) -> Result<Vec<String>> {
    let r = match conn.call(&crate::args!["FUNCTION", "LIST"]).await {
        Ok(r) => r,
        Err(Error::Reply(e)) if e.contains("unknown") => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for lib in r.into_array().unwrap_or_default() {
        let fields = lib.into_array().unwrap_or_default();
        for kv in fields.chunks(2) {
            if kv.first().and_then(|k| k.as_string()).as_deref() == Some("library_name")
                && let Some(n) = kv.get(1).and_then(|v| v.as_string())
            {
                out.push(n);
            }
        }
    }
    Ok(out)
}

/// Before `FUNCTION LOAD REPLACE` of `name` on a server the user runs:
/// refuse if a library of that name exists and is not the namespace's.
pub async fn check_library_free(conn: &mut Connection, name: &str) -> Result<()> {
    if namespace().is_empty() || owns_library(name) {
        return Ok(());
    }
    if libraries(conn).await?.iter().any(|l| l == name) {
        return Err(Error::Other(format!(
            "the server already holds a function library `{name}` that this run did not load; refusing to replace it"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::library_stem;

    #[test]
    fn one_runs_library_stem_never_starts_anothers() {
        let a = library_stem("limitbench:lbt:");
        let b = library_stem("limitbench:lbt-2:");
        let c = library_stem("limitbench:lbt_2:");
        assert_eq!(a, "limitbench_3albt_3a");
        for (x, y) in [(&a, &b), (&a, &c), (&b, &c)] {
            assert!(
                !y.starts_with(x.as_str()) && !x.starts_with(y.as_str()),
                "{x} {y}"
            );
        }
        // Only letters, digits and underscores.
        assert!(b.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    }
}
