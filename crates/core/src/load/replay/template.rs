//! Templates: the exact bytes of one decision with slots where the client id
//! and the request id go, so that a replayed decision is a copy of those
//! bytes and a few digits written in place.
//!
//! Ids have a fixed width (`CLIENT_WIDTH`, `ID_WIDTH`), so filling a slot
//! never moves a byte and never changes a RESP length prefix.

use std::sync::Arc;

use crate::resp::{self, Arg};
use crate::strategy::reply::ReplyRules;
use crate::strategy::{Kind, Limit, Request, Strategy};
use limitbench_base::error::{Error, Result};

/// Client ids in templates are this many decimal digits (`00001234`).
pub const CLIENT_WIDTH: usize = 8;
/// Request ids in templates are this many decimal digits; ids start at
/// `ID_BASE` so they always have exactly this width.
pub const ID_WIDTH: usize = 16;
pub const ID_BASE: u64 = 1_000_000_000_000_000;
/// Placeholders a capture passes to the strategy and then looks for in its
/// bytes: a client name of `CLIENT_WIDTH` characters and a request id of
/// `ID_WIDTH` digits that no real argument contains.
pub(super) const CLIENT_MARK: &str = "ZQXJZQXJ";
pub(super) const ID_MARK: u64 = 5_432_109_876_543_210;

/// The client name used for client index `i` everywhere in study B's cost
/// experiments (the key is `rl:{00001234}:...`).
pub fn client_name(i: u64) -> String {
    format!("{i:0w$}", w = CLIENT_WIDTH)
}

/// How a decision's outcome is read from its last reply.
#[derive(Debug, Clone)]
pub enum AdmitRule {
    /// Not a decision (GET, INCR): every reply counts as admitted.
    Always,
    /// The first integer of the last reply is 1 (Lua `{admitted, ...}`).
    FirstIntIsOne,
    /// The first integer of the last reply is a counter <= limit (EXEC of INCRBY).
    FirstIntAtMost(i64),
    /// The strategy's own reply rules (`Strategy::reply_rules`: an external
    /// manifest's `[reply]`), applied to the parsed last reply for a request
    /// of cost 1 at `limit`, exactly as its `decide` applies them.
    Rules {
        rules: Arc<ReplyRules>,
        limit: Limit,
    },
}

impl AdmitRule {
    /// How the replay reads `s`'s decisions at `limit`: its reply rules
    /// when it has them (the allocation-free first-integer scan when they
    /// are the plain "reply[1] is 1 or 0" of the built-ins), a MULTI
    /// counter's value against the limit, else the first integer being 1.
    pub fn for_strategy(s: &dyn Strategy, limit: Limit) -> AdmitRule {
        match (s.info().kind, s.reply_rules()) {
            (Kind::Transaction, _) => AdmitRule::FirstIntAtMost(limit.limit as i64),
            (_, Some(r)) if r.admitted.is_first_flag() => AdmitRule::FirstIntIsOne,
            (_, Some(r)) => AdmitRule::Rules {
                rules: Arc::new(r.clone()),
                limit,
            },
            (_, None) => AdmitRule::FirstIntIsOne,
        }
    }

    /// Does reading a decision need the whole reply (`Rules`), not only
    /// its first integer?
    pub fn needs_reply(&self) -> bool {
        matches!(self, AdmitRule::Rules { .. })
    }

    /// Was the decision admitted, given the first integer of its last reply?
    /// (`Rules` reads the reply: call `admits_reply`.)
    pub fn admits(&self, first_int: Option<i64>) -> bool {
        match self {
            AdmitRule::Always => true,
            AdmitRule::FirstIntIsOne => first_int == Some(1),
            AdmitRule::FirstIntAtMost(l) => first_int.is_some_and(|c| c <= *l),
            AdmitRule::Rules { .. } => false,
        }
    }

    /// Was the decision admitted, given its last reply's bytes (one whole
    /// RESP reply) and first integer? A rule that does not fit the reply is
    /// an error that names the rule and shows the reply, never a refusal.
    pub fn admits_reply(
        &self,
        reply: &[u8],
        first_int: Option<i64>,
    ) -> std::result::Result<bool, String> {
        let AdmitRule::Rules { rules, limit } = self else {
            return Ok(self.admits(first_int));
        };
        // An error reply is counted as an error where it is scanned, once.
        if reply.first() == Some(&b'-') {
            return Ok(false);
        }
        let parsed = match resp::parse(reply) {
            Ok(Some((r, _))) => r,
            Ok(None) => return Err("an incomplete reply".into()),
            Err(e) => return Err(e.to_string()),
        };
        let req = Request {
            client: "",
            limit: *limit,
            cost: 1,
            now_us: 0,
            request_id: 0,
        };
        rules.admitted.admitted(&parsed, &req).map_err(|p| {
            format!(
                "reply.admitted = {} cannot be applied: {}; Redis replied: {}",
                rules.admitted.text(),
                p.0,
                parsed.as_redis_cli()
            )
        })
    }
}

/// The bytes of one decision, with slots for the client id and request id.
#[derive(Debug, Clone)]
pub struct Template {
    pub bytes: Vec<u8>,
    /// Offsets of `CLIENT_WIDTH`-digit client ids.
    pub client_slots: Vec<usize>,
    /// Offsets of `ID_WIDTH`-digit request ids.
    pub id_slots: Vec<usize>,
    /// Commands in the request (= replies to read).
    pub frames: usize,
    pub rule: AdmitRule,
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return vec![];
    }
    (0..=hay.len() - needle.len())
        .filter(|&i| &hay[i..i + needle.len()] == needle)
        .collect()
}

/// Write `v` as exactly `dst.len()` decimal digits (zero-padded, truncated high digits).
pub fn write_digits(dst: &mut [u8], mut v: u64) {
    for b in dst.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

impl Template {
    /// A template from bytes holding the capture's placeholders.
    pub(super) fn from_bytes(bytes: Vec<u8>, frames: usize, rule: AdmitRule) -> Self {
        let client_slots = find_all(&bytes, CLIENT_MARK.as_bytes());
        let id_slots = find_all(&bytes, ID_MARK.to_string().as_bytes());
        Template {
            bytes,
            client_slots,
            id_slots,
            frames,
            rule,
        }
    }

    /// A plain command; `{client}` in an argument becomes the client slot.
    pub fn command(args: &[&str], rule: AdmitRule) -> Self {
        let owned: Vec<String> = args
            .iter()
            .map(|a| a.replace("{client}", CLIENT_MARK))
            .collect();
        let argv: Vec<Arg<'_>> = owned.iter().map(|s| Arg::S(s)).collect();
        let mut bytes = Vec::new();
        resp::encode(&mut bytes, &argv);
        Self::from_bytes(bytes, 1, rule)
    }

    /// Put client `client` and request id `id` into `buf` (a copy of `bytes`).
    pub fn fill(&self, buf: &mut [u8], client: u64, id: u64) {
        for &o in &self.client_slots {
            write_digits(&mut buf[o..o + CLIENT_WIDTH], client);
        }
        for &o in &self.id_slots {
            write_digits(&mut buf[o..o + ID_WIDTH], id);
        }
    }

    /// The key (the bulk string holding the client id) this template writes
    /// for client `i`: what a direct fill must write to be hit by the loop.
    pub fn key(&self, i: u64) -> Result<String> {
        let bytes = self.render(i, ID_BASE);
        let slot = *self
            .client_slots
            .first()
            .ok_or_else(|| Error::Protocol("template without a client slot".into()))?;
        let start = bytes[..slot]
            .windows(2)
            .rposition(|w| w == b"\r\n")
            .map(|x| x + 2)
            .ok_or_else(|| Error::Protocol("template without a key".into()))?;
        let end = slot
            + bytes[slot..]
                .windows(2)
                .position(|w| w == b"\r\n")
                .ok_or_else(|| Error::Protocol("template without a key end".into()))?;
        Ok(String::from_utf8_lossy(&bytes[start..end]).into_owned())
    }

    /// The request for one decision, as an owned buffer (for fills).
    pub fn render(&self, client: u64, id: u64) -> Vec<u8> {
        let mut b = self.bytes.clone();
        self.fill(&mut b, client, id);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::Reply;

    #[test]
    fn templates_fill_slots() {
        let t = Template::command(&["GET", "key:{client}"], AdmitRule::Always);
        assert_eq!(t.client_slots.len(), 1);
        let b = t.render(42, 0);
        assert_eq!(b, b"*2\r\n$3\r\nGET\r\n$12\r\nkey:00000042\r\n");
        assert_eq!(t.key(42).unwrap(), "key:00000042");
    }

    #[test]
    fn admit_rules_read_the_first_integer() {
        assert!(AdmitRule::Always.admits(None));
        assert!(AdmitRule::FirstIntIsOne.admits(Some(1)));
        assert!(!AdmitRule::FirstIntIsOne.admits(Some(0)));
        assert!(!AdmitRule::FirstIntIsOne.admits(None));
        assert!(AdmitRule::FirstIntAtMost(5).admits(Some(5)));
        assert!(!AdmitRule::FirstIntAtMost(5).admits(Some(6)));
        assert!(!AdmitRule::FirstIntAtMost(5).admits(None));
    }

    #[test]
    fn rules_read_the_whole_reply_and_a_misfit_is_an_error() {
        use crate::strategy::reply::Rule;
        let rules = |text: &str| AdmitRule::Rules {
            rules: Arc::new(ReplyRules {
                admitted: Rule::decision(text).unwrap(),
                remaining: None,
                redis_time_us: None,
            }),
            limit: Limit::per_window(5, 1000),
        };
        // A Lua boolean: true arrives as :1, false as nil.
        let boolean = rules("reply == true");
        assert_eq!(boolean.admits_reply(b":1\r\n", Some(1)), Ok(true));
        assert_eq!(boolean.admits_reply(b"$-1\r\n", None), Ok(false));
        // A hit count against the request's limit: 3 <= 5, 6 is not.
        let count = rules("reply <= ${limit}");
        assert_eq!(count.admits_reply(b":3\r\n", Some(3)), Ok(true));
        assert_eq!(count.admits_reply(b":6\r\n", Some(6)), Ok(false));
        // Remaining, -1 refused: a first integer of 0 is an admission here,
        // which "the first integer is 1" read as a refusal.
        let remaining = rules("reply >= 0");
        assert_eq!(remaining.admits_reply(b":0\r\n", Some(0)), Ok(true));
        assert!(!AdmitRule::FirstIntIsOne.admits(Some(0)));
        // A reply the rule does not fit is an error that shows it.
        let e = boolean
            .admits_reply(b"*2\r\n:1\r\n:4\r\n", Some(1))
            .unwrap_err();
        assert!(
            e.contains("reply == true") && e.contains("(integer) 4"),
            "{e}"
        );
        // An error reply is not read (the scan counts it).
        assert_eq!(boolean.admits_reply(b"-ERR x\r\n", None), Ok(false));
        // Every reply the proxy relays parses back to itself.
        for r in [
            Reply::Nil,
            Reply::Int(-3),
            Reply::Status("OK".into()),
            Reply::Error("NOPERM no".into()),
            Reply::Bulk(b"a\r\nb".to_vec()),
            Reply::Array(vec![Reply::Int(1), Reply::Array(vec![]), Reply::Nil]),
        ] {
            let mut b = Vec::new();
            r.write_resp(&mut b);
            let (back, used) = resp::parse(&b).unwrap().unwrap();
            assert_eq!((back, used), (r, b.len()));
        }
    }
}
