//! Signing (`sign.rs`) against AWS's example and the verifier, amz dates
//! both ways, and signed chunks decoded unchecked for an anonymous store.

use super::*;

#[test]
fn the_example_signs_to_aws_signature_and_a_signed_request_verifies() {
    // Signing AWS's GET Object example gives AWS's signature...
    let signer = crate::sigv4::sign::Signer {
        access_key: AKID.into(),
        secret: SECRET.into(),
        region: "us-east-1".into(),
    };
    let h = [
        ("host", "examplebucket.s3.amazonaws.com"),
        ("range", "bytes=0-9"),
        ("x-amz-content-sha256", EMPTY),
        ("x-amz-date", "20130524T000000Z"),
    ];
    let a = signer
        .authorization("GET", "/test.txt", "", &h, "20130524T000000Z")
        .unwrap();
    assert_eq!(a, auth(GET_SIGNED, GET_SIG).replace(",", ", "));
    // ...and what it signs, the verifier accepts (with an odd key and query).
    let h = [
        ("host", "127.0.0.1:9000"),
        ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
        ("x-amz-date", "20130524T000000Z"),
        ("x-amz-meta-note", "a  b"),
    ];
    let (path, query) = ("/b/dir/%E2%9C%93%20x", "list-type=2&prefix=a%2Fb&x=");
    let a = signer
        .authorization("PUT", path, query, &h, "20130524T000000Z")
        .unwrap();
    let mut all = h.to_vec();
    all.push(("authorization", &a));
    check("PUT", path, query, &all).unwrap();
    all[3] = ("x-amz-meta-note", "changed");
    assert_eq!(
        check("PUT", path, query, &all),
        Err(SigV4Error::SignatureMismatch)
    );
}

#[test]
fn amz_dates_format_and_parse_back() {
    use canonical::{format_amz_date, parse_amz_date};
    assert_eq!(format_amz_date(T0), "20130524T000000Z");
    assert_eq!(format_amz_date(951_782_400), "20000229T000000Z");
    for secs in [0u64, 59, 86_399, 951_868_799, T0 + 12_345, 4_102_444_800] {
        assert_eq!(parse_amz_date(&format_amz_date(secs)), Some(secs), "{secs}");
    }
}

#[test]
fn signed_chunks_decode_unchecked_for_an_anonymous_store() {
    // Signatures that do not chain: refused when checked, framing kept when not.
    let body = chunked_body([CHUNK_SIGS[1], CHUNK_SIGS[0], CHUNK_SIGS[2]]);
    assert!(matches!(
        run(&body),
        Err(ChunkError::SignatureMismatch { .. })
    ));
    let mut d = ChunkDecoder::new_signed_unchecked(66560);
    let mut n = 0;
    d.feed(&body, &mut |b| n += b.len()).unwrap();
    d.finish().unwrap();
    assert_eq!((n, d.declared_len()), (66560, 66560));
    // The framing is still checked: a chunk without its signature is refused.
    let mut d = ChunkDecoder::new_signed_unchecked(3);
    assert!(d.feed(b"3\r\nabc\r\n", &mut |_| {}).is_err());
}
