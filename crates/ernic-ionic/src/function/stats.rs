//! The function's counters as stats-file groups, and the stats file the
//! device loop writes about once a second.
//!
//! Counting happens where the events are (plain `u64`s on the device
//! thread: doorbells, device commands, the LIF's frames, the core's
//! counters); the groups are built here only when the file is written, so
//! the data path never allocates for them. The `device` and `qp` groups
//! carry the core counters under the very names the guest's `hw_counters`
//! show (STATS_HDRS), and the same values.

use ernic_ops::file::StatsFile;
use ernic_ops::{Group, StatsDoc};

use super::IonicFunction;

/// Builds the whole document from the function when a write is due (the
/// server adds its identity and the groups of the parts it owns).
pub type Compose = Box<dyn Fn(&IonicFunction) -> StatsDoc + Send>;

/// The stats file and how its document is made.
pub(super) struct StatsWriter {
    pub(super) file: StatsFile,
    pub(super) every: std::time::Duration,
    pub(super) next: std::time::Instant,
    pub(super) compose: Compose,
}

impl std::fmt::Debug for StatsWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatsWriter")
            .field("file", &self.file)
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl IonicFunction {
    /// Writes the stats file at `path` about every `every` from the
    /// device loop, each time the document `compose` makes from this
    /// function (typically an [`ernic_ops::Instance`] and
    /// [`IonicFunction::stats_groups`]); [`IonicFunction::write_stats`]
    /// writes it at once (at exit).
    pub fn with_stats_file(
        mut self,
        path: std::path::PathBuf,
        every: std::time::Duration,
        compose: Compose,
    ) -> IonicFunction {
        self.stats = Some(StatsWriter {
            file: StatsFile::new(path, every),
            every,
            next: std::time::Instant::now(),
            compose,
        });
        self
    }

    /// Writes the stats file now, when there is one (a failure is logged
    /// once by the file).
    pub fn write_stats(&mut self) {
        let Some(mut w) = self.stats.take() else {
            return;
        };
        let now = std::time::Instant::now();
        let doc = (w.compose)(self);
        w.file.write(now, &doc);
        w.next = now + w.every;
        self.stats = Some(w);
    }

    /// A document of `instance` with [`IonicFunction::stats_groups`]: what a
    /// [`Compose`] for a lone function makes.
    pub fn stats_doc(&self, instance: &ernic_ops::Instance) -> StatsDoc {
        let mut doc = StatsDoc::new(instance);
        for g in self.stats_groups() {
            doc.push(g);
        }
        doc
    }

    /// When the stats file is due next.
    pub(super) fn stats_due(&self) -> Option<std::time::Instant> {
        self.stats.as_ref().map(|w| w.next)
    }

    /// The function's counters as stats-file groups: `device` and `qp`
    /// (label `qpn`: the core counters, named as `hw_counters` names them),
    /// `ionic` (doorbells trapped and shared, device and RDMA admin
    /// commands, interrupts), `admin` (labels `opcode`, `command`,
    /// `status`: RDMA admin commands by opcode and completion status), `lif` (the `struct ionic_lif_stats` counters), `port`
    /// (label `port`=1, node_exporter's infiniband names), `link`, and `p4`
    /// when a P4 filter is installed.
    pub fn stats_groups(&self) -> Vec<Group> {
        let mut out = Vec::new();
        let rdma = &self.rdma;
        if let Some(c) = rdma.device_counters() {
            out.push(Group::new("device").core_counters(c));
        }
        for (id, _, _) in rdma.qps() {
            if let Some(c) = rdma.qp_counters(id) {
                out.push(Group::new("qp").label("qpn", id).core_counters(c));
            }
        }
        out.push(
            Group::new("ionic")
                .counter("doorbells_trapped", self.doorbells - self.doorbells_shared)
                .counter("doorbells_shared", self.doorbells_shared)
                .counter("device_commands", self.bar0.commands())
                .counter("rdma_admin_commands", rdma.commands())
                .counter("interrupts", self.interrupts),
        );
        for (op, status, n) in rdma.admin_tally() {
            out.push(
                Group::new("admin")
                    .label("opcode", op)
                    .label("command", crate::fw::admin_op::name(op))
                    .label("status", status)
                    .counter("commands", n),
            );
        }
        let s = self.bar0.stats();
        let mut lif = Group::new("lif");
        for (dir, drop, v) in [
            ("rx", "", &s.rx),
            ("rx", "_drop", &s.rx_drop),
            ("tx", "", &s.tx),
            ("tx", "_drop", &s.tx_drop),
        ] {
            for (cast, (bytes, packets)) in ["ucast", "mcast", "bcast"].iter().zip(v.iter()) {
                lif = lif
                    .counter(&format!("{dir}_{cast}{drop}_bytes"), *bytes)
                    .counter(&format!("{dir}_{cast}{drop}_packets"), *packets);
            }
        }
        out.push(
            lif.counter("rx_queue_disabled", s.rx_queue_disabled)
                .counter("rx_queue_empty", s.rx_queue_empty)
                .counter("rx_desc_data_error", s.rx_desc_data_error)
                .counter("tx_desc_fetch_error", s.tx_desc_fetch_error),
        );
        let sum = |v: &[(u64, u64); 3]| v.iter().fold((0, 0), |a, x| (a.0 + x.0, a.1 + x.1));
        let (rx_bytes, rx_packets) = sum(&s.rx);
        let (tx_bytes, tx_packets) = sum(&s.tx);
        let (_, tx_dropped) = sum(&s.tx_drop);
        out.push(
            Group::new("port")
                .label("port", 1)
                .counter("data_transmitted_bytes", tx_bytes)
                .counter("data_received_bytes", rx_bytes)
                .counter("packets_transmitted", tx_packets)
                .counter("packets_received", rx_packets)
                .counter("unicast_packets_transmitted", s.tx[0].1)
                .counter("unicast_packets_received", s.rx[0].1)
                .counter("multicast_packets_transmitted", s.tx[1].1)
                .counter("multicast_packets_received", s.rx[1].1)
                .counter("receive_errors", s.rx_desc_data_error)
                .counter("transmit_discards", s.tx_desc_fetch_error + tx_dropped),
        );
        // The link never goes down: the wire is a socket or a tap.
        out.push(Group::new("link").label("port", 1).counter("downed", 0));
        let frames = self.frame_filter_stats();
        let send = rdma.send_filter_stats();
        if frames.is_some() || send.is_some() {
            let mut p4 = Group::new("p4");
            if let Some(f) = frames {
                p4 = p4
                    .counter("frames_dropped", f.dropped)
                    .counter("guest_queue_full", f.queue_full)
                    .gauge("frames_waiting", f.waiting as f64);
            }
            if let Some(t) = send {
                p4 = p4
                    .counter("send_wqes_dropped", t.dropped)
                    .counter("writes_transformed", t.transformed)
                    .counter("transforms_refused", t.refused);
            }
            out.push(p4);
        }
        out
    }
}
