//! Stateful: see `ernic_fuzz::ionic_rdma`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ernic_fuzz::ionic_rdma::run(data));
