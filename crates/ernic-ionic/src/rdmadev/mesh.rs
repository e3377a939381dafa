//! The RDMA side on a mesh: attaching to one, and the pass loop that
//! moves the mesh's traffic through the engine. Kept apart so it can be
//! replaced by the mesh's own loop (`ernic-mesh`) in one place.

use std::time::Instant;

use ernic_core::Gid;
use ernic_vfio::dma::Dma;

use crate::bootstrap::Bootstrap;

use super::RdmaDev;

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
        let now = Instant::now();
        mesh.begin_pass();
        while let Some(m) = mesh.pop() {
            self.engine.apply_remote(m.from, m.buf, m.start, now);
            self.engine.take_released(|b| mesh.release(b));
        }
        // Receive threads kept out of a full queue by SENDs waiting for
        // receives: give up on those (seed 001).
        if mesh
            .starved_for()
            .is_some_and(|d| d >= std::time::Duration::from_millis(500))
            && self.engine.has_held()
        {
            self.engine.expire_held(now);
        }
        self.engine.poll(now);
        self.engine.take_released(|b| mesh.release(b));
        self.complete(dma, fire);
        mesh.flush();
        mesh.end_pass();
        true
    }
}
