//! What the device says of itself: the slice of the NIC profile BAR 0
//! serves (vectors, strings, link, queue and RDMA object counts).

/// What the device says of itself (a slice of the NIC profile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// MSI-X vectors (and interrupt control blocks).
    pub vectors: u16,
    /// Firmware version string (at most 31 bytes are shown).
    pub fw_version: String,
    /// Serial number string.
    pub serial: String,
    /// Link speed in Mb/s.
    pub speed: u32,
    /// Doorbell pages per LIF.
    pub doorbell_pages: u32,
    /// Doorbell pages at the top of BAR 2 offered to the client as shared
    /// memory (sparse mmap) that the server polls; 0 for none. They lie
    /// above the pages the LIF reports, so a driver that takes its pages
    /// from the LIF never rings one.
    pub shared_doorbell_pages: u32,
    /// The LIF's station MAC.
    pub mac: [u8; 6],
    /// Largest Ethernet frame.
    pub max_frame: u32,
    /// Ethernet receive (and transmit) queues.
    pub eth_queues: u32,
    /// RDMA queue counts: admin queues, QPs (SQ and RQ ids), CQs, EQs.
    pub rdma_aqs: u32,
    /// QPs.
    pub rdma_qps: u32,
    /// CQs.
    pub rdma_cqs: u32,
    /// EQs.
    pub rdma_eqs: u32,
    /// Memory regions.
    pub rdma_mrs: u32,
    /// Address handles.
    pub rdma_ahs: u32,
    /// Page-table entries per LIF, shared by every MR (a fast-registration
    /// MR's page-list room included) and every ring given by a page table;
    /// one object may take half (see [`crate::limits`]).
    pub rdma_ptes: u32,
    /// Memory the engine may hold for the work-request slots of the QPs
    /// and SRQs, in MiB (see [`crate::limits`]).
    pub rdma_queue_mib: u32,
    /// How long a SEND waits for its peer to post a receive before it
    /// completes with RNR retry exceeded, in milliseconds.
    pub rnr_timeout_ms: u32,
    /// How long a request to another server waits for its answer before it
    /// completes with transport retry exceeded, in milliseconds.
    pub request_timeout_ms: u32,
}

impl Default for Identity {
    fn default() -> Identity {
        Identity {
            vectors: 32,
            fw_version: format!("ernic-{}", env!("CARGO_PKG_VERSION")),
            serial: "ERNIC0000000001".into(),
            speed: 100_000,
            doorbell_pages: 1024,
            shared_doorbell_pages: 0,
            // A locally administered address.
            mac: [0x02, 0x00, 0x45, 0x52, 0x4e, 0x01],
            max_frame: 9216 + 14 + 4,
            eth_queues: 4,
            rdma_aqs: 4,
            rdma_qps: 1024,
            rdma_cqs: 1024,
            rdma_eqs: 32,
            rdma_mrs: 65_536,
            rdma_ahs: 4096,
            // 2^20 entries, as the seed's device has: with 4 KiB pages a
            // 2 GiB MR at most (the driver reports half the table).
            rdma_ptes: 1 << 20,
            rdma_queue_mib: 128,
            rnr_timeout_ms: 5000,
            request_timeout_ms: 30_000,
        }
    }
}
