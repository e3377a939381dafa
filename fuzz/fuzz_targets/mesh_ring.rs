//! The same-host channel's shared ring (`ernic_mesh::ring`) as a reader
//! meets it when the writing peer misbehaves: the fuzz input is a list of
//! scribbles (an offset into the mapping, header included, and the bytes
//! written there) between the reader's pops and the writer's pushes.
//! Invariants: nothing panics or reads outside the mapping; a record the
//! reader takes is never longer than it allows; once the ring is reported
//! inconsistent it stays an error or goes on consistently.
#![no_main]

use ernic_mesh::ring::{MIN_CAP, Ring};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(w) = Ring::create(MIN_CAP) else {
        return;
    };
    let Ok(fd) = w.fd().try_clone_to_owned() else {
        return;
    };
    let Ok(r) = Ring::open(fd) else {
        return;
    };
    let mut out = Vec::new();
    let mut rest = data;
    // Each step: 2 bytes of offset, 1 of length, that many bytes, then a
    // pop (limit 1000) and a push of 1..=64 bytes.
    while rest.len() >= 3 {
        let offset = usize::from(u16::from_le_bytes([rest[0], rest[1]])) % (256 + MIN_CAP + 8);
        let n = usize::from(rest[2]).min(rest.len() - 3);
        w.scribble(offset, &rest[3..3 + n]);
        rest = &rest[3 + n..];
        if let Ok(true) = r.pop(&mut out, 1000) {
            assert!(out.len() <= 1000);
        }
        let _ = r.readable();
        let len = 1 + n % 64;
        let _ = w.push(&[&[0x5a; 64][..len]]);
        let _ = w.free();
    }
});
