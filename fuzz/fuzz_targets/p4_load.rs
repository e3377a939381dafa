//! The P4 engine's loader (`ernic_p4::program::Program::load`) over any
//! bytes: a bmv2 JSON program from a file is untrusted. Invariants: nothing
//! panics, nothing allocates past the fuzzer's limit (every count is
//! checked against `limits` before it sizes anything), and a program that
//! loads can build a switch and run an empty and a short packet.
#![no_main]

use ernic_p4::exec::Switch;
use ernic_p4::program::Program;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = Program::load(text) {
        let mut sw = Switch::new(p);
        let mut out = Vec::new();
        sw.process(0, &[], 0, &mut out);
        sw.process(1, &[0x45; 64], 1, &mut out);
    }
});
