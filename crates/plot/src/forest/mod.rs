//! A forest plot: one row per item, grouped, each row marked on one of two
//! strips: a value with its interval on a log axis of ratios (with a slot
//! for 0 at its left end, so a ratio of 0 is drawn, not pushed off the
//! axis), or a fraction on a second axis of 0..1 (a share of conditions
//! held, say); the band where the row passes is shaded behind its mark.
//! Text columns: a label at the left, a note and a cause at the right
//! (systems and medical papers' summary figure). The caller gives ratios
//! and fractions; this draws them, a vertical reference line at 1, and
//! writes the numbers drawn as CSV. It knows nothing of what a row means.
//!
//! Layout: this file holds the model, its CSV and the columns' geometry
//! ([`Columns`], and [`Forest::clipped`]: every label or cause wider than
//! its column); `draw` lays the figure out and draws it as SVG and PNG.

use std::path::Path;

use crate::style::SMALL;
use crate::text::{text_width, wrap};
use limitbench_base::error::{Error, Result};

mod draw;

/// One row: its label; on the ratio strip its value and interval (a value
/// or interval end at or below 0 is drawn in the strip's 0 slot) and the
/// band where it passes (either end may be infinite); else on the fraction
/// strip a fraction in 0..=1 and its band; when neither, `placeholder` is
/// written in the plot instead. A note and a cause at the right (each
/// wrapped to as many lines as it needs: never cut). `undecided`: the
/// mark does not decide (an inconclusive claim's, say): drawn with a `?`
/// beside it, wherever it lies against its band.
#[derive(Debug, Clone, Default)]
pub struct ForestRow {
    pub label: String,
    pub value: Option<f64>,
    pub interval: Option<(f64, f64)>,
    pub band: Option<(f64, f64)>,
    pub fraction: Option<f64>,
    pub fraction_band: Option<(f64, f64)>,
    pub note: String,
    pub cause: String,
    pub placeholder: String,
    pub undecided: bool,
}

impl ForestRow {
    /// The strip the row is marked on: `ratio`, `fraction`, or `none`.
    pub fn strip(&self) -> &'static str {
        if self.value.is_some_and(f64::is_finite) {
            "ratio"
        } else if self.fraction.is_some_and(f64::is_finite) {
            "fraction"
        } else {
            "none"
        }
    }
}

/// A group of rows under a heading, drawn in one look (colour and marker).
#[derive(Debug, Clone, Default)]
pub struct ForestGroup {
    pub label: String,
    pub look: usize,
    pub rows: Vec<ForestRow>,
}

#[derive(Debug, Clone, Default)]
pub struct Forest {
    /// File stem: `<name>.svg`, `.png`, `.csv`.
    pub name: String,
    pub title: String,
    pub caption: String,
    /// What the ratio strip shows (e.g. `ours / published`).
    pub x_label: String,
    /// The label of the line at 1 (e.g. `published`).
    pub one_label: String,
    /// What the fraction strip shows (e.g. `conditions held`).
    pub fraction_label: String,
    /// The headings of the label, notes and causes columns.
    pub label_heading: String,
    pub note_heading: String,
    pub cause_heading: String,
    pub groups: Vec<ForestGroup>,
}

/// The figure's width and its columns' x ranges in px: the label column,
/// the ratio strip (its 0 slot, then the log axis), the fraction strip,
/// the notes and the causes. Nothing is cut (see [`Forest::clipped`]): a
/// note or cause wider than its column wraps onto more lines
/// ([`note_lines`], [`cause_lines`]) and its row grows.
#[derive(Debug, Clone, Copy)]
pub struct Columns {
    pub width: u32,
    pub label: (i32, i32),
    pub zero: i32,
    pub log: (i32, i32),
    pub fraction: (i32, i32),
    pub note: (i32, i32),
    pub cause: (i32, i32),
}

/// The one layout of every forest.
pub const COLUMNS: Columns = Columns {
    width: 1500,
    label: (36, 266),
    zero: 290,
    log: (318, 760),
    fraction: (800, 900),
    note: (930, 1190),
    cause: (1204, 1490),
};

/// The text size of labels, notes and causes.
pub const ROW_TEXT: f64 = SMALL;

/// A note as drawn: wrapped to the notes column (at least one line).
pub fn note_lines(note: &str) -> Vec<String> {
    wrapped(note, COLUMNS.note)
}

/// A cause as drawn: wrapped to the causes column (at least one line).
pub fn cause_lines(cause: &str) -> Vec<String> {
    wrapped(cause, COLUMNS.cause)
}

fn wrapped(s: &str, (a, b): (i32, i32)) -> Vec<String> {
    let lines = wrap(s, (b - a) as f64, ROW_TEXT);
    if lines.is_empty() {
        vec![String::new()]
    } else {
        lines
    }
}

/// The room of a label's first word (its key: a claim's ID, say): the rest
/// of the label starts this far right of it, aligned down the column.
pub const KEY_W: i32 = 44;

/// A label split for drawing: its key (the first word) and the rest, and
/// the rest's x offset: [`KEY_W`], or after the key and a space when the
/// key is wider.
pub fn split_label(label: &str) -> (&str, &str, i32) {
    let (key, rest) = label.split_once(' ').unwrap_or((label, ""));
    let kw = text_width(key, ROW_TEXT);
    let at = if kw + text_width(" ", ROW_TEXT) <= KEY_W as f64 {
        KEY_W
    } else {
        (kw + text_width(" ", ROW_TEXT)).ceil() as i32
    };
    (key, rest, at)
}

impl Forest {
    /// Whether a row is drawn on the conditions strip (0..1).
    pub fn has_fraction(&self) -> bool {
        self.groups
            .iter()
            .flat_map(|g| &g.rows)
            .any(|r| r.strip() == "fraction")
    }

    fn rows(&self) -> usize {
        self.groups.iter().map(|g| g.rows.len()).sum()
    }

    /// Every label, cause line and note line wider than its column at
    /// [`ROW_TEXT`] (by [`text_width`]; a label as drawn, its key's room
    /// then the rest: [`split_label`]; a note or cause as wrapped:
    /// [`note_lines`], [`cause_lines`]: only a word wider than the column),
    /// as `text (width px > room px)`: empty when the figure draws them all
    /// whole.
    pub fn clipped(&self) -> Vec<String> {
        let c = COLUMNS;
        let mut out = Vec::new();
        for r in self.groups.iter().flat_map(|g| &g.rows) {
            let (_, rest, at) = split_label(&r.label);
            let label_w = at as f64 + text_width(rest, ROW_TEXT);
            if label_w > (c.label.1 - c.label.0) as f64 {
                let room = c.label.1 - c.label.0;
                out.push(format!("{} ({label_w:.0} px > {room} px)", r.label));
            }
            let notes = note_lines(&r.note).into_iter().map(|t| (t, c.note));
            let causes = cause_lines(&r.cause).into_iter().map(|t| (t, c.cause));
            for (t, (a, b)) in notes.chain(causes) {
                let w = text_width(&t, ROW_TEXT);
                if w > (b - a) as f64 {
                    out.push(format!("{t} ({w:.0} px > {} px)", b - a));
                }
            }
        }
        out
    }

    /// The numbers drawn: one row per row; `strip` names the axis its
    /// `value` and band are on (`ratio` or `fraction`), `kind` is `data`
    /// for a row with a mark (as in a figure's CSV), `text` otherwise.
    pub fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(vec![]);
        let _ = w.write_record([
            "group",
            "kind",
            "label",
            "value",
            "low",
            "high",
            "band_low",
            "band_high",
            "note",
            "placeholder",
            "strip",
            "cause",
        ]);
        let o = |v: Option<f64>| v.map(|v| format!("{v}")).unwrap_or_default();
        for g in &self.groups {
            for r in &g.rows {
                let strip = r.strip();
                let (value, interval, band) = match strip {
                    "ratio" => (r.value, r.interval, r.band),
                    "fraction" => (r.fraction, None, r.fraction_band),
                    _ => (None, None, None),
                };
                let kind = if strip == "none" { "text" } else { "data" };
                let _ = w.write_record([
                    g.label.clone(),
                    kind.into(),
                    r.label.clone(),
                    o(value),
                    o(interval.map(|i| i.0)),
                    o(interval.map(|i| i.1)),
                    o(band.map(|b| b.0)),
                    o(band.map(|b| b.1)),
                    r.note.clone(),
                    r.placeholder.clone(),
                    strip.into(),
                    r.cause.clone(),
                ]);
            }
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// Write `<name>.svg`, `<name>.png` and `<name>.csv` into `dir`.
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        if self.rows() == 0 {
            return Err(Error::Other(format!("forest {}: no rows", self.name)));
        }
        draw::write_images(self, dir)?;
        std::fs::write(dir.join(format!("{}.csv", self.name)), self.csv())
            .map_err(|e| Error::io(format!("writing {}.csv", self.name), e))
    }
}

#[cfg(test)]
mod tests {
    use crate::forest::{Forest, ForestGroup, ForestRow};

    fn forest(rows: Vec<ForestRow>) -> Forest {
        Forest {
            name: "t".into(),
            groups: vec![ForestGroup {
                label: "g".into(),
                look: 0,
                rows,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_label_or_cause_wider_than_its_column_is_reported_and_a_short_one_is_not() {
        let short = ForestRow {
            label: "A2.1 58 -> 22".into(),
            cause: "lockstep bound".into(),
            ..Default::default()
        };
        assert!(forest(vec![short.clone()]).clipped().is_empty());
        let long = ForestRow {
            label: "A2.1 WATCH/MULTI, 10-retry budget, 64 workers, 6.7 ms round trips".into(),
            ..short.clone()
        };
        let c = forest(vec![short.clone(), long]).clipped();
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(c[0].starts_with("A2.1 WATCH"), "{c:?}");
        // A long cause wraps whole; a word wider than its column is reported.
        let cause = ForestRow {
            cause: "reproduces only at capacity_s=0.1, servers=2, offset_draw=two-point".into(),
            ..short.clone()
        };
        assert!(crate::forest::cause_lines(&cause.cause).len() > 1);
        assert!(forest(vec![cause]).clipped().is_empty());
        let cause = ForestRow {
            cause: "y".repeat(80),
            ..short
        };
        assert_eq!(forest(vec![cause]).clipped().len(), 1);
        // A long note wraps whole onto more lines; one word wider than its
        // column cannot and is reported.
        let note = ForestRow {
            label: "A2.1 58 -> 22".into(),
            note: "1 setting; at the closed loop ran at the study's script rates, and about is a tenth either way".into(),
            ..Default::default()
        };
        assert!(crate::forest::note_lines(&note.note).len() > 1);
        assert_eq!(
            crate::forest::note_lines(&note.note).join(" "),
            note.note,
            "wrapped whole"
        );
        assert!(forest(vec![note.clone()]).clipped().is_empty());
        let word = ForestRow {
            note: "x".repeat(80),
            ..note
        };
        assert_eq!(forest(vec![word]).clipped().len(), 1);
    }

    #[test]
    fn a_labels_key_is_aligned_unless_it_is_wider_than_its_room() {
        use crate::forest::{KEY_W, split_label};
        assert_eq!(split_label("A2.1 58 -> 22"), ("A2.1", "58 -> 22", KEY_W));
        assert_eq!(split_label("B8"), ("B8", "", KEY_W));
        let (key, rest, at) = split_label("WWWWWW 1 -> 2");
        assert_eq!((key, rest), ("WWWWWW", "1 -> 2"));
        assert!(at > KEY_W, "{at}");
    }

    #[test]
    fn the_csv_names_each_rows_strip_and_writes_a_fraction_as_its_value() {
        let f = forest(vec![
            ForestRow {
                label: "r".into(),
                value: Some(0.0),
                interval: Some((0.0, 0.5)),
                band: Some((f64::NEG_INFINITY, 1.0)),
                ..Default::default()
            },
            ForestRow {
                label: "f".into(),
                fraction: Some(0.75),
                fraction_band: Some((1.0, 1.0)),
                ..Default::default()
            },
            ForestRow {
                label: "t".into(),
                placeholder: "not run".into(),
                ..Default::default()
            },
        ]);
        let csv = f.csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[1], "g,data,r,0,0,0.5,-inf,1,,,ratio,", "{csv}");
        assert_eq!(lines[2], "g,data,f,0.75,,,1,1,,,fraction,", "{csv}");
        assert_eq!(lines[3], "g,text,t,,,,,,,not run,none,", "{csv}");
    }

    #[test]
    fn every_row_is_drawn_and_the_files_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let f = forest(vec![
            ForestRow {
                label: "zero".into(),
                value: Some(0.0),
                band: Some((f64::NEG_INFINITY, 1.5)),
                ..Default::default()
            },
            ForestRow {
                label: "half".into(),
                fraction: Some(0.5),
                fraction_band: Some((1.0, 1.0)),
                ..Default::default()
            },
        ]);
        f.write_to(dir.path()).unwrap();
        for ext in ["svg", "png", "csv"] {
            assert!(dir.path().join(format!("t.{ext}")).exists(), "{ext}");
        }
        let svg = std::fs::read_to_string(dir.path().join("t.svg")).unwrap();
        // The 0 slot is labelled on the ratio axis, and no text overlaps
        // another or leaves the canvas.
        let (_, boxes) = crate::svg_text::text_boxes(&svg);
        assert!(boxes.iter().any(|b| b.text == "0"), "no 0 tick");
        let problems = crate::svg_text::text_problems(&svg);
        assert!(problems.is_empty(), "{problems:?}");
    }
}
