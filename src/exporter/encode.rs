//! Writing metric families as text: OpenMetrics 1.0 through the Prometheus
//! client crate's encoder (a [`Collector`] that hands it each scrape's
//! families), and the Prometheus text format 0.0.4 derived from it.
//!
//! The two differ only where 0.0.4 is older: it names a counter's family
//! with its `_total` (`# TYPE ernic_x_total counter`, where OpenMetrics says
//! `# TYPE ernic_x counter` over samples `ernic_x_total`), and it has no
//! `# EOF`. Label values are escaped by the crate's encoder in both.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::{Family, Type, Value};

/// The content type of the Prometheus text format.
pub const TEXT_0_0_4: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The content type of OpenMetrics text.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Which exposition format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text format, version 0.0.4.
    Text,
    /// OpenMetrics 1.0 text (ends with `# EOF`).
    OpenMetrics,
}

impl Format {
    /// The format an HTTP `Accept` header asks for: OpenMetrics when it
    /// names `application/openmetrics-text`, else 0.0.4.
    pub fn negotiate(accept: Option<&str>) -> Format {
        match accept {
            Some(a)
                if a.to_ascii_lowercase()
                    .contains("application/openmetrics-text") =>
            {
                Format::OpenMetrics
            }
            _ => Format::Text,
        }
    }

    /// Its HTTP content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => TEXT_0_0_4,
            Format::OpenMetrics => OPENMETRICS,
        }
    }
}

#[derive(Debug)]
struct Families(Vec<Family>);

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in &self.0 {
            let ty = match f.ty {
                Type::Counter => MetricType::Counter,
                Type::Gauge => MetricType::Gauge,
            };
            let mut metric = encoder.encode_descriptor(&f.name, &f.help, None, ty)?;
            for (labels, v) in &f.samples {
                let sample = metric.encode_family(labels)?;
                match (f.ty, *v) {
                    (Type::Counter, Value::Int(n)) => ConstCounter::new(n).encode(sample)?,
                    (Type::Counter, Value::Float(x)) => ConstCounter::new(x).encode(sample)?,
                    (Type::Gauge, Value::Float(x)) => ConstGauge::new(x).encode(sample)?,
                    (Type::Gauge, Value::Int(n)) => ConstGauge::new(n as f64).encode(sample)?,
                }
            }
        }
        Ok(())
    }
}

/// `families` as text in `format`.
pub fn encode(families: Vec<Family>, format: Format) -> String {
    let counters: std::collections::BTreeSet<String> = families
        .iter()
        .filter(|f| f.ty == Type::Counter)
        .map(|f| f.name.clone())
        .collect();
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families(families)));
    let mut om = String::new();
    // Writing into a String cannot fail, and every family is well formed.
    if prometheus_client::encoding::text::encode(&mut om, &registry).is_err() {
        tracing::warn!("the OpenMetrics encoder failed; serving what it wrote");
    }
    match format {
        Format::OpenMetrics => om,
        Format::Text => to_text_0_0_4(&om, &counters),
    }
}

/// OpenMetrics text as the 0.0.4 format: counter families renamed with
/// their `_total`, `# UNIT` and `# EOF` dropped.
fn to_text_0_0_4(om: &str, counters: &std::collections::BTreeSet<String>) -> String {
    let mut out = String::with_capacity(om.len());
    for line in om.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find(|p| line.starts_with(p));
        match meta {
            Some(p) => {
                let rest = &line[p.len()..];
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                out.push_str(p);
                out.push_str(name);
                if counters.contains(name) {
                    out.push_str("_total");
                }
                out.push(' ');
                out.push_str(tail);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fam() -> Vec<Family> {
        vec![Family {
            name: "ernic_qp_rdma_writes".into(),
            ty: Type::Counter,
            help: "Counter rdma_writes.".into(),
            samples: vec![(
                vec![
                    ("instance".into(), "a\"b".into()),
                    ("qpn".into(), "17".into()),
                ],
                Value::Int(10),
            )],
        }]
    }

    #[test]
    fn the_0_0_4_text_names_a_counter_family_with_its_total() {
        let t = encode(fam(), Format::Text);
        assert_eq!(
            t,
            "# HELP ernic_qp_rdma_writes_total Counter rdma_writes.\n\
             # TYPE ernic_qp_rdma_writes_total counter\n\
             ernic_qp_rdma_writes_total{instance=\"a\\\"b\",qpn=\"17\"} 10\n"
        );
    }

    #[test]
    fn openmetrics_keeps_the_family_name_and_ends_with_eof() {
        let t = encode(fam(), Format::OpenMetrics);
        assert!(t.starts_with("# HELP ernic_qp_rdma_writes Counter rdma_writes.\n# TYPE ernic_qp_rdma_writes counter\n"), "{t}");
        assert!(t.ends_with("# EOF\n"), "{t}");
    }

    #[test]
    fn accept_headers_choose_the_format() {
        assert_eq!(Format::negotiate(None), Format::Text);
        assert_eq!(Format::negotiate(Some("text/plain")), Format::Text);
        assert_eq!(
            Format::negotiate(Some(
                "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
            )),
            Format::OpenMetrics
        );
    }
}
