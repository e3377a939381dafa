//! The fault-injection spec (`--inject`, `ERNIC_INJECT`: outside text) over
//! any bytes. Invariants: nothing panics; a spec that reads prints back as a
//! spec that reads the same; checking armed events never panics.
#![no_main]

use ernic_core::inject::{Event, Fault, Injector, parse_spec};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(faults) = parse_spec(text) else {
        return;
    };
    let again: Vec<String> = faults.iter().map(Fault::to_string).collect();
    assert_eq!(parse_spec(&again.join(",")).as_ref(), Ok(&faults));
    let inj = Injector::new(faults);
    for i in 0..64u8 {
        let _ = inj.check(Event::ALL[usize::from(i) % Event::COUNT]);
        let _ = inj.check_admin(i);
    }
    assert!(inj.fired() <= 64 * 2 * inj.report().len() as u64);
});
