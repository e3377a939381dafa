//! The RDMA admin commands an admin WQE carries (after its 4-byte
//! header, `super::admin_wqe`): `struct ionic_admin_create_cq`,
//! `_create_qp`, `_mod_qp`, `_query_qp` (and the SQ and RQ answers it
//! asks for), `_create_mr`, `_create_ah`, `_stats_hdr`, and ernic's SRQ
//! commands. Each is a module of offsets (checked by `tests/layout.rs`)
//! and a `Packet` view, which the device decodes with and the driver
//! encodes with. After `new_checked` no accessor panics.

#![allow(missing_docs)]

/// `struct ionic_admin_create_cq` (34 bytes).
pub mod create_cq {
    pub const EQ_ID: usize = 0;
    pub const DEPTH_LOG2: usize = 4;
    pub const STRIDE_LOG2: usize = 5;
    pub const PAGE_SIZE_LOG2: usize = 7;
    pub const CQ_FLAGS: usize = 8;
    pub const ID_VER: usize = 12;
    pub const TBL_INDEX: usize = 16;
    pub const MAP_COUNT: usize = 20;
    pub const DMA_ADDR: usize = 24;
    pub const DBID_FLAGS: usize = 32;
    pub const LEN: usize = 34;

    view!("CREATE_CQ command", LEN);

    fields! {
        /// `eq_id`: the EQ the CQ's events go to.
        eq_id / set_eq_id: u32 = EQ_ID..EQ_ID + 4;
        /// `depth_log2`.
        depth_log2 / set_depth_log2: u8 = DEPTH_LOG2;
        /// `stride_log2` (a CQE's 32 bytes: 5).
        stride_log2 / set_stride_log2: u8 = STRIDE_LOG2;
        /// `page_size_log2` of the ring's pages.
        page_size_log2 / set_page_size_log2: u8 = PAGE_SIZE_LOG2;
        /// `id_ver`: the CQ's id.
        id_ver / set_id_ver: u32 = ID_VER..ID_VER + 4;
        /// `map_count`: pages in the ring.
        map_count / set_map_count: u32 = MAP_COUNT..MAP_COUNT + 4;
        /// `dma_addr`: the ring, or its page table.
        dma_addr / set_dma_addr: u64 = DMA_ADDR..DMA_ADDR + 8;
    }
}

/// `struct ionic_admin_create_qp` (64 bytes).
pub mod create_qp {
    pub const PD_ID: usize = 0;
    pub const PRIV_FLAGS_BE: usize = 4;
    pub const SQ_CQ_ID: usize = 8;
    pub const SQ_DEPTH_LOG2: usize = 12;
    pub const SQ_STRIDE_LOG2: usize = 13;
    pub const SQ_PAGE_SIZE_LOG2: usize = 15;
    pub const SQ_TBL_INDEX_XRCD_ID: usize = 16;
    pub const SQ_MAP_COUNT: usize = 20;
    pub const SQ_DMA_ADDR: usize = 24;
    pub const RQ_CQ_ID: usize = 32;
    pub const RQ_DEPTH_LOG2: usize = 36;
    pub const RQ_STRIDE_LOG2: usize = 37;
    pub const RQ_PAGE_SIZE_LOG2: usize = 39;
    pub const RQ_TBL_INDEX_SRQ_ID: usize = 40;
    pub const RQ_MAP_COUNT: usize = 44;
    pub const RQ_DMA_ADDR: usize = 48;
    pub const ID_VER: usize = 56;
    pub const DBID_FLAGS: usize = 60;
    pub const TYPE_STATE: usize = 62;
    pub const LEN: usize = 64;

    view!("CREATE_QP command", LEN);

    fields! {
        /// `pd_id`.
        pd_id / set_pd_id: u32 = PD_ID..PD_ID + 4;
        /// `sq_cq_id`.
        sq_cq_id / set_sq_cq_id: u32 = SQ_CQ_ID..SQ_CQ_ID + 4;
        /// `sq_depth_log2`.
        sq_depth_log2 / set_sq_depth_log2: u8 = SQ_DEPTH_LOG2;
        /// `sq_stride_log2`.
        sq_stride_log2 / set_sq_stride_log2: u8 = SQ_STRIDE_LOG2;
        /// `sq_page_size_log2`.
        sq_page_size_log2 / set_sq_page_size_log2: u8 = SQ_PAGE_SIZE_LOG2;
        /// `sq_map_count`.
        sq_map_count / set_sq_map_count: u32 = SQ_MAP_COUNT..SQ_MAP_COUNT + 4;
        /// `sq_dma_addr`.
        sq_dma_addr / set_sq_dma_addr: u64 = SQ_DMA_ADDR..SQ_DMA_ADDR + 8;
        /// `rq_cq_id`.
        rq_cq_id / set_rq_cq_id: u32 = RQ_CQ_ID..RQ_CQ_ID + 4;
        /// `rq_depth_log2`.
        rq_depth_log2 / set_rq_depth_log2: u8 = RQ_DEPTH_LOG2;
        /// `rq_stride_log2`.
        rq_stride_log2 / set_rq_stride_log2: u8 = RQ_STRIDE_LOG2;
        /// `rq_page_size_log2`.
        rq_page_size_log2 / set_rq_page_size_log2: u8 = RQ_PAGE_SIZE_LOG2;
        /// `rq_tbl_index_srq_id`: with no RQ ring, the SRQ receives come
        /// from.
        rq_tbl_index_srq_id / set_rq_tbl_index_srq_id: u32 =
            RQ_TBL_INDEX_SRQ_ID..RQ_TBL_INDEX_SRQ_ID + 4;
        /// `rq_map_count`.
        rq_map_count / set_rq_map_count: u32 = RQ_MAP_COUNT..RQ_MAP_COUNT + 4;
        /// `rq_dma_addr`.
        rq_dma_addr / set_rq_dma_addr: u64 = RQ_DMA_ADDR..RQ_DMA_ADDR + 8;
        /// `id_ver`: the QP's id.
        id_ver / set_id_ver: u32 = ID_VER..ID_VER + 4;
        /// `type_state`: the QP type (`super::super::qpt`) in the low
        /// nibble.
        type_state / set_type_state: u8 = TYPE_STATE;
    }

    impl<T: AsRef<[u8]>> Packet<T> {
        /// `priv_flags` (big-endian): `super::super::qpf` bits.
        pub fn priv_flags(&self) -> u32 {
            crate::fw::get_be32(self.buffer.as_ref(), PRIV_FLAGS_BE..PRIV_FLAGS_BE + 4)
        }
    }

    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        /// Sets `priv_flags`.
        pub fn set_priv_flags(&mut self, v: u32) {
            crate::fw::set_bytes(
                self.buffer.as_mut(),
                PRIV_FLAGS_BE..PRIV_FLAGS_BE + 4,
                &v.to_be_bytes(),
            );
        }
    }
}

/// `struct ionic_admin_mod_qp` (60 bytes).
pub mod mod_qp {
    pub const ATTR_MASK_BE: usize = 0;
    pub const ACCESS_FLAGS_BE: usize = 6;
    pub const RQ_PSN: usize = 8;
    pub const SQ_PSN: usize = 12;
    pub const QKEY_DEST_QPN: usize = 16;
    pub const PMTU: usize = 24;
    pub const RETRY: usize = 25;
    pub const RNR_TIMER: usize = 26;
    pub const AH_ID_LEN: usize = 32;
    pub const TYPE_STATE: usize = 39;
    pub const DMA_ADDR: usize = 48;
    pub const ID_VER: usize = 56;
    pub const LEN: usize = 60;

    view!("MODIFY_QP command", LEN);

    fields! {
        /// `rq_psn`.
        rq_psn / set_rq_psn: u32 = RQ_PSN..RQ_PSN + 4;
        /// `sq_psn`.
        sq_psn / set_sq_psn: u32 = SQ_PSN..SQ_PSN + 4;
        /// `qkey_dest_qpn`: the Q_Key (datagram QPs) or the destination QP.
        qkey_dest_qpn / set_qkey_dest_qpn: u32 = QKEY_DEST_QPN..QKEY_DEST_QPN + 4;
        /// `pmtu`: the path MTU's log2 (`super::super::pmtu`).
        pmtu / set_pmtu: u8 = PMTU;
        /// `retry`: the transport retry count in bits 0-2, `rnr_retry` in
        /// bits 4-6.
        retry / set_retry: u8 = RETRY;
        /// `rnr_timer`: the QP's `min_rnr_timer` code.
        rnr_timer / set_rnr_timer: u8 = RNR_TIMER;
        /// `ah_id_len`: the header template's bytes.
        ah_id_len / set_ah_id_len: u32 = AH_ID_LEN..AH_ID_LEN + 4;
        /// `type_state`: the new state (`super::super::qps`) in the low
        /// nibble.
        type_state / set_type_state: u8 = TYPE_STATE;
        /// `dma_addr`: the header template.
        dma_addr / set_dma_addr: u64 = DMA_ADDR..DMA_ADDR + 8;
        /// `id_ver`: the QP's id.
        id_ver / set_id_ver: u32 = ID_VER..ID_VER + 4;
    }

    impl<T: AsRef<[u8]>> Packet<T> {
        /// `attr_mask` (big-endian): `super::super::attr` bits.
        pub fn attr_mask(&self) -> u32 {
            crate::fw::get_be32(self.buffer.as_ref(), ATTR_MASK_BE..ATTR_MASK_BE + 4)
        }

        /// `access_flags` (big-endian): `super::super::qpf` bits.
        pub fn access_flags(&self) -> u16 {
            crate::fw::get_be16(self.buffer.as_ref(), ACCESS_FLAGS_BE..ACCESS_FLAGS_BE + 2)
        }
    }

    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        /// Sets `attr_mask`.
        pub fn set_attr_mask(&mut self, v: u32) {
            crate::fw::set_bytes(
                self.buffer.as_mut(),
                ATTR_MASK_BE..ATTR_MASK_BE + 4,
                &v.to_be_bytes(),
            );
        }

        /// Sets `access_flags`.
        pub fn set_access_flags(&mut self, v: u16) {
            crate::fw::set_bytes(
                self.buffer.as_mut(),
                ACCESS_FLAGS_BE..ACCESS_FLAGS_BE + 2,
                &v.to_be_bytes(),
            );
        }
    }
}

/// `struct ionic_admin_query_qp` (34 bytes).
pub mod query_qp {
    pub const HDR_DMA_ADDR: usize = 0;
    pub const SQ_DMA_ADDR: usize = 8;
    pub const RQ_DMA_ADDR: usize = 16;
    pub const AH_ID: usize = 24;
    pub const ID_VER: usize = 28;
    pub const LEN: usize = 34;

    view!("QUERY_QP command", LEN);

    fields! {
        /// `hdr_dma_addr`: where the header template goes (unused here).
        hdr_dma_addr / set_hdr_dma_addr: u64 = HDR_DMA_ADDR..HDR_DMA_ADDR + 8;
        /// `sq_dma_addr`: the `ionic_v1_admin_query_qp_sq` answer's buffer.
        sq_dma_addr / set_sq_dma_addr: u64 = SQ_DMA_ADDR..SQ_DMA_ADDR + 8;
        /// `rq_dma_addr`: the `ionic_v1_admin_query_qp_rq` answer's buffer.
        rq_dma_addr / set_rq_dma_addr: u64 = RQ_DMA_ADDR..RQ_DMA_ADDR + 8;
        /// `id_ver`: the QP's id.
        id_ver / set_id_ver: u32 = ID_VER..ID_VER + 4;
    }

    /// `struct ionic_v1_admin_query_qp_sq` (20 bytes, big-endian): the
    /// answer the device writes at `sq_dma_addr`.
    pub mod sq {
        pub const ACCESS_PERMS_FLAGS_BE: usize = 2;
        pub const QKEY_DEST_QPN_BE: usize = 8;
        pub const RQ_PSN_BE: usize = 16;
        pub const LEN: usize = 20;

        view!("QUERY_QP SQ answer", LEN);

        be_fields! {
            /// `access_perms_flags`: `super::super::super::qpf` bits.
            access_perms_flags / set_access_perms_flags: u16 =
                ACCESS_PERMS_FLAGS_BE..ACCESS_PERMS_FLAGS_BE + 2;
            /// `qkey_dest_qpn`: the Q_Key (datagram QPs) or the peer QP.
            qkey_dest_qpn / set_qkey_dest_qpn: u32 = QKEY_DEST_QPN_BE..QKEY_DEST_QPN_BE + 4;
            /// `rq_psn`.
            rq_psn / set_rq_psn: u32 = RQ_PSN_BE..RQ_PSN_BE + 4;
        }
    }

    /// `struct ionic_v1_admin_query_qp_rq` (12 bytes, big-endian): the
    /// answer the device writes at `rq_dma_addr`.
    pub mod rq {
        pub const STATE_PMTU: usize = 0;
        pub const RRQ_DEPTH: usize = 2;
        pub const RSQ_DEPTH: usize = 3;
        pub const SQ_PSN_BE: usize = 4;
        pub const ACCESS_PERMS_FLAGS_BE: usize = 8;
        pub const LEN: usize = 12;

        view!("QUERY_QP RQ answer", LEN);

        be_fields! {
            /// `state_pmtu`: the state (`super::super::super::qps`) in the
            /// high nibble, the path MTU's log2 in the low.
            state_pmtu / set_state_pmtu: u8 = STATE_PMTU;
            /// `rrq_depth`: READs and atomics outstanding as requester.
            rrq_depth / set_rrq_depth: u8 = RRQ_DEPTH;
            /// `rsq_depth`: READs and atomics outstanding as responder.
            rsq_depth / set_rsq_depth: u8 = RSQ_DEPTH;
            /// `sq_psn`.
            sq_psn / set_sq_psn: u32 = SQ_PSN_BE..SQ_PSN_BE + 4;
            /// `access_perms_flags`.
            access_perms_flags / set_access_perms_flags: u16 =
                ACCESS_PERMS_FLAGS_BE..ACCESS_PERMS_FLAGS_BE + 2;
        }
    }
}

/// `struct ionic_admin_create_mr` (45 bytes).
pub mod create_mr {
    pub const VA: usize = 0;
    pub const LENGTH: usize = 8;
    pub const PD_ID: usize = 16;
    pub const ID_VER: usize = 20;
    pub const TBL_INDEX: usize = 24;
    pub const MAP_COUNT: usize = 28;
    pub const DMA_ADDR: usize = 32;
    pub const DBID_FLAGS: usize = 40;
    pub const PT_TYPE: usize = 42;
    pub const DIR_SIZE_LOG2: usize = 43;
    pub const PAGE_SIZE_LOG2: usize = 44;
    pub const LEN: usize = 45;

    view!("CREATE_MR command", LEN);

    fields! {
        /// `va`: the region's first address.
        va / set_va: u64 = VA..VA + 8;
        /// `length`: the region's bytes.
        length / set_length: u64 = LENGTH..LENGTH + 8;
        /// `pd_id`.
        pd_id / set_pd_id: u32 = PD_ID..PD_ID + 4;
        /// `id_ver`: the MR's key.
        id_ver / set_id_ver: u32 = ID_VER..ID_VER + 4;
        /// `map_count`: pages (or, for a fast-registration MR, its room).
        map_count / set_map_count: u32 = MAP_COUNT..MAP_COUNT + 4;
        /// `dma_addr`: the page, or the page table.
        dma_addr / set_dma_addr: u64 = DMA_ADDR..DMA_ADDR + 8;
        /// `dbid_flags`: `super::super::mrf` rights and the MR flags.
        dbid_flags / set_dbid_flags: u16 = DBID_FLAGS..DBID_FLAGS + 2;
        /// `page_size_log2`.
        page_size_log2 / set_page_size_log2: u8 = PAGE_SIZE_LOG2;
    }
}

/// `struct ionic_admin_create_ah` (24 bytes).
pub mod create_ah {
    pub const DMA_ADDR: usize = 0;
    pub const LENGTH: usize = 8;
    pub const PD_ID: usize = 12;
    pub const ID_VER: usize = 16;
    pub const LEN: usize = 24;

    view!("CREATE_AH command", LEN);

    fields! {
        /// `dma_addr`: the header template.
        dma_addr / set_dma_addr: u64 = DMA_ADDR..DMA_ADDR + 8;
        /// `length`: the template's bytes.
        length / set_length: u32 = LENGTH..LENGTH + 4;
        /// `pd_id`.
        pd_id / set_pd_id: u32 = PD_ID..PD_ID + 4;
        /// `id_ver`: the AH's id.
        id_ver / set_id_ver: u32 = ID_VER..ID_VER + 4;
    }
}

/// `struct ionic_admin_stats_hdr` (17 bytes).
pub mod stats_hdr {
    pub const DMA_ADDR: usize = 0;
    pub const LENGTH: usize = 8;
    pub const ID_VER: usize = 12;
    pub const LEN: usize = 17;

    view!("STATS command", LEN);

    fields! {
        /// `dma_addr`: the buffer the names or values go to.
        dma_addr / set_dma_addr: u64 = DMA_ADDR..DMA_ADDR + 8;
        /// `length`: the buffer's bytes.
        length / set_length: u32 = LENGTH..LENGTH + 4;
        /// `id_ver`: the QP (QP_STATS_VALS).
        id_ver / set_id_ver: u32 = ID_VER..ID_VER + 4;
    }
}

/// The SRQ commands' layouts (ernic's). CREATE_SRQ: its ring (depth,
/// stride, page size, a direct or tabled page list), low watermark and
/// protection domain (the driver's `pd_id`, as CREATE_QP carries it; a QP
/// may draw only from an SRQ of its own PD); the CQE answers the id the
/// device gave it (above the QP id range, so the RQ doorbell type reaches
/// it). MODIFY_SRQ: id and limit. QUERY_SRQ:
/// id; the CQE answers the limit and the receives outstanding.
/// DESTROY_SRQ: id. A QP draws from an SRQ when CREATE_QP gives no RQ
/// ring and names the SRQ in `rq_tbl_index_srq_id`.
pub mod srq {
    pub const DEPTH_LOG2: usize = 0;
    pub const STRIDE_LOG2: usize = 1;
    pub const PAGE_SIZE_LOG2: usize = 2;
    pub const MAP_COUNT: usize = 4;
    pub const DMA_ADDR: usize = 8;
    pub const LIMIT: usize = 16;
    pub const PD_ID: usize = 20;
    pub const CREATE_LEN: usize = 24;
    pub const ID: usize = 0;
    pub const MODIFY_LIMIT: usize = 4;
    pub const MODIFY_LEN: usize = 8;
    /// Where an SRQ command's results go in its admin CQE (after `cmd_op`,
    /// in `admin.rsvd`): two little-endian words.
    pub const CQE_RESULT: usize = 4;

    /// CREATE_SRQ's command.
    pub mod create {
        use super::*;

        view!("CREATE_SRQ command", CREATE_LEN);

        fields! {
            /// The ring's `depth_log2`.
            depth_log2 / set_depth_log2: u8 = DEPTH_LOG2;
            /// The ring's `stride_log2`.
            stride_log2 / set_stride_log2: u8 = STRIDE_LOG2;
            /// The ring's `page_size_log2`.
            page_size_log2 / set_page_size_log2: u8 = PAGE_SIZE_LOG2;
            /// Pages in the ring.
            map_count / set_map_count: u32 = MAP_COUNT..MAP_COUNT + 4;
            /// The ring, or its page table.
            dma_addr / set_dma_addr: u64 = DMA_ADDR..DMA_ADDR + 8;
            /// The low watermark.
            limit / set_limit: u32 = LIMIT..LIMIT + 4;
            /// The PD.
            pd_id / set_pd_id: u32 = PD_ID..PD_ID + 4;
        }
    }

    /// MODIFY_SRQ's command (QUERY_SRQ and DESTROY_SRQ carry the id alone).
    pub mod modify {
        use super::*;

        view!("MODIFY_SRQ command", MODIFY_LEN);

        fields! {
            /// The SRQ's id.
            id / set_id: u32 = ID..ID + 4;
            /// The new low watermark.
            limit / set_limit: u32 = MODIFY_LIMIT..MODIFY_LIMIT + 4;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_cq_and_create_ah_are_written_and_read_as_laid_out() {
        let mut b = [0u8; create_cq::LEN];
        let mut p = create_cq::Packet::new_checked(&mut b[..]).unwrap();
        p.set_eq_id(3);
        p.set_depth_log2(8);
        p.set_stride_log2(5);
        p.set_page_size_log2(12);
        p.set_id_ver(9);
        p.set_map_count(1);
        p.set_dma_addr(0x1122_3344_5566_7788);
        assert_eq!(
            b,
            [
                3, 0, 0, 0, 8, 5, 0, 12, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x88,
                0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0, 0
            ]
        );
        let p = create_cq::Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.eq_id(), p.depth_log2(), p.stride_log2()), (3, 8, 5));
        assert_eq!(
            (p.id_ver(), p.map_count(), p.dma_addr()),
            (9, 1, 0x1122_3344_5566_7788)
        );
        assert!(create_cq::Packet::new_checked(&b[..33]).is_err());

        let mut b = [0u8; create_ah::LEN];
        let mut p = create_ah::Packet::new_checked(&mut b[..]).unwrap();
        p.set_dma_addr(0x1000);
        p.set_length(68);
        p.set_pd_id(2);
        p.set_id_ver(7);
        assert_eq!(
            b,
            [
                0, 0x10, 0, 0, 0, 0, 0, 0, 68, 0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0
            ]
        );
        let p = create_ah::Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.dma_addr(), p.length(), p.pd_id(), p.id_ver()),
            (0x1000, 68, 2, 7)
        );
        assert!(create_ah::Packet::new_checked(&b[..23]).is_err());
    }

    #[test]
    fn create_qp_is_written_and_read_as_laid_out() {
        let mut b = [0u8; create_qp::LEN];
        let mut p = create_qp::Packet::new_checked(&mut b[..]).unwrap();
        p.set_pd_id(1);
        p.set_priv_flags(1 << 15);
        p.set_sq_cq_id(2);
        p.set_sq_depth_log2(3);
        p.set_sq_stride_log2(6);
        p.set_sq_page_size_log2(12);
        p.set_sq_map_count(1);
        p.set_sq_dma_addr(0x7000);
        p.set_rq_cq_id(4);
        p.set_rq_depth_log2(5);
        p.set_rq_stride_log2(7);
        p.set_rq_page_size_log2(13);
        p.set_rq_tbl_index_srq_id(0x99);
        p.set_rq_map_count(2);
        p.set_rq_dma_addr(0x8000);
        p.set_id_ver(6);
        p.set_type_state(3);
        let mut want = [0u8; create_qp::LEN];
        for (at, v) in [
            (0, 1),
            (6, 0x80),
            (8, 2),
            (12, 3),
            (13, 6),
            (15, 12),
            (20, 1),
            (25, 0x70),
            (32, 4),
            (36, 5),
            (37, 7),
            (39, 13),
            (40, 0x99),
            (44, 2),
            (49, 0x80),
            (56, 6),
            (62, 3),
        ] {
            want[at] = v;
        }
        assert_eq!(b, want);
        let p = create_qp::Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.pd_id(), p.priv_flags(), p.id_ver(), p.type_state()),
            (1, 1 << 15, 6, 3)
        );
        assert_eq!(
            (
                p.sq_cq_id(),
                p.sq_depth_log2(),
                p.sq_stride_log2(),
                p.sq_page_size_log2()
            ),
            (2, 3, 6, 12)
        );
        assert_eq!((p.sq_map_count(), p.sq_dma_addr()), (1, 0x7000));
        assert_eq!(
            (
                p.rq_cq_id(),
                p.rq_depth_log2(),
                p.rq_stride_log2(),
                p.rq_page_size_log2()
            ),
            (4, 5, 7, 13)
        );
        assert_eq!(
            (p.rq_map_count(), p.rq_dma_addr(), p.rq_tbl_index_srq_id()),
            (2, 0x8000, 0x99)
        );
        assert!(create_qp::Packet::new_checked(&b[..63]).is_err());
    }

    #[test]
    fn modify_qp_is_written_and_read_as_laid_out() {
        let mut b = [0u8; mod_qp::LEN];
        let mut p = mod_qp::Packet::new_checked(&mut b[..]).unwrap();
        p.set_attr_mask(0x0102_0304);
        p.set_access_flags(0x8003);
        p.set_rq_psn(5);
        p.set_sq_psn(6);
        p.set_qkey_dest_qpn(7);
        p.set_pmtu(10);
        p.set_ah_id_len(68);
        p.set_type_state(3);
        p.set_dma_addr(0x9000);
        p.set_id_ver(8);
        let mut want = [0u8; mod_qp::LEN];
        for (at, v) in [
            (0, 1),
            (1, 2),
            (2, 3),
            (3, 4),
            (6, 0x80),
            (7, 3),
            (8, 5),
            (12, 6),
            (16, 7),
            (24, 10),
            (32, 68),
            (39, 3),
            (49, 0x90),
            (56, 8),
        ] {
            want[at] = v;
        }
        assert_eq!(b, want);
        let p = mod_qp::Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.attr_mask(), p.access_flags()), (0x0102_0304, 0x8003));
        assert_eq!(
            (p.rq_psn(), p.sq_psn(), p.qkey_dest_qpn(), p.pmtu()),
            (5, 6, 7, 10)
        );
        assert_eq!(
            (p.ah_id_len(), p.type_state(), p.dma_addr(), p.id_ver()),
            (68, 3, 0x9000, 8)
        );
        assert!(mod_qp::Packet::new_checked(&b[..59]).is_err());
    }

    #[test]
    fn query_qp_and_stats_are_written_and_read_as_laid_out() {
        let mut b = [0u8; query_qp::LEN];
        let mut p = query_qp::Packet::new_checked(&mut b[..]).unwrap();
        p.set_sq_dma_addr(0x100);
        p.set_rq_dma_addr(0x200);
        p.set_id_ver(3);
        let mut want = [0u8; query_qp::LEN];
        (want[9], want[17], want[28]) = (1, 2, 3);
        assert_eq!(b, want);
        let p = query_qp::Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (
                p.hdr_dma_addr(),
                p.sq_dma_addr(),
                p.rq_dma_addr(),
                p.id_ver()
            ),
            (0, 0x100, 0x200, 3)
        );
        assert!(query_qp::Packet::new_checked(&b[..33]).is_err());

        let mut b = [0u8; stats_hdr::LEN];
        let mut p = stats_hdr::Packet::new_checked(&mut b[..]).unwrap();
        p.set_dma_addr(0x300);
        p.set_length(0x40);
        p.set_id_ver(5);
        let mut want = [0u8; stats_hdr::LEN];
        (want[1], want[8], want[12]) = (3, 0x40, 5);
        assert_eq!(b, want);
        let p = stats_hdr::Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.dma_addr(), p.length(), p.id_ver()), (0x300, 0x40, 5));
        assert!(stats_hdr::Packet::new_checked(&b[..16]).is_err());
    }

    #[test]
    fn the_srq_commands_are_written_and_read_as_laid_out() {
        let mut b = [0u8; srq::CREATE_LEN];
        let mut p = srq::create::Packet::new_checked(&mut b[..]).unwrap();
        p.set_depth_log2(6);
        p.set_stride_log2(6);
        p.set_page_size_log2(12);
        p.set_map_count(1);
        p.set_dma_addr(0x4000);
        p.set_limit(9);
        p.set_pd_id(2);
        let mut want = [0u8; srq::CREATE_LEN];
        for (at, v) in [(0, 6), (1, 6), (2, 12), (4, 1), (9, 0x40), (16, 9), (20, 2)] {
            want[at] = v;
        }
        assert_eq!(b, want);
        let p = srq::create::Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.depth_log2(), p.stride_log2(), p.page_size_log2()),
            (6, 6, 12)
        );
        assert_eq!(
            (p.map_count(), p.dma_addr(), p.limit(), p.pd_id()),
            (1, 0x4000, 9, 2)
        );
        assert!(srq::create::Packet::new_checked(&b[..23]).is_err());
        let mut b = [0u8; srq::MODIFY_LEN];
        let mut p = srq::modify::Packet::new_checked(&mut b[..]).unwrap();
        p.set_id(1025);
        p.set_limit(3);
        assert_eq!(b, [1, 4, 0, 0, 3, 0, 0, 0]);
        let p = srq::modify::Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.id(), p.limit()), (1025, 3));
        assert!(srq::modify::Packet::new_checked(&b[..7]).is_err());
    }

    #[test]
    fn the_query_qp_answers_are_big_endian_as_laid_out() {
        let mut b = [0u8; query_qp::sq::LEN];
        let mut p = query_qp::sq::Packet::new_checked(&mut b[..]).unwrap();
        p.set_access_perms_flags(0x0102);
        p.set_qkey_dest_qpn(0x0304_0506);
        p.set_rq_psn(0x0708_090a);
        assert_eq!(
            b,
            [0, 0, 1, 2, 0, 0, 0, 0, 3, 4, 5, 6, 0, 0, 0, 0, 7, 8, 9, 10]
        );
        let p = query_qp::sq::Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.access_perms_flags(), p.qkey_dest_qpn(), p.rq_psn()),
            (0x0102, 0x0304_0506, 0x0708_090a)
        );
        assert!(query_qp::sq::Packet::new_checked(&b[..19]).is_err());
        let mut b = [0u8; query_qp::rq::LEN];
        let mut p = query_qp::rq::Packet::new_checked(&mut b[..]).unwrap();
        p.set_state_pmtu(0x3a);
        p.set_rrq_depth(1);
        p.set_rsq_depth(1);
        p.set_sq_psn(0x0b0c_0d0e);
        p.set_access_perms_flags(0x0f10);
        assert_eq!(b, [0x3a, 0, 1, 1, 0xb, 0xc, 0xd, 0xe, 0xf, 0x10, 0, 0]);
        let p = query_qp::rq::Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.state_pmtu(), p.rrq_depth(), p.rsq_depth()), (0x3a, 1, 1));
        assert_eq!((p.sq_psn(), p.access_perms_flags()), (0x0b0c_0d0e, 0x0f10));
        assert!(query_qp::rq::Packet::new_checked(&b[..11]).is_err());
    }

    #[test]
    fn create_mr_is_written_and_read_as_laid_out() {
        let mut b = [0u8; create_mr::LEN];
        let mut p = create_mr::Packet::new_checked(&mut b[..]).unwrap();
        p.set_va(0x10);
        p.set_length(0x20);
        p.set_pd_id(3);
        p.set_id_ver(0x400);
        p.set_map_count(1);
        p.set_dma_addr(0x5000);
        p.set_dbid_flags(0x8001);
        p.set_page_size_log2(12);
        let mut want = [0u8; create_mr::LEN];
        for (at, v) in [
            (0, 0x10),
            (8, 0x20),
            (16, 3),
            (21, 4),
            (28, 1),
            (33, 0x50),
            (40, 1),
            (41, 0x80),
            (44, 12),
        ] {
            want[at] = v;
        }
        assert_eq!(b, want);
        let p = create_mr::Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.va(), p.length(), p.pd_id(), p.id_ver()),
            (0x10, 0x20, 3, 0x400)
        );
        assert_eq!(
            (
                p.map_count(),
                p.dma_addr(),
                p.dbid_flags(),
                p.page_size_log2()
            ),
            (1, 0x5000, 0x8001, 12)
        );
        assert!(create_mr::Packet::new_checked(&b[..44]).is_err());
    }
}
