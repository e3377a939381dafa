//! The Ethernet frame filter on the function's two paths (seed 001, "The
//! P4 Engine"): a frame the guest transmits that no in-process endpoint
//! claims, and a frame that arrives from the wire, go through the
//! installed [`FrameFilter`] instead of straight on. What it emits towards
//! the wire is sent at once (or discarded, as every frame is, when there
//! is no wire); what it emits towards the guest waits in a bounded queue
//! and is delivered as an endpoint's frames are: while receive buffers
//! take it, the first that finds none waiting for the guest's next
//! receive doorbell, and the frames behind it too.
//!
//! A frame the filter emits nothing for is dropped and counted; so is one
//! for the guest that finds [`MAX_QUEUED`] frames waiting. Queue buffers
//! are kept and reused: a frame costs no allocation once the queue has
//! been as deep as it gets. Without a filter none of this runs.

use std::collections::VecDeque;

use ernic_vfio::server::Io;

use super::IonicFunction;
use crate::eth::MAX_FRAME;
use crate::p4hook::{FrameFilter, Side};
use crate::tap::Wire;

/// Frames for the guest that may wait for receive buffers at once.
pub const MAX_QUEUED: usize = 256;

/// The installed filter and the frames it sent to the guest.
pub(super) struct FramePath {
    filter: Box<dyn FrameFilter>,
    /// Frames for the guest, oldest first.
    to_guest: VecDeque<Vec<u8>>,
    /// Buffers of delivered frames, for the next ones.
    free: Vec<Vec<u8>>,
    /// Frames the filter emitted nothing for.
    dropped: u64,
    /// Frames for the guest dropped because [`MAX_QUEUED`] waited (or
    /// longer than the largest frame).
    queue_full: u64,
}

impl std::fmt::Debug for FramePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FramePath")
            .field("to_guest", &self.to_guest.len())
            .field("dropped", &self.dropped)
            .field("queue_full", &self.queue_full)
            .finish()
    }
}

impl FramePath {
    pub(super) fn new(filter: Box<dyn FrameFilter>) -> FramePath {
        FramePath {
            filter,
            to_guest: VecDeque::new(),
            free: Vec::new(),
            dropped: 0,
            queue_full: 0,
        }
    }

    /// Runs the filter over `frame` from `from`: what it emits to the wire
    /// goes to `wire` (if any), what it emits to the guest is queued.
    pub(super) fn run(&mut self, from: Side, frame: &[u8], wire: &mut Option<Wire>) {
        let FramePath {
            filter,
            to_guest,
            free,
            dropped,
            queue_full,
        } = self;
        let mut emitted = false;
        filter.filter(from, frame, &mut |to, bytes| {
            emitted = true;
            match to {
                Side::Wire => {
                    // A wire that cannot take it now drops it, as on a link.
                    if let Some(w) = wire.as_mut() {
                        let _ = w.send(bytes);
                    }
                }
                Side::Guest => {
                    if to_guest.len() >= MAX_QUEUED || bytes.len() > MAX_FRAME {
                        *queue_full += 1;
                        return;
                    }
                    let mut b = free.pop().unwrap_or_default();
                    b.clear();
                    b.extend_from_slice(bytes);
                    to_guest.push_back(b);
                }
            }
        });
        if !emitted {
            *dropped += 1;
        }
    }

    /// Forgets the frames waiting for the guest (a device reset).
    pub(super) fn clear(&mut self) {
        while let Some(b) = self.to_guest.pop_front() {
            self.free.push(b);
        }
    }
}

/// What the frame filter counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FilterStats {
    /// Frames the filter emitted nothing for.
    pub dropped: u64,
    /// Frames for the guest dropped because the queue was full.
    pub queue_full: u64,
    /// Frames for the guest waiting for a receive buffer now.
    pub waiting: usize,
}

impl IonicFunction {
    /// Every frame between the guest and the wire goes through `filter`
    /// (see `function/frames.rs`); frames an endpoint claims or sends do
    /// not.
    pub fn with_frame_filter(mut self, filter: Box<dyn FrameFilter>) -> IonicFunction {
        self.frames = Some(FramePath::new(filter));
        self
    }

    /// The frame filter's counters (`None` without a filter).
    pub fn frame_filter_stats(&self) -> Option<FilterStats> {
        self.frames.as_ref().map(|p| FilterStats {
            dropped: p.dropped,
            queue_full: p.queue_full,
            waiting: p.to_guest.len(),
        })
    }

    /// Delivers the frames the filter sent to the guest while receive
    /// buffers take them; the first that finds none waits, and the rest
    /// behind it.
    pub(super) fn deliver_filtered(&mut self, io: &mut Io) {
        let Some(p) = self.frames.as_mut() else {
            return;
        };
        while let Some(f) = p.to_guest.front() {
            if !self.bar0.rx_room(f) {
                break;
            }
            if let Some(v) = self.bar0.rx_frame(f, io.dma) {
                super::interrupt(&mut self.interrupts, io, v);
            }
            if let Some(b) = p.to_guest.pop_front() {
                p.free.push(b);
            }
        }
    }
}
