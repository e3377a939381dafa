//! The native provider: the devices of a [`Fabric`](crate::Fabric), one
//! ernic engine in this process behind a lock, their memory this process's
//! own. Nothing outside this module knows how it works: the verbs handles
//! reach it through [`Provider`](crate::Provider) and
//! [`CqOps`](crate::CqOps) only.
//!
//! `fabric` (the engine, its lock, the device thread on a mesh), `device`
//! (a device's calls), `cq` (a CQ's polling), `cq_ring` (the ring the
//! fabric fills and applications poll, and its one producer).

mod cq;
#[allow(unsafe_code)]
mod cq_ring;
mod device;
mod fabric;

pub use fabric::{EventHook, Fabric};
