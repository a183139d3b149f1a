//! Every figure of the committed reference run, re-rendered from its CSVs:
//! no text outside the canvas, no two labels overlapping (from the SVG's
//! `<text>` positions, sizes, anchors and rotations), data in every figure,
//! a PNG and the numbers drawn beside every SVG, every claim ID of
//! `claims.csv` in some figure's title, and one look per strategy: no two
//! series of a figure drawn alike, no two strategies in one colour, a
//! strategy in the same colour in every figure, and no series that names
//! no strategy in a strategy's colour.

mod common;
use common::copy_of_reference;
use std::path::Path;

use limitbench_analysis::figure::{text_boxes, text_problems};

/// Text problems and figures without data of every figure in `run`, and the
/// concatenated first texts (titles) of every figure.
fn check_figures(run: &Path) -> (Vec<String>, String) {
    let figures = run.join("figures");
    let mut svgs: Vec<_> = std::fs::read_dir(&figures)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .collect();
    svgs.sort();
    let mut problems = Vec::new();
    let mut titles = String::new();
    for svg in &svgs {
        let name = svg.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(svg).unwrap();
        for p in text_problems(&text) {
            problems.push(format!("{name}: {p}"));
        }
        let (_, boxes) = text_boxes(&text);
        titles += &boxes
            .iter()
            .take(3)
            .map(|b| b.text.clone())
            .collect::<Vec<_>>()
            .join(" ");
        titles.push('\n');
        // A chart's CSV marks its data points `data`; a grid's (the chart
        // library's heatmap: `row,column,category,...`) has one row a cell.
        let mut r = csv::Reader::from_path(figures.join(format!("{name}.csv"))).unwrap();
        let grid = r.headers().is_ok_and(|h| h.get(1) == Some("column"));
        let data_rows = r
            .records()
            .filter(|r| r.as_ref().is_ok_and(|r| grid || r.get(1) == Some("data")))
            .count();
        if data_rows == 0 {
            problems.push(format!("{name}: no data points"));
        }
        let png = std::fs::read(figures.join(format!("{name}.png"))).unwrap();
        if &png[1..4] != b"PNG" {
            problems.push(format!("{name}.png is not a PNG"));
        }
    }
    (problems, titles)
}

#[test]
fn figures_of_a_small_fixture_run_render_without_text_problems() {
    // The first 40 rows of every CSV: fewer points, other ranges and ticks.
    let tmp = tempfile::tempdir().unwrap();
    let run = copy_of_reference(tmp.path(), 40);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    limitbench::app::analyze(&run, &root.join("analysis/claims.toml")).unwrap();
    let (problems, _) = check_figures(&run);
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_figure_of_the_reference_run_renders_without_text_problems() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let run = copy_of_reference(tmp.path(), usize::MAX - 1);
    let rows = limitbench::app::analyze(&run, &root.join("analysis/claims.toml")).unwrap();
    let n = std::fs::read_dir(run.join("figures"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert!(n >= 20, "only {n} figures");
    let (mut problems, titles) = check_figures(&run);
    // Every claim's analyzer measures it on a full run: a claim no analyzer
    // produces (its ID misspelt in the code, say) would read `not-run` here.
    for j in rows.iter().filter(|j| j.measured.is_none()) {
        problems.push(format!(
            "claim {} is measured by no analyzer on the full reference run",
            j.spec.id
        ));
    }
    for c in rows.iter().map(|j| &j.spec) {
        if !titles.contains(&format!("{}:", c.id)) && !titles.contains(&format!("{},", c.id)) {
            problems.push(format!("claim {} is in no figure's title", c.id));
        }
    }
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    if report.contains("has no data points") {
        problems.push("the report warns of a figure without data points".into());
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Every number of a figure CSV's numeric columns (x, y, low, high, x_end).
fn csv_numbers(path: &Path) -> Vec<f64> {
    let Ok(mut r) = csv::Reader::from_path(path) else {
        return vec![];
    };
    r.records()
        .flatten()
        .flat_map(|rec| {
            limitbench_analysis::figure::CSV_NUMBER_COLUMNS
                .iter()
                .filter_map(|i| rec.get(*i).and_then(|v| v.parse::<f64>().ok()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `v` among `nums`, as drawn (to 0.1%) or drawn in % (a fraction times 100).
fn drawn(v: f64, nums: &[f64]) -> bool {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * a.abs().max(b.abs()).max(1e-9);
    nums.iter().any(|n| close(v, *n) || close(v * 100.0, *n))
}

/// The figure each claim links to in the report's claims table.
fn linked_figures(report: &str) -> std::collections::HashMap<String, String> {
    report
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("[figure](figures/"))
        .filter_map(|l| {
            let id = l.trim_start_matches("| ").split(' ').next()?.to_string();
            let f = l.split("[figure](figures/").nth(1)?.split(".png)").next()?;
            Some((id, f.to_string()))
        })
        .collect()
}

#[test]
fn figure_conventions_hold_on_the_reference_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let run = copy_of_reference(tmp.path(), usize::MAX - 1);
    let rows = limitbench::app::analyze(&run, &root.join("analysis/claims.toml")).unwrap();
    let figures = run.join("figures");
    let mut problems = Vec::new();
    // The linked figure shows the judged value and the published value.
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    let links = linked_figures(&report);
    for j in &rows {
        let id = &j.spec.id;
        let Some(stem) = links.get(id) else {
            problems.push(format!("{id}: no linked figure"));
            continue;
        };
        let nums = csv_numbers(&figures.join(format!("{stem}.csv")));
        // A behaviour claim's value is a placeholder (its conditions decide);
        // so is a shape claim's published 0 when the study gives no number.
        use limitbench_analysis::claims::Check;
        if j.spec.check == Check::Behaviour {
            continue;
        }
        let (values, _) = limitbench_analysis::report::summary::judged_values(j);
        for v in values.iter().filter(|v| v.is_finite()) {
            if !drawn(*v, &nums) {
                problems.push(format!("{id}: judged value {v} is not in {stem}.csv"));
            }
        }
        let placeholder =
            j.spec.check == Check::Shape && j.spec.published.values().iter().all(|p| *p == 0.0);
        for p in j
            .spec
            .published
            .values()
            .iter()
            .filter(|v| v.is_finite() && !placeholder)
        {
            if !drawn(*p, &nums) {
                problems.push(format!("{id}: published value {p} is not in {stem}.csv"));
            }
        }
    }
    // One look per strategy across figures, no duplicate legend labels.
    let mut looks: std::collections::HashMap<String, (String, String)> = Default::default();
    // The built-in strategies' colours: a series that is no strategy (a
    // quantity, a model, a parameter) is never drawn in one of them.
    let built_in_colours: Vec<String> = (0..12)
        .map(|i| {
            let l = limitbench_plot::style::look_name(limitbench_plot::style::variant_look(i, 0));
            l.split(' ').next().unwrap_or("").to_string()
        })
        .collect();
    for e in std::fs::read_dir(&figures).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "csv") {
            continue;
        }
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        let Ok(mut r) = csv::Reader::from_path(&p) else {
            continue;
        };
        let headers = r.headers().unwrap().clone();
        let Some(look_col) = headers.iter().position(|h| h == "look") else {
            continue;
        };
        let mut seen: Vec<(String, String)> = Vec::new();
        // Each strategy drawn in the figure and its colour: one colour per
        // strategy (its variants share it, with other markers).
        let mut strategy_colours: Vec<(&str, String)> = Vec::new();
        for rec in r.records().flatten() {
            if rec.get(1) != Some("data") {
                continue;
            }
            let (series, look) = (rec[2].to_string(), rec[look_col].to_string());
            if let Some((other, _)) = seen.iter().find(|(s, l)| *l == look && *s != series) {
                problems.push(format!(
                    "{name}: series `{series}` and `{other}` are drawn alike ({look})"
                ));
            }
            if !seen.iter().any(|(s, _)| *s == series) {
                seen.push((series.clone(), look.clone()));
            }
            let drawn_colour = look.split(' ').next().unwrap_or("").to_string();
            if limitbench_analysis::figure::strategy_of(&series).is_none()
                && built_in_colours.contains(&drawn_colour)
            {
                problems.push(format!(
                    "{name}: `{series}` names no strategy but is drawn in a strategy's colour {drawn_colour}"
                ));
            }
            if let Some(strategy) = limitbench_analysis::figure::strategy_of(&series) {
                let colour = look.split(' ').next().unwrap_or("").to_string();
                if let Some((other, _)) = strategy_colours
                    .iter()
                    .find(|(s, c)| *c == colour && *s != strategy)
                {
                    problems.push(format!(
                        "{name}: strategies {strategy} and {other} share the colour {colour}"
                    ));
                }
                if !strategy_colours.iter().any(|(s, _)| *s == strategy) {
                    strategy_colours.push((strategy, colour.clone()));
                }
                match looks.get(strategy) {
                    Some((c, fig)) if *c != colour => problems.push(format!(
                        "strategy {strategy} is {c} in {fig} but {colour} in {name}"
                    )),
                    None => {
                        looks.insert(strategy.to_string(), (colour, name.clone()));
                    }
                    _ => {}
                }
            }
        }
        let (_, boxes) = limitbench_analysis::figure::text_boxes(
            &std::fs::read_to_string(figures.join(format!("{name}.svg"))).unwrap_or_default(),
        );
        // The legend (right of the panels): published values in one entry
        // (a figure with several lists them in its caption). Series names
        // are one entry each by construction; two of them drawn alike is
        // checked above.
        let published_entries = boxes
            .iter()
            .filter(|b| b.x0 > 930.0 && b.y0 > 30.0)
            .filter(|b| {
                let mut w = b.text.split(' ');
                let first = w.next().unwrap_or("");
                first.starts_with(['A', 'B'])
                    && first[1..].starts_with(|c: char| c.is_ascii_digit())
                    && w.next().is_some_and(|x| x.starts_with("published"))
            })
            .count();
        if published_entries > 1 {
            problems.push(format!(
                "{name}: {published_entries} legend entries for published values"
            ));
        }
        // References of one kind are drawn alike: with more than one label
        // they share one legend entry (the labels go under the figure), so
        // no label of such a kind may appear in the legend on its own.
        let mut legend: Vec<_> = boxes
            .iter()
            .filter(|b| b.x0 > 930.0 && b.y0 > 30.0)
            .collect();
        legend.sort_by(|a, b| a.y0.total_cmp(&b.y0));
        let legend_text = legend
            .iter()
            .map(|b| b.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let mut ref_labels: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        if let Ok(mut r) = csv::Reader::from_path(&p) {
            for rec in r.records().flatten() {
                let kind = rec.get(1).unwrap_or("");
                if matches!(kind, "published" | "expected" | "limit") {
                    let labels = ref_labels.entry(kind.to_string()).or_default();
                    if !labels.iter().any(|l| l == &rec[2]) {
                        labels.push(rec[2].to_string());
                    }
                }
            }
        }
        for (kind, labels) in ref_labels.iter().filter(|(_, l)| l.len() > 1) {
            for label in labels.iter().filter(|l| legend_text.contains(l.as_str())) {
                problems.push(format!(
                    "{name}: {kind} line `{label}` has its own legend entry beside {} others",
                    labels.len() - 1
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The figures that ring their claims' judged values, with how many rings
/// each draws per claim (a figure that draws the judged setting in two
/// panels rings it in both). Every study-A claim figure whose claim's
/// judged value is one point is here; a3_0, a3_1, a3_2 and a3_4 draw their
/// pooled judged value as a category of its own. Not ringed, and their
/// captions say why: a1_2-overshoot-vs-formula (draws the overshoot, not
/// the distance judged), a2_3 (the largest over every trial of two
/// panels), a3_2-a3_3's A3.3 panels (its judged setting, a phase drawn
/// uniformly per trial, is drawn in a3_3-sweep-phase-rate), a4_3 (a count
/// of trials).
const RINGED: &[(&str, &str, usize)] = &[
    ("a1_1-check-then-act-admitted", "A1.1", 1),
    ("a1_2-deviation-vs-rtt-jitter", "A1.2", 1),
    ("a2_1-watch-admitted-vs-budget", "A2.1", 1),
    // The default is the first category of each of the five panels that
    // change one detail.
    ("a2_1-watch-admitted-vs-setting", "A2.1", 5),
    ("a2_1-watch-admitted-vs-rtt-jitter", "A2.1", 1),
    ("a3_0-atomic-exactness", "A3.0", 1),
    ("a3_1-straddle-boundary", "A3.1", 1),
    ("a3_2-a3_3-burst-phase", "A3.2", 1),
    ("a3_3-sweep-phase-rate", "A3.3", 1),
    ("a3_4-every-pattern", "A3.4", 1),
    ("a2_2-watch-slowdown-vs-workers", "A2.2", 1),
    ("a4_1-caller-clock-under-overload", "A4.1", 1),
    ("a4_1-sweep-run-length-load", "A4.1", 2),
    ("a4_2-sweep-capacity-servers-offsets", "A4.2", 1),
    ("b3-member-len-sweep", "B3.1", 1),
    ("b3-member-len-sweep", "B3.2", 1),
    ("b3-member-len-sweep", "B3.3", 1),
    ("b3-member-len-sweep", "B4.3", 1),
    ("b5_1-sender-sweep", "B5.1", 3),
    ("b5_3-clock-sweep", "B5.3", 3),
    // Study B's claim figures (issue 35): every judged value a point drawn.
    ("b2_1-b2_3-lua-vs-get", "B2.1", 4),
    ("b2_1-b2_3-lua-vs-get", "B2.2", 1),
    ("b2_1-b2_3-lua-vs-get", "B2.3", 4),
    ("b2_1-cpu-split", "B2.1", 4),
    ("b2_4-b6_1-cost-ratios", "B2.4", 1),
    ("b2_4-b6_1-cost-ratios", "B2.5", 2),
    ("b2_4-b6_1-cost-ratios", "B2.6", 2),
    ("b2_4-b6_1-cost-ratios", "B6.1", 1),
    ("stalls_vs_entries", "B4.1", 1),
    ("stalls_vs_entries", "B4.2", 1),
    ("b3_1-b3_3-bytes-per-entry", "B3.1", 1),
    ("b3_1-b3_3-bytes-per-entry", "B3.3", 4),
    ("memory_per_client_vs_limit", "B3.2", 1),
    ("memory_per_client_vs_limit", "B4.3", 1),
    ("b5_1-poisson-model", "B5.1", 3),
    ("ts-member-overadmission", "B5.1", 3),
    ("b5_2-closed-loop", "B5.2", 1),
    ("cluster-users-that-work", "B7.1", 1),
    ("cluster-users-that-work", "B7.2", 1),
];

#[test]
fn judged_values_are_ringed_at_the_setting_they_were_judged_at() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let run = copy_of_reference(tmp.path(), usize::MAX - 1);
    let rows = limitbench::app::analyze(&run, &root.join("analysis/claims.toml")).unwrap();
    let mut problems = Vec::new();
    for &(stem, id, rings) in RINGED {
        let j = rows.iter().find(|j| j.spec.id == id).unwrap();
        let (mut values, mut intervals) = limitbench_analysis::report::summary::judged_values(j);
        // Or a quantity a band condition judged (B6.1's throughput
        // identity decides it, not its µs).
        for b in j.measured.iter().flat_map(|m| &m.band_values) {
            values.push(b.value);
            intervals.push(b.interval);
        }
        let mut r = csv::Reader::from_path(run.join(format!("figures/{stem}.csv"))).unwrap();
        let records: Vec<csv::StringRecord> = r.records().flatten().collect();
        let marks: Vec<&csv::StringRecord> = records
            .iter()
            .filter(|rec| &rec[1] == "judged" && rec[2].starts_with(&format!("{id} judged")))
            .collect();
        // Every ring sits on a point the figure draws: a data row of the
        // same panel at the ring's x with the ring's value (a pooled value
        // is drawn as its own point for it).
        let num = |s: &str| s.parse::<f64>().ok();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
        for m in &marks {
            let (Some(mx), Some(my)) = (num(&m[3]), num(&m[5])) else {
                problems.push(format!("{stem}: ring of {id} without x or y"));
                continue;
            };
            // The point, or a whisker's end (a claim judged on the worst of
            // its trials rings the top of the drawn range), to float
            // precision: the figure draws the value the judge computed.
            let on_point = records.iter().any(|d| {
                &d[1] == "data"
                    && d[0] == m[0]
                    && num(&d[3]).is_some_and(|x| close(x, mx))
                    && [5, 6, 7]
                        .iter()
                        .any(|&c| num(&d[c]).is_some_and(|y| close(y, my)))
            });
            if !on_point {
                problems.push(format!(
                    "{stem}: ring of {id} at ({mx}, {my}) in panel '{}' is on no drawn point",
                    &m[0]
                ));
            }
        }
        if marks.len() != rings {
            problems.push(format!(
                "{stem}: {} rings of {id}, not {rings}",
                marks.len()
            ));
        }
        for m in &marks {
            let y: f64 = m[5].parse().unwrap();
            // The ring is one of the claim's judged values (or band
            // values) with its interval.
            let at = values
                .iter()
                .position(|v| (v - y).abs() <= 1e-9 * v.abs().max(1.0));
            match at {
                None => problems.push(format!(
                    "{stem}: ring of {id} at {y}, not a judged value {values:?}"
                )),
                Some(i) => {
                    if let (Some((lo, hi)), Ok(l), Ok(h)) =
                        (intervals.get(i), m[6].parse::<f64>(), m[7].parse::<f64>())
                        && ((lo - l).abs() > 1e-9 * lo.abs().max(1.0)
                            || (hi - h).abs() > 1e-9 * hi.abs().max(1.0))
                    {
                        problems.push(format!(
                            "{stem}: ring of {id} has interval {l}..{h}, judged {lo}..{hi}"
                        ));
                    }
                }
            }
        }
    }
    // B6.1 is decided by its throughput identity (a band condition), not
    // by its µs: its ring is that quantity, so an inconclusive verdict
    // shows as an interval across that band.
    let b61 = rows.iter().find(|j| j.spec.id == "B6.1").unwrap();
    let decisive = &b61.measured.as_ref().unwrap().band_values[0];
    let mut r = csv::Reader::from_path(run.join("figures/b2_4-b6_1-cost-ratios.csv")).unwrap();
    let ring: Vec<f64> = r
        .records()
        .flatten()
        .filter(|rec| &rec[1] == "judged" && rec[2].starts_with("B6.1 judged"))
        .filter_map(|rec| rec[5].parse().ok())
        .collect();
    if ring != vec![decisive.value] {
        problems.push(format!(
            "B6.1 ringed at {ring:?}, not at its decisive {}",
            decisive.value
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
