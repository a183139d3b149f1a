//! The `--redis-url/--key-prefix/--redis-server` group that `check` and
//! `run` share: where the harness measures, its own redis-server or the user's.

use std::path::PathBuf;

use limitbench::app::session::ServerChoice;

#[derive(clap::Args, Clone)]
pub struct ServerArgs {
    /// Use this Redis (loopback only) instead of starting one; also from
    /// the environment (LIMITBENCH_REDIS_URL), so a password stays out of `ps`.
    #[arg(long, env = "LIMITBENCH_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// On a --redis-url server every key starts with this prefix (default
    /// lb:<run-id>:); it must contain the run id. Everything under it is
    /// removed at the end, also on Ctrl-C.
    #[arg(long)]
    pub key_prefix: Option<String>,
    /// The redis-server binary to start (default: from PATH).
    #[arg(long)]
    pub redis_server: Option<PathBuf>,
}

impl ServerArgs {
    /// The choice as the library takes it.
    pub fn choice(&self) -> ServerChoice {
        ServerChoice {
            redis_url: self.redis_url.clone(),
            key_prefix: self.key_prefix.clone(),
            redis_server: self.redis_server.clone(),
        }
    }
}
