//! `fixed-window-multi`: INCRBY and PEXPIRE of the window's counter in one
//! MULTI/EXEC (one round trip); the decision is read from the INCRBY reply.
//! Atomic without a script: nothing is read before the write.

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    Builtin, ClientKey, ClockSource, Decision, Info, Kind, Options, Request, Strategy, window_index,
};
use crate::args;
use crate::conn::Conn;
use crate::error::{Error, Result};
use crate::resp::Reply;

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
            },
        }))
    },
};

/// The result array of an EXEC, or why there is none.
pub(crate) fn exec_results(replies: &mut Vec<Reply>) -> Result<Option<Vec<Reply>>> {
    match replies.pop() {
        Some(Reply::Array(items)) => Ok(Some(items)),
        Some(Reply::Nil) => Ok(None),
        Some(Reply::Error(e)) => Err(Error::Reply(e)),
        other => Err(Error::Protocol(format!("EXEC replied {other:?}"))),
    }
}

#[async_trait]
impl Strategy for FixedWindowMulti {
    fn info(&self) -> &Info {
        &self.info
    }

    async fn decide(&self, conn: &mut Conn, req: &Request<'_>) -> Result<Decision> {
        let w = window_index(req.now_us, req.limit.window_ms);
        let key = ClientKey(req.client, format_args!("fw:{w}")).to_string();
        let mut replies = conn
            .pipeline(
                &key,
                &[
                    &args!["MULTI"],
                    &args!["INCRBY", &key, req.cost],
                    &args!["PEXPIRE", &key, req.limit.window_ms],
                    &args!["EXEC"],
                ],
            )
            .await?;
        let results = exec_results(&mut replies)?
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
