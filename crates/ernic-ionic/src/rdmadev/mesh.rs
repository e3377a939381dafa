//! The RDMA side on a mesh: attaching to one, and the device's pass over
//! it, which is the mesh's own ([`ernic_mesh::Mesh::pass`], shared with
//! the native fabric) with the guest's CQs as where completions go.

use std::time::Instant;

use ernic_core::{Engine, Gid};
use ernic_mesh::{PassOptions, PassTarget};
use ernic_vfio::dma::Dma;

use super::{GuestMemory, RdmaDev};
use crate::bootstrap::Bootstrap;

/// How this device's passes differ from the native fabric's. The server's
/// loop does not poll the connections itself (the receive threads do), so
/// it must not tell them to stand aside; it writes the replies at the end
/// of each pass; and it applies every queued message in one pass (a guest
/// has no application thread waiting to see a completion mid-pass).
const PASS: PassOptions = PassOptions {
    yield_after_by_ref: false,
    flush: true,
    poller: false,
};

/// The device as a mesh pass sees it: its engine, and the guest's rings
/// its completions go to.
struct MeshTarget<'a> {
    dev: &'a mut RdmaDev,
    dma: &'a mut Dma,
    fire: &'a mut Vec<u16>,
}

impl PassTarget for MeshTarget<'_> {
    type Memory = GuestMemory;

    fn engine(&mut self) -> &mut Engine<GuestMemory> {
        &mut self.dev.engine
    }

    fn complete(&mut self) {
        self.dev.complete(self.dma, self.fire);
    }
}

impl RdmaDev {
    /// Puts the device on the TCP mesh: requests for QPs in other servers'
    /// guests go through it, and destinations no server owns are refused
    /// (a connected QP's MODIFY_QP fails; an AH is made and treated as
    /// local). The guest's GIDs are advertised, with any learned later.
    pub fn attach_mesh(&mut self, mesh: std::sync::Arc<ernic_mesh::Mesh>, gids: Vec<Gid>) {
        self.engine.set_remote(Box::new(mesh.carrier()));
        let _ = self.engine.set_gids(self.dev, gids.clone());
        mesh.set_gids(gids);
        self.mesh = Some(mesh);
        self.standalone = false;
    }

    /// Whether the device is on a mesh (and so must be polled for its
    /// messages).
    pub fn on_mesh(&self) -> bool {
        self.mesh.is_some()
    }

    /// Applies what peers sent (requests for this guest's memory, replies
    /// to its requests) and writes the completions; answers whether there
    /// was any.
    pub fn mesh_pass(&mut self, boot: &Bootstrap, dma: &mut Dma, fire: &mut Vec<u16>) -> bool {
        let Some(mesh) = self.mesh.clone() else {
            return false;
        };
        if !mesh.has_messages() {
            return false;
        }
        self.sync(boot, dma);
        let mut target = MeshTarget {
            dev: self,
            dma,
            fire,
        };
        mesh.pass(&mut target, Instant::now(), PASS);
        true
    }
}
