//! The mesh's frames (`ernic_mesh::frame`) as a receive thread meets them
//! on a stream: a header, checked, then its body, one after another; each
//! control body read with the reader the node uses for its kind.
//! Invariants: a header that parses emits its own bytes back; a body is
//! never read past; nothing panics.
#![no_main]

use ernic_mesh::frame::{self, HEADER_LEN, Header, Kind, Reader};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while rest.len() >= HEADER_LEN {
        let head: [u8; HEADER_LEN] = rest[..HEADER_LEN].try_into().expect("16 bytes");
        let Ok(h) = Header::parse(&head) else {
            return;
        };
        let mut back = [0u8; HEADER_LEN];
        h.emit(&mut back);
        assert_eq!(back[..7], head[..7]);
        assert_eq!(back[8..], head[8..]);
        let len = h.len as usize;
        assert!(len <= frame::MAX_BODY);
        let Some(body) = rest.get(HEADER_LEN..HEADER_LEN + len) else {
            return;
        };
        rest = &rest[HEADER_LEN + len..];
        body_of(h.kind, body);
    }
});

fn body_of(kind: Kind, body: &[u8]) {
    match kind {
        Kind::Gids => {
            if let Ok((_, _, gids)) = ernic_mesh::parse_gids(body) {
                assert_eq!(5 + 16 * gids.len(), body.len());
            }
        }
        Kind::Topology => {
            if let Ok(peers) = ernic_mesh::parse_topology(body) {
                assert_eq!(2 + 21 * peers.len(), body.len());
            }
        }
        Kind::Refuse => {
            let _ = Reader::new(kind, body).text();
        }
        _ => {
            // The fixed layouts: every field read checks the length, and
            // `end` refuses trailing bytes.
            let mut r = Reader::new(kind, body);
            let _ = (|| {
                r.u16()?;
                r.u64()?;
                r.u8()?;
                r.gid()?;
                r.bytes(4)?;
                Ok::<(), frame::FrameError>(())
            })();
            let _ = r.end();
        }
    }
}
