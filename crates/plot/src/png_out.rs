//! Writing a rendered figure as a palette PNG.
//!
//! A figure is a few series colours, greys and the anti-aliased edges
//! between them: a few hundred distinct colours, of which the 256 most
//! frequent cover more than 99.8% of the pixels in every reference figure.
//! Stored as 8-bit indices into a palette instead of 24-bit colour, a
//! figure takes about a third of the bytes, which keeps a committed run
//! small. A figure with at most 256 colours is stored exactly; otherwise the
//! rarest colours (edge pixels of anti-aliased text and lines) take the
//! nearest palette colour.

use std::collections::HashMap;
use std::path::Path;

use limitbench_base::error::{Error, Result};

/// Palette entries of an 8-bit PNG.
const PALETTE_SIZE: usize = 256;

/// The palette (most frequent colours first) and each pixel's index into it.
pub fn quantize(rgb: &[u8]) -> (Vec<[u8; 3]>, Vec<u8>) {
    let mut counts: HashMap<[u8; 3], u64> = HashMap::new();
    for px in rgb.chunks_exact(3) {
        *counts.entry([px[0], px[1], px[2]]).or_default() += 1;
    }
    let mut by_count: Vec<([u8; 3], u64)> = counts.into_iter().collect();
    // Ties broken by colour so the palette (and the file) is deterministic.
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let palette: Vec<[u8; 3]> = by_count
        .iter()
        .take(PALETTE_SIZE)
        .map(|(c, _)| *c)
        .collect();
    let mut index: HashMap<[u8; 3], u8> = palette
        .iter()
        .enumerate()
        .map(|(i, c)| (*c, i as u8))
        .collect();
    let nearest = |c: [u8; 3]| -> u8 {
        let d = |p: &[u8; 3]| {
            (0..3)
                .map(|k| (i32::from(p[k]) - i32::from(c[k])).pow(2))
                .sum::<i32>()
        };
        (0..palette.len())
            .min_by_key(|&i| d(&palette[i]))
            .unwrap_or(0) as u8
    };
    let pixels = rgb
        .chunks_exact(3)
        .map(|px| {
            let c = [px[0], px[1], px[2]];
            *index.entry(c).or_insert_with(|| nearest(c))
        })
        .collect();
    (palette, pixels)
}

/// Write an RGB image (`w * h * 3` bytes, rows top to bottom) to `path` as
/// an 8-bit palette PNG.
pub fn write_palette_png(path: &Path, w: u32, h: u32, rgb: &[u8]) -> Result<()> {
    let (palette, pixels) = quantize(rgb);
    let failed = |e: png::EncodingError| {
        Error::io(
            format!("writing {}", path.display()),
            std::io::Error::other(e.to_string()),
        )
    };
    let file = std::fs::File::create(path)
        .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Indexed);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_palette(palette.concat());
    enc.set_compression(png::Compression::Best);
    // Palette indices are not gradients: predicting a pixel from its
    // neighbours (the filters) only makes them harder to compress.
    enc.set_filter(png::FilterType::NoFilter);
    enc.set_adaptive_filter(png::AdaptiveFilterType::NonAdaptive);
    let mut writer = enc.write_header().map_err(failed)?;
    writer.write_image_data(&pixels).map_err(failed)?;
    writer.finish().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_colours_are_kept_exactly_and_many_map_to_the_nearest() {
        // Two colours: exact.
        let rgb = [[255u8, 255, 255], [0, 114, 178], [255, 255, 255]].concat();
        let (pal, px) = quantize(&rgb);
        assert_eq!(pal, vec![[255, 255, 255], [0, 114, 178]]);
        assert_eq!(px, vec![0, 1, 0]);

        // 300 greys, the first 256 twice as frequent: the 44 rare ones take
        // the nearest kept grey.
        let mut rgb = Vec::new();
        for g in 0..300u32 {
            let v = (g * 255 / 299) as u8;
            let times = if g < 256 { 2 } else { 1 };
            for _ in 0..times {
                rgb.extend_from_slice(&[v, v, v]);
            }
        }
        let (pal, px) = quantize(&rgb);
        assert_eq!(pal.len(), 256);
        for (c, &i) in rgb.chunks_exact(3).zip(&px) {
            let got = pal[i as usize][0];
            assert!(got.abs_diff(c[0]) <= 40, "{} -> {got}", c[0]);
        }
    }

    #[test]
    fn the_png_reads_back_as_the_same_pixels() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.png");
        let (w, h) = (7u32, 3u32);
        let rgb: Vec<u8> = (0..w * h)
            .flat_map(|i| [(i * 10) as u8, 0, 255 - (i * 10) as u8])
            .collect();
        write_palette_png(&p, w, h, &rgb).unwrap();
        let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&p).unwrap()));
        let mut reader = dec.read_info().unwrap();
        let info = reader.info().clone();
        assert_eq!((info.width, info.height), (w, h));
        assert_eq!(info.color_type, png::ColorType::Indexed);
        let pal = info.palette.unwrap().to_vec();
        let mut buf = vec![0; reader.output_buffer_size()];
        reader.next_frame(&mut buf).unwrap();
        let back: Vec<u8> = buf
            .iter()
            .flat_map(|&i| pal[3 * i as usize..3 * i as usize + 3].to_vec())
            .collect();
        assert_eq!(back, rgb);
    }
}
