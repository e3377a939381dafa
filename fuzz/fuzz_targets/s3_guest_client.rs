//! The S3 store's other readers of outside bytes: the guest segment's
//! frame claim (`ernic_s3::guest::claims`, run on every frame a guest
//! transmits), the client's response-head reader (`ernic_s3::client::
//! read_head`, on a server's bytes), and the option string and credentials
//! file (`ernic_s3::options`). The first byte picks one. Invariants: nothing
//! panics; a claimed frame is ARP or IPv4.
#![no_main]

use std::net::Ipv4Addr;

use ernic_s3::client::read_head;
use ernic_s3::guest::claims;
use ernic_s3::options::{S3Options, parse_credentials};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    match pick % 3 {
        0 => {
            let ip = Ipv4Addr::new(192, 0, 2, 20);
            if claims(rest, ip) {
                let ethertype = u16::from_be_bytes([rest[12], rest[13]]);
                assert!(
                    ethertype == 0x0806 || ethertype == 0x0800,
                    "claimed {ethertype:#x}"
                );
            }
        }
        1 => {
            let mut r = std::io::Cursor::new(rest);
            let _ = read_head(&mut r);
        }
        _ => {
            let text = String::from_utf8_lossy(rest);
            let _ = parse_credentials(&text);
            // Never a file named by the input.
            if !text.contains("credentials") {
                let _ = S3Options::parse(&text);
            }
        }
    }
});
