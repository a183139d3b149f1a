//! One redaction for everything the harness writes or prints: URLs
//! (`user:password@`), CONFIG dumps (`requirepass`, `masterauth`,
//! `masteruser`, ACL `user` lines), command lines (`--redis-url`,
//! `--requirepass`, `-a`), and every password registered for a connection
//! (`resp::register_auth`), wherever it appears. The manifest, the report,
//! the logs and error messages all pass through [`text`] or [`json`].

use std::sync::RwLock;

/// What a secret is replaced by.
pub const MASK: &str = "***";

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remember a secret, so that [`text`] masks it wherever it appears.
pub fn remember_secret(secret: &str) {
    // A one-character "password" would mask every such character: such a
    // secret is still masked in URLs and CONFIG, not as free text.
    if secret.len() < 3 {
        return;
    }
    let mut s = SECRETS.write().unwrap();
    if !s.iter().any(|x| x == secret) {
        s.push(secret.to_string());
    }
}

/// A URL without its password: `redis://user:***@host:port/db`.
pub fn url(url: &str) -> String {
    text(url)
}

/// Mask the credentials of every `scheme://user:password@` in `s`.
fn urls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The URL ends at white space or a quote; its credentials at its
        // last '@' (a password may hold '/' or '@'), else the authority at
        // the first '/'.
        let url_end = tail
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '`')
            .unwrap_or(tail.len());
        let end = match tail[..url_end].rfind('@') {
            Some(at) => tail[at..url_end]
                .find('/')
                .map(|i| at + i)
                .unwrap_or(url_end),
            None => tail[..url_end].find('/').unwrap_or(url_end),
        };
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let creds = &authority[..at];
                let user = creds.split_once(':').map(|(u, _)| u).unwrap_or("");
                out.push_str(user);
                out.push(':');
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Config parameters whose value is a secret (or names one).
pub fn is_secret_config(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "requirepass" | "masterauth" | "masteruser" | "user"
    ) || n.contains("password")
        || n.contains("pass")
}

/// Options of a command line whose next word is a secret.
const SECRET_FLAGS: &[&str] = &[
    "--requirepass",
    "--masterauth",
    "--masteruser",
    "--password",
    "--pass",
    "-a",
    "--user",
];

/// `s` with every credential masked: URLs, `--requirepass X`-style
/// options, ACL `user ... >password` words, and every remembered secret.
pub fn text(s: &str) -> String {
    let mut out = urls(s);
    // Options followed by a secret, on a command line.
    let words: Vec<&str> = out.split(' ').collect();
    let mut masked = Vec::with_capacity(words.len());
    let mut next_secret = false;
    // ACL rules (`>password`, `<password`, `#<sha256>`) are secrets only
    // in an ACL line, after its `user` / `SETUSER` word: elsewhere `<=` or
    // `<strategy>` are plain text (a manifest note, a cell pattern).
    let mut acl = false;
    for w in words {
        if next_secret && !w.is_empty() {
            masked.push(MASK.to_string());
            next_secret = false;
            continue;
        }
        if let Some((flag, _)) = w.split_once('=')
            && SECRET_FLAGS.contains(&flag)
        {
            masked.push(format!("{flag}={MASK}"));
            continue;
        }
        next_secret = SECRET_FLAGS.contains(&w);
        if acl
            && w.len() > 1
            && (w.starts_with('>')
                || w.starts_with('<')
                || (w.starts_with('#') || w.starts_with('!'))
                    && w.len() == 65
                    && w[1..].bytes().all(|b| b.is_ascii_hexdigit()))
        {
            masked.push(format!("{}{MASK}", &w[..1]));
            continue;
        }
        if w.eq_ignore_ascii_case("user") || w.eq_ignore_ascii_case("setuser") {
            acl = true;
        }
        masked.push(w.to_string());
    }
    out = masked.join(" ");
    for secret in SECRETS.read().unwrap().iter() {
        out = out.replace(secret.as_str(), MASK);
    }
    out
}

/// A JSON value with every string passed through [`text`] and the values
/// of secret config names (`requirepass`, ...) masked.
pub fn json(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(text(s)),
        Value::Array(a) => Value::Array(a.iter().map(json).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) if is_secret_config(k) && !s.is_empty() => {
                            Value::String(MASK.into())
                        }
                        other => json(other),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_secret_is_masked() {
        assert_eq!(
            text("run --redis-url redis://:s3cret@127.0.0.1:7000/2 --size smoke"),
            "run --redis-url redis://:***@127.0.0.1:7000/2 --size smoke"
        );
        assert_eq!(url("redis://bench:pw@h:1"), "redis://bench:***@h:1");
        assert_eq!(url("redis://127.0.0.1:1"), "redis://127.0.0.1:1");
        // A password holding '/' and '@' (issue 34: it was printed in clear).
        assert_eq!(
            text("cannot parse redis url `redis://u:Zq9/Xk@77@127.0.0.1:7701/x`: bad"),
            "cannot parse redis url `redis://u:***@127.0.0.1:7701/x`: bad"
        );
        assert_eq!(
            text("redis-server --requirepass hunter2 --port 1"),
            "redis-server --requirepass *** --port 1"
        );
        assert_eq!(
            text("user bench on >pw ~* +@all"),
            "user bench on >*** ~* +@all"
        );
        assert_eq!(
            text("ACL SETUSER bench on <old >new ~lb:* +get"),
            "ACL SETUSER bench on <*** >*** ~lb:* +get"
        );
        let h = "a".repeat(64);
        assert_eq!(
            text(&format!("user default on #{h} ~*")),
            "user default on #*** ~*"
        );
        remember_secret("zq-unique-secret");
        assert_eq!(
            text("AUTH failed for zq-unique-secret"),
            "AUTH failed for ***"
        );
        let v = serde_json::json!({"config": {"requirepass": "x1", "masterauth": "", "port": "1"},
                                   "external": "redis://:x1@h:1"});
        let r = json(&v).to_string();
        assert!(!r.contains("x1"), "{r}");
        assert!(r.contains("\"port\":\"1\""), "{r}");
    }

    #[test]
    fn plain_text_with_angle_brackets_is_not_a_secret() {
        // A resumed run rewrote its manifest through this function and
        // turned "mean <= 0.01" and a cell pattern "<strategy>/..." into
        // "<***": only an ACL line's rules are secrets.
        for s in [
            "other processes took at most 0.03 cores (mean <= 0.01)",
            "<strategy>/burst-then-sustained/phase-uniform/x{0.5,1,2}",
            "admitted > limit in 3 of 10 trials",
            "issue #31 and #a1b2",
        ] {
            assert_eq!(text(s), s);
        }
    }
}
