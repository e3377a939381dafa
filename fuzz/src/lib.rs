//! Harnesses behind ernic's fuzz targets (`fuzz_targets/*.rs` are one line
//! each), kept in a library so `examples/gen-corpus.rs` can build the seed
//! corpus from the same types and check every seed runs.
//!
//! Structured targets read their input as a sequence of operations with
//! `arbitrary` (derive): integers little-endian, a bool one byte, an enum
//! variant a `u32` scaled to the variant count, and variable-length data as
//! [`Bytes`] (a `u16` length, bounded, then the bytes). [`Enc`] writes the
//! same format, so seeds are real inputs: a driver's bring-up, valid
//! commands and work requests, encoded, not random bytes.
//!
//! No harness allocates in proportion to an input field: every length is
//! bounded here before it sizes anything, so an oversized allocation that
//! libFuzzer's `-malloc_limit_mb` reports is the code under test's.

pub mod cm_conn;
pub mod core_engine;
pub mod ionic_device;
pub mod ionic_rdma;
pub mod mesh_handshake;
pub mod net_control;
pub mod nvme_controller;
pub mod plugin_handle;
pub mod vfio_server;

use arbitrary::{Arbitrary, Unstructured};

/// The in-process provider the transport targets run on, with small
/// queues: each input opens a fresh endpoint (a crash reproduces from its
/// input alone), and rails of the default sizes would make an input cost
/// tens of milliseconds. Each receive queue still holds every receive
/// the endpoint posts (256 per rail); the send queues and the peers' data
/// receives are small, so full queues are met often.
pub fn small_provider() -> ernic_net::verbs_provider::ErnicProvider {
    ernic_net::verbs_provider::ErnicProvider::with_depths(
        ernic_verbs::Fabric::new(),
        ernic_net::verbs_provider::Depths {
            cq: 1024,
            srq: 256,
            qp: 16,
            data_recvs: 16,
        },
    )
}

/// The transport settings of those targets: the defaults, with an eager
/// threshold (1 KiB) below the targets' message sizes (up to 64 KiB), so
/// both eager and rendezvous sends are reached, in smaller rx slots.
pub fn small_config() -> ernic_net::config::Config {
    ernic_net::config::Config {
        eager_max_size: 1024,
        ..ernic_net::config::Config::default()
    }
}

/// At most `N` bytes from the input: a little-endian `u16` length (taken
/// modulo `N + 1`), then that many bytes (fewer if the input ends).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bytes<const N: usize>(pub Vec<u8>);

impl<'a, const N: usize> Arbitrary<'a> for Bytes<N> {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let n = usize::from(u16::arbitrary(u)?) % (N + 1);
        let n = n.min(u.len());
        Ok(Bytes(u.bytes(n)?.to_vec()))
    }
}

/// Writes values in the format `arbitrary` reads them (see the module
/// doc), for seeds.
#[derive(Debug, Default, Clone)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    /// Variant `k` of an enum of `n` variants.
    pub fn variant(&mut self, k: u32, n: u32) -> &mut Enc {
        assert!(k < n);
        let x = (u64::from(k) << 32).div_ceil(u64::from(n));
        self.u32(x as u32)
    }
    /// A byte.
    pub fn u8(&mut self, v: u8) -> &mut Enc {
        self.0.push(v);
        self
    }
    /// A bool.
    pub fn bool(&mut self, v: bool) -> &mut Enc {
        self.u8(u8::from(v))
    }
    /// A `u16`.
    pub fn u16(&mut self, v: u16) -> &mut Enc {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A `u32`.
    pub fn u32(&mut self, v: u32) -> &mut Enc {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A `u64`.
    pub fn u64(&mut self, v: u64) -> &mut Enc {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A fixed array.
    pub fn array(&mut self, b: &[u8]) -> &mut Enc {
        self.0.extend_from_slice(b);
        self
    }
    /// A [`Bytes`] of at most `max` bytes.
    pub fn bytes(&mut self, b: &[u8], max: usize) -> &mut Enc {
        assert!(b.len() <= max && max < 65_536);
        self.u16(b.len() as u16);
        self.array(b)
    }
}

/// Reads operations from `data` until it ends, at most `max` of them.
pub fn ops<'a, T: Arbitrary<'a>>(data: &'a [u8], max: usize) -> Vec<T> {
    let mut u = Unstructured::new(data);
    let mut out = Vec::new();
    while !u.is_empty() && out.len() < max {
        match T::arbitrary(&mut u) {
            Ok(op) => out.push(op),
            Err(_) => break,
        }
    }
    out
}

/// Puts `v` little-endian at `at` in `b`.
pub fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}
