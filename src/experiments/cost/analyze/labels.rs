//! Labels and references the cost figures share: a variant id in words,
//! a percentage read from a published text, a machine claim's published
//! lines, B2.1's legend label.

use limitbench_analysis::claims::ClaimSpec;
use limitbench_analysis::figure::{ClaimReference, RefKind, Reference};

/// A variant id in words: `token-bucket|evalsha` -> `token-bucket (EVALSHA)`.
pub fn words(id: &str) -> String {
    limitbench_analysis::latency::key_words(id)
}

/// The first percentage in a published text (`"1k-2k/s, >=42% busy"` -> 42).
pub fn percent_in(text: &str) -> Option<f64> {
    let end = text.find('%')?;
    let head = &text[..end];
    let start = head
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|i| i + 1)
        .unwrap_or(0);
    head[start..].parse().ok()
}

/// A machine claim's published values, drawn as lines without a pass band
/// (what is judged is the part that travels, not these).
pub(super) fn machine_lines(label: &str, lines: Vec<f64>) -> Reference {
    Reference {
        kind: RefKind::Published,
        label: label.into(),
        value: None,
        band: None,
        x: None,
        lines,
    }
}

/// B2.1's reference on a "x GET" axis: the judged check's region shaded
/// (what travels: at least 1.15x GET; GET's own 1x is drawn as its limit
/// line) and the authors' 2.5-3.5x as the published lines, not the check's
/// bound; the legend says how the judge decides (the check on every Lua
/// strategy's interval and the analyzer's spread condition).
pub(super) fn b21_reference(c: &ClaimSpec) -> Reference {
    let (_, _, rule) = limitbench_analysis::figure::pass_region(c, 0);
    let mut r = Reference::published(c, 0).labelled(format!(
        "B2.1 published: {} (the authors' machine, dashed ends); shaded: where the judged check passes ({rule}: every Lua strategy's 95% interval inside it, {}), with the spread dearest/cheapest no wider than the published range's (1.45)",
        limitbench_analysis::report::micro(&c.published_text),
        c.check.as_str()
    ));
    r.value = None;
    r.lines = c
        .authors_machine
        .as_ref()
        .map(|n| n.values())
        .unwrap_or_default();
    r
}
