//! Multipart upload over a real socket: create, parts out of order,
//! replace a part, list parts and uploads, complete with S3's checks and
//! its `-N` ETag, upload-part-copy, abort.

mod common;

use common::{client, pattern, req, start};
use md5::{Digest, Md5};

fn tag(xml: &str, t: &str) -> Option<String> {
    xml.split_once(&format!("<{t}>"))
        .and_then(|(_, r)| r.split_once(&format!("</{t}>")))
        .map(|(v, _)| v.to_string())
}

#[test]
fn multipart_upload_complete_and_checks() {
    let s = start(true, None);
    let mut c = client(&s, true);
    req(&mut c, "PUT", "/mpu", "", &[], b"");
    let init = req(
        &mut c,
        "POST",
        "/mpu/big",
        "uploads",
        &[("content-type", "video/x-test")],
        b"",
    );
    assert_eq!(init.status, 200, "{}", init.text());
    let id = tag(&init.text(), "UploadId").expect("an upload id");
    let parts: Vec<Vec<u8>> = vec![
        pattern(5 << 20, 10),
        pattern(5 << 20, 11),
        pattern(1234, 12),
    ];
    let mut etags = Vec::new();
    // Parts 2 and 3 first, then 1: order of arrival does not matter.
    for n in [2usize, 3, 1] {
        let r = req(
            &mut c,
            "PUT",
            "/mpu/big",
            &format!("partNumber={n}&uploadId={id}"),
            &[],
            &parts[n - 1],
        );
        assert_eq!(r.status, 200, "{}", r.text());
        etags.push((n, r.header("etag").unwrap().to_string()));
    }
    etags.sort();
    let lp = req(
        &mut c,
        "GET",
        "/mpu/big",
        &format!("uploadId={id}&max-parts=2"),
        &[],
        b"",
    )
    .text();
    assert_eq!(tag(&lp, "IsTruncated").as_deref(), Some("true"));
    assert_eq!(tag(&lp, "NextPartNumberMarker").as_deref(), Some("2"));
    let lu = req(&mut c, "GET", "/mpu", "uploads", &[], b"").text();
    assert_eq!(tag(&lu, "UploadId").as_deref(), Some(id.as_str()));

    let xml = |list: &[(usize, String)]| {
        let mut x = String::from("<CompleteMultipartUpload>");
        for (n, e) in list {
            x.push_str(&format!(
                "<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>"
            ));
        }
        x + "</CompleteMultipartUpload>"
    };
    let q = format!("uploadId={id}");
    let none = req(
        &mut c,
        "POST",
        "/mpu/big",
        &q,
        &[],
        b"<CompleteMultipartUpload></CompleteMultipartUpload>",
    );
    assert_eq!(
        (none.status, none.code().as_deref()),
        (400, Some("MalformedXML"))
    );
    let wrong_order = vec![etags[1].clone(), etags[0].clone()];
    let r = req(
        &mut c,
        "POST",
        "/mpu/big",
        &q,
        &[],
        xml(&wrong_order).as_bytes(),
    );
    assert_eq!(
        (r.status, r.code().as_deref()),
        (400, Some("InvalidPartOrder"))
    );
    let wrong_etag = vec![(1, "\"00000000000000000000000000000000\"".to_string())];
    let r = req(
        &mut c,
        "POST",
        "/mpu/big",
        &q,
        &[],
        xml(&wrong_etag).as_bytes(),
    );
    assert_eq!((r.status, r.code().as_deref()), (400, Some("InvalidPart")));
    let done = req(&mut c, "POST", "/mpu/big", &q, &[], xml(&etags).as_bytes());
    assert_eq!(done.status, 200, "{}", done.text());
    let mut h = Md5::new();
    for p in &parts {
        h.update(Md5::digest(p));
    }
    let want: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        tag(&done.text(), "ETag").as_deref(),
        Some(format!("&quot;{want}-3&quot;").as_str())
    );
    let g = req(&mut c, "GET", "/mpu/big", "", &[], b"");
    assert!(g.body == parts.concat(), "the object is its parts in order");
    assert_eq!(g.header("content-type"), Some("video/x-test"));
    let r = req(&mut c, "GET", "/mpu/big", &q, &[], b"");
    assert_eq!((r.status, r.code().as_deref()), (404, Some("NoSuchUpload")));
}

#[test]
fn small_parts_copy_parts_and_abort() {
    let s = start(false, None);
    let mut c = client(&s, false);
    req(&mut c, "PUT", "/mpq", "", &[], b"");
    let src = pattern(6 << 20, 20);
    req(&mut c, "PUT", "/mpq/src", "", &[], &src);
    let id = tag(
        &req(&mut c, "POST", "/mpq/o", "uploads", &[], b"").text(),
        "UploadId",
    )
    .unwrap();
    let p1 = req(
        &mut c,
        "PUT",
        "/mpq/o",
        &format!("partNumber=1&uploadId={id}"),
        &[],
        b"tiny",
    );
    let p2 = req(
        &mut c,
        "PUT",
        "/mpq/o",
        &format!("partNumber=2&uploadId={id}"),
        &[],
        b"end",
    );
    let x = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{}</ETag></Part><Part><PartNumber>2</PartNumber><ETag>{}</ETag></Part></CompleteMultipartUpload>",
        p1.header("etag").unwrap(),
        p2.header("etag").unwrap()
    );
    let r = req(
        &mut c,
        "POST",
        "/mpq/o",
        &format!("uploadId={id}"),
        &[],
        x.as_bytes(),
    );
    assert_eq!(
        (r.status, r.code().as_deref()),
        (400, Some("EntityTooSmall"))
    );
    // UploadPartCopy of a range replaces part 1 with 5 MiB of the source.
    let cp = req(
        &mut c,
        "PUT",
        "/mpq/o",
        &format!("partNumber=1&uploadId={id}"),
        &[
            ("x-amz-copy-source", "/mpq/src"),
            ("x-amz-copy-source-range", "bytes=1048576-6291455"),
        ],
        b"",
    );
    assert_eq!(cp.status, 200, "{}", cp.text());
    assert!(cp.text().contains("<CopyPartResult"), "{}", cp.text());
    let etag1 = tag(&cp.text(), "ETag").unwrap().replace("&quot;", "\"");
    let x = format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag1}</ETag></Part><Part><PartNumber>2</PartNumber><ETag>{}</ETag></Part></CompleteMultipartUpload>",
        p2.header("etag").unwrap()
    );
    let r = req(
        &mut c,
        "POST",
        "/mpq/o",
        &format!("uploadId={id}"),
        &[],
        x.as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let g = req(&mut c, "GET", "/mpq/o", "", &[], b"");
    assert!(g.body == [&src[1 << 20..6 << 20], b"end"].concat());
    // Abort.
    let id2 = tag(
        &req(&mut c, "POST", "/mpq/p", "uploads", &[], b"").text(),
        "UploadId",
    )
    .unwrap();
    req(
        &mut c,
        "PUT",
        "/mpq/p",
        &format!("partNumber=1&uploadId={id2}"),
        &[],
        b"x",
    );
    assert_eq!(
        req(
            &mut c,
            "DELETE",
            "/mpq/p",
            &format!("uploadId={id2}"),
            &[],
            b""
        )
        .status,
        204
    );
    let r = req(
        &mut c,
        "PUT",
        "/mpq/p",
        &format!("partNumber=2&uploadId={id2}"),
        &[],
        b"x",
    );
    assert_eq!((r.status, r.code().as_deref()), (404, Some("NoSuchUpload")));
    let bad = req(
        &mut c,
        "PUT",
        "/mpq/p",
        &format!("partNumber=10001&uploadId={id2}"),
        &[],
        b"x",
    );
    assert_eq!(bad.status, 400);
}
