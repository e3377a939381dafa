//! The core's wire messages between servers (`ernic_core::wire`): the
//! checked view, the validated parse, the by-reference runs.
//! Invariants: after `new_checked` no accessor panics; a parsed message
//! emits the same header bytes back (its canonical form: the parse keeps
//! every field) and its `buffer_len` is the message's length.
#![no_main]

use ernic_core::wire::{self, HEADER_LEN, Packet, Repr};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = wire::is_by_ref(data);
    let Ok(p) = Packet::new_checked(data) else {
        assert!(data.len() < HEADER_LEN);
        return;
    };
    let _ = (
        p.op(),
        p.flags(),
        p.status(),
        p.sgid(),
        p.dgid(),
        p.payload().len(),
    );
    let _ = (
        p.src_qpn(),
        p.dst_qpn(),
        p.req_id(),
        p.rkey(),
        p.addr(),
        p.length(),
    );
    let _ = (p.imm(), p.operand0(), p.operand1(), p.total(), p.offset());
    if let Ok(r) = Repr::parse(&p) {
        let mut back = [0u8; HEADER_LEN];
        r.emit(&mut back);
        assert_eq!(&back[..], &data[..HEADER_LEN], "the header round-trips");
        assert_eq!(
            r.buffer_len(),
            data.len(),
            "buffer_len is the message's length"
        );
        if r.flags & wire::flags::BY_REF != 0 {
            let sum: u64 = wire::ref_runs(p.payload()).map(|(_, n)| n).sum();
            assert_eq!(sum, u64::from(r.len));
        }
    }
});
