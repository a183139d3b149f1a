//! Seeded random RESP2 values for the differential test: the value tree,
//! its encoding written from the RESP2 spec, the `Reply` our parser must
//! give for it, and what redis-rs's value becomes in our terms.

use limitbench_core::resp::Reply;
use rand::RngExt;
use rand::rngs::ChaCha8Rng;

/// Counts of what the generator made, for the test's output.
#[derive(Default)]
pub struct Mix {
    pub simple: usize,
    pub error: usize,
    pub int: usize,
    pub bulk: usize,
    pub null_bulk: usize,
    pub null_array: usize,
    pub array: usize,
    pub depth4: usize,
}

impl Mix {
    pub fn add(&mut self, v: &V, depth: usize) {
        match v {
            V::Simple(_) => self.simple += 1,
            V::Error(_) => self.error += 1,
            V::Int(_) => self.int += 1,
            V::Bulk(_) => self.bulk += 1,
            V::NullBulk => self.null_bulk += 1,
            V::NullArray => self.null_array += 1,
            V::Array(items) => {
                self.array += 1;
                self.depth4 += usize::from(depth == 4);
                items.iter().for_each(|i| self.add(i, depth + 1));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The RESP2 values, their encoding (from the spec), and their expected Reply.

#[derive(Debug, Clone)]
pub enum V {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    NullBulk,
    NullArray,
    Array(Vec<V>),
}

pub fn encode_value(v: &V, out: &mut Vec<u8>) {
    match v {
        V::Simple(s) => {
            out.push(b'+');
            out.extend_from_slice(s.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        V::Error(s) => {
            out.push(b'-');
            out.extend_from_slice(s.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        V::Int(i) => out.extend_from_slice(format!(":{i}\r\n").as_bytes()),
        V::Bulk(b) => {
            out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        }
        V::NullBulk => out.extend_from_slice(b"$-1\r\n"),
        V::NullArray => out.extend_from_slice(b"*-1\r\n"),
        V::Array(items) => {
            out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
            for i in items {
                encode_value(i, out);
            }
        }
    }
}

/// What `resp::parse` must return for `v` (it has one `Nil` for both nulls).
pub fn expected(v: &V) -> Reply {
    match v {
        V::Simple(s) => Reply::Status(s.clone()),
        V::Error(s) => Reply::Error(s.clone()),
        V::Int(i) => Reply::Int(*i),
        V::Bulk(b) => Reply::Bulk(b.clone()),
        V::NullBulk | V::NullArray => Reply::Nil,
        V::Array(items) => Reply::Array(items.iter().map(expected).collect()),
    }
}

/// redis-rs's value in our reply type. RESP2 input only produces the variants
/// handled here; anything else is reported as a disagreement.
pub fn from_redis(v: redis::Value) -> Result<Reply, String> {
    Ok(match v {
        redis::Value::Nil => Reply::Nil,
        redis::Value::Int(i) => Reply::Int(i),
        redis::Value::BulkString(b) => Reply::Bulk(b),
        redis::Value::SimpleString(s) => Reply::Status(s),
        // redis-rs turns the status "+OK" into a variant of its own.
        redis::Value::Okay => Reply::Status("OK".into()),
        // redis-rs splits "-CODE detail" at the first space; join it back.
        redis::Value::ServerError(e) => Reply::Error(match e.details() {
            Some(d) => format!("{} {}", e.code(), d),
            None => e.code().to_string(),
        }),
        redis::Value::Array(a) => {
            Reply::Array(a.into_iter().map(from_redis).collect::<Result<_, _>>()?)
        }
        other => return Err(format!("unexpected redis-rs value {other:?}")),
    })
}

// ---------------------------------------------------------------------------
// Generators.

pub const ERROR_CODES: &[&str] = &[
    "ERR",
    "WRONGTYPE",
    "NOSCRIPT",
    "MOVED",
    "ASK",
    "LOADING",
    "EXECABORT",
    "BUSY",
    "READONLY",
    "CROSSSLOT",
    "TRYAGAIN",
    "NOPERM",
    "Xcustom",
];
pub const UTF8_BITS: &[&str] = &["é", "日本", "ü", "🦀", "Ω", "ß"];

/// Text allowed in a simple string or error line: no CR, no LF. redis-rs
/// requires UTF-8 there (we do not), so the text is UTF-8.
pub fn line_text(rng: &mut ChaCha8Rng, max: usize) -> String {
    let n = rng.random_range(0..=max);
    let mut s = String::new();
    for _ in 0..n {
        match rng.random_range(0..20) {
            0 => s.push_str(UTF8_BITS[rng.random_range(0..UTF8_BITS.len())]),
            1 => s.push(' '),
            2 => s.push_str(["\t", "$3", "*1", ":", "-", "+"][rng.random_range(0..6)]),
            _ => s.push(rng.random_range(0x20u8..0x7f) as char),
        }
    }
    s
}

pub fn random_bytes(rng: &mut ChaCha8Rng, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    rng.fill(&mut b[..]);
    b
}

pub fn gen_bulk(rng: &mut ChaCha8Rng) -> Vec<u8> {
    match rng.random_range(0..10) {
        0 => Vec::new(),
        1 => b"\r\n".to_vec(),
        2 => {
            // Looks like RESP: a parser that scans for CRLF would be fooled.
            let parts: [&[u8]; 6] = [
                b"$3\r\nfoo\r\n",
                b"*2\r\n",
                b"\r\n",
                b":12\r\n",
                b"-ERR x\r\n",
                b"\r",
            ];
            let mut b = Vec::new();
            for _ in 0..rng.random_range(1..6) {
                b.extend_from_slice(parts[rng.random_range(0..parts.len())]);
            }
            b
        }
        3 => {
            // Lengths at a change of digit count.
            let n = [9, 10, 99, 100, 999, 1000][rng.random_range(0..6)];
            random_bytes(rng, n)
        }
        4..=6 => {
            let n = rng.random_range(1..64);
            let mut b = random_bytes(rng, n);
            let at = rng.random_range(0..=b.len());
            b.splice(at..at, b"\r\n".iter().copied());
            b
        }
        _ => line_text(rng, 40).into_bytes(),
    }
}

pub fn gen_int(rng: &mut ChaCha8Rng) -> i64 {
    match rng.random_range(0..8) {
        0 => i64::MIN,
        1 => i64::MAX,
        2 => [0, -1, 1, i64::MIN + 1, i64::MAX - 1][rng.random_range(0..5)],
        3 => rng.random(),
        _ => rng.random_range(-100_000..100_000),
    }
}

/// A value at nesting `depth` (1 = top level); arrays nest up to depth 4.
pub fn gen_value(rng: &mut ChaCha8Rng, depth: usize) -> V {
    let k = rng.random_range(0..100);
    match k {
        0..=9 => V::Simple(if rng.random_bool(0.2) {
            "OK".into()
        } else {
            line_text(rng, 30)
        }),
        10..=19 => {
            let code = ERROR_CODES[rng.random_range(0..ERROR_CODES.len())];
            V::Error(match rng.random_range(0..6) {
                0 => code.to_string(),
                1 => format!("{code} "),
                2 => String::new(),
                _ => format!("{code} {}", line_text(rng, 40)),
            })
        }
        20..=34 => V::Int(gen_int(rng)),
        35..=64 => V::Bulk(gen_bulk(rng)),
        65..=69 => V::NullBulk,
        70..=74 => V::NullArray,
        _ if depth <= 4 => {
            let n = match rng.random_range(0..10) {
                0 => 0,
                1 => rng.random_range(7..16),
                _ => rng.random_range(1..7),
            };
            V::Array((0..n).map(|_| gen_value(rng, depth + 1)).collect())
        }
        _ => V::Bulk(gen_bulk(rng)),
    }
}

/// The value of one case. A few are large: a bulk of 512 KiB..1 MiB on its
/// own, or bulks of 16..64 KiB (more than one `Connection` read) in an array.
pub fn gen_case(rng: &mut ChaCha8Rng, case: usize) -> V {
    if case % 1000 == 500 {
        let n = rng.random_range(512 * 1024..=1024 * 1024);
        V::Bulk(random_bytes(rng, n))
    } else if case % 250 == 17 {
        let mut items = vec![gen_value(rng, 2)];
        for _ in 0..rng.random_range(1..4) {
            let n = rng.random_range(16 * 1024..64 * 1024);
            items.push(V::Bulk(random_bytes(rng, n)));
            items.push(gen_value(rng, 2));
        }
        V::Array(items)
    } else {
        gen_value(rng, 1)
    }
}
