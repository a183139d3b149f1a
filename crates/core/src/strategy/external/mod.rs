//! External strategies: a Lua file and a TOML manifest, no Rust.
//!
//! The point is auditing the scripts that libraries ship without editing
//! them: the manifest says how a request becomes KEYS and ARGV (templates
//! with placeholders, in the units the library takes) and how the reply
//! becomes a decision (rules, `reply/`).
//!
//! ```toml
//! name = "leaky-bucket"            # how experiments and `check` refer to it
//! script = "leaky-bucket.lua"      # relative to the manifest
//! description = "..."              # optional
//! modes = ["evalsha-fallback", "eval", "evalsha", "fcall"]   # optional; default all four
//! keys = ["rl:{${client}}:lb"]     # KEYS, templated
//! args = ["${limit}", "${rate_per_s}", "${cost}"]            # ARGV, templated
//!
//! clock = "redis"                  # optional: redis | caller | none (see below)
//! promise = "burst-of-capacity"    # optional: at-most-limit-in-any-window | burst-of-capacity
//!
//! [reply]
//! admitted = 1                     # position: reply[1] is 1 (admitted) or 0 (refused)
//! # admitted = "reply[2] >= 0"     # or a rule (reply/): remaining, -1 when refused
//! remaining = 2                    # optional: a position or an expression ("${limit} - reply")
//! redis_time_us = 3                # optional: Redis's TIME (us) as the script read it
//! ```
//!
//! Placeholders (`PLACEHOLDERS`): `${client}`, `${limit}`, `${capacity}`
//! (= limit), `${window_ms}`, `${window_s}` (seconds, fractional: 0.3),
//! `${window_s_int}` (whole seconds; a window that is not one is an error
//! of the decision, `Info::window_whole_seconds`), `${rate_per_s}`,
//! `${cost}`, the caller's clock as `${now_s}` (whole seconds), `${now_ms}`,
//! `${now_us}` and `${now_s_float}` (seconds with six decimals, as
//! `time.time()` or `microtime(true)` give it), `${request_id}`, and for
//! limiters that build the key from the window on the caller's side
//! (`rl:user:<window>`): `${window_index}` (the caller's now in ms divided
//! by `window_ms`, `strategy::window_index`), `${window_start_ms}` (that
//! window's start, ms since the epoch) and `${prev_window_index}` (the one
//! before). The window placeholders read the caller's clock too.
//!
//! `clock` is whose "now" the script decides on (`strategy::ClockSource`).
//! Without it: `redis` if `reply.redis_time_us` is mapped, else `caller` if
//! an argument or key uses a `${now_*}` or window placeholder, else `redis`
//! if the script calls `redis.call('TIME')`, else `none`; a script that
//! reads TIME and also takes the caller's time is inferred `caller` with a
//! warning (`Manifest::warnings`), and so is a declared `none` that reads
//! TIME. `caller` needs one of those placeholders. The strategy reports
//! Redis's time (`Info::reports_redis_time`) exactly when
//! `reply.redis_time_us` is mapped; a script that returns -1 (or nil) there
//! reports none for that decision.
//!
//! A folder is read manifest by manifest: a broken one is named with its
//! error (`Folder::broken`) and the others load (`scan`).
//!
//! Layout: this file holds `Manifest` (what a loaded manifest is);
//! `template.rs` the `${placeholder}` templates of keys and args and their
//! rendering for one request, `manifest.rs` reading and validating a
//! manifest (`Manifest::load`), `build.rs` the strategy it builds
//! (`Manifest::build`), `folder.rs` the scan of the strategy folders.

mod build;
mod folder;
mod manifest;
mod template;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use super::reply::ReplyRules;
use super::{ClockSource, Invocation};
use limitbench_base::error::Error;
use limitbench_base::promise::Promise;
use template::Template;

pub use folder::{Broken, Folder, load_dir, scan};
pub use template::PLACEHOLDERS;

/// A validated manifest with its script source.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub name: String,
    pub file: PathBuf,
    pub description: Option<String>,
    pub source: String,
    pub modes: Vec<Invocation>,
    pub clock: ClockSource,
    pub promise: Option<Promise>,
    /// What the manifest leaves doubtful but not wrong (an inferred clock
    /// that could be another); `strategies` and `check` print them.
    pub warnings: Vec<String>,
    keys: Vec<Template>,
    args: Vec<Template>,
    reply: ReplyRules,
}

impl Manifest {
    /// The script takes a cost: some key or argument passes `${cost}`. A
    /// manifest without one says its script weighs every request as one
    /// unit (`Info::takes_cost`).
    pub fn takes_cost(&self) -> bool {
        self.keys.iter().chain(&self.args).any(|t| t.uses("cost"))
    }
}

fn bad(file: &Path, field: &str, problem: impl Into<String>) -> Error {
    Error::Manifest {
        file: file.to_path_buf(),
        field: field.into(),
        problem: problem.into(),
    }
}
