//! The raw pipe: raw request bytes written pipelined on one connection and
//! every reply read back, to fill state fast (directly written logs, the
//! memory experiment's strategy fills).

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::reply::scan_reply;
use super::template::Template;
use limitbench_base::error::{Error, Result};

/// Pipelined raw commands on one connection (fills).
pub struct RawPipe {
    stream: TcpStream,
    rbuf: Vec<u8>,
}

/// Replies of one pipelined batch.
#[derive(Debug, Clone, Default)]
pub struct PipeOutcome {
    pub errors: u64,
    pub first_error: Option<String>,
    /// First integer of each reply (admitted flags of scripts, ZADD counts).
    pub firsts: Vec<Option<i64>>,
    /// Each reply's bytes, when asked for (`send_keeping`): for a template
    /// whose decisions are read by the strategy's reply rules.
    pub replies: Vec<Vec<u8>>,
}

impl RawPipe {
    pub async fn connect(addr: SocketAddr) -> Result<Self> {
        crate::resp::require_loopback(&addr)?;
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| Error::io(format!("connecting to {addr}"), e))?;
        stream.set_nodelay(true).ok();
        Ok(RawPipe {
            stream,
            rbuf: Vec::with_capacity(64 * 1024),
        })
    }

    /// Send `bytes` (`frames` commands) and read every reply; writing and
    /// reading run together so a large batch cannot deadlock on full buffers.
    pub async fn send(&mut self, bytes: &[u8], frames: usize) -> Result<PipeOutcome> {
        self.send_keeping(bytes, frames, false).await
    }

    /// `send`, also keeping every reply's bytes when `keep` is set.
    pub async fn send_keeping(
        &mut self,
        bytes: &[u8],
        frames: usize,
        keep: bool,
    ) -> Result<PipeOutcome> {
        let (mut rd, mut wr) = self.stream.split();
        let rbuf = &mut self.rbuf;
        let write = async move {
            wr.write_all(bytes)
                .await
                .map_err(|e| Error::io("pipeline write", e))
        };
        let read = async move {
            let mut out = PipeOutcome::default();
            rbuf.clear();
            let mut pos = 0usize;
            let mut chunk = vec![0u8; 64 * 1024];
            while out.firsts.len() < frames {
                match scan_reply(&rbuf[pos..]) {
                    Some(s) => {
                        if s.error {
                            out.errors += 1;
                            if out.first_error.is_none() {
                                out.first_error = Some(
                                    String::from_utf8_lossy(&rbuf[pos..pos + s.len.min(200)])
                                        .into_owned(),
                                );
                            }
                        }
                        out.firsts.push(s.first_int);
                        if keep {
                            out.replies.push(rbuf[pos..pos + s.len].to_vec());
                        }
                        pos += s.len;
                    }
                    None => {
                        rbuf.drain(..pos);
                        pos = 0;
                        let n = rd
                            .read(&mut chunk)
                            .await
                            .map_err(|e| Error::io("pipeline read", e))?;
                        if n == 0 {
                            return Err(Error::Other("pipeline: connection closed".into()));
                        }
                        rbuf.extend_from_slice(&chunk[..n]);
                    }
                }
            }
            rbuf.clear();
            Ok(out)
        };
        let (w, r) = tokio::join!(write, read);
        w?;
        r
    }
}

/// What a pipelined replay of many decisions gave.
#[derive(Debug, Clone, Default)]
pub struct ReplayOutcome {
    pub admitted: u64,
    pub errors: u64,
    pub first_error: Option<String>,
}

/// Send many rendered requests of a template pipelined, `per_batch`
/// decisions per round trip; `requests` yields (client index, request id).
pub async fn replay_pipelined(
    pipe: &mut RawPipe,
    tpl: &Template,
    requests: impl Iterator<Item = (u64, u64)>,
    per_batch: usize,
) -> Result<ReplayOutcome> {
    let mut buf = Vec::with_capacity(per_batch * (tpl.bytes.len() + 8));
    let mut frames = 0usize;
    let mut total = ReplayOutcome::default();
    let mut pending = 0usize;
    let mut it = requests.peekable();
    while it.peek().is_some() || pending > 0 {
        if let Some((client, id)) = it.next() {
            let start = buf.len();
            buf.extend_from_slice(&tpl.bytes);
            tpl.fill(&mut buf[start..], client, id);
            frames += tpl.frames;
            pending += 1;
            if pending < per_batch && it.peek().is_some() {
                continue;
            }
        }
        let keep = tpl.rule.needs_reply();
        let out = pipe.send_keeping(&buf, frames, keep).await?;
        // A decision's outcome is in the last reply of its commands.
        let per = tpl.frames.max(1);
        for (i, decision) in out.firsts.chunks(per).enumerate() {
            let last = decision.last().copied().flatten();
            let reply = if keep {
                out.replies[(i + 1) * per - 1].as_slice()
            } else {
                &[]
            };
            match tpl.rule.admits_reply(reply, last) {
                Ok(a) => total.admitted += a as u64,
                Err(e) => {
                    total.errors += 1;
                    total.first_error.get_or_insert(e);
                }
            }
        }
        total.errors += out.errors;
        if total.first_error.is_none() {
            total.first_error = out.first_error;
        }
        buf.clear();
        frames = 0;
        pending = 0;
    }
    Ok(total)
}
