//! Differential test of `crates/core/src/resp/` against redis-rs (a dev-dependency only).
//!
//! Replies: seeded random RESP2 values (simple strings, errors, integers incl.
//! the i64 extremes, bulk strings incl. empty, binary with CRLF inside and a
//! few of up to 1 MiB, null bulk, null array, arrays nested up to depth 4) are
//! serialized by a small encoder written here from the RESP2 spec, then parsed
//! by `resp::parse` and by `redis::parse_redis_value`; both must give the
//! generated value. Our parser is also fed every prefix (small values) or
//! random prefixes (large ones), and then chunk by chunk the way
//! `Connection::read_reply` reads: a strict prefix must be "incomplete", the
//! whole must give the same value and consume exactly its bytes.
//!
//! Commands: seeded random argument lists (empty, text, binary with CRLF,
//! integers, floats, a few of up to 1 MiB) encoded by `resp::encode` must be
//! byte-for-byte what redis-rs's `Cmd::get_packed_command` (and
//! `redis::pack_command`) produce.
//!
//! A failure names the seed and the case; `RESP_DIFF_SEED=<n>` reruns with
//! another seed. Every case derives its own generator from (seed, case), so a
//! failing case can be regenerated alone.

use limitbench_core::resp::{self, Arg, Reply};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use std::time::Instant;

mod resp_gen;
use resp_gen::*;

const DEFAULT_SEED: u64 = 0x5EED_0014;
const VALUE_CASES: usize = 5_000;
const COMMAND_CASES: usize = 2_000;
/// Values up to this size are checked at every split point.
const EVERY_SPLIT_MAX: usize = 1024;
/// Random split points checked for larger values.
const RANDOM_SPLITS: usize = 64;
/// `Connection::read_reply` reads at most this much per `read`.
const CONN_READ: usize = 16 * 1024;

fn seed() -> u64 {
    std::env::var("RESP_DIFF_SEED")
        .ok()
        .map(|s| s.parse().expect("RESP_DIFF_SEED must be a u64"))
        .unwrap_or(DEFAULT_SEED)
}

/// The generator of one case: ChaCha8 keyed by (seed, stream, case).
fn case_rng(seed: u64, stream: u64, case: usize) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&stream.to_le_bytes());
    key[16..24].copy_from_slice(&(case as u64).to_le_bytes());
    ChaCha8Rng::from_seed(key)
}

/// Bytes for a failure message: escaped, at most 160 bytes of them shown.
fn esc(b: &[u8]) -> String {
    const SHOW: usize = 160;
    let mut s: String = b[..b.len().min(SHOW)]
        .iter()
        .flat_map(|&c| std::ascii::escape_default(c))
        .map(char::from)
        .collect();
    if b.len() > SHOW {
        s.push_str(&format!("... ({} bytes in all)", b.len()));
    }
    s
}

/// Like `{:?}` of a reply, but long bulk strings abbreviated.
fn show(r: &Reply) -> String {
    match r {
        Reply::Bulk(b) => format!("Bulk(\"{}\")", esc(b)),
        Reply::Array(a) => format!(
            "Array([{}])",
            a.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        other => format!("{other:?}"),
    }
}

/// Where two replies first differ: the path (`[2][0]` = third item, its
/// first item) and the two sub-replies there, abbreviated.
fn diff(got: &Reply, want: &Reply) -> String {
    fn walk(a: &Reply, b: &Reply, path: &mut String) -> Option<(String, String)> {
        match (a, b) {
            (Reply::Array(x), Reply::Array(y)) if x.len() == y.len() => {
                x.iter().zip(y).enumerate().find_map(|(i, (p, q))| {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    let d = walk(p, q, path);
                    if d.is_none() {
                        path.truncate(len);
                    }
                    d
                })
            }
            _ if a == b => None,
            _ => Some((show(a), show(b))),
        }
    }
    let mut path = String::new();
    match walk(got, want, &mut path) {
        Some((a, b)) => format!(
            "at {}: {a}, the value is {b}",
            if path.is_empty() { "top" } else { &path }
        ),
        None => "no difference".into(),
    }
}

// ---------------------------------------------------------------------------
// Feeding our parser the way the connection does.

/// Append `chunks` to a buffer one at a time, calling `resp::parse` before
/// each, as `Connection::read_reply` does: `Ok(None)` means read more.
fn feed_in_chunks(
    bytes: &[u8],
    sizes: &mut dyn FnMut() -> usize,
) -> Result<(Reply, usize), String> {
    let mut buf = Vec::new();
    let mut fed = 0;
    loop {
        match resp::parse(&buf) {
            Ok(Some((r, used))) => {
                if fed < bytes.len() {
                    return Err(format!(
                        "complete after only {fed} of {} bytes",
                        bytes.len()
                    ));
                }
                return Ok((r, used));
            }
            Ok(None) if fed == bytes.len() => {
                return Err("still incomplete with every byte fed".into());
            }
            Ok(None) => {
                let n = sizes().clamp(1, bytes.len() - fed);
                buf.extend_from_slice(&bytes[fed..fed + n]);
                fed += n;
            }
            Err(e) => return Err(format!("error after {fed} bytes: {e}")),
        }
    }
}

#[test]
// Longer than 120 lines: one seeded case loop; each way of feeding the bytes (whole, every prefix, random splits, chunked reads, with the next reply behind) is one marked block.
fn replies_parse_like_redis_rs() {
    let seed = seed();
    let started = Instant::now();
    let (mut prefixes, mut chunked, mut bytes_total, mut large) = (0usize, 0usize, 0usize, 0usize);
    let mut mix = Mix::default();
    for case in 0..VALUE_CASES {
        let mut rng = case_rng(seed, 1, case);
        let v = gen_case(&mut rng, case);
        let want = expected(&v);
        mix.add(&v, 1);
        let mut bytes = Vec::new();
        encode_value(&v, &mut bytes);
        bytes_total += bytes.len();
        large += usize::from(bytes.len() > CONN_READ);
        let ctx = || format!("seed {seed} case {case}, bytes \"{}\"", esc(&bytes));

        // Whole: ours, then redis-rs.
        match resp::parse(&bytes) {
            Ok(Some((got, used))) => {
                assert!(
                    got == want,
                    "{}: limitbench parsed {}",
                    ctx(),
                    diff(&got, &want)
                );
                assert_eq!(
                    used,
                    bytes.len(),
                    "{}: limitbench consumed {used} bytes",
                    ctx()
                );
            }
            other => panic!("{}: limitbench: {other:?}", ctx()),
        }
        match redis::parse_redis_value(&bytes)
            .map_err(|e| e.to_string())
            .and_then(from_redis)
        {
            Ok(got) => assert!(
                got == want,
                "{}: redis-rs parsed {} (limitbench agrees with the value)",
                ctx(),
                diff(&got, &want)
            ),
            Err(e) => panic!("{}: redis-rs: {e}", ctx()),
        }

        // Followed by (part of) the next reply, as in a pipeline's buffer.
        let mut more = bytes.clone();
        let mut next = Vec::new();
        encode_value(&gen_value(&mut rng, 1), &mut next);
        more.extend_from_slice(&next[..rng.random_range(0..=next.len())]);
        match resp::parse(&more) {
            Ok(Some((got, used))) if got == want && used == bytes.len() => {}
            other => panic!(
                "{}: with {} bytes of the next reply behind it, limitbench gave {:?}",
                ctx(),
                more.len() - bytes.len(),
                other.map(|o| o.map(|(r, u)| (show(&r), u)))
            ),
        }

        // Every strict prefix (or random ones, for large values) is incomplete.
        let cuts: Vec<usize> = if bytes.len() <= EVERY_SPLIT_MAX {
            (0..bytes.len()).collect()
        } else {
            (0..RANDOM_SPLITS)
                .map(|_| rng.random_range(0..bytes.len()))
                .collect()
        };
        for k in cuts {
            prefixes += 1;
            match resp::parse(&bytes[..k]) {
                Ok(None) => {}
                other => panic!(
                    "{}: the first {k} bytes should be incomplete, limitbench gave {:?}",
                    ctx(),
                    other.map(|o| o.map(|(r, u)| (show(&r), u)))
                ),
            }
        }

        // Chunk by chunk: random small chunks, and for large values also
        // `Connection`-sized reads.
        let mut runs: Vec<Box<dyn FnMut() -> usize>> = Vec::new();
        let mut r1 = case_rng(seed, 2, case);
        let max = if bytes.len() > CONN_READ { 4096 } else { 8 };
        runs.push(Box::new(move || r1.random_range(1..=max)));
        if bytes.len() > CONN_READ {
            let mut r2 = case_rng(seed, 3, case);
            runs.push(Box::new(move || {
                if r2.random_bool(0.8) {
                    CONN_READ
                } else {
                    r2.random_range(1..CONN_READ)
                }
            }));
        }
        for sizes in &mut runs {
            chunked += 1;
            match feed_in_chunks(&bytes, sizes.as_mut()) {
                Ok((got, used)) if got == want && used == bytes.len() => {}
                Ok((got, used)) => panic!(
                    "{}: fed in chunks, limitbench consumed {used} bytes and parsed {}",
                    ctx(),
                    diff(&got, &want)
                ),
                Err(e) => panic!("{}: fed in chunks: {e}", ctx()),
            }
        }
    }
    eprintln!(
        "resp_differential: {VALUE_CASES} reply values (seed {seed}, {bytes_total} bytes, \
         {large} larger than one 16 KiB read): parsed by limitbench and redis-rs, \
         {prefixes} prefixes checked incomplete, {chunked} chunked feeds; {:.2?}",
        started.elapsed()
    );
    eprintln!(
        "resp_differential: values generated, nested ones included: {} simple strings, \
         {} errors, {} integers, {} bulk strings, {} null bulks, {} null arrays, {} arrays \
         ({} at depth 4)",
        mix.simple,
        mix.error,
        mix.int,
        mix.bulk,
        mix.null_bulk,
        mix.null_array,
        mix.array,
        mix.depth4
    );
}

// ---------------------------------------------------------------------------
// Commands.

#[derive(Debug)]
enum A {
    S(String),
    B(Vec<u8>),
    I(i64),
    U(u64),
    F(f64),
}

fn gen_arg(rng: &mut ChaCha8Rng, big: bool) -> A {
    if big {
        let n = rng.random_range(64 * 1024..=1024 * 1024);
        return A::B(random_bytes(rng, n));
    }
    match rng.random_range(0..10) {
        0 => A::B(Vec::new()),
        1 => A::S(String::new()),
        2 => A::S(line_text(rng, 20)),
        3 | 4 => A::B(gen_bulk(rng)),
        5 => A::I(gen_int(rng)),
        6 => A::U(match rng.random_range(0..3) {
            0 => u64::MAX,
            1 => rng.random(),
            _ => rng.random_range(0..1000),
        }),
        7 | 8 => A::F(match rng.random_range(0..8) {
            0 => rng.random_range(-1000..1000) as f64,
            1 => [0.0, -0.0, 1e15, -1e15, 1e15 - 1.0, 1e20, 1e-7, 0.5][rng.random_range(0..8)],
            2 => [
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MAX,
                f64::MIN_POSITIVE,
            ][rng.random_range(0..4)],
            _ => rng.random_range(-1e6..1e6),
        }),
        _ => A::S(
            ["GET", "SET", "EVALSHA", "INCR", "PEXPIRE", "ZADD"][rng.random_range(0..6)].into(),
        ),
    }
}

#[test]
// Longer than 120 lines: one seeded case loop over every way of building a command, each one marked block.
fn commands_encode_like_redis_rs() {
    let seed = seed();
    let started = Instant::now();
    let (mut args_total, mut bytes_total, mut integral_floats) = (0usize, 0usize, 0usize);
    let mut float_example = None;
    let mut buf = Vec::new();
    for case in 0..COMMAND_CASES {
        let mut rng = case_rng(seed, 4, case);
        let n = rng.random_range(1..=12);
        let big_at = if case % 400 == 123 {
            Some(rng.random_range(0..n))
        } else {
            None
        };
        let owned: Vec<A> = (0..n)
            .map(|i| gen_arg(&mut rng, big_at == Some(i)))
            .collect();
        args_total += n;

        let args: Vec<Arg<'_>> = owned
            .iter()
            .map(|a| match a {
                A::S(s) => Arg::S(s),
                A::B(b) => Arg::B(b),
                A::I(i) => Arg::I(*i),
                A::U(u) => Arg::U(*u),
                A::F(f) => Arg::F(*f),
            })
            .collect();

        // redis-rs's bytes. A float with no fractional part below 1e15 we
        // send as an integer ("12"), where redis-rs's ryu gives "12.0".
        let mut cmd = redis::Cmd::new();
        for a in &owned {
            match a {
                A::S(s) => cmd.arg(s.as_str()),
                A::B(b) => cmd.arg(b.as_slice()),
                A::I(i) => cmd.arg(*i),
                A::U(u) => cmd.arg(*u),
                A::F(f) if f.fract() == 0.0 && f.abs() < 1e15 => {
                    integral_floats += 1;
                    if float_example.is_none() {
                        let mut ours = Vec::new();
                        resp::encode(&mut ours, &[Arg::F(*f)]);
                        let theirs = redis::Cmd::new().arg(*f).get_packed_command();
                        float_example = Some((*f, esc(&ours), esc(&theirs)));
                    }
                    cmd.arg(*f as i64)
                }
                A::F(f) => cmd.arg(*f),
            };
        }
        let theirs = cmd.get_packed_command();

        // Appending to a reused buffer, as `Connection` does.
        buf.clear();
        let prefix_len = rng.random_range(0..8);
        buf.extend(std::iter::repeat_n(b'#', prefix_len));
        resp::encode(&mut buf, &args);
        let ours = &buf[prefix_len..];
        bytes_total += ours.len();
        assert!(
            buf[..prefix_len].iter().all(|&c| c == b'#') && ours == theirs.as_slice(),
            "seed {seed} command case {case}, args {:?}:\n limitbench \"{}\"\n redis-rs   \"{}\"",
            owned
                .iter()
                .map(|a| match a {
                    A::B(b) => format!("B(\"{}\")", esc(b)),
                    other => format!("{other:?}"),
                })
                .collect::<Vec<_>>(),
            esc(ours),
            esc(&theirs)
        );

        // The same through `redis::pack_command`, and parsed back by both parsers.
        let as_bytes: Vec<Vec<u8>> = owned
            .iter()
            .map(|a| {
                let mut one = Vec::new();
                resp::encode(
                    &mut one,
                    &[match a {
                        A::S(s) => Arg::S(s),
                        A::B(b) => Arg::B(b),
                        A::I(i) => Arg::I(*i),
                        A::U(u) => Arg::U(*u),
                        A::F(f) => Arg::F(*f),
                    }],
                );
                match resp::parse(&one[4..]) {
                    Ok(Some((Reply::Bulk(b), _))) => b,
                    other => panic!("seed {seed} command case {case}: {other:?}"),
                }
            })
            .collect();
        assert!(
            redis::pack_command(&as_bytes) == ours,
            "seed {seed} command case {case}: redis::pack_command differs"
        );
        let want = Reply::Array(as_bytes.into_iter().map(Reply::Bulk).collect());
        let back = resp::parse(ours).ok().flatten();
        assert!(
            matches!(&back, Some((r, used)) if *r == want && *used == ours.len()),
            "seed {seed} command case {case}: limitbench does not parse its own command back"
        );
        let back = redis::parse_redis_value(ours)
            .map_err(|e| e.to_string())
            .and_then(from_redis);
        assert!(
            back.as_ref() == Ok(&want),
            "seed {seed} command case {case}: redis-rs parses the command as something else"
        );
    }
    if let Some((f, ours, theirs)) = float_example {
        eprintln!(
            "resp_differential: note: {integral_floats} integral float args (e.g. {f:?}) are \
             sent as integers, \"{ours}\" where redis-rs's `arg(f64)` gives \"{theirs}\""
        );
    }
    eprintln!(
        "resp_differential: {COMMAND_CASES} commands (seed {seed}, {args_total} args, \
         {bytes_total} bytes): limitbench encoding == redis-rs get_packed_command == \
         pack_command; {:.2?}",
        started.elapsed()
    );
}
