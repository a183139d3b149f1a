//! What a user on a server someone runs may do, found at connect and named
//! before anything is written (issue 34): a least-privilege ACL that lacks
//! a command the run needs stops with the list of what is missing and the
//! ACL line that grants it, not at the first use with one `NOPERM`.
//!
//! Each permission is probed by a call that changes nothing: INFO, a SCAN
//! under the prefix, an UNLINK of a key under the prefix that does not
//! exist, an EVALSHA of a script that does not exist (NOSCRIPT when
//! allowed), FCALL of a function that does not exist and FUNCTION LIST of
//! a library that does not exist. Redis checks the ACL (commands and key
//! patterns) before it runs a command, so a refusal is `NOPERM` and
//! anything else means allowed. `ACL DRYRUN` would say the same but needs
//! admin rights a least-privilege user lacks. Not probed: `SCRIPT LOAD`
//! (it would leave a script in the server's cache) and the commands a
//! limiter's script calls (Redis checks them when the script runs: its
//! first decision names a missing one).

use crate::resp::{Arg, Connection};
use limitbench_base::error::{Error, Result};

/// One permission the run uses, and how to probe it.
struct Need {
    /// As an ACL rule grants it (`+info`).
    grant: &'static str,
    /// What the run does with it.
    what: &'static str,
    /// Without it the run cannot go on (else: recorded, the parts that
    /// need it are skipped or fail with their reason).
    required: bool,
}

const SHA_NONE: &str = "0000000000000000000000000000000000000000";

/// What the probes found: the optional permissions the user lacks, each
/// with the server's reply.
#[derive(Debug, Default, Clone)]
pub struct Permissions {
    pub missing_optional: Vec<String>,
}

fn needs() -> [Need; 6] {
    [
        Need {
            grant: "+info",
            what: "INFO: the checks before writing (a replica or a full server is refused; maxclients bounds the workers)",
            required: true,
        },
        Need {
            grant: "+scan",
            what: "SCAN under the prefix: the run's keys found to remove them",
            required: true,
        },
        Need {
            grant: "+unlink",
            what: "UNLINK under the prefix: the run's keys removed at the end",
            required: true,
        },
        Need {
            grant: "+evalsha",
            what: "EVALSHA: the limiter's script run by its SHA",
            required: true,
        },
        Need {
            grant: "+fcall",
            what: "FCALL: strategies run as functions (invocation fcall)",
            required: false,
        },
        Need {
            grant: "+function|list",
            what: "FUNCTION LIST: the run's libraries found to delete them",
            required: false,
        },
    ]
}

/// The probe of need `i`, with `probe_key` a key under the run's prefix.
fn probe_args<'a>(i: usize, prefix_match: &'a str, probe_key: &'a str) -> Vec<Arg<'a>> {
    match i {
        0 => vec!["INFO".into(), "server".into()],
        1 => vec![
            "SCAN".into(),
            "0".into(),
            "MATCH".into(),
            prefix_match.into(),
            "COUNT".into(),
            "1".into(),
        ],
        2 => vec!["UNLINK".into(), probe_key.into()],
        3 => vec![
            "EVALSHA".into(),
            SHA_NONE.into(),
            "1".into(),
            probe_key.into(),
        ],
        4 => vec![
            "FCALL".into(),
            "limitbench_permission_probe_none".into(),
            "1".into(),
            probe_key.into(),
        ],
        _ => vec![
            "FUNCTION".into(),
            "LIST".into(),
            "LIBRARYNAME".into(),
            "limitbench_permission_probe_none".into(),
        ],
    }
}

/// Probe every permission on `c` for a run under `prefix`; an error naming
/// every missing required one (with the ACL rules that grant them) when
/// any is missing, else the optional ones missing.
pub async fn check(
    c: &mut Connection,
    prefix: &str,
    shown: &str,
    user: Option<&str>,
) -> Result<Permissions> {
    let prefix_match = format!("{prefix}*");
    let probe_key = format!("{prefix}limitbench-permission-probe");
    let mut missing_required = Vec::new();
    let mut out = Permissions::default();
    for (i, need) in needs().iter().enumerate() {
        let args = probe_args(i, &prefix_match, &probe_key);
        let refused = match c.pipeline(&[&args]).await?.pop() {
            Some(crate::resp::Reply::Error(e)) if e.starts_with("NOPERM") => Some(e),
            _ => None,
        };
        if let Some(e) = refused {
            let line = format!("{} ({}; the server said: {e})", need.grant, need.what);
            if need.required {
                missing_required.push(line);
            } else {
                out.missing_optional.push(line);
            }
        }
    }
    if missing_required.is_empty() {
        return Ok(out);
    }
    let rules: Vec<&str> = needs()
        .iter()
        .filter(|n| n.required)
        .map(|n| n.grant)
        .collect();
    Err(Error::Other(format!(
        "{shown}: the user {} lacks what limitbench needs on a server you run: {}. Grant it, e.g. ACL SETUSER {} ~{prefix}* +ping {} +script|load +eval and the commands the limiter's script calls (docs/scorecard.md, 'Permissions'); optional: +fcall +function|load +function|delete +function|list (strategies run as functions), +config|get (describes the server)",
        user.unwrap_or("default"),
        missing_required.join("; "),
        user.unwrap_or("<user>"),
        rules.join(" ")
    )))
}
