//! What the tools that put a device of their own on a fabric share
//! (`ernic nvme`, `ernic s3`): `--mesh` and `--mesh-wait`, and the address
//! a client takes when it is given none.

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use ernic_verbs::{Fabric, Mesh, MeshConfig, MeshSpec};

/// Where the fabric is: this process's loopback, or a mesh.
#[derive(Args, Debug, Clone)]
pub struct FabricArgs {
    /// Join the TCP mesh (tcp:manager:listen:PORT or tcp:worker:HOST:PORT).
    #[arg(long, value_name = "SPEC")]
    pub mesh: Option<MeshSpec>,
    /// How long to wait for the mesh manager, in seconds.
    #[arg(long, default_value_t = 10)]
    pub mesh_wait: u64,
}

impl FabricArgs {
    /// The fabric these say: loopback, or joined to the mesh.
    pub fn fabric(&self) -> Result<Fabric> {
        let Some(spec) = &self.mesh else {
            return Ok(Fabric::new());
        };
        let mesh =
            Mesh::start(MeshConfig::new(spec.clone())).with_context(|| format!("--mesh {spec}"))?;
        if mesh
            .wait_registered(Duration::from_secs(self.mesh_wait))
            .is_none()
        {
            bail!(
                "--mesh {spec}: no answer from the mesh manager within {} s",
                self.mesh_wait
            );
        }
        Ok(Fabric::on_mesh(Default::default(), mesh))
    }
}

/// An initiator's address when none is given: 192.0.2.128 to .254, by
/// process id. The mesh refuses a GID two live nodes claim, and it learns
/// that a node left only when its heartbeats stop, so a run that took the
/// last run's address would find no route for seconds.
pub fn default_host_addr() -> Ipv4Addr {
    Ipv4Addr::new(192, 0, 2, 128 + (std::process::id() % 127) as u8)
}
