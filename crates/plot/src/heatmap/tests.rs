//! The heatmap drawn from a small input: its CSV, PNG and SVG cells and
//! colours, hatching and outlines.

use std::path::Path;

use crate::heatmap::*;

fn small() -> Heatmap {
    let cat = |name: &str, rgb| Category {
        name: name.into(),
        rgb,
    };
    let cell = |k: usize, v: f64, hatched, outlined| {
        Some(HeatCell {
            category: k,
            lines: vec![format!("{v}"), "+1%".into()],
            value: Some(v),
            hatched,
            outlined,
        })
    };
    Heatmap {
        name: "hm".into(),
        title: "two items on three servers".into(),
        caption: "a caption that says what the colours mean".into(),
        columns: vec!["one\nfirst".into(), "two".into(), "three".into()],
        rotate_columns: false,
        categories: vec![
            cat("good", tint::GREEN),
            cat("bad", tint::VERMILLION),
            cat("unsure", tint::YELLOW),
        ],
        hatch_label: "disturbed".into(),
        outline_label: "differs".into(),
        rows: vec![
            HeatRow {
                label: "A1".into(),
                note: "a note".into(),
                cells: vec![
                    cell(0, 1.5, false, false),
                    cell(1, 2.5, true, false),
                    cell(2, 3.5, false, true),
                ],
            },
            HeatRow {
                label: "B2".into(),
                note: String::new(),
                cells: vec![cell(0, 4.0, false, false), None, cell(1, 5.0, false, false)],
            },
        ],
    }
}

/// The PNG's pixels as RGB triples.
fn pixels(path: &Path) -> Vec<[u8; 3]> {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = dec.read_info().unwrap();
    let pal = reader.info().palette.clone().unwrap().to_vec();
    let mut buf = vec![0; reader.output_buffer_size()];
    reader.next_frame(&mut buf).unwrap();
    buf.iter()
        .map(|&i| {
            let k = 3 * i as usize;
            [pal[k], pal[k + 1], pal[k + 2]]
        })
        .collect()
}

#[test]
fn a_heatmap_writes_one_cell_per_item_and_column_in_its_categorys_colour() {
    let dir = tempfile::tempdir().unwrap();
    let m = small();
    m.write_to(dir.path()).unwrap();
    // The CSV: one row per present cell, with its category and flags.
    let csv = std::fs::read_to_string(dir.path().join("hm.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 5, "{csv}");
    assert!(
        lines.contains(&"A1,two,bad,2.5 / +1%,2.5,true,false"),
        "{csv}"
    );
    assert!(
        lines.contains(&"A1,three,unsure,3.5 / +1%,3.5,false,true"),
        "{csv}"
    );
    assert!(!csv.contains("B2,two"), "a blank cell is no cell: {csv}");
    // The PNG: every category's fill covers at least one cell's worth of
    // pixels (a cell is at least 48 x 26); white covers the rest.
    let px = pixels(&dir.path().join("hm.png"));
    for (rgb, cells) in [(tint::GREEN, 2), (tint::VERMILLION, 2), (tint::YELLOW, 1)] {
        let n = px.iter().filter(|p| **p == [rgb.0, rgb.1, rgb.2]).count();
        assert!(n >= cells * 300, "{rgb:?}: {n} pixels");
    }
    // The SVG: the same fills, every text inside the canvas, none overlapping.
    let svg = std::fs::read_to_string(dir.path().join("hm.svg")).unwrap();
    for rgb in [tint::GREEN, tint::VERMILLION, tint::YELLOW] {
        let hex = format!("#{:02X}{:02X}{:02X}", rgb.0, rgb.1, rgb.2);
        assert!(svg.to_uppercase().contains(&hex), "{hex} not in the SVG");
    }
    let problems = crate::svg_text::text_problems(&svg);
    assert!(problems.is_empty(), "{problems:?}");
    let (_, boxes) = crate::svg_text::text_boxes(&svg);
    let texts: Vec<&str> = boxes.iter().map(|b| b.text.as_str()).collect();
    for t in [
        "A1",
        "B2",
        "a note",
        "2.5",
        "disturbed",
        "differs",
        "first",
        "unsure",
    ] {
        assert!(texts.contains(&t), "{t} not drawn: {texts:?}");
    }
}

#[test]
fn a_hatched_cell_is_hatched_and_an_outlined_one_framed() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = small();
    m.write_to(dir.path()).unwrap();
    let dark = |px: &[[u8; 3]]| px.iter().filter(|p| p.iter().all(|c| *c < 60)).count();
    let with = dark(&pixels(&dir.path().join("hm.png")));
    for r in &mut m.rows {
        for c in r.cells.iter_mut().flatten() {
            c.hatched = false;
            c.outlined = false;
        }
    }
    m.write_to(dir.path()).unwrap();
    let without = dark(&pixels(&dir.path().join("hm.png")));
    // The hatch's lines and the 3 px frame add hundreds of dark pixels.
    assert!(with > without + 300, "{with} vs {without}");
    // A category outside the list is refused, not drawn in some colour.
    m.rows[0].cells[0].as_mut().unwrap().category = 7;
    let e = m.write_to(dir.path()).unwrap_err().to_string();
    assert!(e.contains("category 7"), "{e}");
}
