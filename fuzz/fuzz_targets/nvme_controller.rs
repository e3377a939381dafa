//! Stateful: see `ernic_fuzz::nvme_controller`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ernic_fuzz::nvme_controller::run(data));
