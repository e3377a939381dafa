//! Stateful: see `ernic_fuzz::cm_conn`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ernic_fuzz::cm_conn::run(data));
