//! Text measured without a font engine: estimated widths of DejaVu Sans
//! glyphs, and wrapping to a width. The layout and the figure test use
//! the same estimate.

/// An upper estimate of the width of `s` at font size `size` in pixels
/// (DejaVu Sans: digits and most letters about 0.6 em, spaces 0.32 em).
pub fn text_width(s: &str, size: f64) -> f64 {
    s.chars()
        .map(|c| match c {
            ' ' | 'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.34,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 0.95,
            c if c.is_uppercase() => 0.74,
            _ => 0.62,
        })
        .sum::<f64>()
        * size
}

/// Words of `s` in lines no wider than `width` px at `size`. Lines break
/// at spaces; a word that is wider than a line by itself also breaks after
/// its hyphens (`sliding-window-log` stays whole where it fits).
pub fn wrap(s: &str, width: f64, size: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut words: Vec<String> = Vec::new();
    for w in s.split(' ') {
        if text_width(w, size) <= width {
            words.push(format!(" {w}"));
            continue;
        }
        let parts: Vec<&str> = w.split_inclusive('-').collect();
        for (i, p) in parts.iter().enumerate() {
            words.push(if i == 0 {
                format!(" {p}")
            } else {
                p.to_string()
            });
        }
    }
    for w in words {
        let cand = if cur.is_empty() {
            w.trim_start().to_string()
        } else {
            format!("{cur}{w}")
        };
        let w = w.trim_start().to_string();
        if text_width(&cand, size) > width && !cur.is_empty() {
            lines.push(std::mem::take(&mut cur));
            cur = w.to_string();
        } else {
            cur = cand;
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_break_at_spaces_and_only_an_overlong_word_at_its_hyphens() {
        let w = text_width("sliding-window-log", 12.0);
        assert_eq!(
            wrap("a sliding-window-log b", w + 1.0, 12.0),
            vec!["a", "sliding-window-log", "b"]
        );
        assert_eq!(
            wrap("sliding-window-log", w / 2.0, 12.0),
            vec!["sliding-", "window-", "log"]
        );
        for l in wrap("one two three four five six", 60.0, 12.0) {
            assert!(text_width(&l, 12.0) <= 60.0 || !l.contains(' '), "{l}");
        }
    }
}
