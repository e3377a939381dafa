//! `ernic perf`'s out-of-band handshake (`ernic::perf_wire`), as a
//! `--server` reads a line from anything that connects and a client reads
//! the server's answer: one line, decoded as a hello and as an endpoint.
//! Invariants: nothing panics, and whatever decodes encodes back to the
//! same value (nothing was cut on the way in).
#![no_main]

use ernic::perf_wire::{Endpoint, Hello, decode_line, mesh_port};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(v) = decode_line(data) else {
        return;
    };
    if let Ok(h) = Hello::from_json(&v) {
        assert_eq!(Hello::from_json(&h.to_json()), Ok(h));
    }
    if let Ok(e) = Endpoint::from_json(&v) {
        assert_eq!(Endpoint::from_json(&e.to_json()), Ok(e));
    }
    let _ = mesh_port(&v);
});
