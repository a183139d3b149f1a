//! The figure module's tests: rendering to SVG, PNG and CSV, and the text
//! checks that find overlapping or clipped labels.

use std::path::Path;

use super::*;

#[test]
fn numbers_read_as_a_person_writes_them() {
    assert_eq!(num(1.0), "1");
    assert_eq!(num(10_000_000.0), "10M");
    assert_eq!(num(20_000.0), "20k");
    assert_eq!(num(12_345.0), "12345");
    assert_eq!(num(1.5), "1.5");
    // A value of 1000 or more is shown without decimals, its zeros kept.
    assert_eq!(num(2180.3), "2180");
    assert_eq!(num(1500.4), "1500");
    assert_eq!(num(0.05), "0.05");
    assert_eq!(num(256.3), "256.3");
}

fn fig() -> Figure {
    let mut p = Panel::new(
        "6.7 ms round trip",
        Axis::log("workers").ticks(vec![1.0, 8.0, 64.0]),
        Axis::new("admitted - L (requests)"),
    )
    .series(Series::line(
        "measured",
        vec![
            Pt::spread(1.0, 0.0, 0.0, 0.0, 20),
            Pt::spread(8.0, 4.0, 3.0, 5.0, 20),
            Pt::spread(64.0, 28.0, 26.0, 30.0, 20),
        ],
    ))
    .reference(Reference::limit("limit L = 100", 20.0));
    p.shades.push(Shade {
        x0: 2.0,
        x1: 6.0,
        label: "slow".into(),
    });
    let q = Panel::new(
        "by strategy",
        Axis::new("strategy"),
        Axis::log("µs per decision"),
    )
    .categories(vec![
        "GET".into(),
        "fixed window in Lua".into(),
        "token bucket".into(),
    ])
    .series(Series::points(
        "ours",
        vec![Pt::new(0.0, 6.5), Pt::new(1.0, 11.8), Pt::new(2.0, 14.2)],
    ))
    .series(Series::points(
        "theirs",
        vec![Pt::new(0.0, 7.0), Pt::new(1.0, 12.0), Pt::new(2.0, 15.0)],
    ));
    Figure::new(
        "t",
        &["A1.2"],
        "check-then-act overshoot",
        "mean over trials; whiskers min-max; n = 20 per point",
    )
    .panel(p)
    .panel(q)
    .columns(2)
}

#[test]
fn a_figure_renders_to_svg_png_and_csv_without_text_problems() {
    let d = tempfile::tempdir().unwrap();
    let f = fig();
    f.write_to(d.path()).unwrap();
    if let Ok(dir) = std::env::var("LIMITBENCH_FIGURE_OUT") {
        f.write_to(Path::new(&dir)).unwrap();
    }
    let svg = std::fs::read_to_string(d.path().join("t.svg")).unwrap();
    assert!(svg.contains("A1.2: check-then-act overshoot"));
    let problems = text_problems(&svg);
    assert!(problems.is_empty(), "{problems:#?}");
    let png = std::fs::read(d.path().join("t.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let csv = std::fs::read_to_string(d.path().join("t.csv")).unwrap();
    assert!(csv.lines().count() == 1 + 3 + 1 + 1 + 6, "{csv}");
}

#[test]
fn overlapping_and_clipped_text_is_found() {
    let svg = r#"<svg width="100" height="50" viewBox="0 0 100 50" xmlns="http://www.w3.org/2000/svg">
<text x="10" y="20" dy="0.5ex" text-anchor="start" font-size="10">hello</text>
<text x="20" y="20" dy="0.5ex" text-anchor="start" font-size="10">world</text>
<text x="95" y="40" dy="0.5ex" text-anchor="start" font-size="10">clipped</text>
<text x="5" y="25" dy="0.5ex" text-anchor="middle" font-size="10" transform="rotate(270, 5, 25)">up</text>
</svg>"#;
    let p = text_problems(svg);
    assert!(
        p.iter().any(|s| s.contains("`hello` overlaps `world`")),
        "{p:?}"
    );
    assert!(p.iter().any(|s| s.contains("`clipped` outside")), "{p:?}");
    assert!(!p.iter().any(|s| s.contains("`up`")), "{p:?}");
}

#[test]
fn an_empty_figure_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let f = Figure::new("e", &["X"], "nothing", "");
    assert!(f.write_to(d.path()).is_err());
}

#[test]
fn a_judged_value_is_written_with_its_interval_and_widens_the_axis_to_hold_it() {
    let p = Panel::new("p", Axis::new("x"), Axis::new("y"))
        .series(Series::points("s", vec![Pt::new(1.0, 2.0)]))
        .mark(Mark::new(1.0, 9.0, Some((8.0, 10.0)), "A0.1 judged: 9 [95%: 8..10]").on("s"));
    let ys = crate::panel::y_values(&p);
    assert!(ys.contains(&10.0) && ys.contains(&8.0), "{ys:?}");
    let csv = Figure::new("f", &["A0.1"], "t", "c").panel(p).csv();
    let row = csv
        .lines()
        .find(|l| l.contains(",judged,"))
        .unwrap_or_else(|| panic!("no judged row in {csv}"));
    assert_eq!(row, "p,judged,A0.1 judged: 9 [95%: 8..10],1,,9,8,10,,,");
}

/// The polylines drawn in `look`'s colour in the SVG of a one-panel figure
/// of `s` (its stretches of line and its legend sample).
fn lines_in_svg(s: Series) -> (usize, String) {
    let d = tempfile::tempdir().unwrap();
    let colour = crate::style::look_name(s.look.unwrap())[..7].to_uppercase();
    let f = Figure::new("g", &[], "gaps", "c").panel(
        Panel::new("p", Axis::new("x"), Axis::new("y"))
            .series(s)
            .series(Series::points("other", vec![Pt::new(0.0, 0.0)])),
    );
    f.write_to(d.path()).unwrap();
    let svg = std::fs::read_to_string(d.path().join("g.svg")).unwrap();
    let n = svg
        .lines()
        .filter(|l| l.contains("<polyline") && l.to_uppercase().contains(&colour))
        .count();
    (n, std::fs::read_to_string(d.path().join("g.csv")).unwrap())
}

#[test]
fn a_line_breaks_where_the_measured_grid_has_no_step_and_an_offset_keeps_x() {
    let pts = vec![
        Pt::new(0.0, 1.0),
        Pt::new(1.0, 2.0),
        Pt::new(2.0, 3.0),
        Pt::new(10.0, 4.0),
        Pt::new(11.0, 5.0),
    ];
    let s = Series::line("s", pts).neutral(0);
    let (joined, _) = lines_in_svg(s.clone());
    let (broken, csv) = lines_in_svg(s.join_within(1.0).offset(0.01));
    // One stretch more: 0..2 and 10..11 instead of 0..11.
    assert!(joined >= 2, "{joined}");
    assert_eq!(broken, joined + 1);
    // The CSV keeps the true x of an offset series.
    assert!(csv.lines().any(|l| l.starts_with("p,data,s,10,")), "{csv}");
}
