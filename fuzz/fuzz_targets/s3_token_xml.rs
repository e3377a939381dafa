//! The S3 store's decoders of client text (`ernic_s3`): an
//! `x-amz-rdma-token` in either format (cuObject's text, hipObject's hex),
//! an `x-amz-rdma-reply`, and the two XML request bodies the server reads,
//! `CompleteMultipartUpload` and `Delete`, each fed the whole input.
//! Invariants: nothing panics; a token or reply that parses emits back and
//! re-parses to the same value; a body that reads stays within its counts,
//! and its keys, escaped by the writers' `escape`, read back unchanged.
#![no_main]

use ernic_s3::token::{RdmaReply, RdmaToken};
use ernic_s3::xml::read::{MAX_DELETE_OBJECTS, MAX_KEY_LEN, MAX_PARTS};
use ernic_s3::xml::{CompleteMultipartUpload, Delete, escape_into};
use libfuzzer_sys::fuzz_target;

fn token(s: &str) {
    if let Ok(t) = RdmaToken::parse(s) {
        let text = t.emit().expect("a parsed token emits");
        assert_eq!(
            text.to_lowercase(),
            s.to_lowercase(),
            "emit is the canonical text"
        );
        assert_eq!(RdmaToken::parse(&text), Ok(t), "token re-parses");
        assert!(t.len > 0 && t.addr.checked_add(t.len - 1).is_some());
    }
    if let Ok(r) = RdmaReply::parse(s) {
        let text = r.emit().expect("a parsed reply emits");
        assert_eq!(RdmaReply::parse(&text), Ok(r), "reply re-parses");
    }
}

fn bodies(s: &str) {
    if let Ok(c) = CompleteMultipartUpload::parse(s) {
        assert!(c.parts.len() <= MAX_PARTS);
        assert!(
            c.parts
                .iter()
                .all(|p| (1..=10_000).contains(&p.part_number))
        );
    }
    if let Ok(d) = Delete::parse(s) {
        assert!(!d.objects.is_empty() && d.objects.len() <= MAX_DELETE_OBJECTS);
        let mut again = String::from("<Delete>");
        for o in &d.objects {
            assert!(!o.key.is_empty() && o.key.len() <= MAX_KEY_LEN);
            again.push_str("<Object><Key>");
            escape_into(&mut again, &o.key);
            again.push_str("</Key></Object>");
        }
        again.push_str("</Delete>");
        let back = Delete::parse(&again).expect("escaped keys read back");
        let keys = |d: &Delete| d.objects.iter().map(|o| o.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&back), keys(&d));
    }
}

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    token(&s);
    bodies(&s);
});
