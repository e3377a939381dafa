//! Writers against AWS's example responses, escaping, and the readers on
//! AWS's example requests and on hostile bodies.

use super::read::{MAX_DELETE_OBJECTS, MAX_PARTS};
use super::write::*;
use super::*;
use proptest::prelude::*;

/// AWS's examples are indented; S3 writes no whitespace between elements.
fn squeeze(s: &str) -> String {
    let mut out = String::new();
    for line in s.lines() {
        out.push_str(line.trim());
    }
    out
}

fn doc(f: impl FnOnce(&mut String)) -> String {
    let mut s = String::new();
    f(&mut s);
    let body = s
        .strip_prefix(XML_DECL)
        .expect("every body starts with the declaration");
    body.to_owned()
}

fn t(ms: i64) -> Timestamp {
    Timestamp::from_unix_millis(ms)
}

#[test]
fn timestamps_are_iso8601_with_milliseconds() {
    assert_eq!(t(0).to_string(), "1970-01-01T00:00:00.000Z");
    // AWS's ListObjectsV2 example: 2009-10-12T17:50:30.000Z.
    assert_eq!(t(1_255_369_830_000).to_string(), "2009-10-12T17:50:30.000Z");
    assert_eq!(t(951_782_400_123).to_string(), "2000-02-29T00:00:00.123Z");
    assert_eq!(t(-1).to_string(), "1969-12-31T23:59:59.999Z");
    // Never panics at the extremes.
    let _ = t(i64::MIN).to_string();
    let _ = t(i64::MAX).to_string();
}

#[test]
fn error_matches_aws_rest_error_example() {
    // docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html
    let aws = r#"<Error>
  <Code>NoSuchKey</Code>
  <Message>The resource you requested does not exist</Message>
  <Resource>/mybucket/myfoto.jpg</Resource>
  <RequestId>4442587FB7D0A2F9</RequestId>
</Error>"#;
    let e = ErrorDoc {
        code: "NoSuchKey".into(),
        message: "The resource you requested does not exist".into(),
        resource: Some("/mybucket/myfoto.jpg".into()),
        request_id: Some("4442587FB7D0A2F9".into()),
        extra: vec![],
    };
    assert_eq!(doc(|s| e.write_into(s)), squeeze(aws));
    let e = ErrorDoc {
        code: "NoSuchBucket".into(),
        message: "m".into(),
        extra: vec![("BucketName", "a&b".into())],
        ..ErrorDoc::default()
    };
    assert_eq!(
        doc(|s| e.write_into(s)),
        "<Error><Code>NoSuchBucket</Code><Message>m</Message><BucketName>a&amp;b</BucketName></Error>"
    );
}

#[test]
fn list_objects_v2_matches_aws_example() {
    // API_ListObjectsV2 "Example 1: Listing keys", as the page gives it
    // (ETag quotes as &quot;, the empty Prefix as <Prefix/>).
    let aws = r#"<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
    <Name>bucket</Name>
    <Prefix/>
    <KeyCount>205</KeyCount>
    <MaxKeys>1000</MaxKeys>
    <IsTruncated>false</IsTruncated>
    <Contents>
        <Key>my-image.jpg</Key>
        <LastModified>2009-10-12T17:50:30.000Z</LastModified>
        <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>
        <Size>434234</Size>
        <StorageClass>STANDARD</StorageClass>
    </Contents>
</ListBucketResult>"#;
    let r = ListBucketResult {
        name: "bucket".into(),
        prefix: String::new(),
        delimiter: None,
        max_keys: 1000,
        is_truncated: false,
        encoding_type: None,
        version: ListVersion::V2 {
            key_count: 205,
            continuation_token: None,
            next_continuation_token: None,
            start_after: None,
        },
        contents: vec![ObjectEntry {
            key: "my-image.jpg".into(),
            last_modified: t(1_255_369_830_000),
            etag: "fba9dede5f27731c9771645a39863328".into(),
            size: 434_234,
            storage_class: "STANDARD".into(),
            owner: None,
        }],
        common_prefixes: vec![],
    };
    assert_eq!(doc(|s| r.write_into(s)), squeeze(aws));
}

#[test]
fn list_objects_v1_and_v2_tokens_and_prefixes() {
    let mut r = ListBucketResult {
        name: "b".into(),
        prefix: "photos/".into(),
        delimiter: Some("/".into()),
        max_keys: 2,
        is_truncated: true,
        encoding_type: Some("url".into()),
        version: ListVersion::V1 {
            marker: String::new(),
            next_marker: Some("photos/b".into()),
        },
        contents: vec![ObjectEntry {
            key: "photos/a".into(),
            owner: Some(Owner {
                id: "75aa".into(),
                display_name: Some("me".into()),
            }),
            storage_class: "STANDARD".into(),
            ..ObjectEntry::default()
        }],
        common_prefixes: vec!["photos/2006/".into()],
    };
    let v1 = doc(|s| r.write_into(s));
    assert!(v1.contains("<Prefix>photos/</Prefix><Marker/><NextMarker>photos/b</NextMarker><MaxKeys>2</MaxKeys><Delimiter>/</Delimiter><IsTruncated>true</IsTruncated><EncodingType>url</EncodingType>"), "{v1}");
    assert!(v1.contains("<Size>0</Size><Owner><ID>75aa</ID><DisplayName>me</DisplayName></Owner><StorageClass>STANDARD</StorageClass>"), "{v1}");
    assert!(v1.ends_with(
        "<CommonPrefixes><Prefix>photos/2006/</Prefix></CommonPrefixes></ListBucketResult>"
    ));
    r.version = ListVersion::V2 {
        key_count: 1,
        continuation_token: Some("c1".into()),
        next_continuation_token: Some("c2".into()),
        start_after: Some("a".into()),
    };
    let v2 = doc(|s| r.write_into(s));
    assert!(v2.contains("<ContinuationToken>c1</ContinuationToken><NextContinuationToken>c2</NextContinuationToken><StartAfter>a</StartAfter><KeyCount>1</KeyCount>"), "{v2}");
    assert!(!v2.contains("Marker"));
}

#[test]
fn keys_are_escaped_and_unicode_kept() {
    assert_eq!(escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
    assert_eq!(escape("caf\u{e9}/\u{1f600}"), "caf\u{e9}/\u{1f600}");
    assert_eq!(
        escape("a\tb\nc\rd\u{1}\u{0}\u{7f}"),
        "a&#x9;b&#xA;c&#xD;d&#x1;&#x0;&#x7F;"
    );
    let r = DeleteResult {
        deleted: vec![DeletedEntry {
            key: "<script>&\u{e9}".into(),
            version_id: None,
        }],
        errors: vec![],
    };
    let d = doc(|s| r.write_into(s));
    assert!(d.contains("<Key>&lt;script&gt;&amp;\u{e9}</Key>"), "{d}");
    assert!(!d.contains("<script>"));
}

#[test]
fn delete_result_matches_aws_example() {
    // API_DeleteObjects, "Sample Response".
    let aws = r#"<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Deleted>
    <Key>sample1.txt</Key>
  </Deleted>
  <Error>
    <Key>sample2.txt</Key>
    <Code>AccessDenied</Code>
    <Message>Access Denied</Message>
  </Error>
</DeleteResult>"#;
    let r = DeleteResult {
        deleted: vec![DeletedEntry {
            key: "sample1.txt".into(),
            version_id: None,
        }],
        errors: vec![DeleteErrorEntry {
            key: "sample2.txt".into(),
            version_id: None,
            code: "AccessDenied".into(),
            message: "Access Denied".into(),
        }],
    };
    assert_eq!(doc(|s| r.write_into(s)), squeeze(aws));
}

#[test]
fn multipart_results_match_aws_examples() {
    // API_CreateMultipartUpload sample response.
    let aws = r#"<InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>example-bucket</Bucket>
  <Key>example-object</Key>
  <UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>
</InitiateMultipartUploadResult>"#;
    let r = InitiateMultipartUploadResult {
        bucket: "example-bucket".into(),
        key: "example-object".into(),
        upload_id: "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA".into(),
    };
    assert_eq!(doc(|s| r.write_into(s)), squeeze(aws));
    // API_CompleteMultipartUpload sample response; the page writes the
    // ETag's quotes raw, this writer as &quot; (the same text to a parser).
    let aws = r#"<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Location>http://Example-Bucket.s3.region.amazonaws.com/Example-Object</Location>
  <Bucket>Example-Bucket</Bucket>
  <Key>Example-Object</Key>
  <ETag>&quot;3858f62230ac3c915f300c664312c11f-9&quot;</ETag>
</CompleteMultipartUploadResult>"#;
    let r = CompleteMultipartUploadResult {
        location: "http://Example-Bucket.s3.region.amazonaws.com/Example-Object".into(),
        bucket: "Example-Bucket".into(),
        key: "Example-Object".into(),
        etag: "3858f62230ac3c915f300c664312c11f-9".into(),
    };
    assert_eq!(doc(|s| r.write_into(s)), squeeze(aws));
}

#[test]
fn copy_location_buckets_parts_uploads() {
    let c = CopyObjectResult {
        last_modified: t(1_256_769_120_000),
        etag: "9b2cf535f27731c974343645a3985328".into(),
        part: false,
    };
    assert_eq!(
        doc(|s| c.write_into(s)),
        format!(
            "<CopyObjectResult xmlns=\"{S3_NS}\"><LastModified>2009-10-28T22:32:00.000Z</LastModified><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag></CopyObjectResult>"
        )
    );
    let p = CopyObjectResult { part: true, ..c };
    assert_eq!(
        doc(|s| p.write_into(s)),
        format!(
            "<CopyPartResult xmlns=\"{S3_NS}\"><LastModified>2009-10-28T22:32:00.000Z</LastModified><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag></CopyPartResult>"
        )
    );
    assert_eq!(
        doc(|s| LocationConstraint(None).write_into(s)),
        format!("<LocationConstraint xmlns=\"{S3_NS}\"/>")
    );
    assert_eq!(
        doc(|s| LocationConstraint(Some("EU".into())).write_into(s)),
        format!("<LocationConstraint xmlns=\"{S3_NS}\">EU</LocationConstraint>")
    );
    let owner = Owner {
        id: "bcaf1ffd86f461ca5fb16fd081034f".into(),
        display_name: Some("webfile".into()),
    };
    let b = ListAllMyBucketsResult {
        owner: owner.clone(),
        buckets: vec![BucketEntry {
            name: "quotes".into(),
            creation_date: t(1_141_374_384_000),
        }],
    };
    assert_eq!(
        doc(|s| b.write_into(s)),
        format!(
            "<ListAllMyBucketsResult xmlns=\"{S3_NS}\"><Owner><ID>bcaf1ffd86f461ca5fb16fd081034f</ID><DisplayName>webfile</DisplayName></Owner><Buckets><Bucket><Name>quotes</Name><CreationDate>2006-03-03T08:26:24.000Z</CreationDate></Bucket></Buckets></ListAllMyBucketsResult>"
        )
    );
    let p = ListPartsResult {
        bucket: "b".into(),
        key: "k".into(),
        upload_id: "u".into(),
        owner: owner.clone(),
        storage_class: "STANDARD".into(),
        part_number_marker: 1,
        next_part_number_marker: 3,
        max_parts: 2,
        is_truncated: true,
        parts: vec![PartEntry {
            part_number: 2,
            last_modified: t(0),
            etag: "7778aef83f66abc1fa1e8477f296d394".into(),
            size: 10_485_760,
        }],
    };
    let d = doc(|s| p.write_into(s));
    assert!(d.contains("<PartNumberMarker>1</PartNumberMarker><NextPartNumberMarker>3</NextPartNumberMarker><MaxParts>2</MaxParts><IsTruncated>true</IsTruncated><Part><PartNumber>2</PartNumber><LastModified>1970-01-01T00:00:00.000Z</LastModified><ETag>&quot;7778aef83f66abc1fa1e8477f296d394&quot;</ETag><Size>10485760</Size></Part></ListPartsResult>"), "{d}");
    assert!(d.contains("<Initiator><ID>bcaf1ffd86f461ca5fb16fd081034f</ID><DisplayName>webfile</DisplayName></Initiator><Owner>"));
    let u = ListMultipartUploadsResult {
        bucket: "b".into(),
        max_uploads: 3,
        uploads: vec![UploadEntry {
            key: "my-movie.m2ts".into(),
            upload_id: "VXBsb2FkIElEIGZvciBlbHZpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA".into(),
            owner,
            storage_class: "STANDARD".into(),
            initiated: t(1_289_385_426_000),
        }],
        ..ListMultipartUploadsResult::default()
    };
    let d = doc(|s| u.write_into(s));
    assert!(d.starts_with(&format!("<ListMultipartUploadsResult xmlns=\"{S3_NS}\"><Bucket>b</Bucket><KeyMarker/><UploadIdMarker/><NextKeyMarker/><NextUploadIdMarker/><MaxUploads>3</MaxUploads><IsTruncated>false</IsTruncated><Upload><Key>my-movie.m2ts</Key>")), "{d}");
    assert!(d.contains("<StorageClass>STANDARD</StorageClass><Initiated>2010-11-10T10:37:06.000Z</Initiated></Upload></ListMultipartUploadsResult>"), "{d}");
}

#[test]
fn complete_multipart_upload_reads_aws_example() {
    // API_CompleteMultipartUpload sample request (three parts).
    let body = r#"<CompleteMultipartUpload>
  <Part>
    <PartNumber>1</PartNumber>
    <ETag>"a54357aff0632cce46d942af68356b38"</ETag>
  </Part>
  <Part>
    <PartNumber>2</PartNumber>
    <ETag>"0c78aef83f66abc1fa1e8477f296d394"</ETag>
  </Part>
  <Part>
    <PartNumber>3</PartNumber>
    <ETag>"acbd18db4cc2f85cedef654fccc4a4d8"</ETag>
  </Part>
</CompleteMultipartUpload>"#;
    let c = CompleteMultipartUpload::parse(body).unwrap();
    assert_eq!(c.parts.len(), 3);
    assert_eq!(c.parts[1].part_number, 2);
    assert_eq!(c.parts[1].etag, "\"0c78aef83f66abc1fa1e8477f296d394\"");
    // The SDKs' form: declaration, namespace, &quot; entities, a checksum.
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><CompleteMultipartUpload xmlns=\"{S3_NS}\"><Part><ChecksumCRC32>AAAAAA==</ChecksumCRC32><ETag>&quot;e1&quot;</ETag><PartNumber>10000</PartNumber></Part></CompleteMultipartUpload>"
    );
    let c = CompleteMultipartUpload::parse(&body).unwrap();
    assert_eq!(
        c.parts,
        vec![CompletedPart {
            part_number: 10000,
            etag: "\"e1\"".into()
        }]
    );
}

#[test]
fn delete_reads_aws_example_and_entities() {
    // API_DeleteObjects sample request.
    let body = r#"<Delete>
  <Object>
    <Key>sample1.txt</Key>
  </Object>
  <Object>
    <Key>sample2.txt</Key>
    <VersionId>OYcLXagmS.WaD..oyH4KRguB95_YhLs7</VersionId>
  </Object>
  <Quiet>true</Quiet>
</Delete>"#;
    let d = Delete::parse(body).unwrap();
    assert!(d.quiet);
    assert_eq!(
        d.objects[0],
        ObjectIdentifier {
            key: "sample1.txt".into(),
            version_id: None
        }
    );
    assert_eq!(
        d.objects[1].version_id.as_deref(),
        Some("OYcLXagmS.WaD..oyH4KRguB95_YhLs7")
    );
    let d = Delete::parse(
        "<Delete><Object><Key>a&amp;&lt;&gt;&quot;&apos;&#65;&#x1F600; b</Key></Object></Delete>",
    )
    .unwrap();
    assert_eq!(d.objects[0].key, "a&<>\"'A\u{1f600} b");
    assert!(!d.quiet);
}

fn malformed(r: Result<impl std::fmt::Debug, XmlError>) -> XmlError {
    let e = r.unwrap_err();
    assert_eq!((e.s3_code(), e.http_status()), ("MalformedXML", 400));
    e
}

#[test]
fn hostile_bodies_are_malformed_xml() {
    for body in [
        "",
        "<Delete>",
        "<Delete><Object><Key>a</Key></Object>",
        "<Delete><Object><Key>a</Object></Key></Delete>",
        "<Delete><Object><Key>a</Key></Object></Delete><Delete/>",
        "junk<Delete/>",
        "<Delete><Object><Key>&bogus;</Key></Object></Delete>",
        "<Delete><Object><Key>&#0;</Key></Object></Delete>",
        "<Delete><Object><Key>&#xD800;</Key></Object></Delete>",
        "<Delete><Object><Key>&#99999999999999999999;</Key></Object></Delete>",
        "<Delete><Object><Key>&#x110000;</Key></Object></Delete>",
        "<Delete><Object><Key>&amp</Key></Object></Delete>",
        "<!DOCTYPE d [<!ENTITY x \"y\">]><Delete><Object><Key>&x;</Key></Object></Delete>",
        "<Delete><!-- c --><Object><Key>a</Key></Object></Delete>",
        "<Delete><Object><Key><![CDATA[a]]></Key></Object></Delete>",
        "<Delete><Object><Key>a</Key></Object><Quiet>yes</Quiet></Delete>",
        "<Delete><Object><Key></Key></Object></Delete>",
        "<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>",
        "<Delete><Object>text<Key>a</Key></Object></Delete>",
        "<Delete><Bogus/></Delete>",
        "<Delete></Delete>",
        "<Delete a=b><Object><Key>a</Key></Object></Delete>",
        "<Delete><Object><Key>a>b</Key></Object></Delete>",
        // Raw NUL and C0 controls (found by fuzz target s3_token_xml: the
        // writer escapes them as references the reader refuses).
        "<Delete><Object><Key>a\u{0}b</Key></Object></Delete>",
        "<Delete><Object><Key>a\u{1}b</Key></Object></Delete>",
        "<Delete><Object><Key>a\u{ffff}b</Key></Object></Delete>",
    ] {
        malformed(Delete::parse(body));
    }
    for body in [
        "<CompleteMultipartUpload><Part><PartNumber>0</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><ETag>e</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>",
        "<Delete><Object><Key>a</Key></Object></Delete>",
    ] {
        malformed(CompleteMultipartUpload::parse(body));
    }
}

#[test]
fn deep_nesting_is_refused_by_depth_not_stack() {
    let body = format!("{}{}", "<a>".repeat(100_000), "</a>".repeat(100_000));
    assert_eq!(
        malformed(Delete::parse(&body)),
        XmlError::TooDeep {
            at: 12,
            max: read::MAX_DEPTH
        }
    );
}

#[test]
fn counts_and_sizes_are_capped() {
    let part = "<Part><PartNumber>1</PartNumber><ETag>e</ETag></Part>";
    let ok = format!(
        "<CompleteMultipartUpload>{}</CompleteMultipartUpload>",
        part.repeat(MAX_PARTS)
    );
    assert_eq!(
        CompleteMultipartUpload::parse(&ok).unwrap().parts.len(),
        MAX_PARTS
    );
    let over = format!(
        "<CompleteMultipartUpload>{}</CompleteMultipartUpload>",
        part.repeat(MAX_PARTS + 1)
    );
    assert_eq!(
        malformed(CompleteMultipartUpload::parse(&over)),
        XmlError::TooMany {
            name: "Part",
            max: MAX_PARTS
        }
    );
    let obj = "<Object><Key>k</Key></Object>";
    let over = format!("<Delete>{}</Delete>", obj.repeat(MAX_DELETE_OBJECTS + 1));
    assert_eq!(
        malformed(Delete::parse(&over)),
        XmlError::TooMany {
            name: "Object",
            max: MAX_DELETE_OBJECTS
        }
    );
    let huge = " ".repeat(read::MAX_DELETE_BODY + 1);
    assert!(matches!(
        malformed(Delete::parse(&huge)),
        XmlError::TooLarge { .. }
    ));
    let long_key = format!(
        "<Delete><Object><Key>{}</Key></Object></Delete>",
        "k".repeat(1025)
    );
    assert!(matches!(
        malformed(Delete::parse(&long_key)),
        XmlError::Value { name: "Key", .. }
    ));
}

#[test]
fn written_keys_read_back() {
    // What the writer escapes, the reader decodes (tab/LF/CR and unicode too).
    let key = "a&b<c>d\"e'f\tg\nh\ri\u{e9}\u{1f600}";
    let mut body = String::from("<Delete><Object><Key>");
    escape_into(&mut body, key);
    body.push_str("</Key></Object></Delete>");
    assert_eq!(Delete::parse(&body).unwrap().objects[0].key, key);
}

proptest! {
    #[test]
    fn readers_never_panic(s in ".{0,200}") {
        let _ = Delete::parse(&s);
        let _ = CompleteMultipartUpload::parse(&s);
    }

    #[test]
    fn readers_never_panic_on_xml_shaped_bodies(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("<Delete>"), Just("</Delete>"), Just("<Object>"), Just("</Object>"),
                Just("<Key>"), Just("</Key>"), Just("<Quiet>"), Just("true"), Just("</Quiet>"),
                Just("<CompleteMultipartUpload>"), Just("</CompleteMultipartUpload>"),
                Just("<Part>"), Just("</Part>"), Just("<PartNumber>"), Just("1"), Just("</PartNumber>"),
                Just("<ETag>"), Just("</ETag>"), Just("&amp;"), Just("&#x"), Just(";"), Just("<"),
                Just(">"), Just("/>"), Just(" a='b'"), Just("\u{e9}"), Just("<?xml?>"),
            ],
            0..40,
        )
    ) {
        let s: String = parts.concat();
        let _ = Delete::parse(&s);
        let _ = CompleteMultipartUpload::parse(&s);
    }

    #[test]
    fn any_key_escapes_and_reads_back(key in "[^\u{0}-\u{8}\u{b}\u{c}\u{e}-\u{1f}\u{fffe}\u{ffff}]{1,100}") {
        let mut body = String::from("<Delete><Object><Key>");
        escape_into(&mut body, &key);
        body.push_str("</Key></Object></Delete>");
        if key.len() <= read::MAX_KEY_LEN {
            prop_assert_eq!(&Delete::parse(&body).unwrap().objects[0].key, &key);
        }
    }
}
