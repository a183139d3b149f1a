//! `check-then-act`: GET, compare in the client, then INCRBY (+ PEXPIRE in the
//! same round trip). The read and the write are separate round trips, so
//! concurrent callers that read the same count all act on it: the racy
//! baseline of study A.

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    Builtin, ClientKey, ClockSource, Decision, Info, Kind, Options, Request, Strategy, window_index,
};
use crate::args;
use crate::conn::Conn;
use crate::resp::Reply;
use limitbench_base::error::{Error, Result};

pub struct CheckThenAct {
    info: Info,
}

pub const BUILTIN: Builtin = Builtin {
    name: "check-then-act",
    build: |opts: &Options| {
        opts.reader("check-then-act").finish()?;
        Ok(Arc::new(CheckThenAct {
            info: Info {
                name: "check-then-act".into(),
                kind: Kind::ClientSide,
                modes: vec![],
                keys: "rl:{client}:fw:<window index> (counter)".into(),
                atomic: false,
                known_bug: Some(
                    "read and write are separate round trips: concurrent callers over-admit",
                ),
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
impl Strategy for CheckThenAct {
    fn info(&self) -> &Info {
        &self.info
    }

    async fn decide(&self, conn: &mut Conn, req: &Request<'_>) -> Result<Decision> {
        let w = window_index(req.now_us, req.limit.window_ms);
        let key = ClientKey(req.client, format_args!("fw:{w}")).to_string();
        let seen = conn
            .call(&key, &args!["GET", &key])
            .await?
            .as_i64()
            .unwrap_or(0);
        let limit = req.limit.limit as i64;
        if seen + req.cost as i64 > limit {
            return Ok(Decision {
                admitted: false,
                remaining: Some((limit - seen).max(0)),
                ..Default::default()
            });
        }
        let replies = conn
            .pipeline(
                &key,
                &[
                    &args!["INCRBY", &key, req.cost],
                    &args!["PEXPIRE", &key, req.limit.window_ms],
                ],
            )
            .await?;
        let count = match &replies[0] {
            Reply::Error(e) => return Err(Error::Reply(e.clone())),
            r => r.as_i64().unwrap_or(0),
        };
        Ok(Decision {
            admitted: true,
            remaining: Some((limit - count).max(0)),
            ..Default::default()
        })
    }
}
