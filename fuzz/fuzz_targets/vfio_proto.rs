//! Every vfio-user message decoder: the header and its checks, each
//! request's body, the version capabilities (JSON), and the region info a
//! client reads back. Invariants: decoding never panics; a header
//! re-encodes to its bytes; a decoded DMA map re-encodes to its body; a
//! region write's data is the body after its 16-byte prefix.
#![no_main]

use ernic_vfio::proto::{self, Capabilities, HEADER_LEN, Header, RegionInfo, Request};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if data.len() < HEADER_LEN {
        let _ = Capabilities::parse(data);
        return;
    }
    let head: [u8; HEADER_LEN] = data[..HEADER_LEN].try_into().expect("16 bytes");
    let body = &data[HEADER_LEN..];
    let h = Header::parse(&head);
    assert_eq!(h.to_bytes(), head, "a header re-encodes to its bytes");
    // The transfer limit varies with the first byte of the body.
    let max_xfer = 64u32 << (body.first().copied().unwrap_or(0) % 16);
    let checked = proto::check_header(&h, max_xfer);
    // The server decodes whatever body came (its length is the header's
    // once checked; here any length, to reach every length check).
    match proto::decode(&h, body, max_xfer) {
        Ok(Request::DmaMap {
            flags,
            offset,
            address,
            size,
        }) => {
            assert_eq!(
                ernic_vfio::client::dma_map_body(address, size, offset, flags),
                body,
                "a DMA map re-encodes to its body"
            );
        }
        Ok(Request::RegionWrite { data: d, .. }) => {
            assert_eq!(d, &body[16..]);
            assert!(d.len() <= max_xfer as usize);
        }
        Ok(Request::RegionRead { count, .. }) => assert!(count <= max_xfer),
        Ok(_) => {}
        Err(e) => {
            let _ = (e.errno(), e.to_string());
        }
    }
    if checked.is_ok() {
        assert!(h.size as usize <= proto::max_message(max_xfer));
    }
    let _ = Capabilities::parse(body);
    if let Ok(info) = RegionInfo::parse(body) {
        // What a server would send for it parses back the same.
        let again = RegionInfo::parse(&info.reply(u32::MAX)).expect("a reply parses");
        assert_eq!(again.sparse, info.sparse);
        assert_eq!(
            (again.index, again.size, again.offset),
            (info.index, info.size, info.offset)
        );
    }
});
