//! The RESP2 wire format: `Reply` (what a parse yields), `Arg` and
//! `ArgList` (command arguments, encoded without allocating), the `args!`
//! macro, `encode`/`encode_with` (a command into a write buffer) and `parse`
//! (one reply from the front of a read buffer).

use limitbench_base::error::{Error, Result};

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

impl Reply {
    /// Append the reply in RESP2, as a server sends it (`parse` reads it
    /// back): the capture's recording proxy relays real replies with it.
    pub fn write_resp(&self, buf: &mut Vec<u8>) {
        let mut ib = itoa::Buffer::new();
        match self {
            Reply::Nil => buf.extend_from_slice(b"$-1\r\n"),
            Reply::Status(s) => {
                buf.push(b'+');
                buf.extend_from_slice(s.as_bytes());
                buf.extend_from_slice(b"\r\n");
            }
            Reply::Error(s) => {
                buf.push(b'-');
                buf.extend_from_slice(s.as_bytes());
                buf.extend_from_slice(b"\r\n");
            }
            Reply::Int(i) => {
                buf.push(b':');
                buf.extend_from_slice(ib.format(*i).as_bytes());
                buf.extend_from_slice(b"\r\n");
            }
            Reply::Bulk(b) => {
                buf.push(b'$');
                buf.extend_from_slice(ib.format(b.len()).as_bytes());
                buf.extend_from_slice(b"\r\n");
                buf.extend_from_slice(b);
                buf.extend_from_slice(b"\r\n");
            }
            Reply::Array(items) => {
                buf.push(b'*');
                buf.extend_from_slice(ib.format(items.len()).as_bytes());
                buf.extend_from_slice(b"\r\n");
                for it in items {
                    it.write_resp(buf);
                }
            }
        }
    }

    /// The reply as `redis-cli` prints it, on one line:
    /// `1) (integer) 1  2) "abc"  3) (nil)`.
    pub fn as_redis_cli(&self) -> String {
        match self {
            Reply::Nil => "(nil)".into(),
            Reply::Status(s) => s.clone(),
            Reply::Error(s) => format!("(error) {s}"),
            Reply::Int(i) => format!("(integer) {i}"),
            Reply::Bulk(b) => format!("{:?}", String::from_utf8_lossy(b)),
            Reply::Array(a) if a.is_empty() => "(empty array)".into(),
            Reply::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, r)| format!("{}) {}", i + 1, r.as_redis_cli()))
                .collect::<Vec<_>>()
                .join("  "),
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
    encode_with(buf, args, &[]);
}

/// Append one command whose arguments are `head` followed by every argument
/// of each list in `tail` (a script call: EVALSHA, sha, numkeys, then KEYS
/// and ARGV), without collecting them into one slice first.
pub fn encode_with(buf: &mut Vec<u8>, head: &[Arg<'_>], tail: &[&ArgList]) {
    let n = head.len() + tail.iter().map(|l| l.len()).sum::<usize>();
    let mut ib = itoa::Buffer::new();
    buf.push(b'*');
    buf.extend_from_slice(ib.format(n).as_bytes());
    buf.extend_from_slice(b"\r\n");
    for a in head {
        push_arg(buf, a);
    }
    for a in tail.iter().flat_map(|l| l.iter()) {
        push_arg(buf, &Arg::B(a));
    }
}

/// Arguments built at run time (keys, numbers), written one after another
/// into one byte buffer: `push` formats a value exactly as `Display` does
/// (`to_string()` gives the same text) but without a `String` per argument.
/// Cleared and reused, a list allocates only while it grows.
#[derive(Debug, Clone, Default)]
pub struct ArgList {
    bytes: Vec<u8>,
    /// Where each argument ends in `bytes`.
    ends: Vec<usize>,
}

impl ArgList {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Append one argument: `value` as `Display` writes it (a number, a
    /// `&str`, or `format_args!(..)` for a key built from parts).
    pub fn push(&mut self, value: impl std::fmt::Display) {
        use std::io::Write;
        // Writing into a Vec cannot fail.
        let _ = write!(self.bytes, "{value}");
        self.ends.push(self.bytes.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`th argument.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.bytes[start..end])
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or_default())
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
            if &buf[after + n..after + n + 2] != b"\r\n" {
                return Err(Error::Protocol("a bulk string does not end in CRLF".into()));
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
            // Trust the header's count only as far as the bytes at hand can
            // hold it (every element takes at least 3 bytes): a hostile or
            // huge count must not allocate before its elements arrive.
            let mut items = Vec::with_capacity((n as usize).min((buf.len() - after) / 3));
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

#[cfg(test)]
mod tests {

    #[test]
    fn hostile_headers_neither_allocate_nor_pass() {
        // A huge count waits for its elements instead of allocating them.
        assert!(parse(b"*9223372036854775807\r\n").unwrap().is_none());
        assert!(parse(b"*1000000000\r\n:1\r\n").unwrap().is_none());
        // A bulk string must end where its length says.
        assert!(parse(b"$3\r\nabcXY").is_err());
        assert!(parse(b"$3\r\nabc\r\n").unwrap().is_some());
    }

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
        let mut keys = ArgList::default();
        keys.push(format_args!("rl:{{{}}}:tb", "c1"));
        let mut argv = ArgList::default();
        argv.push(100u64);
        argv.push(0.5f64);
        argv.push(1e12f64);
        assert_eq!(argv.get(2), Some(1e12f64.to_string().as_bytes()));
        let mut b = Vec::new();
        encode_with(&mut b, &args!["EVALSHA", "ab", 1u64], &[&keys, &argv]);
        assert_eq!(
            b,
            b"*7\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n1\r\n$10\r\nrl:{c1}:tb\r\n$3\r\n100\r\n$3\r\n0.5\r\n$13\r\n1000000000000\r\n"
        );
        argv.clear();
        assert!(argv.is_empty() && argv.get(0).is_none());
        assert!(parse(b"$5\r\nab").unwrap().is_none());
        assert!(parse(b"*2\r\n:1\r\n").unwrap().is_none());
    }
}
