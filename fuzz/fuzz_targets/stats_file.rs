//! A stats file's bytes (`ernic_ops::file::parse_stats`: what
//! `ernic-exporter` and `ernic stats` read from a path anyone may write),
//! then the exporter's metric families and both expositions of it.
//! Invariants: nothing panics; a document that reads writes back as one
//! that reads with the same groups; the 0.0.4 text has no `# EOF` and the
//! OpenMetrics text ends with it.
#![no_main]

use ernic::exporter::encode::{Format, encode};
use ernic::exporter::{Scraped, families};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = ernic_ops::file::parse_stats(data) else {
        return;
    };
    let again = serde_json::to_vec(&doc).expect("a parsed document serializes");
    let back = ernic_ops::file::parse_stats(&again).expect("what was written reads");
    assert_eq!(back.groups.len(), doc.groups.len());
    for (a, b) in back.groups.iter().zip(&doc.groups) {
        assert_eq!(
            (&a.kind, &a.labels, &a.counters),
            (&b.kind, &b.labels, &b.counters)
        );
    }
    let files = [Scraped {
        path: "fuzz.json".into(),
        age: Some(0.0),
        down: None,
        doc: Some(doc),
    }];
    let fams = families(&files);
    let text = encode(fams.clone(), Format::Text);
    assert!(!text.contains("# EOF"));
    assert!(text.contains("ernic_up{"));
    let om = encode(fams, Format::OpenMetrics);
    assert!(om.ends_with("# EOF\n"));
});
