//! Stateful: see `ernic_fuzz::mesh_handshake`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ernic_fuzz::mesh_handshake::run(data));
