use proptest::prelude::*;

use super::*;

fn bytes(text: &str, bits: u32) -> Vec<u8> {
    parse_value(text, bits).unwrap().bytes
}

#[test]
fn decimal_and_prefixed_integers() {
    assert_eq!(bytes("10", 16), [0, 10]);
    assert_eq!(bytes("0x0a0B", 16), [0x0a, 0x0b]);
    assert_eq!(bytes("0X1f", 8), [0x1f]);
    assert_eq!(bytes("0b101", 8), [5]);
    assert_eq!(bytes("0o17", 8), [15]);
    assert_eq!(bytes("1_000", 16), [0x03, 0xe8]);
    assert_eq!(bytes("0x_ff", 8), [0xff]);
    assert_eq!(bytes("000", 8), [0]);
    assert_eq!(bytes("+7", 8), [7]);
    // int(s, 0) refuses a decimal with a leading zero, and stray underscores.
    for bad in [
        "010", "1__0", "_1", "1_", "0x", "", "ten", "0xfg", "1.5", "0b2",
    ] {
        assert_eq!(
            parse_value(bad, 16),
            Err(ValueError::NotAnInteger),
            "{bad:?}"
        );
    }
}

#[test]
fn negative_numbers_become_zero_as_in_int_to_bytes() {
    assert_eq!(bytes("-1", 16), [0, 0]);
    assert_eq!(bytes("-0x7fff", 16), [0, 0]);
}

#[test]
fn the_width_check_is_on_bytes_and_the_top_byte_is_masked() {
    assert_eq!(parse_value("0x100", 8), Err(ValueError::TooLarge));
    assert_eq!(parse_value("65536", 16), Err(ValueError::TooLarge));
    assert_eq!(ValueError::TooLarge.to_string(), "Parameter is too large");
    // 9 bits take 2 bytes: 0xffff fits the bytes, bmv2 masks it to 0x1ff.
    assert_eq!(bytes("0xffff", 9), [0x01, 0xff]);
    assert_eq!(bytes("0x0000000000ff", 8), [0xff]);
    assert_eq!(parse_value("0", 0).unwrap().bytes, Vec::<u8>::new());
    assert_eq!(parse_value("1", 0), Err(ValueError::TooLarge));
}

#[test]
fn ipv4_mac_and_ipv6_at_their_widths_only() {
    assert_eq!(bytes("10.1.2.3", 32), [10, 1, 2, 3]);
    assert_eq!(bytes("010.1.2.3", 32), [10, 1, 2, 3]);
    assert_eq!(parse_value("10.1.2", 32), Err(ValueError::BadIpv4));
    assert_eq!(parse_value("10.1.2.256", 32), Err(ValueError::BadIpv4));
    assert_eq!(parse_value("10.1.2.x", 32), Err(ValueError::BadIpv4));
    assert_eq!(ValueError::BadIpv4.to_string(), "Invalid IPv4 address");
    // A dotted quad at another width is just a bad integer.
    assert_eq!(parse_value("10.1.2.3", 24), Err(ValueError::NotAnInteger));

    assert_eq!(
        bytes("00:12:34:56:78:9a", 48),
        [0, 0x12, 0x34, 0x56, 0x78, 0x9a]
    );
    assert_eq!(bytes("0:1:2:3:4:0x1f", 48), [0, 1, 2, 3, 4, 0x1f]);
    assert_eq!(parse_value("00:12:34:56:78", 48), Err(ValueError::BadMac));
    assert_eq!(
        parse_value("00:12:34:56:78:gg", 48),
        Err(ValueError::BadMac)
    );
    assert_eq!(ValueError::BadMac.to_string(), "Invalid MAC address");

    let v6 = bytes("1080::8:800:200C:417A", 128);
    assert_eq!(v6[..2], [0x10, 0x80]);
    assert_eq!(v6[8..], [0, 8, 8, 0, 0x20, 0x0c, 0x41, 0x7a]);
    assert_eq!(bytes("::ffff:1.2.3.4", 128)[12..], [1, 2, 3, 4]);
    assert_eq!(parse_value("1:::2", 128), Err(ValueError::BadIpv6));
    assert_eq!(ValueError::BadIpv6.to_string(), "Invalid IPv6 address");
    // Without ':' a 128-bit field takes an integer.
    assert_eq!(bytes("0x01", 128)[15], 1);
}

#[test]
fn fields_wider_than_128_bits() {
    let text = format!("0x1{}", "0".repeat(60)); // 2^240
    let v = parse_value(&text, 256).unwrap();
    assert_eq!(v.bytes.len(), 32);
    assert_eq!(v.bytes[1], 1);
    assert_eq!(v.as_u128(), None);
    let big = format!("1{}", "0".repeat(70)); // 10^70 < 2^233
    assert_eq!(parse_value(&big, 233).map(|v| v.bytes[0]), Ok(1));
    assert_eq!(parse_value(&big, 232), Err(ValueError::TooLarge));
    assert_eq!(parse_value(&big, 224), Err(ValueError::TooLarge));
}

#[test]
fn py_int_helpers() {
    assert_eq!(parse_py_int("12"), Some(12));
    assert_eq!(parse_py_int("012"), Some(12));
    assert_eq!(parse_py_int("-3"), Some(-3));
    assert_eq!(parse_py_int("0x10"), None);
    assert_eq!(parse_py_int_auto("0x10"), Some(16));
    assert_eq!(parse_py_int("9223372036854775807"), Some(i64::MAX));
    assert_eq!(parse_py_int("-9223372036854775808"), Some(i64::MIN));
    assert_eq!(parse_py_int("9223372036854775808"), None);
}

proptest! {
    #[test]
    fn round_trip_any_value_that_fits(bits in 1u32..=128, raw in any::<u128>(), hex in any::<bool>()) {
        let v = if bits == 128 { raw } else { raw & ((1u128 << bits) - 1) };
        let text = if hex { format!("{v:#x}") } else { v.to_string() };
        let parsed = parse_value(&text, bits).unwrap();
        prop_assert_eq!(parsed.bytes.len(), byte_len(bits));
        prop_assert_eq!(parsed.as_u128(), Some(v));
        prop_assert_eq!(parsed, Value::from_u128(v, bits).unwrap());
    }

    #[test]
    fn a_value_needing_one_more_byte_is_refused(bytes_wide in 1u32..15, raw in any::<u128>()) {
        let bits = bytes_wide * 8;
        let v = (raw | (1u128 << bits)) & ((1u128 << (bits + 8)) - 1);
        prop_assert_eq!(parse_value(&v.to_string(), bits), Err(ValueError::TooLarge));
    }

    #[test]
    fn never_panics(text in ".{0,40}", bits in 0u32..300) {
        let _ = parse_value(&text, bits);
    }
}
