//! Stateful: see `ernic_fuzz::core_engine`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ernic_fuzz::core_engine::run(data));
