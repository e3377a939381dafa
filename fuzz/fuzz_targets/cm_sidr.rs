//! SIDR MADs (`ernic_cm::sidr`): SIDR_REQ and SIDR_REP, what a peer sends
//! rdma_cm's UD port space, and the attribute peek that routes a MAD to
//! them. Invariants: nothing panics; whatever parses emits back and
//! re-parses to the same value; a buffer shorter than a MAD never parses.
#![no_main]

use ernic_cm::mad::MAD_LEN;
use ernic_cm::sidr;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = sidr::attr_of(data);
    match sidr::Req::parse(data) {
        Ok(r) => assert_eq!(sidr::Req::parse(&r.emit()), Ok(r), "REQ round trip"),
        Err(_) => {}
    }
    match sidr::Rep::parse(data) {
        Ok(r) => assert_eq!(sidr::Rep::parse(&r.emit()), Ok(r), "REP round trip"),
        Err(_) => {}
    }
    if data.len() < MAD_LEN {
        assert!(sidr::Req::parse(data).is_err() && sidr::Rep::parse(data).is_err());
    }
});
