//! Progress on stderr while an experiment runs: a bar per experiment in
//! flight on a terminal, a line every ~10% otherwise, naming the cells of
//! other experiments running beside it.

use std::time::Instant;

/// The run's one progress display (a bar per experiment in flight).
fn progress_display() -> &'static indicatif::MultiProgress {
    static DISPLAY: std::sync::OnceLock<indicatif::MultiProgress> = std::sync::OnceLock::new();
    DISPLAY.get_or_init(indicatif::MultiProgress::new)
}

/// The cells of other experiments in flight beside `label`'s, for a
/// progress line ("" when it runs alone).
fn beside_text(label: &str) -> String {
    let own = format!("{label}/");
    let others: Vec<String> = crate::run::parallel::in_flight()
        .into_iter()
        .filter(|c| !c.starts_with(&own))
        .collect();
    if others.is_empty() {
        String::new()
    } else {
        format!(" | beside: {}", others.join(", "))
    }
}

/// Progress on stderr: a bar with ETA on a terminal, a line every ~10% otherwise.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    /// Says nothing at all.
    silent: bool,
    label: &'static str,
    total: u64,
    done: u64,
    last_pct: u64,
    started: Instant,
}

impl Progress {
    pub fn new(label: &'static str, total: u64) -> Self {
        use std::io::IsTerminal;
        let bar = if std::io::stderr().is_terminal() {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix:>16} [{bar:30}] {pos}/{len} {msg} elapsed {elapsed} eta {eta}",
                )
                .unwrap()
                .progress_chars("=> "),
            );
            b.set_prefix(label);
            // One display for the whole run: experiments side by side get
            // one bar each, stacked, not bars drawn over each other.
            Some(progress_display().add(b))
        } else {
            eprintln!("[{label}] {total} trials to run");
            None
        };
        Progress {
            bar,
            silent: false,
            label,
            total,
            done: 0,
            last_pct: 0,
            started: Instant::now(),
        }
    }

    /// Progress that says nothing (counts only).
    pub fn silent(label: &'static str, total: u64) -> Self {
        Progress {
            bar: None,
            silent: true,
            label,
            total,
            done: 0,
            last_pct: 0,
            started: Instant::now(),
        }
    }

    /// Trials already done (resumed).
    pub fn skip(&mut self, n: u64) {
        self.done += n;
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    pub fn inc(&mut self, msg: &str) {
        self.done += 1;
        match &self.bar {
            Some(b) => {
                b.set_message(format!("{msg}{}", beside_text(self.label)));
                b.inc(1);
            }
            None if self.silent => {}
            None => {
                let pct = self.done * 100 / self.total.max(1);
                if pct >= self.last_pct + 10 || self.done == self.total {
                    self.last_pct = pct;
                    let el = self.started.elapsed().as_secs_f64();
                    eprintln!(
                        "[{}] {}/{} ({pct}%) {:.0}s {msg}{}",
                        self.label,
                        self.done,
                        self.total,
                        el,
                        beside_text(self.label)
                    );
                }
            }
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish();
        }
    }
}
