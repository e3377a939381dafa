//! Stateful: see `ernic_fuzz::plugin_handle`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ernic_fuzz::plugin_handle::run(data));
