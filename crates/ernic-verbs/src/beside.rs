//! A service beside a front end of the same process: a mesh on loopback
//! whose manager the front end's engine joins (known by the front end's
//! GIDs), and a fabric of the service's own that joins it as a worker
//! (known by the service's GID). The two engines meet through the mesh's
//! same-host path, so the front end's memory (a guest's) stays with the
//! one thread that serves it, and the service is to it as a peer on any
//! other node. What `ernic-server --backend nvmeof` and `--backend s3`
//! share.
//!
//! It only builds the two mesh nodes; it never opens a device, and it
//! listens on loopback only.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use ernic_mesh::{Mesh, MeshConfig, Spec};

use crate::{Fabric, Gid};

/// How long the service's mesh node may take to join the front end's.
pub const BESIDE_WAIT: Duration = Duration::from_secs(10);

/// Why the pair of mesh nodes did not start.
#[derive(Debug, thiserror::Error)]
pub enum BesideError {
    /// A node's sockets or threads could not start.
    #[error("starting an in-process mesh node")]
    Io(#[from] std::io::Error),
    /// The service's node did not join the front end's.
    #[error("the service's mesh node did not join: {why}")]
    Join {
        /// Why.
        why: String,
    },
}

/// Starts the front end's mesh (manager, on loopback, with `front_gids`)
/// and a fabric for a service known by `service_gid` on a worker node
/// that has joined it. The front end attaches the answer's [`Mesh`] to
/// its engine; the service opens its device on the [`Fabric`].
pub fn beside(front_gids: Vec<Gid>, service_gid: Gid) -> Result<(Mesh, Fabric), BesideError> {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut cfg = MeshConfig::new(Spec::Manager { port: 0 });
    cfg.listen_ip = Ok(Some(loopback));
    cfg.gids = front_gids;
    let front = Mesh::start(cfg)?;
    let mut cfg = MeshConfig::new(Spec::Worker {
        host: Ipv4Addr::LOCALHOST.to_string(),
        port: front.listen_addr().port(),
    });
    cfg.listen_ip = Ok(Some(loopback));
    cfg.gids = vec![service_gid];
    let worker = Mesh::start(cfg)?;
    if worker.wait_registered(BESIDE_WAIT).is_none() {
        return Err(BesideError::Join {
            why: worker
                .registration_error()
                .unwrap_or_else(|| "the in-process mesh manager did not answer".into()),
        });
    }
    Ok((front, Fabric::on_mesh(Default::default(), worker)))
}
