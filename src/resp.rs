//! A minimal RESP2 client: one TCP connection, one request in flight.
//!
//! Why not a general-purpose client: a benchmark must know exactly what goes
//! over the wire. Here a decision is the commands the strategy writes and
//! nothing else: no hidden multiplexer task, no response timeout we did not
//! set, no reconnects, no background `PING`s, and encoding into one reused
//! buffer so that the load generator does not allocate per command. Every
//! round trip is counted (`round_trips`), which is how the harness counts
//! decisions and retries on the client side (Redis's own counters also count
//! the commands run inside scripts and `MULTI`).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{Error, Result};

/// One reply. Error replies nested in arrays (as after `EXEC`) stay `Error`;
/// a top-level error reply becomes `Err(Error::Reply)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Nil,
    Status(String),
    Int(i64),
    Bulk(Vec<u8>),
    Array(Vec<Reply>),
    Error(String),
}

impl Reply {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Reply::Int(i) => Some(*i),
            Reply::Bulk(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
            Reply::Status(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Reply::Int(i) => Some(*i as f64),
            Reply::Bulk(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
            Reply::Status(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
    pub fn as_string(&self) -> Option<String> {
        match self {
            Reply::Bulk(b) => Some(String::from_utf8_lossy(b).into_owned()),
            Reply::Status(s) => Some(s.clone()),
            Reply::Int(i) => Some(i.to_string()),
            _ => None,
        }
    }
    pub fn into_array(self) -> Option<Vec<Reply>> {
        match self {
            Reply::Array(a) => Some(a),
            _ => None,
        }
    }
    pub fn is_nil(&self) -> bool {
        matches!(self, Reply::Nil)
    }
    /// The reply as one short line (for a CSV cell): `nil`, the value, or
    /// `[a,b,...]` for an array.
    pub fn one_line(&self) -> String {
        match self {
            Reply::Nil => "nil".into(),
            Reply::Status(s) | Reply::Error(s) => s.clone(),
            Reply::Int(i) => i.to_string(),
            Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            Reply::Array(a) => format!(
                "[{}]",
                a.iter().map(Reply::one_line).collect::<Vec<_>>().join(",")
            ),
        }
    }
}

/// One command argument, encoded without allocating.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    S(&'a str),
    B(&'a [u8]),
    I(i64),
    U(u64),
    F(f64),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(s: &'a str) -> Self {
        Arg::S(s)
    }
}
impl<'a> From<&'a String> for Arg<'a> {
    fn from(s: &'a String) -> Self {
        Arg::S(s.as_str())
    }
}
impl From<i64> for Arg<'_> {
    fn from(i: i64) -> Self {
        Arg::I(i)
    }
}
impl From<u64> for Arg<'_> {
    fn from(u: u64) -> Self {
        Arg::U(u)
    }
}
impl From<f64> for Arg<'_> {
    fn from(f: f64) -> Self {
        Arg::F(f)
    }
}

/// Build an `&[Arg]` from mixed values: `args!["GET", key]`.
#[macro_export]
macro_rules! args {
    ($($a:expr),* $(,)?) => { [$($crate::resp::Arg::from($a)),*] };
}

fn push_arg(buf: &mut Vec<u8>, arg: &Arg<'_>) {
    let mut ib = itoa::Buffer::new();
    let mut fb = ryu::Buffer::new();
    let bytes: &[u8] = match arg {
        Arg::S(s) => s.as_bytes(),
        Arg::B(b) => b,
        Arg::I(i) => ib.format(*i).as_bytes(),
        Arg::U(u) => ib.format(*u).as_bytes(),
        Arg::F(f) => {
            if f.fract() == 0.0 && f.abs() < 1e15 {
                ib.format(*f as i64).as_bytes()
            } else {
                fb.format(*f).as_bytes()
            }
        }
    };
    let mut lb = itoa::Buffer::new();
    buf.push(b'$');
    buf.extend_from_slice(lb.format(bytes.len()).as_bytes());
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(bytes);
    buf.extend_from_slice(b"\r\n");
}

/// Append one command in RESP to `buf`.
pub fn encode(buf: &mut Vec<u8>, args: &[Arg<'_>]) {
    let mut ib = itoa::Buffer::new();
    buf.push(b'*');
    buf.extend_from_slice(ib.format(args.len()).as_bytes());
    buf.extend_from_slice(b"\r\n");
    for a in args {
        push_arg(buf, a);
    }
}

/// Parse one reply from the front of `buf`. `Ok(None)`: not complete yet.
pub fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>> {
    let Some(line_end) = find_crlf(buf) else {
        return Ok(None);
    };
    if line_end == 0 {
        return Err(Error::Protocol("empty line".into()));
    }
    let line = &buf[1..line_end];
    let after = line_end + 2;
    let text = || String::from_utf8_lossy(line).into_owned();
    let int = || -> Result<i64> {
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Error::Protocol(format!("bad integer line {:?}", text())))
    };
    match buf[0] {
        b'+' => Ok(Some((Reply::Status(text()), after))),
        b'-' => Ok(Some((Reply::Error(text()), after))),
        b':' => Ok(Some((Reply::Int(int()?), after))),
        b'$' => {
            let n = int()?;
            if n < 0 {
                return Ok(Some((Reply::Nil, after)));
            }
            let n = n as usize;
            if buf.len() < after + n + 2 {
                return Ok(None);
            }
            Ok(Some((
                Reply::Bulk(buf[after..after + n].to_vec()),
                after + n + 2,
            )))
        }
        b'*' => {
            let n = int()?;
            if n < 0 {
                return Ok(Some((Reply::Nil, after)));
            }
            let mut items = Vec::with_capacity(n as usize);
            let mut pos = after;
            for _ in 0..n {
                match parse(&buf[pos..])? {
                    Some((r, used)) => {
                        items.push(r);
                        pos += used;
                    }
                    None => return Ok(None),
                }
            }
            Ok(Some((Reply::Array(items), pos)))
        }
        other => Err(Error::Protocol(format!(
            "unknown reply type byte {:?}",
            other as char
        ))),
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// One connection to one Redis (or to the delay proxy in front of it).
pub struct Connection {
    stream: TcpStream,
    addr: SocketAddr,
    wbuf: Vec<u8>,
    rbuf: Vec<u8>,
    rpos: usize,
    /// Round trips made on this connection (a pipeline is one).
    pub round_trips: u64,
    /// If set, a round trip that takes longer fails with `Error::Timeout`
    /// (the connection is then unusable: the reply may still arrive).
    pub timeout: Option<Duration>,
}

/// Refuse anything but loopback: the harness only ever talks to 127.0.0.1/::1.
pub fn require_loopback(addr: &SocketAddr) -> Result<()> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(Error::NotLoopback(addr.to_string()))
    }
}

impl Connection {
    pub async fn connect(addr: SocketAddr) -> Result<Self> {
        require_loopback(&addr)?;
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| Error::io(format!("connecting to {addr}"), e))?;
        stream.set_nodelay(true).ok();
        Ok(Connection {
            stream,
            addr,
            wbuf: Vec::with_capacity(256),
            rbuf: Vec::with_capacity(4096),
            rpos: 0,
            round_trips: 0,
            timeout: None,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// One command, one round trip. An error reply is `Err(Error::Reply)`.
    pub async fn call(&mut self, args: &[Arg<'_>]) -> Result<Reply> {
        self.wbuf.clear();
        encode(&mut self.wbuf, args);
        let mut out = self.round_trip(1).await?;
        match out.pop().unwrap() {
            Reply::Error(e) => Err(Error::Reply(e)),
            r => Ok(r),
        }
    }

    /// Several commands written at once, one round trip; every reply returned,
    /// error replies included as `Reply::Error`.
    pub async fn pipeline(&mut self, cmds: &[&[Arg<'_>]]) -> Result<Vec<Reply>> {
        self.wbuf.clear();
        for c in cmds {
            encode(&mut self.wbuf, c);
        }
        self.round_trip(cmds.len()).await
    }

    async fn round_trip(&mut self, n: usize) -> Result<Vec<Reply>> {
        self.round_trips += 1;
        let timeout = self.timeout;
        let fut = async {
            self.stream
                .write_all(&self.wbuf)
                .await
                .map_err(|e| Error::io(format!("writing to {}", self.addr), e))?;
            let mut out = Vec::with_capacity(n);
            while out.len() < n {
                out.push(self.read_reply().await?);
            }
            Ok(out)
        };
        match timeout {
            None => fut.await,
            Some(t) => match tokio::time::timeout(t, fut).await {
                Ok(r) => r,
                Err(_) => Err(Error::Timeout(format!(
                    "no reply from {} within {:?}",
                    self.addr, t
                ))),
            },
        }
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
            let len = self.rbuf.len();
            self.rbuf.resize(len + 16 * 1024, 0);
            let got = self
                .stream
                .read(&mut self.rbuf[len..])
                .await
                .map_err(|e| Error::io(format!("reading from {}", self.addr), e))?;
            self.rbuf.truncate(len + got);
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

/// Parse `INFO` text into (field, value) pairs.
pub fn info_fields(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_and_parses() {
        let mut b = Vec::new();
        encode(&mut b, &args!["SET", "k", 12i64, 1.5f64]);
        assert_eq!(
            b,
            b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n12\r\n$3\r\n1.5\r\n"
        );
        let raw = b"*3\r\n:1\r\n$-1\r\n*2\r\n+OK\r\n-ERR x\r\n";
        let (r, used) = parse(raw).unwrap().unwrap();
        assert_eq!(used, raw.len());
        assert_eq!(
            r,
            Reply::Array(vec![
                Reply::Int(1),
                Reply::Nil,
                Reply::Array(vec![
                    Reply::Status("OK".into()),
                    Reply::Error("ERR x".into())
                ])
            ])
        );
        assert!(parse(b"$5\r\nab").unwrap().is_none());
        assert!(parse(b"*2\r\n:1\r\n").unwrap().is_none());
    }
}
