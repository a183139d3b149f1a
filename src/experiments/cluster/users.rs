//! One user's decision in a `users` cell (where its base and derived keys
//! live, ok or the exact error) and a users trial's counts summed from its
//! users' rows.

use std::collections::BTreeMap;

use super::variants::variant_keys;
use super::{Row, UserRow};
use limitbench_core::clock::Clock;
use limitbench_core::conn::{Conn, key_slot};
use limitbench_core::strategy::{Limit, Request, Strategy, window_index};

fn owner(conn: &Conn, key: &str) -> String {
    match conn {
        Conn::Cluster(c) => c.owner_of(key).to_string(),
        Conn::Single(c) => c.addr().to_string(),
    }
}

/// One user's decision: where its base and derived keys live, ok or the
/// exact error (`cell` and `trial` left for the caller).
pub(super) async fn user_decision(
    conn: &mut Conn,
    strategy: &dyn Strategy,
    variant: &str,
    limit: Limit,
    user: &str,
    request_id: u64,
) -> UserRow {
    let now_us = Clock::system_now_us();
    let (base, derived) = variant_keys(variant, user, window_index(now_us, limit.window_ms));
    let req = Request {
        client: user,
        limit,
        cost: 1,
        now_us,
        request_id,
    };
    let out = strategy.decide(conn, &req).await;
    // Where the script reported Redis's clock, derive the key from it (the
    // caller's estimate can miss a window boundary).
    let derived = match &out {
        Ok(d) => match d.redis_time_us {
            Some(t) if t > 0 => variant_keys(variant, user, window_index(t, limit.window_ms)).1,
            _ => derived,
        },
        Err(_) => derived,
    };
    UserRow {
        user: user.to_string(),
        base_slot: key_slot(base.as_bytes()),
        derived_slot: key_slot(derived.as_bytes()),
        base_node: owner(conn, &base),
        derived_node: owner(conn, &derived),
        base_key: base,
        derived_key: derived,
        ok: out.is_ok(),
        error: out.err().map(|e| e.caller_text()).unwrap_or_default(),
        ..Default::default()
    }
}

/// A users trial's counts from its users' rows: ok and failed, on the base
/// key's node or not, and the distinct error texts with counts.
pub(super) fn users_counts(side: &[UserRow]) -> Row {
    let mut row = Row {
        users: side.len() as u64,
        ..Default::default()
    };
    let mut errors: BTreeMap<&str, u64> = BTreeMap::new();
    for u in side {
        let same = u.base_node == u.derived_node;
        row.same_node += same as u64;
        if u.ok {
            row.ok += 1;
            if same {
                row.ok_same_node += 1;
            } else {
                row.ok_other_node += 1;
            }
        } else {
            row.failed += 1;
            *errors.entry(&u.error).or_default() += 1;
        }
    }
    row.fraction_ok = row.ok as f64 / row.users.max(1) as f64;
    row.errors = errors
        .iter()
        .map(|(t, n)| format!("{t} (x{n})"))
        .collect::<Vec<_>>()
        .join(" | ");
    row
}
