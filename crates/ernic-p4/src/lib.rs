//! ernic's P4 engine (seed 001, "The P4 Engine"): it loads a compiled P4
//! program in bmv2's JSON format and runs it as v1model's `simple_switch`
//! does, on ernic's Ethernet frame path and on RDMA send work requests, and
//! offline over pcap files and p4c's STF tests.
//!
//! Everything it reads (the program, runtime commands, packets, test files)
//! comes from outside: a program using something the engine does not
//! implement is refused at load with the JSON path of what is missing, never
//! run in part, and no packet can make the pipeline loop or panic.
//!
//! - [`program`]: the bmv2 JSON loader and the checked program it yields.
//! - [`exec`]: the switch that runs it (v1model's packet flow) and its
//!   control-plane API.
//! - [`text`]: the text formats that drive it: simple_switch_CLI commands
//!   and p4c's STF tests.
//! - [`pcap`]: pcap and pcapng packet files.
//! - [`fp8`]: the OCP 8-bit float formats (E4M3, E5M2): exact decoding,
//!   one-rounding encoding from f32/f16/bf16, and elementwise region ops
//!   (accumulate, scale, convert) for the engine's fp8 externs.

pub mod device;
pub mod exec;
pub mod fp8;
pub mod pcap;
pub mod program;
pub mod runtime;
pub mod stf;
pub mod target;
pub mod text;
