//! Reading the text of a written SVG back: each `<text>` element's box from
//! its position, font size, anchor, `dy` and rotation, with widths estimated
//! by [`text_width`]. The figure test fails on text outside the canvas and
//! on overlapping labels.

use super::text::text_width;

/// A text element's box in pixels: (x0, y0, x1, y1) and its text.
#[derive(Debug, Clone)]
pub struct TextBox {
    pub text: String,
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let j = tag[i..].find('"')? + i;
    Some(tag[i..j].to_string())
}

/// The canvas size and every non-empty `<text>` box of an SVG written by
/// plotters (anchor, `dy` and `rotate(...)` taken into account; widths
/// estimated by [`text_width`]).
pub fn text_boxes(svg: &str) -> ((f64, f64), Vec<TextBox>) {
    let head = svg.split('>').next().unwrap_or("");
    let size = (
        attr(head, "width")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0),
        attr(head, "height")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0),
    );
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        let after = &rest[i..];
        let Some(end) = after.find('>') else { break };
        let tag = &after[..end];
        let close = after.find("</text>").unwrap_or(after.len());
        let body = after[end + 1..close]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
            .replace("&quot;", "\"")
            .replace("&#39;", "'");
        let body = body.trim().to_string();
        rest = &after[close.min(after.len())..];
        if body.trim().is_empty() {
            continue;
        }
        let num = |n: &str| {
            attr(tag, n)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let (x, y, fs) = (num("x"), num("y"), num("font-size"));
        let w = text_width(&body, fs);
        let (a, b) = match attr(tag, "text-anchor").as_deref() {
            Some("middle") => (-w / 2.0, w / 2.0),
            Some("end") => (-w, 0.0),
            _ => (0.0, w),
        };
        // Vertical extent relative to y, from plotters' dy.
        let (c, d) = match attr(tag, "dy").as_deref() {
            Some("0.76em") => (-0.2 * fs, 0.95 * fs),
            Some("0.5ex") => (-0.55 * fs, 0.45 * fs),
            Some("-0.5ex") => (-1.05 * fs, 0.0),
            _ => (-0.8 * fs, 0.2 * fs),
        };
        let rot = attr(tag, "transform")
            .and_then(|t| {
                t.strip_prefix("rotate(").and_then(|r| {
                    r.split(',')
                        .next()
                        .and_then(|a| a.trim().parse::<f64>().ok())
                })
            })
            .unwrap_or(0.0);
        let (x0, y0, x1, y1) = match rot as i64 {
            90 => (x - d, y + a, x - c, y + b),
            270 => (x + c, y - b, x + d, y - a),
            180 => (x - b, y - d, x - a, y - c),
            _ => (x + a, y + c, x + b, y + d),
        };
        out.push(TextBox {
            text: body,
            x0,
            y0,
            x1,
            y1,
        });
    }
    (size, out)
}

/// Problems of an SVG's text: boxes outside the canvas and pairs that overlap
/// (by more than 1 px each way).
pub fn text_problems(svg: &str) -> Vec<String> {
    let ((w, h), boxes) = text_boxes(svg);
    let mut out = Vec::new();
    for b in &boxes {
        if b.x0 < -0.5 || b.y0 < -0.5 || b.x1 > w + 0.5 || b.y1 > h + 0.5 {
            out.push(format!(
                "`{}` outside the {w}x{h} canvas: ({:.0},{:.0})-({:.0},{:.0})",
                b.text, b.x0, b.y0, b.x1, b.y1
            ));
        }
    }
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let ox = a.x1.min(b.x1) - a.x0.max(b.x0);
            let oy = a.y1.min(b.y1) - a.y0.max(b.y0);
            if ox > 1.0 && oy > 1.0 {
                out.push(format!("`{}` overlaps `{}`", a.text, b.text));
            }
        }
    }
    out
}
