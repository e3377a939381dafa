//! Random sequences of put, delete, list and read against a `BTreeMap`
//! model: the store lists and reads what the model holds.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{TempDir, bytes, get, put_chunked};
use crate::store::{ListFrom, Store};

#[derive(Debug, Clone)]
enum Op {
    Put(String, usize, u64),
    Delete(String),
    Get(String),
    List(String, u8, String, usize),
}

fn key() -> impl Strategy<Value = String> + Clone {
    const CHARS: [char; 5] = ['a', 'b', '/', '\u{e9}', '\u{10000}'];
    prop::collection::vec(0..CHARS.len(), 0..4)
        .prop_map(|v| v.into_iter().map(|i| CHARS[i]).collect())
}

fn op() -> impl Strategy<Value = Op> {
    let nonempty = || key().prop_filter("a key is not empty", |k| !k.is_empty());
    prop_oneof![
        3 => (nonempty(), 0..3000usize, any::<u64>()).prop_map(|(k, l, s)| Op::Put(k, l, s)),
        1 => nonempty().prop_map(Op::Delete),
        1 => nonempty().prop_map(Op::Get),
        2 => (key(), 0..3u8, key(), 0..6usize).prop_map(|(p, f, m, l)| Op::List(p, f, m, l)),
    ]
}

fn check(s: &dyn Store, ops: &[Op]) {
    let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Put(k, len, seed) => {
                let data = bytes(*len, *seed);
                put_chunked(s, "bkt", k, &data, 1 + (*seed % 700) as usize);
                model.insert(k.clone(), data);
            }
            Op::Delete(k) => {
                s.delete_object("bkt", k).unwrap();
                model.remove(k);
            }
            Op::Get(k) => match model.get(k) {
                Some(data) => assert_eq!(&get(s, "bkt", k), data),
                None => assert!(s.head_object("bkt", k).is_err()),
            },
            Op::List(prefix, f, marker, limit) => {
                let from = match f {
                    0 => ListFrom::Start,
                    1 => ListFrom::After(marker),
                    _ => ListFrom::AfterPrefix(marker),
                };
                let want: Vec<&String> = model
                    .keys()
                    .filter(|k| k.starts_with(prefix.as_str()))
                    .filter(|k| match from {
                        ListFrom::Start => true,
                        ListFrom::After(m) => k.as_str() > m,
                        ListFrom::AfterPrefix(m) => k.as_str() > m && !k.starts_with(m),
                    })
                    .take(*limit)
                    .collect();
                let got = s.list_objects("bkt", prefix, from, *limit).unwrap();
                let got_keys: Vec<&String> = got.iter().map(|(k, _)| k).collect();
                assert_eq!(got_keys, want, "{op:?}");
                for (k, m) in &got {
                    assert_eq!(m.size, model[k].len() as u64);
                }
            }
        }
        let all = s
            .list_objects("bkt", "", ListFrom::Start, usize::MAX)
            .unwrap();
        assert!(all.iter().map(|(k, _)| k).eq(model.keys()));
        let used: usize = model.values().map(Vec::len).sum();
        assert_eq!(s.used_bytes(), used as u64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn memory_matches_the_model(ops in prop::collection::vec(op(), 1..40)) {
        let s = crate::store::memory::MemoryStore::new(1 << 30);
        s.create_bucket("bkt").unwrap();
        check(&s, &ops);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]
    #[test]
    fn dir_matches_the_model(ops in prop::collection::vec(op(), 1..20)) {
        let t = TempDir::new();
        let s = crate::store::dir::DirStore::open(&t.root(), 1 << 30).unwrap();
        s.create_bucket("bkt").unwrap();
        check(&s, &ops);
        // And again after a reopen.
        drop(s);
        let s = crate::store::dir::DirStore::open(&t.root(), 1 << 30).unwrap();
        check_reopened(&s, &ops);
    }
}

/// After a reopen the store holds what the model does after `ops`, every
/// object reading whole with its listed ETag.
fn check_reopened(s: &dyn Store, ops: &[Op]) {
    let mut model: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Put(k, len, seed) => {
                model.insert(k, (*len, *seed));
            }
            Op::Delete(k) => {
                model.remove(k.as_str());
            }
            Op::Get(_) | Op::List(..) => {}
        }
    }
    let all = s
        .list_objects("bkt", "", ListFrom::Start, usize::MAX)
        .unwrap();
    assert!(
        all.iter()
            .map(|(k, _)| k.as_str())
            .eq(model.keys().copied())
    );
    for (k, m) in all {
        let (len, seed) = model[k.as_str()];
        let data = get(s, "bkt", &k);
        assert_eq!(data, bytes(len, seed));
        assert_eq!(super::md5_hex(&data), m.etag);
    }
}
