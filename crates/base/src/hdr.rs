//! HdrHistograms as the harness stores them: the range and precision every
//! latency histogram uses, and the text form in CSV cells (HdrHistogram's V2
//! compressed format, base64). Pure, so the analysis can decode what the run
//! recorded.

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

use crate::error::{Error, Result};

/// An empty histogram with the harness's range and precision.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// V2 compressed (deflate) bytes, base64.
pub fn encode(h: &Histogram<u64>) -> Result<String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .map_err(|e| Error::Other(format!("serializing a latency histogram: {e:?}")))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The inverse of [`encode`].
pub fn decode(text: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| Error::Other(format!("a latency histogram is not base64: {e}")))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| Error::Other(format!("a latency histogram does not decode: {e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_survive_the_csv_and_merge_exactly() {
        let mut a = new_histogram();
        let mut b = new_histogram();
        for v in 1..=1000u64 {
            a.record(v).unwrap();
        }
        b.record(50_000).unwrap();
        let a2 = decode(&encode(&a).unwrap()).unwrap();
        assert_eq!(a2.len(), 1000);
        assert_eq!(a2.value_at_quantile(0.5), a.value_at_quantile(0.5));
        let mut m = a2.clone();
        m.add(decode(&encode(&b).unwrap()).unwrap()).unwrap();
        assert_eq!(m.len(), 1001);
        assert!(m.max() >= 49_990, "{}", m.max());
        assert!(decode("not base64!").is_err());
    }
}
