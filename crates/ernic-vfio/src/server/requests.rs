//! What each vfio-user request does: the version handshake, region and
//! IRQ info, region I/O, DMA map and unmap, IRQ set-up, reset.

use std::os::fd::OwnedFd;

use super::{Answer, Device, Io, Server, VERSION};
use crate::dma::errno;
use crate::proto::{self, Header, Request};

impl<D: Device> Server<D> {
    pub(super) fn answer(
        &mut self,
        h: &Header,
        body: &[u8],
        fds: &mut Vec<OwnedFd>,
        versioned: &mut bool,
    ) -> Answer {
        let req = match proto::decode(h, body, self.ours.max_data_xfer_size) {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(command = h.command, error = %e, "vfio-user request refused");
                return Answer::Error(e.errno());
            }
        };
        if !*versioned && !matches!(req, Request::Version { .. }) {
            tracing::debug!(
                command = h.command,
                "vfio-user request refused: no VERSION handshake yet"
            );
            return Answer::Error(errno::EINVAL);
        }
        let give = match req {
            Request::DeviceGetRegionInfo { index, .. } => self.device.region_fd(index),
            _ => None,
        };
        let mut out = std::mem::take(&mut self.reply);
        out.clear();
        let r = self.handle(req, fds, versioned, &mut out);
        self.reply = out;
        match r {
            Ok(()) => Answer::Body(give),
            Err(e) => {
                tracing::debug!(command = h.command, errno = e, "vfio-user request refused");
                Answer::Error(e)
            }
        }
    }

    pub(super) fn region(&self, index: u32, offset: u64, len: usize, need: u32) -> Result<(), i32> {
        let r = self.regions.get(index as usize).ok_or(errno::EINVAL)?;
        let end = offset.checked_add(len as u64).ok_or(errno::EINVAL)?;
        if end > r.size || r.flags & need == 0 {
            return Err(errno::EINVAL);
        }
        Ok(())
    }

    pub(super) fn handle(
        &mut self,
        req: Request,
        fds: &mut Vec<OwnedFd>,
        versioned: &mut bool,
        b: &mut Vec<u8>,
    ) -> Result<(), i32> {
        let mut io = Io {
            dma: &mut self.dma,
            irqs: &mut self.irqs,
        };
        match req {
            // The client's capabilities matter for what a server sends it
            // (DMA_READ/WRITE messages, fds per message); this one sends
            // replies only, each without descriptors.
            Request::Version { major, minor, .. } => {
                if major != VERSION.0 {
                    return Err(errno::ENOTSUP);
                }
                *versioned = true;
                b.extend_from_slice(&major.to_le_bytes());
                b.extend_from_slice(&minor.min(VERSION.1).to_le_bytes());
                b.extend_from_slice(&self.ours.to_json());
                Ok(())
            }
            Request::DmaMap {
                flags,
                offset,
                address,
                size,
            } => {
                if fds.len() > 1 {
                    return Err(errno::EINVAL);
                }
                io.dma
                    .map(address, size, offset, flags, fds.pop())
                    .map_err(|e| {
                        tracing::warn!(address, size, "DMA_MAP refused: {e}");
                        e.errno()
                    })
            }
            Request::DmaUnmap {
                argsz,
                address,
                size,
            } => {
                io.dma.unmap(address, size)?;
                self.device.unmapped();
                // The reply repeats the request's entry.
                b.extend_from_slice(&argsz.min(24).to_le_bytes());
                b.extend_from_slice(&0u32.to_le_bytes());
                b.extend_from_slice(&address.to_le_bytes());
                b.extend_from_slice(&size.to_le_bytes());
                Ok(())
            }
            Request::DeviceGetInfo { .. } => {
                b.extend_from_slice(&proto::device_info(
                    self.device.flags(),
                    self.regions.len() as u32,
                    self.device.irqs().len() as u32,
                ));
                Ok(())
            }
            Request::DeviceGetRegionInfo { argsz, index } => {
                let r = self.regions.get(index as usize).ok_or(errno::EINVAL)?;
                b.extend_from_slice(&r.reply(argsz));
                Ok(())
            }
            Request::DeviceGetIrqInfo { index, .. } => {
                let irqs = self.device.irqs();
                let &(flags, count) = irqs.get(index as usize).ok_or(errno::EINVAL)?;
                b.extend_from_slice(&proto::irq_info(flags, index, count));
                Ok(())
            }
            Request::DeviceSetIrqs {
                flags,
                index,
                start,
                count,
                data,
            } => {
                io.irqs.set(flags, index, start, count, data, fds)?;
                Ok(())
            }
            Request::RegionRead {
                offset,
                region,
                count,
            } => {
                self.region(region, offset, count as usize, proto::REGION_READ)?;
                b.extend_from_slice(&proto::region_io_reply(offset, region, count));
                b.resize(16 + count as usize, 0);
                let mut io = Io {
                    dma: &mut self.dma,
                    irqs: &mut self.irqs,
                };
                self.device.read(&mut io, region, offset, &mut b[16..])
            }
            Request::RegionWrite {
                offset,
                region,
                data,
            } => {
                self.region(region, offset, data.len(), proto::REGION_WRITE)?;
                let mut io = Io {
                    dma: &mut self.dma,
                    irqs: &mut self.irqs,
                };
                self.device.write(&mut io, region, offset, data)?;
                b.extend_from_slice(&proto::region_io_reply(offset, region, data.len() as u32));
                Ok(())
            }
            Request::DeviceReset => {
                self.device.reset(&mut io);
                Ok(())
            }
        }
    }
}
