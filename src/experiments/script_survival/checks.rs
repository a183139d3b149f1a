//! What `script-survival` probes on one server: the token-bucket script and
//! the read-only probe, the single-command checks (SCRIPT EXISTS, EVALSHA,
//! EVALSHA_RO, FCALL, FCALL_RO, FUNCTION LIST), and a client's decisions
//! with one invocation mode or strategy.

use limitbench_base::error::Result;
use limitbench_core::conn::Conn;
use limitbench_core::resp::{Arg, Connection};
use limitbench_core::strategy::{Limit, Options, Request, Script, Strategy};

/// The read-only probe: declares no writes so it may run on a replica.
pub fn probe_script() -> Script {
    Script::new(
        "probe-ro",
        "#!lua flags=no-writes\nreturn redis.call('EXISTS', KEYS[1])",
    )
}

/// The token bucket's script, exactly as the strategy runs it.
pub fn bucket_script() -> Script {
    Script::new(
        "token-bucket",
        include_str!("../../../lua/token-bucket.lua"),
    )
}

const LIMIT: Limit = Limit {
    limit: 100,
    window_ms: 1000,
    rate_per_s: 100.0,
};

fn outcome_of(r: &Result<limitbench_core::resp::Reply>) -> (bool, String, String) {
    match r {
        Ok(v) => (true, "ok".into(), v.one_line()),
        Err(e) => (false, e.class(), e.caller_text()),
    }
}

/// The single-command checks on one server.
pub async fn server_checks(
    c: &mut Connection,
    key: &str,
) -> Vec<(String, String, bool, String, String)> {
    let tb = bucket_script();
    let pr = probe_script();
    let (cap, rate) = (LIMIT.limit.to_string(), LIMIT.rate_per_s.to_string());
    let mut out = Vec::new();
    fn push(
        out: &mut Vec<(String, String, bool, String, String)>,
        check: &str,
        script: &str,
        r: Result<limitbench_core::resp::Reply>,
    ) {
        let (ok, o, t) = outcome_of(&r);
        out.push((check.to_string(), script.to_string(), ok, o, t));
    }
    for s in [&tb, &pr] {
        let r = c
            .call(&limitbench_core::args!["SCRIPT", "EXISTS", s.sha.as_str()])
            .await;
        let exists = r
            .as_ref()
            .ok()
            .and_then(|v| v.clone().into_array())
            .and_then(|a| a.first().and_then(|x| x.as_i64()));
        match exists {
            Some(e) => out.push((
                "script_exists".into(),
                s.name.clone(),
                e == 1,
                (e == 1).to_string(),
                e.to_string(),
            )),
            None => push(&mut out, "script_exists", &s.name, r),
        }
    }
    let args_tb: [Arg<'_>; 6] = [
        Arg::S(tb.sha.as_str()),
        Arg::U(1),
        Arg::S(key),
        Arg::S(&cap),
        Arg::S(&rate),
        Arg::U(1),
    ];
    let mut cmd = vec![Arg::S("EVALSHA")];
    cmd.extend_from_slice(&args_tb);
    push(&mut out, "evalsha", &tb.name, c.call(&cmd).await);
    let r = c
        .call(&limitbench_core::args![
            "EVALSHA_RO",
            pr.sha.as_str(),
            1u64,
            key
        ])
        .await;
    push(&mut out, "evalsha_ro", &pr.name, r);
    let mut cmd = vec![Arg::S("FCALL"), Arg::S(tb.function.as_str())];
    cmd.extend_from_slice(&args_tb[1..]);
    push(&mut out, "fcall", &tb.name, c.call(&cmd).await);
    let r = c
        .call(&limitbench_core::args![
            "FCALL_RO",
            pr.function.as_str(),
            1u64,
            key
        ])
        .await;
    push(&mut out, "fcall_ro", &pr.name, r);
    let r = c
        .call(&limitbench_core::args![
            "FUNCTION",
            "LIST",
            "LIBRARYNAME",
            tb.function.as_str()
        ])
        .await;
    match r {
        Ok(v) => {
            let n = v.into_array().map(|a| a.len()).unwrap_or(0);
            out.push((
                "function_list".into(),
                tb.name.clone(),
                n > 0,
                (n > 0).to_string(),
                format!("{n} libraries"),
            ));
        }
        Err(e) => out.push((
            "function_list".into(),
            tb.name.clone(),
            false,
            e.class(),
            e.caller_text(),
        )),
    }
    out
}

/// What one client saw over `n` decisions.
#[derive(Debug, Clone, Default)]
pub struct ClientOutcome {
    pub decisions: u64,
    pub succeeded: u64,
    pub failed_calls: u64,
    pub round_trips: u64,
    pub noscript_fallbacks: u64,
    pub first_error: Option<(String, String)>,
}

/// `n` token-bucket decisions with invocation `mode` on one server.
pub async fn run_client(
    addr: std::net::SocketAddr,
    mode: &str,
    client: &str,
    n: u64,
) -> Result<ClientOutcome> {
    let s = limitbench_core::strategy::build(
        "token-bucket",
        None,
        &Options::default().with("invocation", mode),
    )?;
    run_strategy_client(addr, s.as_ref(), client, n).await
}

/// `n` decisions of `s` on one server.
pub async fn run_strategy_client(
    addr: std::net::SocketAddr,
    s: &dyn Strategy,
    client: &str,
    n: u64,
) -> Result<ClientOutcome> {
    let mut conn = Conn::connect(addr).await?;
    let mut out = ClientOutcome::default();
    for i in 0..n {
        let req = Request {
            client,
            limit: LIMIT,
            cost: 1,
            now_us: limitbench_core::clock::Clock::system_now_us(),
            request_id: i,
        };
        out.decisions += 1;
        let rt_before = conn.round_trips();
        match s.decide(&mut conn, &req).await {
            Ok(d) => {
                out.succeeded += 1;
                out.noscript_fallbacks += d.noscript_fallbacks as u64;
                out.failed_calls += d.noscript_fallbacks as u64;
            }
            Err(e) => {
                out.failed_calls += 1;
                // A fallback that failed on its EVAL also had a failed EVALSHA first.
                if conn.round_trips() - rt_before == 2 {
                    out.failed_calls += 1;
                    out.noscript_fallbacks += 1;
                }
                if out.first_error.is_none() {
                    out.first_error = Some((e.class(), e.caller_text()));
                }
            }
        }
        out.round_trips = conn.round_trips();
    }
    Ok(out)
}
