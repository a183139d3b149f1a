//! Figures for the analysis: the chart library's model (`limitbench-plot`,
//! which knows no claims) and what turns claims and trial summaries into
//! what it draws: a claim's published value with the band where its check
//! holds ([`ClaimReference`]), a point from a summary over trials
//! ([`SummaryPoint`]), and writing a figure into a run with its entry in the
//! claims table ([`WriteFigure`]), every strategy in its own look
//! (`strategy_looks`, re-exported here). Import the traits with the model
//! (`use crate::figure::*` or by name).

pub use limitbench_plot::figure::*;

pub use crate::claims::pass_region;
use crate::claims::{Check, ClaimSpec, Setting};
use crate::stats::Summary;
pub use crate::strategy_looks::{
    STRATEGY_LOOKS, manifest_strategies, strategy_of, with_strategy_looks,
};
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

/// Writing a figure into a run folder, recorded for the claims table.
/// The figure is drawn (SVG, PNG, CSV) once the claims are judged, with
/// the judged value ringed at each of its [`Anchor`]s whose claim was
/// judged at that setting (drawn by the anchors module).
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
        ctx.pending.borrow_mut().push(Pending {
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

/// Where a figure draws claim `claim`'s `value`-th value at a setting.
#[derive(Debug, Clone)]
pub struct Anchor {
    pub claim: String,
    /// Details that must equal the judged setting's (empty: any setting).
    pub setting: Setting,
    pub value: usize,
    pub panel: usize,
    pub x: f64,
    /// The drawn value is the claim's value times this (a fraction drawn
    /// in %: 100).
    pub scale: f64,
    /// The series whose point it is (the ring follows its offset).
    pub series: Option<String>,
    /// Ring the claim's `band`-th band value (`Measured::band_values`)
    /// instead of its `value`-th value: where a band condition, not the
    /// value, decides the verdict.
    pub band: Option<usize>,
}

impl Anchor {
    /// Claim `claim`'s first value, drawn at `x` of panel `panel`.
    pub fn new(claim: &str, panel: usize, x: f64) -> Self {
        Anchor {
            claim: claim.into(),
            setting: vec![],
            value: 0,
            panel,
            x,
            scale: 1.0,
            series: None,
            band: None,
        }
    }
    /// Only where the claim was judged with `key` = `value`.
    pub fn at(mut self, key: &str, value: &str) -> Self {
        self.setting.push((key.into(), value.into()));
        self
    }
    /// The claim's `i`-th value (a claim that compares several).
    pub fn value(mut self, i: usize) -> Self {
        self.value = i;
        self
    }
    /// The claim's `i`-th band value, not a value (see [`Anchor::band`]).
    pub fn band_value(mut self, i: usize) -> Self {
        self.band = Some(i);
        self
    }
    pub fn scaled(mut self, k: f64) -> Self {
        self.scale = k;
        self
    }
    pub fn on(mut self, series: impl Into<String>) -> Self {
        self.series = Some(series.into());
        self
    }
}

/// A figure kept until the claims are judged, with its anchors.
pub struct Pending {
    pub figure: Figure,
    pub anchors: Vec<Anchor>,
}
