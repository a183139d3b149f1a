//! `fixed-window-multi`: INCRBY and PEXPIRE of the window's counter in one
//! MULTI/EXEC (one round trip); the decision is read from the INCRBY reply.
//! Atomic without a script: nothing is read before the write.

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    Builtin, ClientKey, ClockSource, Decision, Info, Kind, Options, Request, Strategy, multi_exec,
    window_index,
};
use crate::conn::Conn;
use limitbench_base::error::{Error, Result};

pub struct FixedWindowMulti {
    info: Info,
}

pub const BUILTIN: Builtin = Builtin {
    name: "fixed-window-multi",
    build: |opts: &Options| {
        opts.reader("fixed-window-multi").finish()?;
        Ok(Arc::new(FixedWindowMulti {
            info: Info {
                name: "fixed-window-multi".into(),
                kind: Kind::Transaction,
                modes: vec![],
                keys: "rl:{client}:fw:<window index> (counter)".into(),
                atomic: true,
                known_bug: None,
                clock: ClockSource::Caller,
                reports_redis_time: false,
                promise: None,
                window_whole_seconds: false,
                takes_cost: true,
            },
        }))
    },
};

#[async_trait]
impl Strategy for FixedWindowMulti {
    fn info(&self) -> &Info {
        &self.info
    }

    async fn decide(&self, conn: &mut Conn, req: &Request<'_>) -> Result<Decision> {
        let w = window_index(req.now_us, req.limit.window_ms);
        let key = ClientKey(req.client, format_args!("fw:{w}")).to_string();
        let results = multi_exec::incr_expire(conn, &key, req.cost, req.limit.window_ms)
            .await?
            .ok_or_else(|| Error::Protocol("EXEC aborted without WATCH".into()))?;
        let count = results
            .first()
            .and_then(|r| r.as_i64())
            .ok_or_else(|| Error::Protocol(format!("INCRBY in MULTI replied {results:?}")))?;
        let limit = req.limit.limit as i64;
        Ok(Decision {
            admitted: count <= limit,
            remaining: Some((limit - count).max(0)),
            ..Default::default()
        })
    }
}
