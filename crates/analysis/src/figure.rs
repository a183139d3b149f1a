//! Figures for the analysis: the chart library's model (`limitbench-plot`,
//! which knows no claims) and what turns claims and trial summaries into
//! what it draws: a claim's published value with the band where its check
//! holds ([`ClaimReference`]), a point from a summary over trials
//! ([`SummaryPoint`]), and writing a figure into a run with its entry in the
//! claims table ([`WriteFigure`]). Import the traits with the model
//! (`use crate::figure::*` or by name).

pub use limitbench_plot::figure::*;
use limitbench_plot::style::{COLOURS, LOOKS};

pub use crate::anchors::Anchor;
pub use crate::claims::pass_region;
use crate::claims::{Check, ClaimSpec};
use crate::stats::Summary;
use crate::{AnalysisCtx, FigureInfo};
use limitbench_base::error::Result;

/// A claim's published value as a reference line with its passing band.
pub trait ClaimReference: Sized {
    fn published(spec: &ClaimSpec, i: usize) -> Self;
    fn published_scaled(spec: &ClaimSpec, i: usize, k: f64) -> Self;
}

impl ClaimReference for Reference {
    /// The claim's `i`-th published value and the region its check passes,
    /// with a legend label saying both.
    fn published(spec: &ClaimSpec, i: usize) -> Self {
        let (value, band, rule) = pass_region(spec, i);
        let label = if band.is_none() {
            format!(
                "{} published: {} (judged on its shape, not on this value)",
                spec.id,
                crate::table::micro(&spec.published_text)
            )
        } else {
            format!(
                "{} published: {}; shaded: passes ({rule})",
                spec.id,
                crate::table::micro(&spec.published_text)
            )
        };
        Reference {
            kind: RefKind::Published,
            label,
            value,
            band,
            x: None,
            lines: if spec.check == Check::InRange {
                vec![spec.published.at(0), spec.published.at(1)]
            } else {
                vec![]
            },
        }
    }
    /// The published value `i` scaled (e.g. a fraction shown in %), same rule.
    fn published_scaled(spec: &ClaimSpec, i: usize, k: f64) -> Self {
        let mut r = Reference::published(spec, i);
        r.value = r.value.map(|v| v * k);
        r.band = r.band.map(|(a, b)| (a * k, b * k));
        r.lines = r.lines.iter().map(|v| v * k).collect();
        r
    }
}

/// A point from a summary over trials: mean, min..max, n.
pub trait SummaryPoint {
    fn summary(x: f64, s: &Summary) -> Self;
}

impl SummaryPoint for Pt {
    fn summary(x: f64, s: &Summary) -> Self {
        Pt::spread(x, s.mean, s.min, s.max, s.n)
    }
}

/// Every strategy's look in every figure: its index is the strategy's
/// place here (a look of the chart library's palette: colour-blind-safe
/// colour and marker, [`LOOKS`] of them), so a strategy is drawn the same
/// in every figure; series that name no strategy take looks after these.
/// A new strategy is added at the end (a look never moves).
pub const STRATEGY_LOOKS: &[&str] = &[
    "token-bucket",
    "gcra",
    "sliding-window-log",
    "sliding-window-counter",
    "fixed-window-lua",
    "fixed-window-multi",
    "check-then-act",
    "watch-multi",
    "fixed-window-derived-key",
    "sliding-log-ts-member",
    "token-bucket-caller-clock",
    "leaky-bucket",
    "get",
    "incr",
];

/// The strategy a series name starts with (`token-bucket (EVALSHA)`,
/// `gcra, then 2x L`), as a whole word: `token-bucket-caller-clock` is
/// not `token-bucket`.
pub fn strategy_of(series: &str) -> Option<&'static str> {
    // Figures that name a strategy by what it does.
    if series.starts_with("WATCH/MULTI") {
        return Some("watch-multi");
    }
    STRATEGY_LOOKS
        .iter()
        .filter(|s| {
            series == **s
                || series
                    .strip_prefix(**s)
                    .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with(','))
        })
        .max_by_key(|s| s.len())
        .copied()
}

/// The figure with every strategy's series in the strategy's colour. A
/// strategy drawn as several series (`token-bucket (EVAL)`, `(EVALSHA)`,
/// `(FCALL)`) keeps its colour in each, with the next marker: looks that
/// differ by a multiple of the palette's [`COLOURS`] share the colour.
pub fn with_strategy_looks(f: &Figure) -> Figure {
    let mut f = f.clone();
    f.free_looks_from = STRATEGY_LOOKS.len();
    let mut variants: Vec<String> = Vec::new();
    for s in f.panels.iter_mut().flat_map(|p| p.series.iter_mut()) {
        if s.look.is_some() {
            continue;
        }
        let Some(k) = strategy_of(&s.name) else {
            continue;
        };
        if !variants.contains(&s.name) {
            variants.push(s.name.clone());
        }
        let nth = variants
            .iter()
            .filter(|v| strategy_of(v) == Some(k))
            .position(|v| *v == s.name)
            .unwrap_or(0);
        // The strategy's colour has LOOKS / COLOURS distinct looks; a
        // variant beyond them takes a free look (another colour) rather
        // than repeat one.
        if nth < LOOKS / COLOURS {
            let base = STRATEGY_LOOKS.iter().position(|x| *x == k).unwrap_or(0);
            s.look = Some((base + COLOURS * nth) % LOOKS);
        }
    }
    f
}

/// Writing a figure into a run folder, recorded for the claims table.
/// The figure is drawn (SVG, PNG, CSV) once the claims are judged, with
/// the judged value ringed at each of its [`Anchor`]s whose claim was
/// judged at that setting (`crate::anchors`).
pub trait WriteFigure {
    fn write(&self, ctx: &AnalysisCtx) -> Result<String>;
    fn write_if_any(&self, ctx: &AnalysisCtx) -> Result<String>;
    fn write_anchored(&self, ctx: &AnalysisCtx, anchors: Vec<Anchor>) -> Result<String>;
    fn write_anchored_if_any(&self, ctx: &AnalysisCtx, anchors: Vec<Anchor>) -> Result<String>;
}

impl WriteFigure for Figure {
    /// A figure without judged values to ring (see [`WriteFigure::write_anchored`]).
    fn write(&self, ctx: &AnalysisCtx) -> Result<String> {
        self.write_anchored(ctx, vec![])
    }

    /// [`Figure::write`] for a figure a run may rightly leave empty: with no
    /// points, nothing is written and nothing is said.
    fn write_if_any(&self, ctx: &AnalysisCtx) -> Result<String> {
        self.write_anchored_if_any(ctx, vec![])
    }

    /// Keep the figure to be drawn into the run's figures/ once the claims
    /// are judged (SVG, PNG and CSV, the judged values ringed at
    /// `anchors`), record it for the claims table, and return its markdown
    /// (image, caption, links).
    fn write_anchored(&self, ctx: &AnalysisCtx, anchors: Vec<Anchor>) -> Result<String> {
        if self.points() == 0 {
            // A partial run: say so instead of drawing an empty figure.
            ctx.warnings.borrow_mut().push(format!(
                "figure {} has no data points in this run; not drawn",
                self.name
            ));
            return Ok(String::new());
        }
        ctx.pending.borrow_mut().push(crate::anchors::Pending {
            figure: self.clone(),
            anchors,
        });
        ctx.figures.borrow_mut().push(FigureInfo {
            file: format!("figures/{}.png", self.name),
            claims: self.claims.clone(),
            title: self.full_title(),
        });
        Ok(self.markdown())
    }

    fn write_anchored_if_any(&self, ctx: &AnalysisCtx, anchors: Vec<Anchor>) -> Result<String> {
        if self.points() == 0 {
            return Ok(String::new());
        }
        self.write_anchored(ctx, anchors)
    }
}
