//! The judged value of every claim, ringed in its figures.
//!
//! A claim's verdict is decided after every experiment has drawn its
//! figures (the judge picks the setting: our defaults, or the assumed
//! setting of a claim reproduced only there), so a figure is not drawn
//! when an experiment writes it: [`WriteFigure::write`](crate::figure::WriteFigure)
//! keeps it with its [`Anchor`]s, and [`draw_pending`] draws every kept
//! figure once the claims are judged, ringing at each anchor whose claim
//! was judged at the anchor's setting the value and 95% interval the
//! verdict was judged on (`limitbench_plot::figure::Mark`).
//!
//! An anchor is where a figure draws one claim's value at one setting: the
//! panel, the x (a category's index on a categorical axis), the value's
//! index for a claim of several values (or of a band value, where a band
//! condition decides the verdict), the factor the figure scales the value
//! by, and the setting's details (every one must be those of the
//! judged setting; an anchor with no details matches any).

use crate::claims::{Judged, Setting};
use crate::figure::{Anchor, Mark, num};
use crate::report::summary::judged_values;
use crate::{AnalysisCtx, report::unit_short};
use limitbench_base::error::Result;

/// The setting a claim's verdict was judged at: the assumed setting of a
/// claim reproduced only there (the sweep's alternative it names), else
/// the claim's own (our defaults).
pub fn judged_setting(j: &Judged) -> Setting {
    let Some(m) = &j.measured else {
        return vec![];
    };
    if !j.assumption.is_empty()
        && let Some(a) = m
            .sweep
            .iter()
            .find(|a| crate::claims::setting_text(&a.own(&m.setting)) == j.assumption)
    {
        return a.setting.clone();
    }
    m.setting.clone()
}

/// The ring for anchor `a`, if its claim was judged at the anchor's setting.
pub fn mark_for(a: &Anchor, rows: &[Judged]) -> Option<Mark> {
    let j = rows.iter().find(|j| j.spec.id == a.claim)?;
    let setting = judged_setting(j);
    if !a.setting.iter().all(|kv| setting.contains(kv)) {
        return None;
    }
    let (v, interval, unit) = match a.band {
        Some(i) => {
            let b = j.measured.as_ref()?.band_values.get(i)?;
            (b.value, Some(b.interval), b.unit.clone())
        }
        None => {
            let (values, intervals) = judged_values(j);
            let v = *values.get(a.value)?;
            (v, intervals.get(a.value).copied(), unit_short(&j.spec))
        }
    };
    if !v.is_finite() {
        return None;
    }
    let interval = interval.filter(|(lo, hi)| lo.is_finite() && hi.is_finite());
    let unit = if unit.is_empty() || unit.len() > 12 {
        String::new()
    } else if unit == "%" {
        unit
    } else {
        format!(" {unit}")
    };
    let shown = match interval {
        Some((lo, hi)) if hi > lo => format!("{}{unit} [95%: {}..{}]", num(v), num(lo), num(hi)),
        _ => format!("{}{unit}", num(v)),
    };
    let k = a.scale;
    let mut m = Mark::new(
        a.x,
        v * k,
        interval.map(|(lo, hi)| (lo * k, hi * k)),
        format!("{} judged: {shown}", a.claim),
    );
    m.series = a.series.clone();
    Some(m)
}

/// Draw every kept figure ([`crate::figure::Pending`]), its claims' judged values ringed.
pub fn draw_pending(ctx: &AnalysisCtx, rows: &[Judged]) -> Result<()> {
    let pending = std::mem::take(&mut *ctx.pending.borrow_mut());
    let manifest = crate::figure::manifest_strategies(&ctx.strategies.borrow());
    for p in pending {
        let mut f = p.figure;
        for a in &p.anchors {
            if let (Some(m), Some(panel)) = (mark_for(a, rows), f.panels.get_mut(a.panel)) {
                panel.marks.push(m);
            }
        }
        crate::figure::with_strategy_looks(&f, &manifest).write_to(&ctx.figures_dir)?;
    }
    Ok(())
}
