//! `Connection`: one TCP connection to one Redis, one request in flight,
//! one reused write buffer and one reused read buffer, every round trip
//! counted and optionally bounded by a timeout.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::access::{auth_for, halted, require_loopback};
use super::codec::{Arg, ArgList, Reply, encode, encode_with, parse};
use limitbench_base::error::{Error, Result};

/// Room the read buffer keeps free for one read from the socket.
const READ_CHUNK: usize = 16 * 1024;

/// One connection to one Redis (or to the delay proxy in front of it).
pub struct Connection {
    stream: TcpStream,
    addr: SocketAddr,
    wbuf: Vec<u8>,
    rbuf: Vec<u8>,
    rpos: usize,
    /// Argument lists lent to callers between commands (`Conn::take_arg_list`).
    pub(crate) spare_args: Vec<ArgList>,
    /// Round trips made on this connection (a pipeline is one).
    pub round_trips: u64,
    /// If set, a round trip that takes longer fails with `Error::Timeout`
    /// (the connection is then unusable: the reply may still arrive).
    pub timeout: Option<Duration>,
}

impl Connection {
    pub async fn connect(addr: SocketAddr) -> Result<Self> {
        require_loopback(&addr)?;
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| Error::io(format!("connecting to {addr}"), e))?;
        stream.set_nodelay(true).ok();
        let mut c = Connection {
            stream,
            addr,
            wbuf: Vec::with_capacity(256),
            rbuf: Vec::with_capacity(READ_CHUNK),
            rpos: 0,
            spare_args: Vec::new(),
            round_trips: 0,
            timeout: None,
        };
        if let Some(a) = auth_for(&addr) {
            c.timeout = Some(Duration::from_secs(5));
            if let Some(p) = &a.password {
                let r = match &a.user {
                    Some(u) => c.call(&crate::args!["AUTH", u.as_str(), p.as_str()]).await,
                    None => c.call(&crate::args!["AUTH", p.as_str()]).await,
                };
                r.map_err(|e| Error::Other(format!("AUTH at {addr} failed: {e}")))?;
            }
            if let Some(db) = a.db {
                c.call(&crate::args!["SELECT", db as u64])
                    .await
                    .map_err(|e| Error::Other(format!("SELECT {db} at {addr} failed: {e}")))?;
            }
            c.round_trips = 0;
            c.timeout = None;
        }
        Ok(c)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// One command, one round trip. An error reply is `Err(Error::Reply)`.
    pub async fn call(&mut self, args: &[Arg<'_>]) -> Result<Reply> {
        self.call_with(args, &[]).await
    }

    /// `call` of `head` followed by the arguments in `tail` (`encode_with`).
    pub async fn call_with(&mut self, head: &[Arg<'_>], tail: &[&ArgList]) -> Result<Reply> {
        if halted() {
            return Err(Error::Other(
                "interrupted: no more commands are sent".into(),
            ));
        }
        self.wbuf.clear();
        encode_with(&mut self.wbuf, head, tail);
        self.round_trips += 1;
        let reply = within(self.timeout, self.addr, async {
            self.write().await?;
            self.read_reply().await
        })
        .await?;
        match reply {
            Reply::Error(e) => Err(Error::Reply(e)),
            r => Ok(r),
        }
    }

    /// Several commands written at once, one round trip; every reply returned,
    /// error replies included as `Reply::Error`.
    pub async fn pipeline(&mut self, cmds: &[&[Arg<'_>]]) -> Result<Vec<Reply>> {
        if halted() {
            return Err(Error::Other(
                "interrupted: no more commands are sent".into(),
            ));
        }
        self.wbuf.clear();
        for c in cmds {
            encode(&mut self.wbuf, c);
        }
        self.round_trips += 1;
        within(self.timeout, self.addr, async {
            self.write().await?;
            let mut out = Vec::with_capacity(cmds.len());
            while out.len() < cmds.len() {
                out.push(self.read_reply().await?);
            }
            Ok(out)
        })
        .await
    }

    async fn write(&mut self) -> Result<()> {
        self.stream
            .write_all(&self.wbuf)
            .await
            .map_err(|e| Error::io(format!("writing to {}", self.addr), e))
    }

    async fn read_reply(&mut self) -> Result<Reply> {
        loop {
            if let Some((reply, used)) = parse(&self.rbuf[self.rpos..])? {
                self.rpos += used;
                if self.rpos == self.rbuf.len() {
                    self.rbuf.clear();
                    self.rpos = 0;
                }
                return Ok(reply);
            }
            if self.rpos > 0 {
                self.rbuf.drain(..self.rpos);
                self.rpos = 0;
            }
            // Read into the buffer's spare capacity: `read_buf` neither zeroes
            // it nor grows the buffer once it holds READ_CHUNK bytes of room,
            // which it keeps (the buffer is cleared, not shrunk, when drained).
            self.rbuf.reserve(READ_CHUNK);
            let got = self
                .stream
                .read_buf(&mut self.rbuf)
                .await
                .map_err(|e| Error::io(format!("reading from {}", self.addr), e))?;
            if got == 0 {
                return Err(Error::io(
                    format!("reading from {}", self.addr),
                    std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "connection closed by server",
                    ),
                ));
            }
        }
    }
}

/// `round_trip` bounded by the connection's `timeout`, if it has one.
async fn within<T>(
    timeout: Option<Duration>,
    addr: SocketAddr,
    round_trip: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match timeout {
        None => round_trip.await,
        Some(t) => match tokio::time::timeout(t, round_trip).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout(format!("no reply from {addr} within {t:?}"))),
        },
    }
}
