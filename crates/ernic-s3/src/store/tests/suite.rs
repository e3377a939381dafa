//! The behaviour every store promises, run over both stores by `both!`.
//! Each function gets a store with an empty bucket "bkt".

use super::{both, bytes, get, md5_hex, put, put_chunked, read_all};
use crate::store::memory::PIECE;
use crate::store::{
    CompletePart, ListFrom, MIN_PART_SIZE, ObjectAttrs, Store, StoreError, UploadInfo,
};

const MIB: u64 = 1 << 20;

fn keys(s: &dyn Store, prefix: &str, from: ListFrom<'_>, limit: usize) -> Vec<String> {
    s.list_objects("bkt", prefix, from, limit)
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

fn part(s: &dyn Store, key: &str, id: &str, n: u32, data: &[u8]) -> String {
    let mut w = s.put_part("bkt", key, id, n).unwrap();
    for c in data.chunks(1 << 20) {
        w.write(c).unwrap();
    }
    let m = w.commit().unwrap();
    assert_eq!(m.size, data.len() as u64);
    // (A big part's ETag is checked against a known value by the caller:
    // MD5 in a debug build is slow.)
    if data.len() < MIB as usize {
        assert_eq!(m.etag, md5_hex(data));
    }
    m.etag
}

fn cp(number: u32, etag: &str) -> CompletePart {
    CompletePart {
        number,
        etag: etag.to_owned(),
    }
}

fn buckets(s: &dyn Store) {
    let b = s.create_bucket("other.bucket-2").unwrap();
    assert_eq!(s.bucket("other.bucket-2").unwrap(), b);
    let names: Vec<_> = s
        .list_buckets()
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, ["bkt", "other.bucket-2"]);
    assert!(matches!(
        s.create_bucket("bkt"),
        Err(StoreError::BucketAlreadyOwnedByYou { .. })
    ));
    for bad in [
        "ab",
        "Abc",
        "a..b",
        "192.168.1.1",
        "-abc",
        "abc-",
        "../etc",
        "a/b",
        "xn--abc",
        "",
    ] {
        let e = s.create_bucket(bad).unwrap_err();
        assert_eq!(e.s3_code(), "InvalidBucketName", "{bad}");
    }
    assert!(matches!(
        s.bucket("nope"),
        Err(StoreError::NoSuchBucket { .. })
    ));
    assert!(matches!(
        s.delete_bucket("nope"),
        Err(StoreError::NoSuchBucket { .. })
    ));
    // An object blocks deletion.
    put(s, "bkt", "k", b"v");
    assert!(matches!(
        s.delete_bucket("bkt"),
        Err(StoreError::BucketNotEmpty { .. })
    ));
    s.delete_object("bkt", "k").unwrap();
    // So does an upload in progress, with or without parts.
    let u = s.create_upload("bkt", "k", ObjectAttrs::default()).unwrap();
    assert!(matches!(
        s.delete_bucket("bkt"),
        Err(StoreError::BucketNotEmpty { .. })
    ));
    s.abort_upload("bkt", "k", &u.upload_id).unwrap();
    s.delete_bucket("bkt").unwrap();
    assert!(matches!(
        s.bucket("bkt"),
        Err(StoreError::NoSuchBucket { .. })
    ));
    assert!(matches!(
        s.put_object("bkt", "k", ObjectAttrs::default()),
        Err(StoreError::NoSuchBucket { .. })
    ));
    s.delete_bucket("other.bucket-2").unwrap();
    assert!(s.list_buckets().unwrap().is_empty());
    s.create_bucket("bkt").unwrap();
}
both!(buckets, 1 << 30, buckets);

fn round_trip(s: &dyn Store) {
    let data = bytes(2 * PIECE + 12345, 1);
    let meta = put_chunked(s, "bkt", "obj", &data, 4096);
    assert_eq!(meta.size, data.len() as u64);
    assert_eq!(meta.etag, md5_hex(&data));
    assert_eq!(meta.parts, None);
    assert_eq!(s.head_object("bkt", "obj").unwrap(), meta);
    assert_eq!(get(s, "bkt", "obj"), data);
    // One big write then small ones.
    let meta2 = put_chunked(s, "bkt", "big", &data, 2 * PIECE + 1);
    assert_eq!(meta2.etag, meta.etag);
    let (_, mut r) = s.open_object("bkt", "obj").unwrap();
    let len = data.len();
    for (off, n) in [
        (0, 1),
        (1, 3),
        (PIECE - 1, 2),
        (PIECE, 1),
        (PIECE + 1, PIECE + 7),
        (len - 1, 10),
        (len - 5, 5),
        (12_345, 0),
        (len, 4),
        (len + 10, 4),
    ] {
        let mut buf = vec![0xAAu8; n];
        let got = r.read_at(off as u64, &mut buf).unwrap();
        let want = &data[off.min(len)..(off + n).min(len)];
        assert_eq!(got, want.len(), "offset {off} len {n}");
        assert_eq!(&buf[..got], want, "offset {off} len {n}");
    }
    assert_eq!(r.read_at(u64::MAX, &mut [0u8; 4]).unwrap(), 0);
    // Attrs come back as given.
    let attrs = ObjectAttrs {
        content_type: Some("text/plain".into()),
        headers: vec![("cache-control".into(), "no-cache".into())],
        user_meta: vec![("z".into(), "1".into()), ("a".into(), "\u{e9}".into())],
    };
    let mut w = s.put_object("bkt", "attrs", attrs.clone()).unwrap();
    w.write(b"x").unwrap();
    w.commit().unwrap();
    assert_eq!(s.head_object("bkt", "attrs").unwrap().attrs, attrs);
    let too_much = ObjectAttrs {
        user_meta: vec![("k".into(), "v".repeat(2048))],
        ..ObjectAttrs::default()
    };
    assert!(matches!(
        s.put_object("bkt", "m", too_much),
        Err(StoreError::MetadataTooLarge { .. })
    ));
}
both!(round_trip, 1 << 30, round_trip);

fn etags(s: &dyn Store) {
    let w = s
        .put_object("bkt", "empty", ObjectAttrs::default())
        .unwrap();
    assert_eq!(
        crate::store::hex(&w.md5()),
        "d41d8cd98f00b204e9800998ecf8427e"
    );
    let m = w.commit().unwrap();
    assert_eq!(m.etag, "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(m.size, 0);
    assert!(get(s, "bkt", "empty").is_empty());
    let mut w = s
        .put_object("bkt", "hello", ObjectAttrs::default())
        .unwrap();
    w.write(b"he").unwrap();
    w.write(b"").unwrap();
    w.write(b"llo").unwrap();
    assert_eq!(w.written(), 5);
    assert_eq!(
        crate::store::hex(&w.md5()),
        "5d41402abc4b2a76b9719d911017c592"
    );
    assert_eq!(w.commit().unwrap().etag, "5d41402abc4b2a76b9719d911017c592");
    assert_eq!(
        s.head_object("bkt", "hello").unwrap().etag,
        "5d41402abc4b2a76b9719d911017c592"
    );
}
both!(etags, 1 << 30, etags);

fn replace_and_delete(s: &dyn Store) {
    let v1 = bytes(PIECE + 3, 2);
    put(s, "bkt", "k", &v1);
    let (m1, mut r1) = s.open_object("bkt", "k").unwrap();
    put(s, "bkt", "k", b"second");
    assert_eq!(get(s, "bkt", "k"), b"second");
    assert_eq!(s.used_bytes(), 6);
    s.delete_object("bkt", "k").unwrap();
    assert_eq!(s.used_bytes(), 0);
    assert_eq!(r1.len(), m1.size);
    assert_eq!(read_all(r1.as_mut()), v1);
    assert!(matches!(
        s.head_object("bkt", "k"),
        Err(StoreError::NoSuchKey { .. })
    ));
    assert!(matches!(
        s.open_object("bkt", "k"),
        Err(StoreError::NoSuchKey { .. })
    ));
    s.delete_object("bkt", "k").unwrap();
    s.delete_object("bkt", "never").unwrap();
    assert!(matches!(
        s.delete_object("nope", "k"),
        Err(StoreError::NoSuchBucket { .. })
    ));
    assert!(matches!(
        s.head_object("nope", "k"),
        Err(StoreError::NoSuchBucket { .. })
    ));
}
both!(replace_and_delete, 1 << 30, replace_and_delete);

fn uncommitted(s: &dyn Store) {
    put(s, "bkt", "keep", b"12345");
    let mut w = s.put_object("bkt", "gone", ObjectAttrs::default()).unwrap();
    w.write(&bytes(100_000, 3)).unwrap();
    assert_eq!(s.used_bytes(), 100_005);
    drop(w);
    assert_eq!(s.used_bytes(), 5);
    assert!(matches!(
        s.head_object("bkt", "gone"),
        Err(StoreError::NoSuchKey { .. })
    ));
    assert_eq!(keys(s, "", ListFrom::Start, 100), ["keep"]);
    // A writer whose bucket went away fails at commit and gives its bytes back.
    s.create_bucket("short-lived").unwrap();
    let mut w = s
        .put_object("short-lived", "k", ObjectAttrs::default())
        .unwrap();
    w.write(b"abc").unwrap();
    s.delete_bucket("short-lived").unwrap();
    assert!(matches!(w.commit(), Err(StoreError::NoSuchBucket { .. })));
    assert_eq!(s.used_bytes(), 5);
}
both!(uncommitted, 1 << 30, uncommitted);

fn listing(s: &dyn Store) {
    for k in [
        "c",
        "a/b/3",
        "\u{10000}x",
        "b",
        "a/2",
        "z",
        "\u{e9}",
        "a/1",
        "Z",
    ] {
        put(s, "bkt", k, k.as_bytes());
    }
    let all = [
        "Z",
        "a/1",
        "a/2",
        "a/b/3",
        "b",
        "c",
        "z",
        "\u{e9}",
        "\u{10000}x",
    ];
    assert_eq!(keys(s, "", ListFrom::Start, 100), all);
    assert_eq!(keys(s, "", ListFrom::Start, 3), all[..3]);
    assert!(keys(s, "", ListFrom::Start, 0).is_empty());
    assert_eq!(keys(s, "a/", ListFrom::Start, 100), ["a/1", "a/2", "a/b/3"]);
    assert_eq!(keys(s, "a/", ListFrom::After("a/1"), 1), ["a/2"]);
    assert_eq!(
        keys(s, "a/", ListFrom::After("0"), 100),
        ["a/1", "a/2", "a/b/3"]
    );
    assert!(keys(s, "a/", ListFrom::After("a/b/3"), 100).is_empty());
    assert_eq!(keys(s, "", ListFrom::After("a/2"), 3), ["a/b/3", "b", "c"]);
    assert_eq!(keys(s, "", ListFrom::After("a"), 1), ["a/1"]);
    assert_eq!(
        keys(s, "", ListFrom::AfterPrefix("a/"), 100),
        ["b", "c", "z", "\u{e9}", "\u{10000}x"]
    );
    assert_eq!(
        keys(s, "a/", ListFrom::AfterPrefix("a/b/"), 100),
        Vec::<String>::new()
    );
    assert_eq!(
        keys(s, "a", ListFrom::AfterPrefix("a/1"), 100),
        ["a/2", "a/b/3"]
    );
    assert_eq!(keys(s, "", ListFrom::AfterPrefix("Z"), 2), ["a/1", "a/2"]);
    assert!(keys(s, "", ListFrom::AfterPrefix(""), 100).is_empty());
    assert_eq!(keys(s, "\u{e9}", ListFrom::Start, 100), ["\u{e9}"]);
    assert!(keys(s, "q", ListFrom::Start, 100).is_empty());
    let listed = s.list_objects("bkt", "b", ListFrom::Start, 10).unwrap();
    assert_eq!(listed[0].1, s.head_object("bkt", "b").unwrap());
    assert!(matches!(
        s.list_objects("nope", "", ListFrom::Start, 10),
        Err(StoreError::NoSuchBucket { .. })
    ));
}
both!(listing, 1 << 30, listing);

fn hostile_keys(s: &dyn Store) {
    let hostile = [
        "../../etc/passwd",
        "/abs",
        "a//b",
        ".",
        "..",
        "x/../../y",
        "..\\..\\win",
        "bucket.meta",
        "tmp",
        "0000000000000001.data",
    ];
    for (i, k) in hostile.iter().enumerate() {
        put(s, "bkt", k, &bytes(10 + i, i as u64));
        let u = s.create_upload("bkt", k, ObjectAttrs::default()).unwrap();
        part(s, k, &u.upload_id, 1, b"p");
    }
    for (i, k) in hostile.iter().enumerate() {
        assert_eq!(get(s, "bkt", k), bytes(10 + i, i as u64), "{k}");
    }
    let mut sorted: Vec<String> = hostile.iter().map(|k| k.to_string()).collect();
    sorted.sort();
    assert_eq!(keys(s, "", ListFrom::Start, 100), sorted);
    for (bad, code) in [
        (String::new(), "InvalidArgument"),
        ("a\0b".to_owned(), "InvalidArgument"),
        ("k".repeat(1025), "KeyTooLongError"),
    ] {
        let e = s
            .put_object("bkt", &bad, ObjectAttrs::default())
            .err()
            .unwrap();
        assert_eq!(e.s3_code(), code);
        let e = s
            .create_upload("bkt", &bad, ObjectAttrs::default())
            .unwrap_err();
        assert_eq!(e.s3_code(), code);
    }
    put(s, "bkt", &"k".repeat(1024), b"longest");
    // Upload ids from outside are looked up, never used as paths.
    for id in ["../../x", "..", "", "/etc"] {
        assert!(matches!(
            s.put_part("bkt", "k", id, 1),
            Err(StoreError::NoSuchUpload { .. })
        ));
        assert!(matches!(
            s.abort_upload("bkt", "k", id),
            Err(StoreError::NoSuchUpload { .. })
        ));
    }
}
both!(hostile_keys, 1 << 30, hostile_keys);

fn capacity(s: &dyn Store) {
    assert_eq!(s.capacity(), MIB);
    put(s, "bkt", "a", &bytes(600 << 10, 1));
    let mut w = s.put_object("bkt", "b", ObjectAttrs::default()).unwrap();
    w.write(&bytes(300 << 10, 2)).unwrap();
    let e = w.write(&bytes(300 << 10, 3)).unwrap_err();
    assert!(matches!(e, StoreError::Full { capacity } if capacity == MIB));
    assert_eq!((e.s3_code(), e.http_status()), ("InsufficientStorage", 507));
    assert_eq!(w.written(), 300 << 10);
    drop(w);
    assert_eq!(s.used_bytes(), 600 << 10);
    // Still serving: reads, and writes that fit.
    assert_eq!(get(s, "bkt", "a"), bytes(600 << 10, 1));
    put(s, "bkt", "c", &bytes(424 << 10, 4));
    assert_eq!(s.used_bytes(), MIB);
    let mut w = s.put_object("bkt", "d", ObjectAttrs::default()).unwrap();
    assert!(matches!(w.write(b"x"), Err(StoreError::Full { .. })));
    w.write(b"").unwrap();
    drop(w);
    // Parts count too.
    s.delete_object("bkt", "a").unwrap();
    let u = s.create_upload("bkt", "m", ObjectAttrs::default()).unwrap();
    part(s, "m", &u.upload_id, 1, &bytes(500 << 10, 5));
    let mut w = s.put_part("bkt", "m", &u.upload_id, 2).unwrap();
    assert!(matches!(
        w.write(&bytes(200 << 10, 6)),
        Err(StoreError::Full { .. })
    ));
    drop(w);
    assert_eq!(s.used_bytes(), (424 + 500) << 10);
    // Replacing a part releases the old one.
    part(s, "m", &u.upload_id, 1, b"small");
    assert_eq!(s.used_bytes(), (424 << 10) + 5);
    s.abort_upload("bkt", "m", &u.upload_id).unwrap();
    assert_eq!(s.used_bytes(), 424 << 10);
}
both!(capacity, MIB, capacity);

fn multipart(s: &dyn Store) {
    let attrs = ObjectAttrs {
        content_type: Some("application/x-test".into()),
        headers: vec![],
        user_meta: vec![("who".into(), "me".into())],
    };
    let u = s.create_upload("bkt", "mp", attrs.clone()).unwrap();
    assert_eq!(u.key, "mp");
    let id = u.upload_id.as_str();
    let p1 = vec![b'x'; MIN_PART_SIZE as usize];
    assert_eq!(
        part(s, "mp", id, 1, &p1),
        "4f08eef4096726bff1125e1b1b734644"
    );
    let e2 = part(s, "mp", id, 2, b"tail");
    let e3 = part(s, "mp", id, 3, b"three");
    let e1 = "4f08eef4096726bff1125e1b1b734644";
    for (list, code) in [
        (vec![], "InvalidPartOrder"),
        (vec![cp(2, &e2), cp(1, e1)], "InvalidPartOrder"),
        (vec![cp(1, e1), cp(1, e1)], "InvalidPartOrder"),
        (vec![cp(1, e1), cp(4, &e2)], "InvalidPart"),
        (vec![cp(1, &e2)], "InvalidPart"),
        (vec![cp(1, "not-an-etag")], "InvalidPart"),
        (vec![cp(2, &e2), cp(3, &e3)], "EntityTooSmall"),
    ] {
        let e = s.complete_upload("bkt", "mp", id, &list).unwrap_err();
        assert_eq!(e.s3_code(), code, "{list:?}");
    }
    for n in [0, 10_001] {
        assert!(matches!(
            s.put_part("bkt", "mp", id, n),
            Err(StoreError::InvalidPartNumber { number }) if number == n
        ));
    }
    for (key, id) in [("mp", "bogus"), ("other", id)] {
        assert!(matches!(
            s.put_part("bkt", key, id, 1),
            Err(StoreError::NoSuchUpload { .. })
        ));
        assert!(matches!(
            s.complete_upload("bkt", key, id, &[cp(1, e1)]),
            Err(StoreError::NoSuchUpload { .. })
        ));
    }
    // Failed completions left the upload as it was.
    assert_eq!(s.list_parts("bkt", "mp", id, 0, 100).unwrap().len(), 3);
    assert!(matches!(
        s.head_object("bkt", "mp"),
        Err(StoreError::NoSuchKey { .. })
    ));
    // Replace part 2, then complete with 1 and 2 (ETags quoted and upper
    // case, as some clients send them); part 3 is discarded.
    let e2 = part(s, "mp", id, 2, b"TAIL2");
    let parts = s.list_parts("bkt", "mp", id, 1, 1).unwrap();
    assert_eq!(
        (parts[0].number, parts[0].size, &parts[0].etag),
        (2, 5, &e2)
    );
    put(s, "bkt", "mp", b"an old object to replace");
    let list = [cp(1, &format!("\"{}\"", e1.to_uppercase())), cp(2, &e2)];
    let m = s.complete_upload("bkt", "mp", id, &list).unwrap();
    assert_eq!(m.etag, "d62774a7b4d21e438dc507ff8cd4b77b-2");
    assert_eq!((m.size, m.parts), (MIN_PART_SIZE + 5, Some(2)));
    assert_eq!(m.attrs, attrs);
    assert_eq!(s.head_object("bkt", "mp").unwrap(), m);
    let got = get(s, "bkt", "mp");
    assert!(got[..p1.len()] == p1[..] && &got[p1.len()..] == b"TAIL2");
    assert_eq!(s.used_bytes(), MIN_PART_SIZE + 5);
    assert!(s.list_uploads("bkt", "", None, 100).unwrap().is_empty());
    assert!(matches!(
        s.list_parts("bkt", "mp", id, 0, 9),
        Err(StoreError::NoSuchUpload { .. })
    ));
    assert!(matches!(
        s.complete_upload("bkt", "mp", id, &list),
        Err(StoreError::NoSuchUpload { .. })
    ));
    // One small part is a whole upload.
    let u = s
        .create_upload("bkt", "one", ObjectAttrs::default())
        .unwrap();
    let e = part(s, "one", &u.upload_id, 7, b"hello");
    let m = s
        .complete_upload("bkt", "one", &u.upload_id, &[cp(7, &e)])
        .unwrap();
    assert_eq!(m.etag, "62109206880d38a4010a98e11243924a-1");
    assert_eq!(get(s, "bkt", "one"), b"hello");
    s.delete_object("bkt", "mp").unwrap();
    s.delete_object("bkt", "one").unwrap();
    assert_eq!(s.used_bytes(), 0);
    s.delete_bucket("bkt").unwrap();
    s.create_bucket("bkt").unwrap();
}
both!(multipart, 64 * MIB, multipart);

fn list_parts(s: &dyn Store) {
    let u = s.create_upload("bkt", "k", ObjectAttrs::default()).unwrap();
    let id = u.upload_id.as_str();
    for n in [3, 1, 5, 2, 4] {
        part(s, "k", id, n, &bytes(n as usize * 10, n as u64));
    }
    let nums = |after, limit| -> Vec<u32> {
        let ps = s.list_parts("bkt", "k", id, after, limit).unwrap();
        for p in &ps {
            assert_eq!(p.size, p.number as u64 * 10);
            assert_eq!(
                p.etag,
                md5_hex(&bytes(p.number as usize * 10, p.number as u64))
            );
        }
        ps.into_iter().map(|p| p.number).collect()
    };
    assert_eq!(nums(0, 2), [1, 2]);
    assert_eq!(nums(2, 2), [3, 4]);
    assert_eq!(nums(4, 2), [5]);
    assert!(nums(5, 2).is_empty());
    assert!(nums(0, 0).is_empty());
    assert!(nums(u32::MAX, 10).is_empty());
    assert_eq!(nums(0, 100), [1, 2, 3, 4, 5]);
    assert!(matches!(
        s.list_parts("nope", "k", id, 0, 1),
        Err(StoreError::NoSuchBucket { .. })
    ));
}
both!(list_parts, 1 << 30, list_parts);

fn list_uploads(s: &dyn Store) {
    let mk = |k: &str| -> UploadInfo {
        let u = s.create_upload("bkt", k, ObjectAttrs::default()).unwrap();
        // Distinct initiation times, so the order by initiation is known.
        std::thread::sleep(std::time::Duration::from_millis(2));
        u
    };
    let c2 = mk("c/2");
    let b1 = mk("b");
    let a = mk("a");
    let b2 = mk("b");
    let c1 = mk("c/1");
    assert!(b1.initiated_ms < b2.initiated_ms);
    let ids = |prefix, after, limit| -> Vec<String> {
        s.list_uploads("bkt", prefix, after, limit)
            .unwrap()
            .into_iter()
            .map(|u| u.upload_id)
            .collect()
    };
    let all: Vec<String> = [&a, &b1, &b2, &c1, &c2]
        .iter()
        .map(|u| u.upload_id.clone())
        .collect();
    assert_eq!(ids("", None, 100), all);
    assert_eq!(s.list_uploads("bkt", "", None, 1).unwrap(), [a]);
    assert_eq!(ids("c/", None, 100), all[3..]);
    assert_eq!(ids("", Some(("b", None)), 100), all[3..]);
    assert_eq!(ids("", Some(("b", Some(&b1.upload_id))), 100), all[2..]);
    assert_eq!(ids("", Some(("b", Some(&b2.upload_id))), 100), all[3..]);
    assert_eq!(ids("", Some(("b", Some("bogus"))), 100), all[3..]);
    assert_eq!(ids("", Some(("b", Some(&c1.upload_id))), 100), all[3..]);
    assert_eq!(ids("", Some(("a", None)), 2), all[1..3]);
    assert_eq!(ids("", Some(("", None)), 100), all);
    assert_eq!(ids("c/", Some(("a", None)), 100), all[3..]);
    assert!(ids("", Some(("c/2", None)), 100).is_empty());
    s.abort_upload("bkt", "b", &b1.upload_id).unwrap();
    assert_eq!(ids("b", None, 100), [b2.upload_id]);
}
both!(list_uploads, 1 << 30, list_uploads);

fn abort_and_ids(s: &dyn Store) {
    let u = s.create_upload("bkt", "k", ObjectAttrs::default()).unwrap();
    part(s, "k", &u.upload_id, 1, &bytes(1000, 1));
    part(s, "k", &u.upload_id, 2, &bytes(1000, 2));
    let mut late = s.put_part("bkt", "k", &u.upload_id, 3).unwrap();
    late.write(b"late").unwrap();
    assert_eq!(s.used_bytes(), 2004);
    assert!(matches!(
        s.abort_upload("bkt", "x", &u.upload_id),
        Err(StoreError::NoSuchUpload { .. })
    ));
    s.abort_upload("bkt", "k", &u.upload_id).unwrap();
    assert_eq!(s.used_bytes(), 4);
    assert!(matches!(
        late.commit(),
        Err(StoreError::NoSuchUpload { .. })
    ));
    assert_eq!(s.used_bytes(), 0);
    assert!(matches!(
        s.abort_upload("bkt", "k", &u.upload_id),
        Err(StoreError::NoSuchUpload { .. })
    ));
    assert!(matches!(
        s.list_parts("bkt", "k", &u.upload_id, 0, 10),
        Err(StoreError::NoSuchUpload { .. })
    ));
    assert!(s.list_uploads("bkt", "", None, 10).unwrap().is_empty());
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..32 {
        let id = s
            .create_upload("bkt", "k", ObjectAttrs::default())
            .unwrap()
            .upload_id;
        assert!(id.len() <= 64 && !id.is_empty());
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        );
        assert!(seen.insert(id));
    }
    for id in &seen {
        s.abort_upload("bkt", "k", id).unwrap();
    }
    s.delete_bucket("bkt").unwrap();
    s.create_bucket("bkt").unwrap();
}
both!(abort_and_ids, 1 << 30, abort_and_ids);

fn threads(s: &dyn Store) {
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            sc.spawn(move || {
                for i in 0..5u64 {
                    let key = format!("t{t}/{i}");
                    let data = bytes(1000 + i as usize, t * 100 + i);
                    put(s, "bkt", &key, &data);
                    assert_eq!(get(s, "bkt", &key), data);
                    put(s, "bkt", "shared", &data);
                    let (m, mut r) = s.open_object("bkt", "shared").unwrap();
                    assert_eq!(md5_hex(&read_all(r.as_mut())), m.etag);
                }
            });
        }
    });
    assert_eq!(
        s.list_objects("bkt", "", ListFrom::Start, 100)
            .unwrap()
            .len(),
        21
    );
    let listed: u64 = s
        .list_objects("bkt", "", ListFrom::Start, 100)
        .unwrap()
        .iter()
        .map(|(_, m)| m.size)
        .sum();
    assert_eq!(s.used_bytes(), listed);
}
both!(threads, 1 << 30, threads);
