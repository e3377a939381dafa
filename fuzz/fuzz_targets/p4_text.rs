//! The P4 engine's text and file decoders over any bytes: simple_switch_CLI
//! scripts (parsed, then run against a test program), p4c STF tests (run
//! against a test program), and pcap/pcapng files. Invariants: nothing
//! panics; a pcap record that reads is within `MAX_RECORD`.
#![no_main]

use ernic_p4::exec::Switch;
use ernic_p4::pcap::{self, MAX_RECORD};
use ernic_p4::program::Program;
use libfuzzer_sys::fuzz_target;

const PROGRAM: &str = include_str!("../../crates/ernic-p4/testdata/simple_router.json");

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    match sel % 3 {
        0 => {
            let Ok(text) = std::str::from_utf8(rest) else {
                return;
            };
            let mut sw = Switch::new(Program::load(PROGRAM).expect("simple_router loads"));
            let mut out = String::new();
            ernic_p4::runtime::run_script(&mut sw, text, &mut out);
        }
        1 => {
            let Ok(text) = std::str::from_utf8(rest) else {
                return;
            };
            let mut sw = Switch::new(Program::load(PROGRAM).expect("simple_router loads"));
            let _ = ernic_p4::stf::run(&mut sw, text);
        }
        _ => {
            if let Ok(recs) = pcap::read_packets(rest) {
                assert!(recs.iter().all(|r| r.data.len() <= MAX_RECORD));
            }
        }
    }
});
