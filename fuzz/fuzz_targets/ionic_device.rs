//! Stateful: see `ernic_fuzz::ionic_device`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ernic_fuzz::ionic_device::run(data));
