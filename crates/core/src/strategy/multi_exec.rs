//! The transaction the two MULTI/EXEC strategies send: MULTI, INCRBY and
//! PEXPIRE of the window's counter, EXEC, in one round trip.
//! `fixed-window-multi` sends it alone; `watch-multi` sends it after WATCH
//! and GET, and retries when EXEC aborts.

use crate::args;
use crate::conn::Conn;
use crate::resp::Reply;
use limitbench_base::error::{Error, Result};

/// MULTI / INCRBY `key` `cost` / PEXPIRE `key` `window_ms` / EXEC as one
/// pipeline: the transaction's results (INCRBY's first), or None when EXEC
/// aborted (a WATCHed key was written in between).
pub(crate) async fn incr_expire(
    conn: &mut Conn,
    key: &str,
    cost: u64,
    window_ms: u64,
) -> Result<Option<Vec<Reply>>> {
    let mut replies = conn
        .pipeline(
            key,
            &[
                &args!["MULTI"],
                &args!["INCRBY", key, cost],
                &args!["PEXPIRE", key, window_ms],
                &args!["EXEC"],
            ],
        )
        .await?;
    exec_results(&mut replies)
}

/// The result array of an EXEC, or why there is none.
fn exec_results(replies: &mut Vec<Reply>) -> Result<Option<Vec<Reply>>> {
    match replies.pop() {
        Some(Reply::Array(items)) => Ok(Some(items)),
        Some(Reply::Nil) => Ok(None),
        Some(Reply::Error(e)) => Err(Error::Reply(e)),
        other => Err(Error::Protocol(format!("EXEC replied {other:?}"))),
    }
}
