//! ernic's P4 engine (seed 001, "The P4 Engine"): it loads a compiled P4
//! program in bmv2's JSON format and runs it as v1model's `simple_switch`
//! does, on ernic's Ethernet frame path and on RDMA send work requests, and
//! offline over pcap files and p4c's STF tests.
//!
//! Everything it reads (the program, runtime commands, packets, test files)
//! comes from outside: a program using something the engine does not
//! implement is refused at load with the JSON path of what is missing, never
//! run in part, and no packet can make the pipeline loop or panic.

pub mod pcap;
pub mod text;
