//! The library half of the `ernic` tools: what their fuzz target and
//! tests link. The binaries (`ernic`, `ernic-server`) hold the rest.

pub mod exporter;
pub mod perf_wire;
