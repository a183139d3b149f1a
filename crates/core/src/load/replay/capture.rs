//! Byte capture: run a strategy's own `decide` once against a fake server on
//! loopback and keep exactly the bytes it wrote, so the replay sends what the
//! strategy sends (no second copy of its KEYS/ARGV mapping to drift from it).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::template::{AdmitRule, CLIENT_MARK, ID_MARK, Template};
use crate::conn::Conn;
use crate::resp::{self, Reply};
use crate::strategy::{Limit, Request, Strategy};
use limitbench_base::error::{Error, Result};

/// Run `strategy.decide` once against a fake server on loopback and return
/// the bytes it wrote as a template. The fake server answers every command
/// the way a real one would shape it (`+OK`/`+QUEUED` in MULTI, an integer
/// array for EXEC and scripts). Strategies that need more than one round
/// trip per decision cannot be replayed and are refused.
pub async fn capture(
    strategy: &dyn Strategy,
    limit: Limit,
    now_us: i64,
    rule: AdmitRule,
) -> Result<Template> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| Error::io("binding the capture listener", e))?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(fake_server(listener));
    let mut conn = Conn::connect(addr).await?;
    let req = Request {
        client: CLIENT_MARK,
        limit,
        cost: 1,
        now_us,
        request_id: ID_MARK,
    };
    strategy.decide(&mut conn, &req).await?;
    let round_trips = conn.round_trips();
    drop(conn);
    let (bytes, frames) = server
        .await
        .map_err(|e| Error::Other(format!("capture server: {e}")))??;
    if round_trips != 1 {
        return Err(Error::NotReplayable {
            strategy: strategy.info().name.clone(),
            round_trips,
        });
    }
    let t = Template::from_bytes(bytes, frames, rule);
    if t.client_slots.is_empty() {
        return Err(Error::Other(format!(
            "strategy `{}`: the client id does not appear in its command",
            strategy.info().name
        )));
    }
    Ok(t)
}

/// The fake server: records every byte of one connection, answers each
/// command, and returns (bytes, commands) when the client hangs up.
async fn fake_server(listener: TcpListener) -> Result<(Vec<u8>, usize)> {
    let (mut s, _) = listener
        .accept()
        .await
        .map_err(|e| Error::io("capture accept", e))?;
    let mut rec = Vec::new();
    let mut parsed = 0;
    let mut frames = 0;
    let mut in_multi = false;
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
            let name = match &cmd {
                Reply::Array(a) => a
                    .first()
                    .and_then(|r| r.as_string())
                    .unwrap_or_default()
                    .to_ascii_uppercase(),
                _ => String::new(),
            };
            let reply: &[u8] = match name.as_str() {
                "MULTI" => {
                    in_multi = true;
                    b"+OK\r\n"
                }
                "EXEC" => {
                    in_multi = false;
                    b"*2\r\n:1\r\n:1\r\n"
                }
                _ if in_multi => b"+QUEUED\r\n",
                "EVAL" | "EVALSHA" | "EVALSHA_RO" | "EVAL_RO" | "FCALL" | "FCALL_RO" => {
                    b"*3\r\n:1\r\n:1\r\n:1\r\n"
                }
                _ => b":1\r\n",
            };
            out.extend_from_slice(reply);
        }
        s.write_all(&out)
            .await
            .map_err(|e| Error::io("capture write", e))?;
    }
}
