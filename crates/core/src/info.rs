//! Redis `INFO`, read one way: [`read`] sends `INFO <sections>` on a
//! connection and parses the text with the one parser of INFO text,
//! `resp::info_fields`; [`number`] reads a numeric field. Everything that
//! looks at INFO (the fleet's servers, the cost experiments' CPU and memory
//! accounting, the stall probes) goes through here.

use std::collections::BTreeMap;

use crate::resp::{Arg, Connection, info_fields};
use limitbench_base::error::{Error, Result};

/// INFO fields: name -> value, over every section read.
pub type InfoFields = BTreeMap<String, String>;

/// `INFO <sections...>` (all default sections if none) as fields.
pub async fn read(conn: &mut Connection, sections: &[&str]) -> Result<InfoFields> {
    let mut args = vec![Arg::S("INFO")];
    args.extend(sections.iter().map(|s| Arg::S(s)));
    let r = conn.call(&args).await?;
    Ok(info_fields(&r.as_string().unwrap_or_default()))
}

/// A numeric field, if present and a number.
pub fn number(fields: &InfoFields, name: &str) -> Option<f64> {
    fields.get(name).and_then(|v| v.parse().ok())
}

/// One numeric field of `INFO <section>`; an error if it is missing.
pub async fn read_number(conn: &mut Connection, section: &str, field: &str) -> Result<f64> {
    number(&read(conn, &[section]).await?, field)
        .ok_or_else(|| Error::Protocol(format!("INFO {section} has no numeric `{field}`")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_from_parsed_fields() {
        let f = info_fields("# Memory\r\nused_memory:1024\r\nmem_allocator:jemalloc-5.2.1\r\n");
        assert_eq!(number(&f, "used_memory"), Some(1024.0));
        assert_eq!(number(&f, "mem_allocator"), None);
        assert_eq!(number(&f, "missing"), None);
    }
}
