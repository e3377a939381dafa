//! NIC profile files (`ernic_ionic::profile::apply`), layered over the
//! default identity. Invariant: a file is applied or refused with an
//! error, never a panic; what it applies, the device can be built with.
#![no_main]

use ernic_ionic::bar0::{Bar0, Identity};
use ernic_ionic::profile;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut id = Identity::default();
    match profile::apply(&mut id, text, "fuzz.ini") {
        Ok(()) => {
            // An accepted profile makes a device (its checks are the
            // profile's, not an assert in the device).
            let _ = Bar0::new(id);
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
