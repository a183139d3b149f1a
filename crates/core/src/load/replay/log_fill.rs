//! Log filling: sorted-set logs written directly with pipelined ZADD
//! batches, holding exactly the data the sliding-window-log strategy would
//! store (its member format, microsecond scores, the TTL), far faster than
//! one decision at a time. `memory` checks the equivalence (its verify
//! cells); `cost`, `memory` and `stalls` use it to prefill big logs.

use super::pipe::RawPipe;
use crate::resp;
use limitbench_base::error::{Error, Result};

/// How sorted-set logs are written directly (without the script): exactly
/// the data the sliding-window-log strategy stores, member = the request id
/// zero-padded to `member_len` (the strategy's own formatting), score = a
/// microsecond timestamp, and the key's TTL if `ttl_ms` is set.
#[derive(Debug, Clone)]
pub struct LogSpec {
    pub entries: u64,
    pub member_len: usize,
    pub first_id: u64,
    pub first_score_us: i64,
    pub score_step_us: i64,
    pub ttl_ms: Option<u64>,
    /// Members per ZADD (<= 128 keeps small logs growing through the same
    /// listpack-then-skiplist path as one-at-a-time inserts).
    pub chunk: usize,
}

/// The member the sliding-window-log strategy writes for request `id`.
pub fn log_member(id: u64, member_len: usize) -> String {
    format!("{:0>width$}", id, width = member_len)
}

/// Fill every key in `keys` with `spec.entries` entries, pipelined in
/// batches of about 512 KB; request ids run on across keys. Returns the next
/// unused id.
pub async fn fill_logs(pipe: &mut RawPipe, keys: &[String], spec: &LogSpec) -> Result<u64> {
    let mut id = spec.first_id;
    let mut buf: Vec<u8> = Vec::with_capacity(600 * 1024);
    let mut frames = 0usize;
    let mut ib = itoa::Buffer::new();
    let chunk = spec.chunk.max(1) as u64;
    for key in keys {
        let mut done = 0u64;
        while done < spec.entries {
            let n = chunk.min(spec.entries - done);
            // *<2 + 2n>\r\n $4 ZADD $<len> key (score member)*
            buf.push(b'*');
            buf.extend_from_slice(ib.format(2 + 2 * n).as_bytes());
            buf.extend_from_slice(b"\r\n$4\r\nZADD\r\n");
            push_bulk(&mut buf, key.as_bytes());
            for j in 0..n {
                let score = spec.first_score_us + (done + j) as i64 * spec.score_step_us;
                push_bulk(&mut buf, ib.format(score).as_bytes());
                let m = log_member(id, spec.member_len);
                push_bulk(&mut buf, m.as_bytes());
                id += 1;
            }
            frames += 1;
            done += n;
            if buf.len() >= 512 * 1024 {
                flush(pipe, &mut buf, &mut frames).await?;
            }
        }
        if let Some(ttl) = spec.ttl_ms {
            resp::encode(&mut buf, &crate::args!["PEXPIRE", key.as_str(), ttl]);
            frames += 1;
        }
    }
    flush(pipe, &mut buf, &mut frames).await?;
    Ok(id)
}

fn push_bulk(buf: &mut Vec<u8>, b: &[u8]) {
    let mut ib = itoa::Buffer::new();
    buf.push(b'$');
    buf.extend_from_slice(ib.format(b.len()).as_bytes());
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(b);
    buf.extend_from_slice(b"\r\n");
}

async fn flush(pipe: &mut RawPipe, buf: &mut Vec<u8>, frames: &mut usize) -> Result<()> {
    if *frames == 0 {
        return Ok(());
    }
    let out = pipe.send(buf, *frames).await?;
    buf.clear();
    *frames = 0;
    if out.errors > 0 {
        return Err(Error::Reply(format!(
            "filling logs: {} error replies, first: {}",
            out.errors,
            out.first_error.unwrap_or_default()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_request_ids_zero_padded() {
        assert_eq!(log_member(42, 0), "42");
        assert_eq!(log_member(42, 5), "00042");
        assert_eq!(log_member(123_456, 3), "123456");
    }
}
