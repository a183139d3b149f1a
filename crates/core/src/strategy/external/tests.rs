//! Manifests against their validation: the inferred clock, the rendered
//! placeholders, reply rules and promises, and a folder with a broken one.

use super::folder::load_folder;
use super::template::Rendered;
use super::*;
use crate::strategy::{Options, Request};
use limitbench_base::error::Result;

/// Load a manifest with `extra` lines (top-level fields, then `[reply]`)
/// beside a trivial script.
fn load(extra: &str, reply: &str) -> Result<Manifest> {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("x.lua"), "return {1, 0, -1}").unwrap();
    let file = d.path().join("x.toml");
    std::fs::write(
        &file,
        format!("name = \"x\"\nscript = \"x.lua\"\nkeys = [\"k:${{client}}\"]\n{extra}\n[reply]\nadmitted = 1\n{reply}\n"),
    )
    .unwrap();
    Manifest::load(&file)
}

#[test]
fn the_clock_is_derived_from_the_reply_and_the_placeholders() {
    assert_eq!(
        load("", "redis_time_us = 3").unwrap().clock,
        ClockSource::Redis
    );
    let caller = load("args = [\"${now_ms}\"]", "").unwrap();
    assert_eq!(caller.clock, ClockSource::Caller);
    assert_eq!(
        load("args = [\"${limit}\"]", "").unwrap().clock,
        ClockSource::None
    );
    // Declared wins: a script that reads TIME without returning it.
    assert_eq!(
        load("clock = \"redis\"", "").unwrap().clock,
        ClockSource::Redis
    );
}

#[test]
fn a_bad_clock_names_the_field() {
    let e = load("clock = \"caller\"", "").unwrap_err().to_string();
    assert!(e.contains("clock") && e.contains("${now_ms}"), "{e}");
    let e = load("clock = \"wall\"", "").unwrap_err().to_string();
    assert!(e.contains("clock") && e.contains("`wall`"), "{e}");
}

#[test]
fn window_placeholders_render_the_callers_window() {
    let t = Template::parse(
        "rl:{${client}}:${window_index}:${prev_window_index}:${window_start_ms}",
        Path::new("x"),
        "keys",
    )
    .unwrap();
    let req = Request {
        client: "c",
        limit: crate::strategy::Limit::per_window(5, 1000),
        cost: 1,
        now_us: 12_345_678_901,
        request_id: 7,
    };
    assert_eq!(
        Rendered(&t, &req).to_string(),
        "rl:{c}:12345:12344:12345000"
    );
    assert!(t.uses_caller_clock());
    assert_eq!(
        load("args = [\"${window_start_ms}\"]", "").unwrap().clock,
        ClockSource::Caller
    );
}

#[test]
fn templates_render_as_to_string_would() {
    let t = Template::parse(
        "rl:{${client}}:${window_s}:${rate_per_s}",
        Path::new("x"),
        "keys",
    )
    .unwrap();
    let req = Request {
        client: "c",
        limit: crate::strategy::Limit::per_window(5, 300),
        cost: 1,
        now_us: 0,
        request_id: 7,
    };
    let rate = (5.0f64 * 1000.0 / 300.0).to_string();
    assert_eq!(
        Rendered(&t, &req).to_string(),
        format!("rl:{{c}}:0.3:{rate}")
    );
}

/// `load`, with the script's source given.
fn load_with(lua: &str, extra: &str, reply: &str) -> Result<Manifest> {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("x.lua"), lua).unwrap();
    let file = d.path().join("x.toml");
    std::fs::write(
        &file,
        format!("name = \"x\"\nscript = \"x.lua\"\nkeys = [\"k:${{client}}\"]\n{extra}\n[reply]\n{reply}\n"),
    )
    .unwrap();
    Manifest::load(&file)
}

#[test]
fn a_script_that_reads_time_runs_on_redis_clock_unless_it_takes_the_callers() {
    let reads = "local t = redis.call('TIME')\nreturn {1, 0}";
    let m = load_with(reads, "", "admitted = 1").unwrap();
    assert_eq!(m.clock, ClockSource::Redis);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    // TIME in a comment or a string is not a call.
    let m = load_with(
        "-- redis.call('TIME')\nreturn {1, 'TIME'}",
        "",
        "admitted = 1",
    )
    .unwrap();
    assert_eq!(m.clock, ClockSource::None);
    // Both clocks: caller, with a warning; declared none: a warning.
    let m = load_with(reads, "args = [\"${now_ms}\"]", "admitted = 1").unwrap();
    assert_eq!(m.clock, ClockSource::Caller);
    assert!(m.warnings[0].contains("TIME"), "{:?}", m.warnings);
    let m = load_with(reads, "clock = \"none\"", "admitted = 1").unwrap();
    assert!(m.warnings[0].contains("none"), "{:?}", m.warnings);
}

#[test]
fn reply_fields_take_positions_or_rules_and_name_a_bad_one() {
    let m = load_with(
        "return 1",
        "",
        "admitted = \"reply <= ${limit}\"\nremaining = \"${limit} - reply\"",
    )
    .unwrap();
    assert_eq!(m.reply.admitted.text(), "\"reply <= ${limit}\"");
    let e = load_with("return 1", "", "admitted = \"reply >= \"")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("reply.admitted") && e.contains("rule `reply >= `"),
        "{e}"
    );
    let e = load_with("return 1", "", "admitted = 0")
        .unwrap_err()
        .to_string();
    assert!(e.contains("1-based"), "{e}");
    let e = load_with("return 1", "", "admitted = true")
        .unwrap_err()
        .to_string();
    assert!(e.contains("reply.admitted") && e.contains("boolean"), "{e}");
    let e = load_with(
        "return 1",
        "",
        "admitted = 1\nremaining = \"reply[1] == 1\"",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("reply.remaining") && e.contains("comparison"),
        "{e}"
    );
}

#[test]
fn the_promise_is_parsed_and_checked() {
    let m = load("promise = \"burst-of-capacity\"", "").unwrap();
    assert_eq!(m.promise, Some(Promise::BurstOfCapacity));
    let s = m.build(&Options::default()).unwrap();
    assert_eq!(s.info().promise, Some(Promise::BurstOfCapacity));
    assert_eq!(load("", "").unwrap().promise, None);
    let e = load("promise = \"exact\"", "").unwrap_err().to_string();
    assert!(
        e.contains("promise") && e.contains("at-most-limit-in-any-window"),
        "{e}"
    );
}

#[test]
fn seconds_placeholders_render_in_the_units_libraries_take() {
    let t = Template::parse(
        "${now_s_float}|${window_s_int}|${now_s}",
        Path::new("x"),
        "args",
    )
    .unwrap();
    let req = Request {
        client: "c",
        limit: crate::strategy::Limit::per_window(10, 60_000),
        cost: 1,
        now_us: 1_700_000_000_012_345,
        request_id: 7,
    };
    assert_eq!(
        Rendered(&t, &req).to_string(),
        "1700000000.012345|60|1700000000"
    );
    assert!(t.uses_caller_clock());
    let m = load("args = [\"${window_s_int}\"]", "").unwrap();
    let s = m.build(&Options::default()).unwrap();
    assert!(s.info().window_whole_seconds);
    let e = s
        .info()
        .accepts(&crate::strategy::Limit::per_window(5, 300))
        .unwrap_err();
    assert!(e.contains("whole seconds") && e.contains("300 ms"), "{e}");
    assert!(
        s.info()
            .accepts(&crate::strategy::Limit::per_window(5, 2000))
            .is_ok()
    );
}

#[test]
fn a_broken_manifest_does_not_keep_the_others_from_loading() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("x.lua"), "return {1}").unwrap();
    let good = |n: &str| {
        format!("name = \"{n}\"\nscript = \"x.lua\"\nkeys = [\"k\"]\n[reply]\nadmitted = 1\n")
    };
    std::fs::write(d.path().join("a.toml"), good("good-a")).unwrap();
    std::fs::write(
        d.path().join("b.toml"),
        "name = \"b\"\nscript = \"x.lua\"\nkeys = [\"${clinet}\"]\n[reply]\nadmitted = 1\n",
    )
    .unwrap();
    std::fs::write(d.path().join("c.toml"), good("good-a")).unwrap();
    std::fs::write(d.path().join("d.toml"), good("good-d")).unwrap();
    let f = load_folder(d.path()).unwrap();
    let names: Vec<&str> = f.manifests.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["good-a", "good-d"]);
    let broken = f.broken_text();
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(
        broken[0].contains("b.toml") && broken[0].contains("${clinet}"),
        "{broken:?}"
    );
    assert!(
        broken[1].contains("c.toml") && broken[1].contains("already defined"),
        "{broken:?}"
    );
}
