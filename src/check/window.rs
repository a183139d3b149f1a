//! `--window` as `check` and the scorecard take it: a duration with a unit.

/// A window as `--window` takes it: `1s`, `1.5s`, `300ms` (a unit is required).
pub fn parse_window(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1000.0)
    } else {
        return Err(format!(
            "`{s}`: give the window with a unit, e.g. 1s or 300ms"
        ));
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (e.g. 1s or 300ms)"))?;
    let ms = v * scale;
    if ms.is_nan() || ms < 1.0 || ms.fract() != 0.0 {
        return Err(format!(
            "`{s}`: the window must be a whole number of ms, at least 1"
        ));
    }
    Ok(ms as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn windows_take_a_unit() {
        assert_eq!(crate::check::window::parse_window("1s"), Ok(1000));
        assert_eq!(crate::check::window::parse_window("1.5s"), Ok(1500));
        assert_eq!(crate::check::window::parse_window("300ms"), Ok(300));
        assert!(
            crate::check::window::parse_window("300")
                .unwrap_err()
                .contains("unit")
        );
        assert!(crate::check::window::parse_window("0s").is_err());
        assert!(crate::check::window::parse_window("0.5ms").is_err());
    }
}
