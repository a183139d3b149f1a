//! Reading replies in the replay without allocating: [`scan_reply`] finds
//! where one RESP reply ends, its first integer (depth first: the admitted
//! flag of a script, the counter of an INCR) and whether it is or holds an
//! error. That is all the hot loop needs to count a decision.
//!
//! Why a scanner beside `resp::parse`: `parse` builds a `Reply` (a `Vec` per
//! array, a `String` per status line), which the replay must not do per
//! decision. `scan_timing_against_resp_parse` (ignored; run it with
//! `cargo test --release --lib replay::reply -- --ignored --nocapture`)
//! times both on the same bytes: on the 2-core development VM the scanner
//! took 11-76 ns per reply against 50-320 ns for `parse` (2.2x for an
//! integer, 4-5x for a script's `{1, n, t}` array and a bulk string, up to
//! 8x for a status line): a few hundred ns saved per decision on the one
//! core that must keep Redis busy. `agrees_with_resp_parse` checks that both
//! read every kind of reply, split at every byte, the same way.

/// What [`scan_reply`] found at the front of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scanned {
    /// Bytes the reply takes.
    pub len: usize,
    /// The first integer in it, depth first.
    pub first_int: Option<i64>,
    /// It is, or (in an array) holds, an error reply.
    pub error: bool,
}

/// One RESP reply at the front of `buf`; `None`: not complete yet.
pub fn scan_reply(buf: &[u8]) -> Option<Scanned> {
    let mut first_int = None;
    let mut error = false;
    let len = scan_at(buf, 0, &mut first_int, &mut error)?;
    Some(Scanned {
        len,
        first_int,
        error,
    })
}

fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 1 < buf.len() {
        if buf[i] == b'\r' && buf[i + 1] == b'\n' {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn parse_int(b: &[u8]) -> i64 {
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    let mut v: i64 = 0;
    for &d in digits {
        if d.is_ascii_digit() {
            v = v.wrapping_mul(10).wrapping_add((d - b'0') as i64);
        }
    }
    if neg { -v } else { v }
}

fn scan_at(buf: &[u8], pos: usize, first: &mut Option<i64>, err: &mut bool) -> Option<usize> {
    let kind = *buf.get(pos)?;
    let le = line_end(buf, pos + 1)?;
    let after = le + 2;
    match kind {
        b'+' => Some(after),
        b'-' => {
            *err = true;
            Some(after)
        }
        b':' => {
            if first.is_none() {
                *first = Some(parse_int(&buf[pos + 1..le]));
            }
            Some(after)
        }
        b'$' => {
            let n = parse_int(&buf[pos + 1..le]);
            if n < 0 {
                return Some(after);
            }
            let end = after + n as usize + 2;
            (end <= buf.len()).then_some(end)
        }
        b'*' => {
            let n = parse_int(&buf[pos + 1..le]);
            let mut p = after;
            for _ in 0..n.max(0) {
                p = scan_at(buf, p, first, err)?;
            }
            Some(p)
        }
        // Not RESP2: count it as an error reply ending at the line's end.
        _ => {
            *err = true;
            Some(after)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::{self, Reply};

    /// The same facts read from a parsed `Reply`: first integer depth first, any error.
    fn facts(r: &Reply) -> (Option<i64>, bool) {
        match r {
            Reply::Int(i) => (Some(*i), false),
            Reply::Error(_) => (None, true),
            Reply::Array(items) => {
                let mut first = None;
                let mut err = false;
                for it in items {
                    let (f, e) = facts(it);
                    first = first.or(f);
                    err |= e;
                }
                (first, err)
            }
            _ => (None, false),
        }
    }

    /// `resp::parse` reduced to what the scanner returns.
    fn via_parse(buf: &[u8]) -> Option<Scanned> {
        let (r, len) = resp::parse(buf).expect("valid RESP")?;
        let (first_int, error) = facts(&r);
        Some(Scanned {
            len,
            first_int,
            error,
        })
    }

    /// Every kind of RESP2 reply the replay can meet.
    const REPLIES: &[&[u8]] = &[
        b"+OK\r\n",
        b"+QUEUED\r\n",
        b"-NOSCRIPT No matching script\r\n",
        b":0\r\n",
        b":-7\r\n",
        b":1700000000000000\r\n",
        b"$3\r\nxxx\r\n",
        b"$0\r\n\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"*3\r\n:1\r\n:99\r\n:1700000000000000\r\n",
        b"*2\r\n:5\r\n:1\r\n",
        b"*2\r\n*1\r\n:-7\r\n-ERR x\r\n",
        b"*3\r\n$-1\r\n*2\r\n+OK\r\n$2\r\nab\r\n:42\r\n",
        b"*2\r\n-EXECABORT\r\n:3\r\n",
    ];

    #[test]
    fn scans_replies_without_allocating() {
        let b = b"*3\r\n:1\r\n:99\r\n:1700000000000000\r\n+OK";
        let s = |len, first_int, error| {
            Some(Scanned {
                len,
                first_int,
                error,
            })
        };
        assert_eq!(scan_reply(b), s(32, Some(1), false));
        assert_eq!(scan_reply(b"*2\r\n:5\r\n"), None);
        assert_eq!(scan_reply(b"$3\r\nxxx\r\n"), s(9, None, false));
        assert_eq!(scan_reply(b"$-1\r\n"), s(5, None, false));
        assert_eq!(scan_reply(b"-NOSCRIPT x\r\n"), s(13, None, true));
        assert_eq!(
            scan_reply(b"*2\r\n*1\r\n:-7\r\n-ERR\r\n"),
            s(19, Some(-7), true)
        );
    }

    #[test]
    fn agrees_with_resp_parse() {
        for r in REPLIES {
            let text = String::from_utf8_lossy(r);
            // Whole, and followed by the next reply (only the first is read).
            assert_eq!(scan_reply(r), via_parse(r), "{text:?}");
            assert_eq!(scan_reply(r).map(|s| s.len), Some(r.len()), "{text:?}");
            let mut two = r.to_vec();
            two.extend_from_slice(b":9\r\n");
            assert_eq!(scan_reply(&two), via_parse(&two), "{text:?} + :9");
            // Split at every byte: both see an incomplete reply.
            for cut in 0..r.len() {
                assert_eq!(scan_reply(&r[..cut]), None, "{text:?} cut at {cut}");
                assert_eq!(via_parse(&r[..cut]), None, "{text:?} cut at {cut}");
            }
        }
    }

    /// Times the scanner and `resp::parse` (plus reading the same facts from
    /// its `Reply`) on the same bytes: the replies the replay reads most.
    #[test]
    #[ignore = "a timing, not a check: run with --release --ignored --nocapture"]
    fn scan_timing_against_resp_parse() {
        use std::hint::black_box;
        use std::time::Instant;
        let kinds: &[(&str, &[u8])] = &[
            (
                "script {1,n,t}",
                b"*3\r\n:1\r\n:99\r\n:1700000000000000\r\n",
            ),
            ("GET bulk", b"$3\r\nxxx\r\n"),
            ("INCR int", b":12345\r\n"),
            ("MULTI status", b"+QUEUED\r\n"),
            ("EXEC array", b"*2\r\n:5\r\n:1\r\n"),
        ];
        let per_kind = 1000;
        let rounds = 2000;
        for (name, one) in kinds {
            let buf: Vec<u8> = one.repeat(per_kind);
            let run = |f: &dyn Fn(&[u8]) -> Option<Scanned>| {
                let t0 = Instant::now();
                let mut sum = 0i64;
                for _ in 0..rounds {
                    let mut pos = 0;
                    while let Some(s) = f(black_box(&buf[pos..])) {
                        pos += s.len;
                        sum = sum.wrapping_add(s.first_int.unwrap_or(0));
                    }
                }
                black_box(sum);
                t0.elapsed().as_nanos() as f64 / (rounds * per_kind) as f64
            };
            let scan = run(&scan_reply);
            let parse = run(&via_parse);
            println!(
                "{name:>16}: scan_reply {scan:6.1} ns/reply, resp::parse {parse:6.1} ns/reply ({:.1}x)",
                parse / scan
            );
        }
    }
}
