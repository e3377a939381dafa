//! The LIF statistics block as the userspace driver reads it from guest
//! memory the device writes (`ernic_ionic_driver::LifStats::from_bytes`).
//! Invariants: nothing panics; input shorter than `LifStats::LEN` is
//! refused, and longer input decodes as its first `LEN` bytes do.
#![no_main]

use ernic_ionic_driver::LifStats;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let got = LifStats::from_bytes(data);
    assert_eq!(got.is_some(), data.len() >= LifStats::LEN);
    if let Some(s) = got {
        assert_eq!(LifStats::from_bytes(&data[..LifStats::LEN]), Some(s));
        let first = u64::from_le_bytes(data[..8].try_into().unwrap());
        assert_eq!(s.rx[0].0, first, "rx_ucast_bytes is the first word");
    }
});
