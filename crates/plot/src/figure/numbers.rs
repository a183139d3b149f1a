//! `figures/<name>.csv`: exactly the numbers a figure draws.

use super::{Figure, RefKind};

/// The columns of `figures/<name>.csv`, in order.
pub const CSV_COLUMNS: [&str; 11] = [
    "panel",
    "kind",
    "series",
    "x",
    "x_category",
    "y",
    "low",
    "high",
    "n",
    "x_end",
    "look",
];

/// The numeric columns of `figures/<name>.csv` (indices into
/// [`CSV_COLUMNS`]: x, y, low, high, x_end): every number a figure draws is
/// in one of them.
pub const CSV_NUMBER_COLUMNS: [usize; 5] = [3, 5, 6, 7, 9];

impl Figure {
    /// The numbers drawn, one row per point, reference or shaded phase.
    pub fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(vec![]);
        let _ = w.write_record(CSV_COLUMNS);
        // The look each series is drawn with (colour and marker), so a
        // test can check that a strategy looks the same in every figure.
        let looks = crate::style::resolve_looks(self);
        let look_of = |name: &str| {
            looks
                .iter()
                .find(|l| l.0 == name)
                .map(|l| crate::style::look_name(l.2))
                .unwrap_or_default()
        };
        let o = |v: Option<f64>| {
            v.filter(|v| v.is_finite())
                .map(|v| format!("{v}"))
                .unwrap_or_default()
        };
        for p in &self.panels {
            for s in &p.series {
                for pt in &s.points {
                    let cat = p
                        .categories
                        .get(pt.x as usize)
                        .cloned()
                        .filter(|_| !p.categories.is_empty())
                        .unwrap_or_default();
                    let _ = w.write_record([
                        p.title.clone(),
                        "data".into(),
                        s.name.clone(),
                        format!("{}", pt.x),
                        cat,
                        format!("{}", pt.y),
                        o(pt.lo),
                        o(pt.hi),
                        pt.n.map(|n| n.to_string()).unwrap_or_default(),
                        String::new(),
                        look_of(&s.name),
                    ]);
                }
            }
            for r in &p.refs {
                let kind = match r.kind {
                    RefKind::Published => "published",
                    RefKind::Expected => "expected",
                    RefKind::Limit => "limit",
                };
                let _ = w.write_record([
                    p.title.clone(),
                    kind.into(),
                    r.label.clone(),
                    o(r.x.map(|x| x.0)),
                    String::new(),
                    o(r.value),
                    o(r.band.map(|b| b.0)),
                    o(r.band.map(|b| b.1)),
                    String::new(),
                    o(r.x.map(|x| x.1)),
                    String::new(),
                ]);
            }
            // A published range without one value: its ends, as drawn.
            for r in p
                .refs
                .iter()
                .filter(|r| r.value.is_none() && r.kind == RefKind::Published)
            {
                for v in &r.lines {
                    let _ = w.write_record([
                        p.title.clone(),
                        "published-line".into(),
                        r.label.clone(),
                        o(r.x.map(|x| x.0)),
                        String::new(),
                        o(Some(*v)),
                        String::new(),
                        String::new(),
                        String::new(),
                        o(r.x.map(|x| x.1)),
                        String::new(),
                    ]);
                }
            }
            for m in &p.marks {
                let _ = w.write_record([
                    p.title.clone(),
                    "judged".into(),
                    m.label.clone(),
                    format!("{}", m.x),
                    String::new(),
                    format!("{}", m.y),
                    o(m.lo),
                    o(m.hi),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
            }
            for s in &p.shades {
                let _ = w.write_record([
                    p.title.clone(),
                    "phase".into(),
                    s.label.clone(),
                    format!("{}", s.x0),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    format!("{}", s.x1),
                    String::new(),
                ]);
            }
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_number_columns_are_x_y_low_high_and_x_end() {
        let names: Vec<&str> = CSV_NUMBER_COLUMNS.iter().map(|i| CSV_COLUMNS[*i]).collect();
        assert_eq!(names, ["x", "y", "low", "high", "x_end"]);
    }
}
