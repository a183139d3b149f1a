//! Byte capture: run a strategy's own `decide` once through a recording
//! proxy on loopback to the real server and keep exactly the bytes it
//! wrote, so the replay sends what the strategy sends (no second copy of
//! its KEYS/ARGV mapping to drift from it). The proxy relays the server's
//! own replies (no canned answers): a script that replies with a boolean,
//! a count or nil is read by its own rules during the capture as in every
//! later decision (`AdmitRule::for_strategy`).

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::template::{AdmitRule, CLIENT_MARK, ID_MARK, Template};
use crate::conn::Conn;
use crate::resp::{self, Arg, Connection, Reply};
use crate::strategy::{Limit, Request, Strategy};
use limitbench_base::error::{Error, Result};

/// Run `strategy.decide` once through a recording proxy to `node` (a real
/// server on which the strategy is prepared) and return the bytes it wrote
/// as a template whose decisions are read as the strategy reads them
/// (`AdmitRule::for_strategy`). The decision is a real one: it writes the
/// capture client's keys (`CLIENT_MARK`, under the run's namespace) on
/// `node`. Strategies that need more than one round trip per decision
/// cannot be replayed and are refused.
pub async fn capture(
    strategy: &dyn Strategy,
    limit: Limit,
    now_us: i64,
    node: SocketAddr,
) -> Result<Template> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| Error::io("binding the capture listener", e))?;
    let addr = listener.local_addr()?;
    let upstream = Connection::connect(node).await?;
    let server = tokio::spawn(recording_proxy(listener, upstream));
    let mut conn = Conn::connect(addr).await?;
    let req = Request {
        client: CLIENT_MARK,
        limit,
        cost: 1,
        now_us,
        request_id: ID_MARK,
    };
    let decided = strategy.decide(&mut conn, &req).await;
    let round_trips = conn.round_trips();
    drop(conn);
    let (bytes, frames) = server
        .await
        .map_err(|e| Error::Other(format!("capture proxy: {e}")))??;
    decided.map_err(|e| {
        Error::Other(format!(
            "strategy `{}`: its first decision on the server failed while capturing its request: {e}",
            strategy.info().name
        ))
    })?;
    if round_trips != 1 {
        return Err(Error::NotReplayable {
            strategy: strategy.info().name.clone(),
            round_trips,
        });
    }
    let t = Template::from_bytes(bytes, frames, AdmitRule::for_strategy(strategy, limit));
    if t.client_slots.is_empty() {
        return Err(Error::Other(format!(
            "strategy `{}`: the client id does not appear in its command",
            strategy.info().name
        )));
    }
    Ok(t)
}

/// The recording proxy: records every byte of one connection, sends each
/// command to the real server and relays its reply as the server sent it
/// (error replies included); returns (bytes, commands) when the client
/// hangs up.
async fn recording_proxy(
    listener: TcpListener,
    mut upstream: Connection,
) -> Result<(Vec<u8>, usize)> {
    let (mut s, _) = listener
        .accept()
        .await
        .map_err(|e| Error::io("capture accept", e))?;
    let mut rec = Vec::new();
    let mut parsed = 0;
    let mut frames = 0;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = s
            .read(&mut buf)
            .await
            .map_err(|e| Error::io("capture read", e))?;
        if n == 0 {
            return Ok((rec, frames));
        }
        rec.extend_from_slice(&buf[..n]);
        let mut out = Vec::new();
        while let Some((cmd, used)) = resp::parse(&rec[parsed..])? {
            parsed += used;
            frames += 1;
            let words: Vec<Vec<u8>> = match cmd {
                Reply::Array(a) => a
                    .into_iter()
                    .map(|r| match r {
                        Reply::Bulk(b) => b,
                        other => other.as_string().unwrap_or_default().into_bytes(),
                    })
                    .collect(),
                other => {
                    return Err(Error::Protocol(format!(
                        "capture: a command that is not an array: {}",
                        other.one_line()
                    )));
                }
            };
            let args: Vec<Arg<'_>> = words.iter().map(|w| Arg::B(w)).collect();
            let mut replies = upstream.pipeline(&[&args]).await?;
            replies.pop().unwrap_or(Reply::Nil).write_resp(&mut out);
        }
        s.write_all(&out)
            .await
            .map_err(|e| Error::io("capture write", e))?;
    }
}
