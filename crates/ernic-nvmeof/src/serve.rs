//! Running a target: the option string's transport keys (`addr=`,
//! `port=`), a device of its own on a fabric, and the thread that polls
//! it. What `ernic nvme serve`, `ernic nvme perf --serve` and
//! `ernic-server --backend nvmeof` share.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use ernic_verbs::{Fabric, Gid, Mesh};

use crate::config::{Config, ConfigError};
use crate::controller::{MDTS_BYTES, Target, TransportAddr};
use crate::rdma::{ListenConfig, RdmaError, RdmaTarget, TransportStats};

/// The address a target takes when the options name none: in the
/// documentation prefix 192.0.2.0/24 that ernic's VM lanes use.
pub const DEFAULT_ADDR: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);

/// Why a target did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The options were wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `addr=` or `port=` was wrong.
    #[error("nvmeof option {key}={value:?}: {why}")]
    Transport {
        /// The key.
        key: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The fabric refused the device or its objects.
    #[error("the target's device at {addr}: {source}")]
    Device {
        /// The address.
        addr: Ipv4Addr,
        /// Why.
        #[source]
        source: ernic_verbs::Error,
    },
    /// The transport could not start.
    #[error("the target's RDMA transport")]
    Rdma(#[from] RdmaError),
    /// The thread or the mesh's sockets could not start.
    #[error("starting the target")]
    Io(#[from] std::io::Error),
    /// The target's mesh node could not join.
    #[error("the target's mesh node: {why}")]
    Mesh {
        /// Why.
        why: String,
    },
}

/// A target's options: the controller's, and where it listens.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The controller's options.
    pub config: Config,
    /// The target's IPv4 address (its GID is the IPv4-mapped address).
    pub addr: Ipv4Addr,
    /// The rdma_cm port.
    pub port: u16,
}

impl ServeOptions {
    /// Reads `nqn=…,ns=…,…` with `addr=IPV4` and `port=N` besides what
    /// [`Config::parse`] takes.
    pub fn parse(opts: &str) -> Result<ServeOptions, ServeError> {
        let mut addr = DEFAULT_ADDR;
        let mut port = crate::rdma::DEFAULT_PORT;
        let mut rest = Vec::new();
        for item in opts.split(',').filter(|s| !s.is_empty()) {
            match item.split_once('=') {
                Some(("addr", v)) => {
                    addr = v.parse().map_err(|_| ServeError::Transport {
                        key: "addr",
                        value: v.into(),
                        why: "not an IPv4 address",
                    })?;
                }
                Some(("port", v)) => {
                    port = match v.parse::<u16>() {
                        Ok(p) if p > 0 => p,
                        _ => {
                            return Err(ServeError::Transport {
                                key: "port",
                                value: v.into(),
                                why: "not a port (1-65535)",
                            });
                        }
                    };
                }
                _ => rest.push(item),
            }
        }
        Ok(ServeOptions {
            config: Config::parse(&rest.join(","))?,
            addr,
            port,
        })
    }
}

/// A target polled by a thread of its own until this is dropped. The
/// thread can be paused, handing the target to the caller to poll on a
/// thread of its own choosing (an initiator in the same process that
/// polls both, as an SPDK application runs a target and an initiator on
/// one reactor), and resumed.
pub struct Serving {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<RdmaTarget, RdmaError>>>,
    /// Where it listens.
    pub addr: Ipv4Addr,
    /// Its port.
    pub port: u16,
    stats: Arc<crate::stats::NvmeofStats>,
    namespaces: usize,
}

impl Serving {
    /// Starts a target with `opts` on `fabric`: a device of its own at
    /// `opts.addr`, its transport, and its thread.
    pub fn start(fabric: &Fabric, opts: &ServeOptions) -> Result<Serving, ServeError> {
        let dev = fabric
            .open_device(Gid::from_ipv4(opts.addr))
            .map_err(|source| ServeError::Device {
                addr: opts.addr,
                source,
            })?;
        let listen = ListenConfig {
            port: opts.port,
            max_xfer: MDTS_BYTES as usize,
            max_entries: u32::from(opts.config.depth),
        };
        let addr = TransportAddr {
            addr: opts.addr,
            port: opts.port,
            portid: 1,
        };
        let target = Target::new(opts.config.clone(), addr)?;
        let rdma = RdmaTarget::new(dev, target, listen)?;
        let mut serving = Serving {
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
            addr: opts.addr,
            port: opts.port,
            stats: rdma.target().stats().clone(),
            namespaces: rdma.target().namespaces().len(),
        };
        serving.resume(rdma)?;
        Ok(serving)
    }

    /// The target's counters, live while it serves.
    pub fn stats(&self) -> &Arc<crate::stats::NvmeofStats> {
        &self.stats
    }

    /// Its counters as stats-file groups (see
    /// [`NvmeofStats::groups`](crate::stats::NvmeofStats::groups)): no lock,
    /// callable from any thread while the target serves.
    pub fn stats_groups(&self) -> Vec<ernic_ops::Group> {
        self.stats.groups(self.namespaces)
    }

    /// Stops the thread and hands the target over, to be polled by the
    /// caller ([`RdmaTarget::poll`]) until [`resume`](Self::resume).
    pub fn pause(&mut self) -> Result<RdmaTarget, RdmaError> {
        self.halt().unwrap_or(Err(RdmaError::Protocol {
            what: "the target is not running on its thread",
        }))
    }

    /// Polls `target` on a thread of its own again.
    pub fn resume(&mut self, mut target: RdmaTarget) -> Result<(), ServeError> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ernic-nvmeof".into())
            .spawn(move || target.serve(&s).map(|()| target))?;
        self.stop = stop;
        self.thread = Some(thread);
        Ok(())
    }

    /// Stops the target and answers what its transport counted, or why
    /// its thread stopped early.
    pub fn stop(mut self) -> Result<TransportStats, RdmaError> {
        self.halt()
            .map_or(Ok(TransportStats::default()), |r| r.map(|t| t.stats()))
    }

    fn halt(&mut self) -> Option<Result<RdmaTarget, RdmaError>> {
        self.stop.store(true, Ordering::Relaxed);
        let t = self.thread.take()?;
        Some(t.join().unwrap_or(Err(RdmaError::Protocol {
            what: "the target's thread panicked",
        })))
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

impl Serving {
    /// Starts a target beside a front end of this process that has an
    /// engine of its own (`ernic-server`'s guest): a mesh on loopback
    /// whose manager the front end joins with `front_gids` (the answer's
    /// [`Mesh`]), and the target on a fabric of its own that joins it as a
    /// worker. The two engines meet through the mesh's same-host path, so
    /// the guest's memory stays with the one thread that serves the guest,
    /// and the target is to it as a target on any other node.
    pub fn beside(
        opts: &ServeOptions,
        front_gids: Vec<Gid>,
    ) -> Result<(Mesh, Serving), ServeError> {
        let (front, fabric) = ernic_verbs::beside::beside(front_gids, Gid::from_ipv4(opts.addr))
            .map_err(|e| match e {
                ernic_verbs::beside::BesideError::Io(e) => ServeError::Io(e),
                ernic_verbs::beside::BesideError::Join { why } => ServeError::Mesh { why },
            })?;
        let serving = Serving::start(&fabric, opts)?;
        Ok((front, serving))
    }
}
