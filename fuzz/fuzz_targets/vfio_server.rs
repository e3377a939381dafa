//! Stateful: see `ernic_fuzz::vfio_server`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ernic_fuzz::vfio_server::run(data));
