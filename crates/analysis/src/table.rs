//! Markdown tables and number formatting for every report section.

/// A markdown table from a header row and body rows (cells escaped).
pub fn md_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = format!("| {} |\n", headers.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(headers.len())));
    for r in rows {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}

/// `x` with `d` decimals, or `n/a` when not finite.
pub fn f(x: f64, d: usize) -> String {
    if x.is_finite() {
        format!("{x:.d$}")
    } else {
        "n/a".into()
    }
}

/// Distinct values in first-seen order.
pub fn distinct<T: PartialEq + Clone>(v: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// A Redis error text without the per-script suffix (` script: <sha>, on @user_script:N.`),
/// so errors from differently flagged copies of one script compare equal.
pub fn error_core(text: &str) -> String {
    match text.find(" script: ") {
        Some(i) => text[..i].to_string(),
        None => text.to_string(),
    }
}

/// The claims table writes microseconds as `us`; a reader gets `µs`.
pub fn micro(s: &str) -> String {
    s.split(' ')
        .map(|w| {
            let core = w.trim_end_matches([';', ',', '.', ')']);
            if core == "us" {
                format!("µs{}", &w[2..])
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
