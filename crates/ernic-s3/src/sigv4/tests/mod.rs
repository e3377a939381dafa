//! AWS's published SigV4 S3 examples (exact expected signatures), the refusals a server
//! must make, and properties that random input never panics the verifier or the decoder.

use super::chunked::{ChunkDecoder, ChunkError, MAX_CHUNK_HEADER_LEN};
use super::*;
use proptest::prelude::*;

const AKID: &str = "AKIAIOSFODNN7EXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const CREDS: &[(&str, &str)] = &[(AKID, SECRET)];
/// 20130524T000000Z.
const T0: u64 = 1_369_353_600;
const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn auth(signed: &str, sig: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential={AKID}/20130524/us-east-1/s3/aws4_request,SignedHeaders={signed},Signature={sig}"
    )
}

fn check(
    method: &str,
    path: &str,
    query: &str,
    headers: &[(&str, &str)],
) -> Result<Verified, SigV4Error> {
    verify(
        &Request {
            method,
            raw_path: path,
            raw_query: query,
            headers,
        },
        CREDS,
        T0,
    )
}

// "Signature Calculations for the Authorization Header: Transferring Payload in a Single
// Chunk", example "GET Object".
const GET_SIG: &str = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
const GET_SIGNED: &str = "host;range;x-amz-content-sha256;x-amz-date";

fn get_object_headers(a: &str) -> Vec<(&str, &str)> {
    vec![
        ("Host", "examplebucket.s3.amazonaws.com"),
        ("Authorization", a),
        ("Range", "bytes=0-9"),
        ("x-amz-content-sha256", EMPTY),
        ("x-amz-date", "20130524T000000Z"),
    ]
}

#[test]
fn aws_get_object_example_verifies() {
    let a = auth(GET_SIGNED, GET_SIG);
    let v = check("GET", "/test.txt", "", &get_object_headers(&a)).unwrap();
    assert_eq!(v.access_key, AKID);
    assert_eq!(v.region, "us-east-1");
    assert_eq!(
        v.payload,
        PayloadMode::Sha256(canonical::decode_hex32(EMPTY.as_bytes()).unwrap())
    );
}

#[test]
fn aws_put_object_example_verifies() {
    let a = auth(
        "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
        "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
    );
    let body_hash = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072";
    assert_eq!(
        canonical::hex(&canonical::sha256(b"Welcome to Amazon S3.")),
        body_hash
    );
    let h = [
        ("Host", "examplebucket.s3.amazonaws.com"),
        ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
        ("Authorization", a.as_str()),
        ("x-amz-date", "20130524T000000Z"),
        ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ("x-amz-content-sha256", body_hash),
    ];
    let v = check("PUT", "/test$file.text", "", &h).unwrap();
    assert_eq!(v.access_key, AKID);
    // The same request with the path sent encoded canonicalises to the same URI.
    check("PUT", "/test%24file.text", "", &h).unwrap();
}

fn bucket_get(query: &str, sig: &str) -> Result<Verified, SigV4Error> {
    let a = auth("host;x-amz-content-sha256;x-amz-date", sig);
    let h = [
        ("Host", "examplebucket.s3.amazonaws.com"),
        ("Authorization", a.as_str()),
        ("x-amz-date", "20130524T000000Z"),
        ("x-amz-content-sha256", EMPTY),
    ];
    check("GET", "/", query, &h)
}

const LIFECYCLE_SIG: &str = "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543";
const LIST_SIG: &str = "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7";

#[test]
fn aws_get_bucket_lifecycle_example_verifies() {
    bucket_get("lifecycle", LIFECYCLE_SIG).unwrap();
    assert_eq!(
        bucket_get("lifecycle", LIST_SIG),
        Err(SigV4Error::SignatureMismatch)
    );
}

#[test]
fn aws_list_objects_example_verifies_in_any_query_order() {
    bucket_get("max-keys=2&prefix=J", LIST_SIG).unwrap();
    bucket_get("prefix=J&max-keys=2", LIST_SIG).unwrap();
    assert_eq!(
        bucket_get("max-keys=3&prefix=J", LIST_SIG),
        Err(SigV4Error::SignatureMismatch)
    );
}

#[test]
fn wrong_secret_and_unknown_key_are_refused() {
    let a = auth(GET_SIGNED, GET_SIG);
    let h = get_object_headers(&a);
    let req = Request {
        method: "GET",
        raw_path: "/test.txt",
        raw_query: "",
        headers: &h,
    };
    let wrong: &[(&str, &str)] = &[(AKID, "not-the-secret")];
    let e = verify(&req, wrong, T0).unwrap_err();
    assert_eq!(e, SigV4Error::SignatureMismatch);
    assert_eq!(
        (e.s3_code(), e.http_status()),
        ("SignatureDoesNotMatch", 403)
    );
    let other: &[(&str, &str)] = &[("AKIAOTHER", SECRET)];
    let e = verify(&req, other, T0).unwrap_err();
    assert_eq!(
        e,
        SigV4Error::UnknownAccessKey {
            access_key: AKID.into()
        }
    );
    assert_eq!((e.s3_code(), e.http_status()), ("InvalidAccessKeyId", 403));
}

#[test]
fn tampered_header_path_query_method_are_refused() {
    let a = auth(GET_SIGNED, GET_SIG);
    let mut h = get_object_headers(&a);
    h[2] = ("Range", "bytes=0-10");
    assert_eq!(
        check("GET", "/test.txt", "", &h),
        Err(SigV4Error::SignatureMismatch)
    );
    let h = get_object_headers(&a);
    assert_eq!(
        check("GET", "/test.txT", "", &h),
        Err(SigV4Error::SignatureMismatch)
    );
    assert_eq!(
        check("GET", "/test.txt", "x=1", &h),
        Err(SigV4Error::SignatureMismatch)
    );
    assert_eq!(
        check("HEAD", "/test.txt", "", &h),
        Err(SigV4Error::SignatureMismatch)
    );
    // Folding whitespace in a signed value keeps the signature.
    let mut h = get_object_headers(&a);
    h[2] = ("Range", "  bytes=0-9 ");
    check("GET", "/test.txt", "", &h).unwrap();
    // Dropping a signed header.
    let mut h = get_object_headers(&a);
    h.remove(2);
    let e = check("GET", "/test.txt", "", &h).unwrap_err();
    assert_eq!(
        e,
        SigV4Error::SignedHeaderAbsent {
            name: "range".into()
        }
    );
}

#[test]
fn skewed_dates_are_refused() {
    let a = auth(GET_SIGNED, GET_SIG);
    let h = get_object_headers(&a);
    let req = Request {
        method: "GET",
        raw_path: "/test.txt",
        raw_query: "",
        headers: &h,
    };
    verify(&req, CREDS, T0 + MAX_SKEW_SECS).unwrap();
    verify(&req, CREDS, T0 - MAX_SKEW_SECS).unwrap();
    let e = verify(&req, CREDS, T0 + MAX_SKEW_SECS + 1).unwrap_err();
    assert_eq!(
        e,
        SigV4Error::TimeTooSkewed {
            request_time: T0,
            server_time: T0 + MAX_SKEW_SECS + 1
        }
    );
    assert_eq!(
        (e.s3_code(), e.http_status()),
        ("RequestTimeTooSkewed", 403)
    );
    assert!(matches!(
        verify(&req, CREDS, T0 - 3600),
        Err(SigV4Error::TimeTooSkewed { .. })
    ));
}

#[test]
fn malformed_and_missing_pieces_get_their_codes() {
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (vec![("Host", "h")], "AccessDenied"),
        (
            vec![
                ("Host", "h"),
                ("Authorization", "AWS4-HMAC-SHA1 Credential=x"),
            ],
            "AuthorizationHeaderMalformed",
        ),
        (
            vec![
                ("Host", "h"),
                (
                    "Authorization",
                    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/ec2/aws4_request,SignedHeaders=host,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
                ),
            ],
            "AuthorizationHeaderMalformed",
        ),
        (
            vec![
                ("Host", "h"),
                (
                    "Authorization",
                    "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
                ),
            ],
            "MissingSecurityHeader",
        ),
    ];
    for (h, code) in cases {
        let e = check("GET", "/", "", &h).unwrap_err();
        assert_eq!(e.s3_code(), code, "{e}");
    }
    // Unsorted SignedHeaders, and an unsupported payload mode.
    let a = auth("range;host;x-amz-content-sha256;x-amz-date", GET_SIG);
    let e = check("GET", "/test.txt", "", &get_object_headers(&a)).unwrap_err();
    assert_eq!(e.s3_code(), "AuthorizationHeaderMalformed");
    let a = auth(GET_SIGNED, GET_SIG);
    let mut h = get_object_headers(&a);
    h[3] = (
        "x-amz-content-sha256",
        "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
    );
    let e = check("GET", "/test.txt", "", &h).unwrap_err();
    assert_eq!(
        e,
        SigV4Error::UnsupportedPayload {
            value: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER".into()
        }
    );
    assert_eq!((e.s3_code(), e.http_status()), ("InvalidArgument", 400));
    h[3] = ("x-amz-content-sha256", "nonsense");
    assert!(matches!(
        check("GET", "/test.txt", "", &h),
        Err(SigV4Error::UnsupportedPayload { .. })
    ));
    // A credential date that is not the request's.
    let a = auth(GET_SIGNED, GET_SIG).replace("20130524/", "20130523/");
    let e = check("GET", "/test.txt", "", &get_object_headers(&a)).unwrap_err();
    assert!(matches!(e, SigV4Error::ScopeDateMismatch { .. }), "{e}");
}

// "Authenticating Requests: Using Query Parameters (AWS Signature Version 4)".
const PRESIGNED_QUERY: &str = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
const PRESIGNED_HOST: &[(&str, &str)] = &[("Host", "examplebucket.s3.amazonaws.com")];

fn presigned(query: &str, now: u64) -> Result<Verified, SigV4Error> {
    verify(
        &Request {
            method: "GET",
            raw_path: "/test.txt",
            raw_query: query,
            headers: PRESIGNED_HOST,
        },
        CREDS,
        now,
    )
}

#[test]
fn aws_presigned_url_example_verifies_until_it_expires() {
    let v = presigned(PRESIGNED_QUERY, T0).unwrap();
    assert_eq!(v.payload, PayloadMode::Unsigned);
    assert_eq!(v.access_key, AKID);
    presigned(PRESIGNED_QUERY, T0 + 86_400).unwrap();
    let e = presigned(PRESIGNED_QUERY, T0 + 86_401).unwrap_err();
    assert_eq!(
        e,
        SigV4Error::Expired {
            expired_at: T0 + 86_400,
            server_time: T0 + 86_401
        }
    );
    assert_eq!((e.s3_code(), e.http_status()), ("AccessDenied", 403));
    assert!(e.to_string().starts_with("Request has expired"));
    assert!(matches!(
        presigned(PRESIGNED_QUERY, T0 - 3600),
        Err(SigV4Error::NotYetValid { .. })
    ));
}

#[test]
fn presigned_tampering_and_bad_expiry_are_refused() {
    let q = PRESIGNED_QUERY.replace("X-Amz-Expires=86400", "X-Amz-Expires=86401");
    assert_eq!(presigned(&q, T0), Err(SigV4Error::SignatureMismatch));
    let q = format!("{PRESIGNED_QUERY}&versionId=1");
    assert_eq!(presigned(&q, T0), Err(SigV4Error::SignatureMismatch));
    let q = PRESIGNED_QUERY.replace("X-Amz-Expires=86400", "X-Amz-Expires=604801");
    let e = presigned(&q, T0).unwrap_err();
    assert_eq!(e.s3_code(), "AuthorizationQueryParametersError");
    let q = PRESIGNED_QUERY.replace("&X-Amz-Date=20130524T000000Z", "");
    assert!(matches!(
        presigned(&q, T0),
        Err(SigV4Error::MalformedPresignedQuery { .. })
    ));
    let h = [
        ("Host", "examplebucket.s3.amazonaws.com"),
        ("Authorization", "AWS4-HMAC-SHA256 x"),
    ];
    let e = check("GET", "/test.txt", PRESIGNED_QUERY, &h).unwrap_err();
    assert_eq!(e, SigV4Error::ConflictingAuthentication);
}

// "Signature Calculations for the Authorization Header: Transferring Payload in Multiple
// Chunks (Chunked Upload)", example "PUT Object".
const SEED_SIG: &str = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";
const CHUNK_SIGS: [&str; 3] = [
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
];

fn chunked_seed() -> StreamingSeed {
    let a = auth(
        "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class",
        SEED_SIG,
    );
    let h = [
        ("Host", "s3.amazonaws.com"),
        ("x-amz-date", "20130524T000000Z"),
        ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ("Authorization", a.as_str()),
        ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
        ("Content-Encoding", "aws-chunked"),
        ("x-amz-decoded-content-length", "66560"),
        ("Content-Length", "66824"),
    ];
    match check("PUT", "/examplebucket/chunkObject.txt", "", &h)
        .unwrap()
        .payload
    {
        PayloadMode::Streaming(seed) => seed,
        other => panic!("not streaming: {other:?}"),
    }
}

fn chunked_body(sigs: [&str; 3]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(format!("10000;chunk-signature={}\r\n", sigs[0]).as_bytes());
    body.extend_from_slice(&[b'a'; 65536]);
    body.extend_from_slice(format!("\r\n400;chunk-signature={}\r\n", sigs[1]).as_bytes());
    body.extend_from_slice(&[b'a'; 1024]);
    body.extend_from_slice(format!("\r\n0;chunk-signature={}\r\n\r\n", sigs[2]).as_bytes());
    body
}

#[test]
fn aws_chunked_upload_example_decodes_in_any_slicing() {
    let seed = chunked_seed();
    assert_eq!(seed.decoded_length, 66560);
    let body = chunked_body(CHUNK_SIGS);
    assert_eq!(body.len(), 66824, "the example's Content-Length");
    for step in [1usize, 7, 88, 4096, body.len()] {
        let mut d = ChunkDecoder::new(seed.clone());
        let mut out = Vec::new();
        for piece in body.chunks(step) {
            assert_eq!(
                d.feed(piece, &mut |b| out.extend_from_slice(b)),
                Ok(piece.len())
            );
        }
        d.finish().unwrap();
        assert!(d.is_done());
        assert_eq!(out.len(), 66560);
        assert!(out.iter().all(|&b| b == b'a'));
    }
}

fn run(body: &[u8]) -> Result<(), ChunkError> {
    let mut d = ChunkDecoder::new(chunked_seed());
    d.feed(body, &mut |_| {})?;
    d.finish()
}

#[test]
fn bad_chunk_signature_mid_stream_is_refused() {
    let mut sigs = CHUNK_SIGS;
    sigs[1] = CHUNK_SIGS[0];
    let e = run(&chunked_body(sigs)).unwrap_err();
    assert_eq!(e, ChunkError::SignatureMismatch { index: 1 });
    assert_eq!(
        (e.s3_code(), e.http_status()),
        ("SignatureDoesNotMatch", 403)
    );
    // Tampered data in the first chunk.
    let mut body = chunked_body(CHUNK_SIGS);
    body[100] = b'b';
    assert_eq!(run(&body), Err(ChunkError::SignatureMismatch { index: 0 }));
}

#[test]
fn truncated_and_trailing_streams_are_refused() {
    let body = chunked_body(CHUNK_SIGS);
    for cut in [0, 10, 88, 65_000, body.len() - 1] {
        let e = run(&body[..cut]).unwrap_err();
        assert!(matches!(e, ChunkError::Truncated { .. }), "cut {cut}: {e}");
        assert_eq!(e.s3_code(), "IncompleteBody");
    }
    let mut long = body.clone();
    long.extend_from_slice(b"x");
    let mut d = ChunkDecoder::new(chunked_seed());
    assert_eq!(d.feed(&long, &mut |_| {}), Ok(body.len()));
    assert_eq!(
        d.feed(b"x", &mut |_| {}),
        Err(ChunkError::TrailingData { extra: 1 })
    );
}

#[test]
fn oversized_and_malformed_chunk_headers_are_refused() {
    let mut long = vec![b'1'; MAX_CHUNK_HEADER_LEN + 1];
    long.extend_from_slice(b"\r\n");
    assert_eq!(run(&long), Err(ChunkError::HeaderTooLong { offset: 0 }));
    let big = format!("1000001;chunk-signature={}\r\n", CHUNK_SIGS[0]);
    assert_eq!(
        run(big.as_bytes()),
        Err(ChunkError::ChunkTooLarge {
            index: 0,
            size: 0x100_0001
        })
    );
    let over = format!("10401;chunk-signature={}\r\n", CHUNK_SIGS[0]);
    assert_eq!(
        run(over.as_bytes()),
        Err(ChunkError::LongerThanDeclared { declared: 66560 })
    );
    for bad in [
        "zz;chunk-signature=\r\n",
        "10000\r\n",
        "10000;chunk-signature=abc\r\n",
        "10000;x\r\r",
    ] {
        assert!(
            matches!(run(bad.as_bytes()), Err(ChunkError::MalformedHeader { .. })),
            "{bad}"
        );
    }
}

/// Signs `headers` (all of them, names lower case and sorted) for PUT / at 20130524 the
/// way a client does, with this module's own canonical pieces.
fn self_signed_put(headers: &mut Vec<(&str, String)>) {
    let names: Vec<&str> = headers.iter().map(|(n, _)| *n).collect();
    let signed = names.join(";");
    let pairs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let content = pairs
        .iter()
        .find(|(n, _)| *n == "x-amz-content-sha256")
        .unwrap()
        .1;
    let cr = canonical::canonical_request(
        "PUT",
        "/obj",
        "",
        &canonical::canonical_headers(&names, &pairs).unwrap(),
        &signed,
        content,
    );
    let sts = canonical::string_to_sign(
        "20130524T000000Z",
        "20130524/us-east-1/s3/aws4_request",
        &cr,
    );
    let key = canonical::signing_key(SECRET, "20130524", "us-east-1");
    headers.push(("authorization", auth(&signed, &sign_hex(&key, &sts))));
}

#[test]
fn unsigned_trailer_upload_verifies_and_decodes_with_its_trailer() {
    let mut h = vec![
        ("content-encoding", "aws-chunked".to_owned()),
        ("host", "examplebucket.s3.amazonaws.com".to_owned()),
        (
            "x-amz-content-sha256",
            "STREAMING-UNSIGNED-PAYLOAD-TRAILER".to_owned(),
        ),
        ("x-amz-date", "20130524T000000Z".to_owned()),
        ("x-amz-decoded-content-length", "11".to_owned()),
        ("x-amz-trailer", "x-amz-checksum-crc32".to_owned()),
    ];
    self_signed_put(&mut h);
    let pairs: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let v = check("PUT", "/obj", "", &pairs).unwrap();
    assert_eq!(
        v.payload,
        PayloadMode::StreamingUnsignedTrailer { decoded_length: 11 }
    );
    // crc32("hello world") = 0x0d4a1185.
    let body = b"6\r\nhello \r\n5\r\nworld\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";
    for step in [1, 3, body.len()] {
        let mut d = ChunkDecoder::new_unsigned_trailer(11);
        let mut out = Vec::new();
        for piece in body.chunks(step) {
            d.feed(piece, &mut |b| out.extend_from_slice(b)).unwrap();
        }
        d.finish().unwrap();
        assert_eq!(out, b"hello world");
        assert_eq!(
            d.trailers(),
            &[("x-amz-checksum-crc32".to_owned(), "DUoRhQ==".to_owned())]
        );
    }
    let unsigned = |body: &[u8], len| {
        let mut d = ChunkDecoder::new_unsigned_trailer(len);
        d.feed(body, &mut |_| {})?;
        d.finish()
    };
    // A signed chunk header in the unsigned form, a missing trailer end, too many trailers.
    assert!(matches!(
        unsigned(
            format!("5;chunk-signature={}\r\n", CHUNK_SIGS[0]).as_bytes(),
            5
        ),
        Err(ChunkError::MalformedHeader { .. })
    ));
    assert!(matches!(
        unsigned(b"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:x\r\n", 5),
        Err(ChunkError::Truncated { .. })
    ));
    assert_eq!(
        unsigned(b"0\r\na:1\r\nb:2\r\nc:3\r\nd:4\r\ne:5\r\n\r\n", 0),
        Err(ChunkError::TooManyTrailers)
    );
    assert!(matches!(
        unsigned(b"0\r\nno-colon\r\n\r\n", 0),
        Err(ChunkError::MalformedTrailer { .. })
    ));
    assert_eq!(
        unsigned(b"5\r\nhello\r\n0\r\n\r\n", 6),
        Err(ChunkError::ShorterThanDeclared {
            decoded: 5,
            declared: 6
        })
    );
}

proptest! {
    #[test]
    fn random_requests_never_panic(
        method in "[A-Z]{0,8}",
        path in "[ -~]{0,64}",
        query in "[ -~]{0,128}",
        headers in proptest::collection::vec(("[ -~]{0,24}", "[ -~]{0,160}"), 0..12),
        now in any::<u64>(),
    ) {
        let h: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let _ = verify(&Request { method: &method, raw_path: &path, raw_query: &query, headers: &h }, CREDS, now);
    }

    #[test]
    fn random_auth_fields_never_panic(
        cred in "[ -~]{0,80}",
        signed in "[a-z;\\-]{0,40}",
        sig in "[0-9a-f]{0,70}",
        date in "[0-9TZ]{0,18}",
        presign in any::<bool>(),
    ) {
        let a = format!("AWS4-HMAC-SHA256 Credential={cred}, SignedHeaders={signed}, Signature={sig}");
        let q = format!("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={cred}&X-Amz-Date={date}&X-Amz-Expires=60&X-Amz-SignedHeaders={signed}&X-Amz-Signature={sig}");
        let mut h = vec![("Host", "h"), ("x-amz-date", date.as_str()), ("x-amz-content-sha256", "UNSIGNED-PAYLOAD")];
        if !presign {
            h.push(("Authorization", a.as_str()));
        }
        let _ = verify(&Request { method: "GET", raw_path: "/", raw_query: if presign { &q } else { "" }, headers: &h }, CREDS, T0);
    }

    #[test]
    fn random_chunk_bodies_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..512),
        prefix in proptest::sample::select(vec!["", "10;chunk-signature=", "0;chunk-signature="]),
        step in 1usize..64,
    ) {
        let mut d = ChunkDecoder::new(chunked_seed());
        let mut input = prefix.as_bytes().to_vec();
        input.extend_from_slice(&body);
        let mut total = 0u64;
        for piece in input.chunks(step) {
            match d.feed(piece, &mut |b| total += b.len() as u64) {
                Ok(n) => prop_assert!(n <= piece.len()),
                Err(_) => break,
            }
        }
        prop_assert!(total <= 66560);
        prop_assert!(d.finish().is_err());
        let mut u = ChunkDecoder::new_unsigned_trailer(64);
        let mut total = 0u64;
        for piece in input.chunks(step) {
            if u.feed(piece, &mut |b| total += b.len() as u64).is_err() {
                break;
            }
        }
        prop_assert!(total <= 64);
        prop_assert_eq!(u.trailers().len() <= chunked::MAX_TRAILERS, true);
    }
}

mod sign;
