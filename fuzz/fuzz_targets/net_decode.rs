//! The transport's decoders of peer bytes on their own, at decoder speed:
//! a control message (`decode_control`: CONN, CONN_RESP, CTRL, SIZE) and a
//! listen handle from another rank (`decode_handle`, and the hex text a
//! handle travels as between processes). `net_control` and
//! `plugin_handle` drive the same decoders through a live endpoint, which
//! costs a world per input; this target covers the decoding alone.
//! Invariants: whatever decodes stays inside the protocol's bounds and
//! inside the bytes it came from.
#![no_main]

use ernic_net::config::MAX_RAILS;
use ernic_net::rdma::{
    Control, HANDLE_LEN, Handle, MAX_CONTROL_RAILS, MAX_SEGMENTS, SEQ_BITS, decode_control,
    decode_handle,
};

/// Whether `part` lies inside `whole` (a borrowed name, not a copy).
fn within(part: &[u8], whole: &[u8]) -> bool {
    let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    p >= w && p + part.len() <= w + whole.len()
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    match decode_control(data) {
        Ok(Control::Conn { names, .. }) | Ok(Control::ConnResp { names, .. }) => {
            assert!(names.control().len() <= MAX_CONTROL_RAILS);
            assert!(names.data().len() <= MAX_RAILS);
            let total: usize = names
                .control()
                .iter()
                .chain(names.data())
                .map(|n| n.len())
                .sum();
            assert!(total <= data.len());
            for n in names.control().iter().chain(names.data()) {
                assert!(within(n, data));
            }
        }
        Ok(Control::Ctrl(c)) => {
            assert!(usize::from(c.nkeys) <= MAX_RAILS);
            assert!(u32::from(c.seq) < 1 << SEQ_BITS);
        }
        Ok(Control::Size { seq, nseg, .. }) => {
            assert!(usize::from(nseg) <= MAX_SEGMENTS);
            assert!(u32::from(seq) < 1 << SEQ_BITS);
        }
        Err(_) => {}
    }
    if let Ok(h) = decode_handle(data) {
        assert_eq!(data.len(), HANDLE_LEN);
        assert!(!h.name.is_empty() && 1 + h.name.len() + 4 <= HANDLE_LEN);
        assert!(within(h.name, data));
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Some(h) = Handle::from_hex(text)
    {
        assert_eq!(h.to_hex(), text.to_ascii_lowercase(), "hex round-trips");
    }
});
