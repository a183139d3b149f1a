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

#[cfg(test)]
mod tests {
    use crate::strategy_looks::*;
    use limitbench_plot::figure::{Axis, Panel, Pt, Series};
    use limitbench_plot::style::{LOOKS, look_name};

    fn colour(look: usize) -> String {
        look_name(look).split(' ').next().unwrap_or("").to_string()
    }

    fn figure(series: &[&str]) -> Figure {
        let mut p = Panel::new("", Axis::new("x"), Axis::new("y"));
        for s in series {
            p = p.series(Series::line(*s, vec![Pt::new(0.0, 1.0)]));
        }
        Figure::new("t", &[], "t", "t").panel(p)
    }

    fn looks(f: &Figure) -> Vec<(String, usize)> {
        f.panels[0]
            .series
            .iter()
            .map(|s| (s.name.clone(), s.look.expect("a strategy has a look")))
            .collect()
    }

    #[test]
    fn fnv1a_is_the_published_hash() {
        // Test vectors of the FNV-1a 64-bit hash (Fowler, Noll, Vo).
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn a_manifest_name_has_a_stable_look_in_no_built_in_colour() {
        // Fixed by FNV-1a's definition: a Rust version or a run that draws
        // other strategies does not move it.
        assert_eq!(
            manifest_slot("my-limiter"),
            (fnv1a(b"my-limiter") % 24) as usize
        );
        assert_eq!(manifest_slot("my-limiter"), 2);
        assert_eq!(manifest_slot("mut-log-pair"), 13);
        let built_in: Vec<String> = (0..STRATEGY_LOOKS.len())
            .flat_map(|c| (0..VARIANTS).map(move |k| colour(variant_look(c, k))))
            .collect();
        for slot in 0..SPARE_LOOKS {
            assert!(!built_in.contains(&colour(spare_look(slot))), "slot {slot}");
        }
        let f = with_strategy_looks(
            &figure(&["token-bucket", "my-limiter"]),
            &["my-limiter".into()],
        );
        assert_eq!(looks(&f)[1].1, spare_look(manifest_slot("my-limiter")));
    }

    #[test]
    fn the_built_ins_have_one_colour_each() {
        let f = with_strategy_looks(&figure(STRATEGY_LOOKS), &[]);
        let mut colours: Vec<String> = looks(&f).iter().map(|l| colour(l.1)).collect();
        assert_eq!(colours.len(), 14);
        colours.sort();
        colours.dedup();
        assert_eq!(colours.len(), 14, "{colours:?}");
        // A variant keeps the colour with another marker.
        let f = with_strategy_looks(&figure(&["gcra (EVAL)", "gcra (FCALL)"]), &[]);
        let l = looks(&f);
        assert_eq!(colour(l[0].1), colour(l[1].1));
        assert_ne!(l[0].1, l[1].1);
        assert!(l.iter().all(|x| x.1 < LOOKS));
    }

    #[test]
    fn two_manifest_names_on_one_look_are_told_apart_by_name_not_order() {
        // Two names whose hashes pick the same slot (found, not typed in).
        let names: Vec<String> = (0..200).map(|i| format!("limiter-{i}")).collect();
        let (a, b) = names
            .iter()
            .enumerate()
            .find_map(|(i, a)| {
                names[i + 1..]
                    .iter()
                    .find(|b| manifest_slot(b) == manifest_slot(a))
                    .map(|b| (a.clone(), b.clone()))
            })
            .expect("200 names on 24 slots collide");
        let manifest = vec![a.clone(), b.clone()];
        let ab = looks(&with_strategy_looks(&figure(&[&a, &b]), &manifest));
        let ba = looks(&with_strategy_looks(&figure(&[&b, &a]), &manifest));
        let of = |l: &[(String, usize)], n: &str| l.iter().find(|x| x.0 == n).unwrap().1;
        // The name that sorts first keeps its slot; the other takes the next.
        let (first, second) = if a < b { (&a, &b) } else { (&b, &a) };
        assert_eq!(of(&ab, first), spare_look(manifest_slot(first)));
        assert_eq!(of(&ab, second), spare_look(manifest_slot(second) + 1));
        assert_eq!(of(&ab, first), of(&ba, first));
        assert_eq!(of(&ab, second), of(&ba, second));
        assert_ne!(colour(of(&ab, first)), colour(of(&ab, second)));
    }

    #[test]
    fn only_strategy_names_of_rows_count_as_manifest_strategies() {
        let values: BTreeSet<String> = [
            "PING",
            "",
            "token-bucket|evalsha",
            "gcra",
            "my-limiter",
            "mine|eval",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(manifest_strategies(&values), ["mine", "my-limiter"]);
    }
}
