//! Where a run or a check measures: the harness's own redis-server, or a
//! server the user runs (`--redis-url`, claimed under a key prefix).

use std::path::PathBuf;

use anyhow::{Context, Result};

use limitbench_core::fleet::external::{OpenPolicy, UserServer};
use limitbench_core::fleet::{self, Fleet, RedisBinary, ServerConfig};

/// The server choice of a command, as plain data (the command line's
/// `--redis-url/--key-prefix/--redis-server` group builds it).
#[derive(Clone, Debug, Default)]
pub struct ServerChoice {
    /// The user's Redis (loopback only) instead of one of our own.
    pub redis_url: Option<String>,
    /// On a `redis_url` server every key starts with this prefix (default
    /// lb:<run-id>:); it must contain the run id.
    pub key_prefix: Option<String>,
    /// The redis-server binary to start (default: from PATH).
    pub redis_server: Option<PathBuf>,
}

impl ServerChoice {
    /// The server `check` works on: its own, or the user's (checked and
    /// claimed under a prefix of its own, `lb:check-<pid>-<time>:`; the
    /// returned guard removes what was written).
    pub async fn standalone(&self) -> Result<(Fleet, Option<UserServer>)> {
        if let Some(url) = &self.redis_url {
            let id = format!(
                "check-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0)
            );
            let u = self.open_user_server(url, &id, false).await?;
            return Ok((Fleet::external(u.addr), Some(u)));
        }
        let bin = RedisBinary::locate(self.redis_server.as_deref())?;
        Ok((
            Fleet::standalone(&bin, ServerConfig::default()).await?,
            None,
        ))
    }

    /// Check and claim the user's server for run `id` (loopback only).
    pub async fn open_user_server(&self, url: &str, id: &str, resume: bool) -> Result<UserServer> {
        let prefix = self
            .key_prefix
            .clone()
            .unwrap_or_else(|| fleet::owned::default_prefix(id));
        let policy = OpenPolicy {
            allow_remote: false,
            resume,
            cluster: false,
        };
        let u = UserServer::open(url, &prefix, Some(id), policy)
            .await
            .with_context(|| {
                format!("checking --redis-url {}", limitbench_core::redact::url(url))
            })?;
        u.announce();
        Ok(u)
    }
}

/// The manifest's `redis_server`: what the server is (product, version,
/// allocator, build id and git sha1, read from the server's own INFO) and
/// where it came from (`limitbench matrix`, `--redis-server`,
/// `$LIMITBENCH_REDIS_SERVER`, the system's `redis-server`, or an external
/// `--redis-url`). `identity` is what `limitbench matrix` read already.
pub(super) async fn record(
    choice: &ServerChoice,
    redis: Option<&RedisBinary>,
    identity: Option<&serde_json::Value>,
    external: Option<std::net::SocketAddr>,
) -> serde_json::Value {
    use crate::servers::identity as id;
    match (redis, external) {
        (Some(b), _) => {
            let source = id::binary_source(choice.redis_server.is_some());
            id::manifest_entry(b, identity, source).await
        }
        (None, addr) => {
            let mut v = serde_json::json!({
                "external": choice.redis_url.as_deref().map(limitbench_core::redact::url),
                "key_prefix": limitbench_core::namespace::namespace(),
                "source": "external --redis-url",
            });
            if let Some(a) = addr
                && let serde_json::Value::Object(fields) = id::external_entry(a).await
            {
                for (k, x) in fields {
                    v[k] = x;
                }
            }
            v
        }
    }
}
