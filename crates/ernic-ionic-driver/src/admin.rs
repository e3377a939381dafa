//! The RDMA admin queue: an admin command written as `fw::admin_wqe`
//! strides, its doorbell, and the wait for its `fw::admin_cqe`. Every
//! object the driver creates goes through here.

use std::time::Instant;

use ernic_ionic::fw::{admin_cqe, admin_wqe, cqe};
use ernic_ionic::regs::qtype;

use crate::{ADMIN_TIMEOUT, Driver, Error, read_cqe};

impl Driver {
    /// Runs admin command `op` with `body` as given, whatever it says: what
    /// a kernel driver with other ideas (or a bug) could send. Answers the
    /// CQE's two result words, or the status it failed with.
    pub fn raw_admin(&mut self, op: u8, body: &[u8]) -> Result<[u32; 2], Error> {
        self.admin(op, body)
    }

    /// Runs RDMA admin command `op` with `body` as written, whatever its
    /// fields say (at most four 64-byte strides with the header): what a
    /// hostile guest's driver can send. Answers as the typed calls do.
    pub fn admin_command(&mut self, op: u8, body: &[u8]) -> Result<[u32; 2], Error> {
        if body.len() + 4 > 4 * 64 {
            return Err(Error::Unsupported(
                "an admin command longer than four strides",
            ));
        }
        self.admin(op, body)
    }

    /// Runs an RDMA admin command; answers the two result words its CQE
    /// carries (ernic's SRQ commands use them).
    pub(crate) fn admin(&mut self, op: u8, body: &[u8]) -> Result<[u32; 2], Error> {
        let mut w = vec![0u8; admin_wqe::HDR_LEN + body.len()];
        w[admin_wqe::HDR_LEN..].copy_from_slice(body);
        // Unchecked: only the 4-byte header's setters are used.
        let mut header = admin_wqe::Packet::new_unchecked(&mut w[..]);
        header.set_op(op);
        header.set_len(body.len() as u16);
        let index = self.aq_prod;
        for chunk in w.chunks(64) {
            let mut stride = [0u8; 64];
            stride[..chunk.len()].copy_from_slice(chunk);
            self.mem.write(self.aq.slot(self.aq_prod), &stride);
            self.aq_prod = self.aq_prod.wrapping_add(1);
        }
        self.ring_doorbell(
            None,
            qtype::RDMA_AQ,
            0,
            0,
            self.aq_prod & (self.aq.depth() - 1),
        )?;
        let slot = self.acq.slot(self.acq_cons);
        let color = (self.acq_cons >> self.acq.depth_log2) & 1 == 0;
        let end = Instant::now() + ADMIN_TIMEOUT;
        let mut c = [0u8; cqe::LEN];
        loop {
            if read_cqe(&self.mem, slot, color, &mut c) {
                // A whole CQE's array: the getters cannot run past it.
                let done = admin_cqe::Packet::new_unchecked(&c);
                self.acq_cons = self.acq_cons.wrapping_add(1);
                let idx = done.cmd_idx();
                debug_assert_eq!(u32::from(idx), index & (self.aq.depth() - 1));
                let status = done.status();
                if done.failed() {
                    return Err(Error::Admin { op, status });
                }
                return Ok(done.result());
            }
            if Instant::now() > end {
                return Err(Error::Timeout("an admin command"));
            }
            std::hint::spin_loop();
        }
    }
}
