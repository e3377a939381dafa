//! Attaching and bring-up: the vfio-user connection, the shared memory
//! and interrupts, then the device commands Linux's `ionic` and
//! `ionic_rdma` send (IDENTIFY, LIF_IDENTIFY, the RDMA bootstrap of an
//! EQ, an admin CQ and an admin queue) through BAR 0.

use std::path::Path;
use std::time::Duration;

use ernic_ionic::bootstrap::RdmaQueue;
use ernic_ionic::doorbell::PAGE;
use ernic_ionic::fw::dev_cmd;
use ernic_ionic::regs::{cmd, lif_identity as li, opcode};
use ernic_vfio::client::{Client, eventfd, shared_memory};
use ernic_vfio::pci::{irq, region};
use ernic_vfio::proto::{Capabilities, DMA_READ, DMA_WRITE};
use ernic_vfio::shm::Mapping;

use crate::{BASE, Driver, Error, Pd, Ring};

impl Driver {
    /// Attaches to the server at `socket` with `memory` bytes of driver
    /// memory, and brings the device up.
    pub fn attach(socket: &Path, memory: u64) -> Result<Driver, Error> {
        let mut c = Client::connect(socket, Duration::from_secs(10))?;
        c.version(&Capabilities::default())?;
        let size = memory.max(1 << 20).next_multiple_of(PAGE);
        let fd = shared_memory(c"ernic-driver", size)?;
        c.dma_map(BASE, size, 0, DMA_READ | DMA_WRITE, &fd)?;
        let mem = Mapping::new(&fd, 0, size as usize)?;
        let event = eventfd()?;
        c.irq_eventfds(irq::MSIX, 0, &[&event])?;
        // Shared doorbell pages, if the server offers them.
        let shared = match c.region_info(region::BAR2)? {
            (info, Some(dfd)) if !info.sparse.is_empty() => {
                let (area, len) = info.sparse[0];
                Some((
                    Mapping::new(&dfd, info.offset + area, len as usize)?,
                    len as usize,
                ))
            }
            _ => None,
        };
        let mut d = Driver {
            c,
            mem,
            _mem_fd: fd,
            size,
            free: std::collections::BTreeMap::from([(0, size)]),
            aq: Ring {
                off: 0,
                depth_log2: 0,
                stride_log2: 0,
            },
            aq_prod: 0,
            acq: Ring {
                off: 0,
                depth_log2: 0,
                stride_log2: 0,
            },
            acq_cons: 0,
            shared,
            next_cq: 1,
            next_qp: 2,
            next_mr: 1,
            next_ah: 1,
            pds: std::collections::BTreeSet::from([0]),
            pd: Pd(0),
            // The driver's own PD is the kernel's (`ib_alloc_pd` takes a
            // DMA MR for each).
            privileged: std::collections::BTreeSet::from([0]),
            qps: std::collections::HashMap::new(),
            pages_used: std::collections::BTreeSet::new(),
            eq: Ring {
                off: 0,
                depth_log2: 0,
                stride_log2: 0,
            },
            eq_cons: 0,
            event: std::fs::File::from(event),
            interrupts: 0,
            eth: None,
            gid: "::ffff:10.0.0.1".parse().expect("a literal GID"),
        };
        d.bring_up()?;
        Ok(d)
    }

    /// A device command through BAR 0.
    pub(crate) fn devcmd(&mut self, c: &[u8; 64]) -> Result<[u8; 16], Error> {
        self.c
            .region_write(region::BAR0, cmd::DONE as u64, &[0; 4])?;
        self.c.region_write(region::BAR0, cmd::CMD as u64, c)?;
        self.c
            .region_write(region::BAR0, cmd::DOORBELL as u64, &[1, 0, 0, 0])?;
        let comp = self
            .c
            .region_read(region::BAR0, cmd::COMP as u64, dev_cmd::COMP_LEN as u32)?;
        let done = dev_cmd::Comp::new_checked(&comp[..])
            .map_err(|_| Error::Unsupported("a short device command completion"))?;
        if done.status() != 0 {
            return Err(Error::DevCmd {
                op: dev_cmd::Packet::new_unchecked(c).opcode(),
                status: done.status(),
            });
        }
        let mut out = [0u8; dev_cmd::COMP_LEN];
        out.copy_from_slice(&comp[..dev_cmd::COMP_LEN]);
        Ok(out)
    }

    pub(crate) fn bring_up(&mut self) -> Result<(), Error> {
        let mut c = [0u8; dev_cmd::LEN];
        let mut p = dev_cmd::Packet::new_unchecked(&mut c);
        p.set_opcode(opcode::IDENTIFY);
        p.set_identify_ver(2);
        self.devcmd(&c)?;
        // LIF_IDENTIFY: type 0, version 1.
        c[..3].copy_from_slice(&[opcode::LIF_IDENTIFY, 0, 1]);
        self.devcmd(&c)?;
        let data = self
            .c
            .region_read(region::BAR0, (cmd::DATA + li::RDMA_VERSION) as u64, 4)?;
        if data[0] != 1 {
            return Err(Error::Unsupported("the device does not speak RDMA ABI v1"));
        }
        // The bootstrap: reset, one EQ (vector 0), the admin CQ on it, the
        // admin queue on that CQ.
        let eq = self.ring(9, 2)?;
        let acq = self.ring(6, 5)?;
        let aq = self.ring(6, 6)?;
        let queue = |op: u8, cid: u32, r: &Ring| {
            let mut c = [0u8; dev_cmd::LEN];
            let mut p = dev_cmd::Packet::new_unchecked(&mut c);
            p.set_opcode(op);
            RdmaQueue {
                qid: 0,
                version: 0,
                cid,
                dbid: 0,
                depth_log2: r.depth_log2,
                stride_log2: r.stride_log2,
                dma_addr: r.gpa(),
            }
            .emit(&mut p);
            c
        };
        let mut reset = [0u8; dev_cmd::LEN];
        reset[0] = ernic_ionic::bootstrap::opcode::RESET_LIF;
        self.devcmd(&reset)?;
        self.devcmd(&queue(ernic_ionic::bootstrap::opcode::CREATE_EQ, 0, &eq))?;
        self.devcmd(&queue(ernic_ionic::bootstrap::opcode::CREATE_CQ, 0, &acq))?;
        self.devcmd(&queue(
            ernic_ionic::bootstrap::opcode::CREATE_ADMINQ,
            0,
            &aq,
        ))?;
        self.aq = aq;
        self.acq = acq;
        self.eq = eq;
        Ok(())
    }
}
