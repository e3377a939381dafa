//! Stateful: see `ernic_fuzz::net_control`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ernic_fuzz::net_control::run(data));
