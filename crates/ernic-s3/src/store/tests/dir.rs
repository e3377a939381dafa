//! The directory store's own promises: what it wrote is there after a
//! reopen, and what a crash leaves (temp files, orphan data files, two
//! metas for one key, corrupt metas) is cleaned up or skipped on open.

use std::fs;

use super::{TempDir, bytes, check_tree, get, put, walk};
use crate::store::dir::DirStore;
use crate::store::{CompletePart, ListFrom, MIN_PART_SIZE, ObjectAttrs, Store};

const CAP: u64 = 1 << 30;

fn objects_dir(t: &TempDir) -> std::path::PathBuf {
    t.root().join("buckets/bkt/objects")
}

#[test]
fn reopen_sees_everything() {
    let t = TempDir::new();
    let attrs = ObjectAttrs {
        content_type: Some("text/plain".into()),
        headers: vec![("content-language".into(), "fr".into())],
        user_meta: vec![("k".into(), "v \u{e9}\"".into())],
    };
    let (objects, uploads, used) = {
        let s = DirStore::open(&t.root(), CAP).unwrap();
        s.create_bucket("bkt").unwrap();
        s.create_bucket("empty").unwrap();
        let mut w = s.put_object("bkt", "a/../b", attrs.clone()).unwrap();
        w.write(b"with attrs").unwrap();
        w.commit().unwrap();
        put(&s, "bkt", "big", &bytes(300_000, 1));
        put(&s, "bkt", "replaced", b"old");
        put(&s, "bkt", "replaced", b"new");
        put(&s, "bkt", "deleted", b"x");
        s.delete_object("bkt", "deleted").unwrap();
        let u = s
            .create_upload("bkt", "mp", ObjectAttrs::default())
            .unwrap();
        let p1 = vec![7u8; MIN_PART_SIZE as usize];
        let mut w = s.put_part("bkt", "mp", &u.upload_id, 1).unwrap();
        w.write(&p1).unwrap();
        let e1 = w.commit().unwrap().etag;
        let mut w = s.put_part("bkt", "mp", &u.upload_id, 2).unwrap();
        w.write(b"end").unwrap();
        let e2 = w.commit().unwrap().etag;
        let parts = [
            CompletePart {
                number: 1,
                etag: e1,
            },
            CompletePart {
                number: 2,
                etag: e2,
            },
        ];
        s.complete_upload("bkt", "mp", &u.upload_id, &parts)
            .unwrap();
        let open = s.create_upload("bkt", "pending", attrs.clone()).unwrap();
        let mut w = s.put_part("bkt", "pending", &open.upload_id, 3).unwrap();
        w.write(b"part three").unwrap();
        w.commit().unwrap();
        let objects = s.list_objects("bkt", "", ListFrom::Start, 100).unwrap();
        let uploads = s.list_uploads("bkt", "", None, 100).unwrap();
        (objects, uploads, s.used_bytes())
    };
    let s = DirStore::open(&t.root(), CAP).unwrap();
    assert_eq!(s.skipped_on_open(), 0);
    let names: Vec<_> = s
        .list_buckets()
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, ["bkt", "empty"]);
    assert_eq!(
        s.list_objects("bkt", "", ListFrom::Start, 100).unwrap(),
        objects
    );
    assert_eq!(s.list_uploads("bkt", "", None, 100).unwrap(), uploads);
    assert_eq!(s.used_bytes(), used);
    assert_eq!(s.head_object("bkt", "a/../b").unwrap().attrs, attrs);
    assert_eq!(get(&s, "bkt", "replaced"), b"new");
    assert_eq!(get(&s, "bkt", "big"), bytes(300_000, 1));
    assert_eq!(s.head_object("bkt", "mp").unwrap().parts, Some(2));
    assert_eq!(&get(&s, "bkt", "mp")[MIN_PART_SIZE as usize..], b"end");
    let id = &uploads[0].upload_id;
    let parts = s.list_parts("bkt", "pending", id, 0, 10).unwrap();
    assert_eq!((parts.len(), parts[0].number, parts[0].size), (1, 3, 10));
    // Writes after a reopen do not reuse a name: everything survives a
    // second reopen.
    put(&s, "bkt", "after", b"reopen");
    put(&s, "bkt", "big", b"smaller");
    drop(s);
    let s = DirStore::open(&t.root(), CAP).unwrap();
    assert_eq!(get(&s, "bkt", "after"), b"reopen");
    assert_eq!(get(&s, "bkt", "big"), b"smaller");
    assert_eq!(get(&s, "bkt", "replaced"), b"new");
    assert_eq!(
        s.list_objects("bkt", "", ListFrom::Start, 100)
            .unwrap()
            .len(),
        5
    );
    check_tree(&t);
}

#[test]
fn leftovers_are_removed_on_open() {
    let t = TempDir::new();
    let upload_id = {
        let s = DirStore::open(&t.root(), CAP).unwrap();
        s.create_bucket("bkt").unwrap();
        put(&s, "bkt", "k", b"kept");
        let u = s.create_upload("bkt", "m", ObjectAttrs::default()).unwrap();
        let mut w = s.put_part("bkt", "m", &u.upload_id, 1).unwrap();
        w.write(b"part").unwrap();
        w.commit().unwrap();
        u.upload_id
    };
    let updir = t.root().join("buckets/bkt/uploads").join(&upload_id);
    fs::write(t.root().join("tmp/0123456789abcdef.tmp"), b"half a write").unwrap();
    fs::create_dir(t.root().join("tmp/half-a-bucket")).unwrap();
    fs::write(objects_dir(&t).join("00000000deadbeef.data"), b"orphan").unwrap();
    fs::write(updir.join("part-1.00000000000000ff.data"), b"orphan part").unwrap();
    let s = DirStore::open(&t.root(), CAP).unwrap();
    assert_eq!(s.skipped_on_open(), 0);
    assert!(walk(&t.root().join("tmp")).is_empty());
    assert!(!objects_dir(&t).join("00000000deadbeef.data").exists());
    assert!(!updir.join("part-1.00000000000000ff.data").exists());
    assert_eq!(get(&s, "bkt", "k"), b"kept");
    assert_eq!(
        s.list_parts("bkt", "m", &upload_id, 0, 10).unwrap()[0].size,
        4
    );
    assert_eq!(s.used_bytes(), 8);
    check_tree(&t);
}

#[test]
fn corrupt_files_are_skipped_and_counted() {
    let t = TempDir::new();
    let upload_id = {
        let s = DirStore::open(&t.root(), CAP).unwrap();
        s.create_bucket("bkt").unwrap();
        put(&s, "bkt", "good", b"fine");
        let u = s.create_upload("bkt", "m", ObjectAttrs::default()).unwrap();
        u.upload_id
    };
    let objs = objects_dir(&t);
    fs::write(objs.join("0000000000000fff.meta"), b"{\"key\": \"tru").unwrap();
    fs::write(objs.join("0000000000000ffe.meta"), [0xff, 0xfe, 0, 1]).unwrap();
    fs::write(objs.join("0000000000000ffd.meta"), b"{\"key\":\"k\"}").unwrap();
    // A meta whose data file is missing.
    let meta = fs::read_dir(&objs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let v: Option<serde_json::Value> = serde_json::from_slice(&fs::read(p).unwrap()).ok();
            v.is_some_and(|v| v["key"] == "good")
        })
        .unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&meta).unwrap()).unwrap();
    v["data"] = "0000000000000ffc.data".into();
    v["key"] = "ghost".into();
    fs::write(objs.join("0000000000000ffc.meta"), v.to_string()).unwrap();
    fs::create_dir(t.root().join("buckets/nometa")).unwrap();
    fs::create_dir(t.root().join("buckets/NotABucket")).unwrap();
    let updir = t.root().join("buckets/bkt/uploads").join(&upload_id);
    fs::write(updir.join("part-2.meta"), b"[1,2,3]").unwrap();
    let s = DirStore::open(&t.root(), CAP).unwrap();
    assert_eq!(s.skipped_on_open(), 7);
    assert_eq!(get(&s, "bkt", "good"), b"fine");
    let keys: Vec<_> = s.list_objects("bkt", "", ListFrom::Start, 10).unwrap();
    assert_eq!(keys.len(), 1);
    let names: Vec<_> = s
        .list_buckets()
        .unwrap()
        .into_iter()
        .map(|b| b.name)
        .collect();
    assert_eq!(names, ["bkt"]);
    assert!(
        s.list_parts("bkt", "m", &upload_id, 0, 10)
            .unwrap()
            .is_empty()
    );
    // The store still works, and a new write may take a corrupt file's name.
    for i in 0..5 {
        put(&s, "bkt", &format!("new{i}"), b"v");
    }
    assert_eq!(
        s.list_objects("bkt", "", ListFrom::Start, 10)
            .unwrap()
            .len(),
        6
    );
}

#[test]
fn the_newer_of_two_metas_wins() {
    // What a crash between writing a new meta and removing the old one
    // leaves: two metas for one key.
    let t = TempDir::new();
    {
        let s = DirStore::open(&t.root(), CAP).unwrap();
        s.create_bucket("bkt").unwrap();
        put(&s, "bkt", "k", b"old");
    }
    let objs = objects_dir(&t);
    let meta = fs::read_dir(&objs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "meta"))
        .unwrap();
    let old_data = meta.with_extension("data");
    let mut v: serde_json::Value = serde_json::from_slice(&fs::read(&meta).unwrap()).unwrap();
    let seq = v["seq"].as_u64().unwrap() + 100;
    v["seq"] = seq.into();
    v["data"] = format!("{seq:016x}.data").into();
    v["size"] = 4.into();
    v["etag"] = super::md5_hex(b"new!").into();
    fs::write(objs.join(format!("{seq:016x}.data")), b"new!").unwrap();
    fs::write(objs.join(format!("{seq:016x}.meta")), v.to_string()).unwrap();
    let s = DirStore::open(&t.root(), CAP).unwrap();
    assert_eq!(get(&s, "bkt", "k"), b"new!");
    assert_eq!(
        s.head_object("bkt", "k").unwrap().etag,
        super::md5_hex(b"new!")
    );
    assert!(!meta.exists() && !old_data.exists());
    assert_eq!(s.used_bytes(), 4);
    put(&s, "bkt", "k2", b"after");
    drop(s);
    let s = DirStore::open(&t.root(), CAP).unwrap();
    assert_eq!(get(&s, "bkt", "k"), b"new!");
    assert_eq!(get(&s, "bkt", "k2"), b"after");
}

#[test]
fn a_dropped_writer_leaves_no_file() {
    let t = TempDir::new();
    let s = DirStore::open(&t.root(), CAP).unwrap();
    s.create_bucket("bkt").unwrap();
    let mut w = s.put_object("bkt", "k", ObjectAttrs::default()).unwrap();
    w.write(&bytes(1 << 20, 9)).unwrap();
    assert_eq!(walk(&t.root().join("tmp")).len(), 1);
    drop(w);
    assert!(walk(&t.root().join("tmp")).is_empty());
    let u = s.create_upload("bkt", "k", ObjectAttrs::default()).unwrap();
    let mut w = s.put_part("bkt", "k", &u.upload_id, 1).unwrap();
    w.write(b"abc").unwrap();
    drop(w);
    assert!(walk(&t.root().join("tmp")).is_empty());
    assert_eq!(s.used_bytes(), 0);
    // Aborting and deleting leave nothing of the upload or the bucket.
    s.abort_upload("bkt", "k", &u.upload_id).unwrap();
    assert!(walk(&t.root().join("buckets/bkt/uploads")).is_empty());
    s.delete_bucket("bkt").unwrap();
    assert_eq!(walk(&t.root()), ["buckets", "tmp"]);
}

#[test]
fn a_hostile_file_name_does_not_overflow_the_sequence() {
    let t = TempDir::new();
    {
        let s = DirStore::open(&t.root(), CAP).unwrap();
        s.create_bucket("bkt").unwrap();
    }
    fs::write(objects_dir(&t).join("ffffffffffffffff.meta"), b"junk").unwrap();
    let s = DirStore::open(&t.root(), CAP).unwrap();
    assert_eq!(s.skipped_on_open(), 1);
    put(&s, "bkt", "a", b"1");
    put(&s, "bkt", "b", b"2");
    assert_eq!(get(&s, "bkt", "a"), b"1");
    assert_eq!(get(&s, "bkt", "b"), b"2");
}
