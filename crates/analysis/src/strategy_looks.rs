//! Every strategy's look in every figure (a look of the chart library's
//! palette: a colour and a marker, `limitbench_plot::style`).
//!
//! - The twelve built-in strategies, and GET and INCR (the baselines of
//!   the cost experiment), have fixed looks ([`STRATEGY_LOOKS`]): built-in
//!   `i` is drawn in palette colour `i` (twelve colours, one each; GET and
//!   INCR in the two greys), in every figure.
//! - A strategy added from a manifest takes a spare look keyed by a stable
//!   hash of its name ([`fnv1a`], [`manifest_slot`]): the same in every
//!   figure and every run, and never a built-in's colour. Two of them that
//!   hash to one look in a figure: the one whose name sorts later takes the
//!   next free spare look ([`with_strategy_looks`]).
//! - A strategy drawn as several series (`token-bucket (EVAL)`,
//!   `(EVALSHA)`, `(FCALL)`) keeps its colour in each, with the next marker.

use std::collections::BTreeSet;

use limitbench_plot::figure::Figure;
use limitbench_plot::style::{SPARE_COLOURS, SPARE_LOOKS, spare_look, variant_look};

/// The strategies with fixed looks: a strategy's place here is its palette
/// colour (the palette's named colours: 12 strategies, then GET and INCR
/// in grey). A new built-in is added at the end (a look never moves).
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

/// How many variants (markers) one strategy's colour has.
const VARIANTS: usize = limitbench_plot::style::LOOKS / limitbench_plot::style::COLOURS;

/// The strategy a series name starts with (`token-bucket (EVALSHA)`,
/// `gcra, then 2x L`), as a whole word: `token-bucket-caller-clock` is
/// not `token-bucket`.
pub fn strategy_of(series: &str) -> Option<&'static str> {
    // Figures that name a strategy by what it does.
    if series.starts_with("WATCH/MULTI") {
        return Some("watch-multi");
    }
    named_in(series, STRATEGY_LOOKS.iter().copied())
}

/// The longest of `names` that `series` starts with as a whole word (the
/// name, then nothing, a space or a comma).
fn named_in<'a>(series: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    names
        .filter(|s| {
            series == *s
                || series
                    .strip_prefix(*s)
                    .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with(','))
        })
        .max_by_key(|s| s.len())
}

/// The 64-bit FNV-1a hash of `bytes` (Fowler, Noll and Vo): fixed by its
/// definition, unlike std's `DefaultHasher`, so a name's look does not
/// change with the Rust version.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The spare-look slot (`limitbench_plot::style::spare_look`) of a
/// strategy added from a manifest: its name's [`fnv1a`] modulo the spare
/// looks.
pub fn manifest_slot(name: &str) -> usize {
    (fnv1a(name.as_bytes()) % SPARE_LOOKS as u64) as usize
}

/// The strategies among a run's noted `strategy` values that were added
/// from manifests: not a built-in, not empty, not a Redis command (upper
/// case: the baseline's `PING`); a value's variant after `|`
/// (`token-bucket|evalsha`) is dropped.
pub fn manifest_strategies(values: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = values
        .iter()
        .map(|v| v.split('|').next().unwrap_or("").to_string())
        .filter(|v| !v.is_empty() && *v != v.to_uppercase())
        .filter(|v| !STRATEGY_LOOKS.contains(&v.as_str()))
        .collect();
    out.dedup();
    out
}

/// The figure with every strategy's series in the strategy's look: the
/// built-ins' fixed ones, and for `manifest` (strategies added from
/// manifests, see [`manifest_strategies`]) spare looks from their names.
/// A series that already has a look keeps it.
pub fn with_strategy_looks(f: &Figure, manifest: &[String]) -> Figure {
    let mut f = f.clone();
    f.free_looks_from = STRATEGY_LOOKS.len();
    // Variants of each strategy in first-seen order.
    let mut variants: Vec<String> = Vec::new();
    let mut named: Vec<(usize, usize, String)> = Vec::new(); // (panel, series, strategy)
    for (pi, p) in f.panels.iter().enumerate() {
        for (si, s) in p.series.iter().enumerate() {
            if s.look.is_some() {
                continue;
            }
            let k = strategy_of(&s.name).map(str::to_string).or_else(|| {
                named_in(&s.name, manifest.iter().map(String::as_str)).map(str::to_string)
            });
            let Some(k) = k else { continue };
            if !variants.contains(&s.name) {
                variants.push(s.name.clone());
            }
            named.push((pi, si, k));
        }
    }
    let strategy = |v: &str| {
        strategy_of(v)
            .map(str::to_string)
            .or_else(|| named_in(v, manifest.iter().map(String::as_str)).map(str::to_string))
    };
    let nth = |name: &str, k: &str| {
        variants
            .iter()
            .filter(|v| strategy(v).as_deref() == Some(k))
            .position(|v| v == name)
            .unwrap_or(0)
    };
    // Built-ins: colour = place in STRATEGY_LOOKS; a variant beyond the
    // colour's markers takes a free look (another colour) rather than
    // repeat one.
    let mut taken: Vec<usize> = f
        .panels
        .iter()
        .flat_map(|p| p.series.iter().filter_map(|s| s.look))
        .collect();
    for (pi, si, k) in &named {
        let Some(base) = STRATEGY_LOOKS.iter().position(|x| x == k) else {
            continue;
        };
        let s = &mut f.panels[*pi].series[*si];
        let n = nth(&s.name, k);
        if n < VARIANTS {
            s.look = Some(variant_look(base, n));
            taken.push(variant_look(base, n));
        }
    }
    // Manifest strategies, by name (so a collision resolves the same way
    // whatever order the figure draws them in): slot from the hash, a
    // variant on the same colour's next marker, a taken look passed for
    // the next free slot.
    let mut order: Vec<(String, String, usize, usize)> = named
        .iter()
        .filter(|(_, _, k)| !STRATEGY_LOOKS.contains(&k.as_str()))
        .map(|(pi, si, k)| (k.clone(), f.panels[*pi].series[*si].name.clone(), *pi, *si))
        .collect();
    order.sort_by(|a, b| (&a.0, nth(&a.1, &a.0)).cmp(&(&b.0, nth(&b.1, &b.0))));
    let mut given: Vec<(String, usize)> = Vec::new(); // (series name, look)
    for (k, name, pi, si) in order {
        let look = match given.iter().find(|g| g.0 == name) {
            Some(g) => g.1,
            None => {
                let first = manifest_slot(&k) + SPARE_COLOURS * nth(&name, &k);
                let Some(l) = (0..SPARE_LOOKS)
                    .map(|d| spare_look(first + d))
                    .find(|l| !taken.contains(l))
                else {
                    continue;
                };
                taken.push(l);
                given.push((name.clone(), l));
                l
            }
        };
        f.panels[pi].series[si].look = Some(look);
    }
    f
}
