//! Buckets and listings over a real socket: create/head/delete (non-empty
//! refused), location, ListObjects V1 and V2 with prefix, delimiter,
//! max-keys, continuation, start-after and URL encoding, over 2,500 keys.

mod common;

use common::{client, req, start};

fn values(xml: &str, tag: &str) -> Vec<String> {
    let (o, c) = (format!("<{tag}>"), format!("</{tag}>"));
    xml.split(&o)
        .skip(1)
        .filter_map(|s| s.split_once(&c).map(|(v, _)| v.to_string()))
        .collect()
}

#[test]
fn bucket_life_cycle() {
    let s = start(true, None);
    let mut c = client(&s, true);
    assert_eq!(req(&mut c, "PUT", "/life", "", &[], b"").status, 200);
    let again = req(&mut c, "PUT", "/life", "", &[], b"");
    assert_eq!(
        (again.status, again.code().as_deref()),
        (409, Some("BucketAlreadyOwnedByYou"))
    );
    let bad = req(&mut c, "PUT", "/Bad_Name", "", &[], b"");
    assert_eq!(
        (bad.status, bad.code().as_deref()),
        (400, Some("InvalidBucketName"))
    );
    assert_eq!(req(&mut c, "HEAD", "/life", "", &[], b"").status, 200);
    assert_eq!(req(&mut c, "HEAD", "/nope", "", &[], b"").status, 404);
    let loc = req(&mut c, "GET", "/life", "location", &[], b"");
    assert!(loc.text().contains("<LocationConstraint"), "{}", loc.text());
    let list = req(&mut c, "GET", "/", "", &[], b"");
    assert_eq!(values(&list.text(), "Name"), vec!["life"]);
    req(&mut c, "PUT", "/life/k", "", &[], b"x");
    let ne = req(&mut c, "DELETE", "/life", "", &[], b"");
    assert_eq!(
        (ne.status, ne.code().as_deref()),
        (409, Some("BucketNotEmpty"))
    );
    req(&mut c, "DELETE", "/life/k", "", &[], b"");
    assert_eq!(req(&mut c, "DELETE", "/life", "", &[], b"").status, 204);
    assert_eq!(req(&mut c, "HEAD", "/life", "", &[], b"").status, 404);
}

#[test]
fn listing_2500_keys_with_delimiter_and_pagination() {
    let s = start(false, None);
    let mut c = client(&s, false);
    req(&mut c, "PUT", "/many", "", &[], b"");
    let mut keys = Vec::new();
    for d in 0..5 {
        for i in 0..500 {
            keys.push(format!("dir{d}/file{i:04}"));
        }
    }
    keys.push("top.txt".to_string());
    for k in &keys {
        s.store
            .put_object("many", k, Default::default())
            .unwrap()
            .commit()
            .unwrap();
    }
    keys.sort();
    // V2, no delimiter, pages of 1000 (the default).
    let mut got = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let q = match &token {
            Some(t) => format!("list-type=2&continuation-token={t}"),
            None => "list-type=2".to_string(),
        };
        let r = req(&mut c, "GET", "/many", &q, &[], b"");
        assert_eq!(r.status, 200);
        let t = r.text();
        got.extend(values(&t, "Key"));
        pages += 1;
        token = values(&t, "NextContinuationToken").pop();
        assert_eq!(values(&t, "IsTruncated")[0] == "true", token.is_some());
        if token.is_none() {
            break;
        }
    }
    assert_eq!((got.len(), pages), (2501, 3));
    assert_eq!(got, keys);
    // A delimiter rolls up the five directories.
    let r = req(
        &mut c,
        "GET",
        "/many",
        "list-type=2&delimiter=%2F",
        &[],
        b"",
    )
    .text();
    assert_eq!(
        values(&r, "Prefix")
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>(),
        vec!["dir0/", "dir1/", "dir2/", "dir3/", "dir4/"]
    );
    assert_eq!(values(&r, "Key"), vec!["top.txt"]);
    assert_eq!(values(&r, "KeyCount"), vec!["6"]);
    // Prefix and max-keys with V1 markers.
    let r = req(
        &mut c,
        "GET",
        "/many",
        "prefix=dir3%2F&max-keys=7&marker=dir3%2Ffile0100",
        &[],
        b"",
    )
    .text();
    assert_eq!(
        values(&r, "Key"),
        (101..108)
            .map(|i| format!("dir3/file{i:04}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(values(&r, "IsTruncated"), vec!["true"]);
    // Common prefixes count toward max-keys, and pagination resumes after them.
    let r = req(
        &mut c,
        "GET",
        "/many",
        "list-type=2&delimiter=%2F&max-keys=2",
        &[],
        b"",
    )
    .text();
    let tok = values(&r, "NextContinuationToken").pop().expect("a token");
    let r2 = req(
        &mut c,
        "GET",
        "/many",
        &format!("list-type=2&delimiter=%2F&max-keys=2&continuation-token={tok}"),
        &[],
        b"",
    )
    .text();
    assert_eq!(
        values(&r2, "Prefix")
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>(),
        vec!["dir2/", "dir3/"]
    );
    // start-after.
    let r = req(
        &mut c,
        "GET",
        "/many",
        "list-type=2&start-after=dir4%2Ffile0497",
        &[],
        b"",
    )
    .text();
    assert_eq!(
        values(&r, "Key"),
        vec!["dir4/file0498", "dir4/file0499", "top.txt"]
    );
    let bad = req(
        &mut c,
        "GET",
        "/many",
        "list-type=2&continuation-token=%21%21",
        &[],
        b"",
    );
    assert_eq!(
        (bad.status, bad.code().as_deref()),
        (400, Some("InvalidArgument"))
    );
}

#[test]
fn url_encoding_type() {
    let s = start(false, None);
    let mut c = client(&s, false);
    req(&mut c, "PUT", "/enc", "", &[], b"");
    req(&mut c, "PUT", "/enc/a%20b%26c", "", &[], b"x");
    let r = req(
        &mut c,
        "GET",
        "/enc",
        "list-type=2&encoding-type=url",
        &[],
        b"",
    )
    .text();
    assert_eq!(values(&r, "Key"), vec!["a%20b%26c"]);
    assert_eq!(values(&r, "EncodingType"), vec!["url"]);
    let plain = req(&mut c, "GET", "/enc", "list-type=2", &[], b"").text();
    assert_eq!(values(&plain, "Key"), vec!["a b&amp;c"]);
}

#[test]
fn versions_and_acls_of_a_store_without_either() {
    let s = start(false, None);
    let mut c = client(&s, false);
    req(&mut c, "PUT", "/ver", "", &[], b"");
    for k in ["a", "b/1", "b/2", "c"] {
        req(&mut c, "PUT", &format!("/ver/{k}"), "", &[], k.as_bytes());
    }
    let r = req(
        &mut c,
        "GET",
        "/ver",
        "versions&delimiter=%2F&max-keys=2",
        &[],
        b"",
    )
    .text();
    assert_eq!(values(&r, "Key"), vec!["a"]);
    assert_eq!(values(&r, "VersionId"), vec!["null"]);
    assert_eq!(values(&r, "IsTruncated"), vec!["true"]);
    let next = values(&r, "NextKeyMarker").pop().expect("a next marker");
    assert_eq!(next, "b/");
    let r = req(
        &mut c,
        "GET",
        "/ver",
        &format!("versions&delimiter=%2F&key-marker={}", "b%2F"),
        &[],
        b"",
    )
    .text();
    assert_eq!(values(&r, "Key"), vec!["c"]);
    let acl = req(&mut c, "GET", "/ver/a", "acl", &[], b"");
    assert_eq!(
        (acl.status, values(&acl.text(), "Permission")),
        (200, vec!["FULL_CONTROL".to_string()])
    );
    assert_eq!(req(&mut c, "GET", "/ver/none", "acl", &[], b"").status, 404);
    assert_eq!(
        req(
            &mut c,
            "PUT",
            "/ver",
            "acl",
            &[("x-amz-acl", "private")],
            b""
        )
        .status,
        200
    );
    let public = req(
        &mut c,
        "PUT",
        "/ver",
        "acl",
        &[("x-amz-acl", "public-read")],
        b"",
    );
    assert_eq!(
        (public.status, public.code().as_deref()),
        (501, Some("NotImplemented"))
    );
}
