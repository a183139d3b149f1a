//! The reply rules against replies of every shape, and the messages of
//! rules that do not fit or do not parse.

use super::*;
use crate::strategy::Limit;

fn req(cost: u64) -> Request<'static> {
    Request {
        client: "c",
        limit: Limit::per_window(5, 1000),
        cost,
        now_us: 0,
        request_id: 1,
    }
}
fn arr(items: Vec<Reply>) -> Reply {
    Reply::Array(items)
}
fn s(t: &str) -> Reply {
    Reply::Bulk(t.as_bytes().to_vec())
}
fn ok(rule: &str, reply: &Reply) -> bool {
    Rule::decision(rule)
        .unwrap()
        .admitted(reply, &req(1))
        .unwrap_or_else(|p| panic!("{rule} on {reply:?}: {}", p.0))
}
fn problem(rule: &str, reply: &Reply) -> String {
    Rule::decision(rule)
        .unwrap()
        .admitted(reply, &req(1))
        .expect_err(rule)
        .0
}

#[test]
fn each_reply_shape_reads_as_its_rule_says() {
    use Reply::{Int, Nil};
    // Units granted, remaining with -1 refused, a hit count, nil refused.
    assert!(ok("reply[1] == ${cost}", &arr(vec![Int(1)])));
    assert!(!ok("reply[1] >= 1", &arr(vec![Int(0)])));
    assert!(ok("reply[2] >= 0", &arr(vec![Int(1), Int(0)])));
    assert!(!ok("reply[2] >= 0", &arr(vec![Int(0), Int(-1)])));
    assert!(ok("reply <= ${limit}", &Int(5)));
    assert!(!ok("reply <= ${limit}", &Int(6)));
    assert!(ok("reply[1] != nil", &arr(vec![Int(7)])));
    assert!(!ok("reply[1] != nil", &Nil));
    assert!(!ok("reply[1] ~= nil", &arr(vec![])));
    // Lua booleans: true arrives as 1, false as nil.
    assert!(ok("reply == true", &Int(1)));
    assert!(!ok("reply == true", &Nil));
    assert!(ok("reply == false", &Nil));
    // Strings, in the decision slot or another one.
    assert!(ok("reply[1] == \"1\"", &arr(vec![s("1")])));
    assert!(!ok("reply[1] == '1'", &arr(vec![s("0")])));
    assert!(ok("reply[1] == 1", &arr(vec![Int(1), s("0.25")])));
    assert!(ok(
        "num(reply[2]) <= 0 and reply[1] == 1",
        &arr(vec![Int(1), s("-1")])
    ));
    assert!(ok(
        "not (reply[1] == 0) or reply[2] == nil",
        &arr(vec![Int(1)])
    ));
    assert!(ok(
        "reply[2][1] == 3",
        &arr(vec![Int(1), arr(vec![Int(3)])])
    ));
}

#[test]
fn a_rule_that_cannot_be_applied_says_what_it_met() {
    use Reply::{Int, Nil};
    let p = problem("reply[1] == 1", &arr(vec![s("1")]));
    assert!(
        p.contains("the string \"1\"") && p.contains("num(reply[1])"),
        "{p}"
    );
    let p = problem("reply[2] >= 0", &arr(vec![Int(1)]));
    assert!(p.contains("absent") && p.contains("1 element"), "{p}");
    let p = problem("reply[1] == 1", &Int(1));
    assert!(
        p.contains("not an array") && p.contains("reply == 1"),
        "{p}"
    );
    let p = problem("reply == true", &Int(3));
    assert!(p.contains("not a Lua boolean"), "{p}");
    let p = problem("reply < ${limit}", &Nil);
    assert!(p.contains("nil") && p.contains("!= nil"), "{p}");
    let p = problem("reply[1] == \"1\"", &arr(vec![Int(1)]));
    assert!(p.contains("the integer 1") && p.contains("string"), "{p}");
}

#[test]
fn the_position_form_reads_one_and_zero_and_nothing_else() {
    let r = |reply: Reply| Rule::flag_at(0).admitted(&reply, &req(3));
    assert_eq!(r(arr(vec![Reply::Int(1)])), Ok(true));
    assert_eq!(r(arr(vec![Reply::Int(0)])), Ok(false));
    // A count of 3 is not a refusal, a text "1" is not an admission.
    let p = r(arr(vec![Reply::Int(3)])).unwrap_err().0;
    assert!(
        p.contains("the integer 3") && p.contains("reply[1] >= 1"),
        "{p}"
    );
    let p = r(arr(vec![s("1")])).unwrap_err().0;
    assert!(p.contains("the string \"1\""), "{p}");
}

#[test]
fn numbers_and_their_nil() {
    let v = |rule: &str, reply: &Reply| Rule::value(rule).unwrap().number(reply, &req(2));
    assert_eq!(v("${limit} - reply", &Reply::Int(3)), Ok(Some(2.0)));
    let time = arr(vec![Reply::Int(1), arr(vec![s("1700000000"), s("123456")])]);
    assert_eq!(
        v("num(reply[2][1]) * 1000000 + num(reply[2][2])", &time),
        Ok(Some(1_700_000_000_123_456.0))
    );
    assert_eq!(v("reply[3]", &arr(vec![Reply::Int(1)])), Ok(None));
    assert!(v("reply[1]", &arr(vec![s("x")])).is_err());
    assert_eq!(
        v("-reply[1] * ${cost}", &arr(vec![Reply::Int(4)])),
        Ok(Some(-8.0))
    );
}

#[test]
fn malformed_rules_are_refused_with_a_reason() {
    for (rule, says) in [
        ("reply[1]", "is a value, not a decision"),
        ("reply[0] == 1", "from 1"),
        ("reply[1] = 1", "unexpected `=`"),
        ("reply[1] == ${limt}", "unknown placeholder `${limt}`"),
        ("reply[1] == 1 and reply[2]", "joins comparisons"),
        ("reply[1] >= nil", "orders a nil"),
        ("reply[1] == 1 1", "unexpected `1`"),
        ("admitted == 1", "unknown word `admitted`"),
        ("reply[1] == \"1", "unclosed string"),
        ("", "empty rule"),
    ] {
        let e = Rule::decision(rule).unwrap_err();
        assert!(e.contains(says), "{rule}: {e}");
    }
    assert!(Rule::value("reply[1] == 1").is_err());
}
