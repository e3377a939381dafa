//! Every offset ernic-ionic writes or reads, compared with the guest
//! kernel's own `ionic_if.h` and `ionic_regs.h` (Linux 7.2, extracted from
//! Debian's linux-source by vm/ionic-headers.sh): a C probe built against
//! them prints `offsetof` and `sizeof`, and each must equal our constant.
//!
//! The headers are looked for in $ERNIC_IONIC_HEADERS, else
//! /var/cache/ernic-vm/headers. Without them the test prints one line and
//! passes, unless ERNIC_REQUIRE_IONIC_HEADERS=1 (CI fetches them first).

use std::path::PathBuf;
use std::process::Command;

use ernic_ionic::bootstrap::cmd as rq;
use ernic_ionic::regs::{
    cmd, dev_identity as di, info, init_cmd, intr, lif_identity as li, lif_info, port_info,
    q_control, q_identify, q_init,
};

/// (C expression, our value).
fn pairs() -> Vec<(&'static str, usize)> {
    vec![
        (
            "offsetof(union ionic_dev_info_regs, signature)",
            info::SIGNATURE,
        ),
        (
            "offsetof(union ionic_dev_info_regs, version)",
            info::VERSION,
        ),
        (
            "offsetof(union ionic_dev_info_regs, asic_type)",
            info::ASIC_TYPE,
        ),
        (
            "offsetof(union ionic_dev_info_regs, asic_rev)",
            info::ASIC_REV,
        ),
        (
            "offsetof(union ionic_dev_info_regs, fw_status)",
            info::FW_STATUS,
        ),
        (
            "offsetof(union ionic_dev_info_regs, fw_heartbeat)",
            info::FW_HEARTBEAT,
        ),
        (
            "offsetof(union ionic_dev_info_regs, fw_version)",
            info::FW_VERSION,
        ),
        (
            "offsetof(union ionic_dev_info_regs, serial_num)",
            info::SERIAL_NUM,
        ),
        ("IONIC_DEVINFO_FWVERS_BUFLEN", info::STRING_LEN),
        ("IONIC_DEV_INFO_SIGNATURE", info::SIGNATURE_VALUE as usize),
        ("IONIC_FW_STS_F_RUNNING", info::FW_RUNNING as usize),
        ("IONIC_BAR0_DEV_CMD_REGS_OFFSET", cmd::DOORBELL),
        (
            "IONIC_BAR0_DEV_CMD_REGS_OFFSET + offsetof(union ionic_dev_cmd_regs, done)",
            cmd::DONE,
        ),
        (
            "IONIC_BAR0_DEV_CMD_REGS_OFFSET + offsetof(union ionic_dev_cmd_regs, cmd)",
            cmd::CMD,
        ),
        (
            "IONIC_BAR0_DEV_CMD_REGS_OFFSET + offsetof(union ionic_dev_cmd_regs, comp)",
            cmd::COMP,
        ),
        (
            "IONIC_BAR0_DEV_CMD_REGS_OFFSET + offsetof(union ionic_dev_cmd_regs, data)",
            cmd::DATA,
        ),
        (
            "sizeof(((union ionic_dev_cmd_regs *)0)->data)",
            cmd::DATA_LEN,
        ),
        (
            "IONIC_BAR0_INTR_STATUS_OFFSET",
            ernic_ionic::regs::INTR_STATUS,
        ),
        ("IONIC_BAR0_INTR_CTRL_OFFSET", ernic_ionic::regs::INTR_CTRL),
        ("IONIC_BAR0_SIZE", ernic_ionic::regs::WINDOW),
        (
            "sizeof(struct ionic_intr)",
            ernic_ionic::regs::INTR_CTRL_STRIDE,
        ),
        ("offsetof(struct ionic_intr, coal_init)", intr::COAL_INIT),
        ("offsetof(struct ionic_intr, mask)", intr::MASK),
        ("offsetof(struct ionic_intr, credits)", intr::CREDITS),
        (
            "offsetof(struct ionic_intr, mask_assert)",
            intr::MASK_ASSERT,
        ),
        ("offsetof(struct ionic_intr, coal)", intr::COAL),
        ("IONIC_INTR_CRED_UNMASK", intr::CRED_UNMASK as usize),
        ("offsetof(union ionic_dev_identity, nports)", di::NPORTS),
        ("offsetof(union ionic_dev_identity, nlifs)", di::NLIFS),
        ("offsetof(union ionic_dev_identity, nintrs)", di::NINTRS),
        (
            "offsetof(union ionic_dev_identity, ndbpgs_per_lif)",
            di::NDBPGS_PER_LIF,
        ),
        (
            "offsetof(union ionic_dev_identity, intr_coal_mult)",
            di::INTR_COAL_MULT,
        ),
        (
            "offsetof(union ionic_dev_identity, intr_coal_div)",
            di::INTR_COAL_DIV,
        ),
        ("offsetof(union ionic_dev_identity, eq_count)", di::EQ_COUNT),
        (
            "offsetof(union ionic_dev_identity, capabilities)",
            di::CAPABILITIES,
        ),
        (
            "offsetof(union ionic_lif_identity, capabilities)",
            li::CAPABILITIES,
        ),
        (
            "offsetof(union ionic_lif_identity, eth.version)",
            li::ETH_VERSION,
        ),
        (
            "offsetof(union ionic_lif_identity, eth.max_ucast_filters)",
            li::ETH_MAX_UCAST_FILTERS,
        ),
        (
            "offsetof(union ionic_lif_identity, eth.rss_ind_tbl_sz)",
            li::ETH_RSS_IND_TBL_SZ,
        ),
        (
            "offsetof(union ionic_lif_identity, eth.min_frame_size)",
            li::ETH_MIN_FRAME_SIZE,
        ),
        (
            "offsetof(union ionic_lif_identity, eth.max_frame_size)",
            li::ETH_MAX_FRAME_SIZE,
        ),
        (
            "offsetof(union ionic_lif_identity, eth.config.state)",
            li::CONFIG_STATE,
        ),
        (
            "offsetof(union ionic_lif_identity, eth.config.mtu)",
            li::CONFIG_MTU,
        ),
        (
            "offsetof(union ionic_lif_identity, eth.config.mac)",
            li::CONFIG_MAC,
        ),
        (
            "offsetof(union ionic_lif_identity, eth.config.queue_count)",
            li::CONFIG_QUEUE_COUNT,
        ),
        (
            "offsetof(union ionic_lif_identity, rdma.version)",
            li::RDMA_VERSION,
        ),
        (
            "offsetof(union ionic_lif_identity, rdma.minor_version)",
            li::RDMA_MINOR_VERSION,
        ),
        (
            "offsetof(union ionic_lif_identity, rdma.npts_per_lif)",
            li::RDMA_NPTS_PER_LIF,
        ),
        (
            "offsetof(union ionic_lif_identity, rdma.nmrs_per_lif)",
            li::RDMA_NMRS_PER_LIF,
        ),
        (
            "offsetof(union ionic_lif_identity, rdma.nahs_per_lif)",
            li::RDMA_NAHS_PER_LIF,
        ),
        (
            "offsetof(union ionic_lif_identity, rdma.max_stride)",
            li::RDMA_MAX_STRIDE,
        ),
        (
            "offsetof(union ionic_lif_identity, rdma.udma_shift)",
            li::RDMA_UDMA_SHIFT,
        ),
        (
            "offsetof(union ionic_lif_identity, rdma.page_size_cap)",
            li::RDMA_PAGE_SIZE_CAP,
        ),
        (
            "offsetof(union ionic_lif_identity, rdma.aq_qtype)",
            li::RDMA_AQ_QTYPE,
        ),
        ("sizeof(struct ionic_lif_logical_qtype)", li::QTYPE_STRIDE),
        (
            "offsetof(union ionic_lif_identity, rdma.stats_type)",
            li::RDMA_STATS_TYPE,
        ),
        (
            "offsetof(struct ionic_port_init_cmd, info_pa)",
            init_cmd::INFO_PA,
        ),
        (
            "offsetof(struct ionic_lif_init_cmd, info_pa)",
            init_cmd::INFO_PA,
        ),
        (
            "offsetof(struct ionic_lif_init_cmd, index)",
            init_cmd::LIF_INDEX,
        ),
        (
            "offsetof(struct ionic_port_info, config.speed)",
            port_info::CONFIG_SPEED,
        ),
        (
            "offsetof(struct ionic_port_info, config.mtu)",
            port_info::CONFIG_MTU,
        ),
        (
            "offsetof(struct ionic_port_info, config.state)",
            port_info::CONFIG_STATE,
        ),
        (
            "offsetof(struct ionic_port_info, status)",
            port_info::STATUS,
        ),
        (
            "offsetof(struct ionic_port_info, status.speed)",
            port_info::STATUS_SPEED,
        ),
        (
            "offsetof(struct ionic_port_info, status.status)",
            port_info::STATUS_STATUS,
        ),
        (
            "offsetof(struct ionic_port_info, status.link_down_count)",
            port_info::STATUS_LINK_DOWN_COUNT,
        ),
        (
            "offsetof(struct ionic_port_info, status.xcvr)",
            port_info::XCVR,
        ),
        ("offsetof(struct ionic_port_info, stats)", port_info::STATS),
        (
            "offsetof(struct ionic_lif_info, status.eid)",
            lif_info::STATUS_EID,
        ),
        (
            "offsetof(struct ionic_lif_info, status.port_num)",
            lif_info::STATUS_PORT_NUM,
        ),
        (
            "offsetof(struct ionic_lif_info, status.link_status)",
            lif_info::STATUS_LINK_STATUS,
        ),
        (
            "offsetof(struct ionic_lif_info, status.link_speed)",
            lif_info::STATUS_LINK_SPEED,
        ),
        ("offsetof(struct ionic_lif_info, stats)", lif_info::STATS),
        ("offsetof(struct ionic_q_init_cmd, type)", q_init::TYPE),
        ("offsetof(struct ionic_q_init_cmd, index)", q_init::INDEX),
        (
            "offsetof(struct ionic_q_init_cmd, intr_index)",
            q_init::INTR_INDEX,
        ),
        ("offsetof(struct ionic_q_init_cmd, flags)", q_init::FLAGS),
        (
            "offsetof(struct ionic_q_init_cmd, ring_size)",
            q_init::RING_SIZE,
        ),
        (
            "offsetof(struct ionic_q_init_cmd, ring_base)",
            q_init::RING_BASE,
        ),
        (
            "offsetof(struct ionic_q_init_cmd, cq_ring_base)",
            q_init::CQ_RING_BASE,
        ),
        (
            "offsetof(struct ionic_q_init_cmd, sg_ring_base)",
            q_init::SG_RING_BASE,
        ),
        (
            "offsetof(struct ionic_q_init_cmd, features)",
            q_init::FEATURES,
        ),
        (
            "offsetof(struct ionic_q_init_comp, hw_index)",
            q_init::COMP_HW_INDEX,
        ),
        (
            "offsetof(struct ionic_q_init_comp, hw_type)",
            q_init::COMP_HW_TYPE,
        ),
        ("IONIC_QINIT_F_IRQ", q_init::F_IRQ as usize),
        ("IONIC_QINIT_F_ENA", q_init::F_ENA as usize),
        (
            "offsetof(struct ionic_q_control_cmd, type)",
            q_control::TYPE,
        ),
        (
            "offsetof(struct ionic_q_control_cmd, index)",
            q_control::INDEX,
        ),
        (
            "offsetof(struct ionic_q_control_cmd, oper)",
            q_control::OPER,
        ),
        (
            "offsetof(struct ionic_q_identify_cmd, type)",
            q_identify::TYPE,
        ),
        (
            "offsetof(struct ionic_q_identify_comp, ver)",
            q_identify::COMP_VER,
        ),
        (
            "offsetof(union ionic_q_identity, features)",
            q_identify::ID_FEATURES,
        ),
        (
            "offsetof(union ionic_q_identity, desc_sz)",
            q_identify::ID_DESC_SZ,
        ),
        (
            "offsetof(union ionic_q_identity, sg_desc_stride)",
            q_identify::ID_SG_DESC_STRIDE,
        ),
        // Rings (eth.rs): descriptors, completions and events.
        ("sizeof(struct ionic_txq_desc)", 16),
        ("offsetof(struct ionic_txq_desc, len)", 8),
        ("IONIC_TXQ_DESC_NSGE_SHIFT", 8),
        ("IONIC_TXQ_DESC_ADDR_SHIFT", 12),
        ("sizeof(struct ionic_txq_sg_elem)", 16),
        ("sizeof(struct ionic_txq_sg_desc)", 128),
        ("sizeof(struct ionic_txq_comp)", 16),
        ("offsetof(struct ionic_txq_comp, comp_index)", 2),
        ("offsetof(struct ionic_txq_comp, color)", 15),
        ("sizeof(struct ionic_rxq_desc)", 16),
        ("offsetof(struct ionic_rxq_desc, len)", 6),
        ("offsetof(struct ionic_rxq_desc, addr)", 8),
        ("sizeof(struct ionic_rxq_comp)", 16),
        ("offsetof(struct ionic_rxq_comp, rss_hash)", 4),
        ("offsetof(struct ionic_rxq_comp, len)", 12),
        ("offsetof(struct ionic_rxq_comp, pkt_type_color)", 15),
        ("sizeof(struct ionic_admin_comp)", 16),
        ("offsetof(struct ionic_admin_comp, color)", 15),
        (
            "offsetof(struct ionic_lif_getattr_comp, mac)",
            ernic_ionic::regs::lif_attr::COMP_VALUE,
        ),
        (
            "offsetof(struct ionic_lif_setattr_cmd, mac)",
            ernic_ionic::regs::lif_attr::VALUE,
        ),
        ("offsetof(struct ionic_link_change_event, ecode)", 8),
        ("offsetof(struct ionic_link_change_event, link_status)", 10),
        ("offsetof(struct ionic_link_change_event, link_speed)", 12),
        ("sizeof(union ionic_notifyq_comp)", 64),
        ("offsetof(struct ionic_lif_stats, rx_ucast_packets)", 8),
        ("offsetof(struct ionic_lif_stats, rx_ucast_drop_bytes)", 64),
        (
            "offsetof(struct ionic_lif_stats, rx_bcast_drop_packets)",
            104,
        ),
        ("offsetof(struct ionic_lif_stats, tx_ucast_bytes)", 128),
        ("offsetof(struct ionic_lif_stats, tx_ucast_drop_bytes)", 192),
        (
            "offsetof(struct ionic_lif_stats, tx_bcast_drop_packets)",
            232,
        ),
        ("offsetof(struct ionic_lif_stats, rx_queue_disabled)", 256),
        ("offsetof(struct ionic_lif_info, stats)", 320),
        ("offsetof(struct ionic_lif_stats, rx_queue_empty)", 264),
        ("offsetof(struct ionic_lif_stats, rx_desc_data_error)", 288),
        ("offsetof(struct ionic_lif_stats, tx_desc_fetch_error)", 336),
        ("offsetof(struct ionic_port_stats, octets_rx_ok)", 32),
        ("offsetof(struct ionic_port_stats, frames_rx_unicast)", 48),
        ("offsetof(struct ionic_port_stats, frames_tx_ok)", 256),
        ("offsetof(struct ionic_port_stats, octets_tx_ok)", 280),
        ("offsetof(struct ionic_port_stats, frames_tx_unicast)", 296),
        (
            "offsetof(struct ionic_rdma_queue_cmd, qid_ver)",
            rq::QID_VER,
        ),
        ("offsetof(struct ionic_rdma_queue_cmd, cid)", rq::CID),
        ("offsetof(struct ionic_rdma_queue_cmd, dbid)", rq::DBID),
        (
            "offsetof(struct ionic_rdma_queue_cmd, depth_log2)",
            rq::DEPTH_LOG2,
        ),
        (
            "offsetof(struct ionic_rdma_queue_cmd, stride_log2)",
            rq::STRIDE_LOG2,
        ),
        (
            "offsetof(struct ionic_rdma_queue_cmd, dma_addr)",
            rq::DMA_ADDR,
        ),
        (
            "IONIC_CMD_RDMA_RESET_LIF",
            ernic_ionic::bootstrap::opcode::RESET_LIF as usize,
        ),
        (
            "IONIC_CMD_RDMA_CREATE_EQ",
            ernic_ionic::bootstrap::opcode::CREATE_EQ as usize,
        ),
        (
            "IONIC_CMD_RDMA_CREATE_CQ",
            ernic_ionic::bootstrap::opcode::CREATE_CQ as usize,
        ),
        (
            "IONIC_CMD_RDMA_CREATE_ADMINQ",
            ernic_ionic::bootstrap::opcode::CREATE_ADMINQ as usize,
        ),
        (
            "IONIC_RC_ENOENT",
            ernic_ionic::regs::status::ENOENT as usize,
        ),
        (
            "IONIC_RC_EEXIST",
            ernic_ionic::regs::status::EEXIST as usize,
        ),
        ("IONIC_RC_EQID", ernic_ionic::regs::status::EQID as usize),
        (
            "IONIC_RC_EQTYPE",
            ernic_ionic::regs::status::EQTYPE as usize,
        ),
        (
            "IONIC_RC_EOPCODE",
            ernic_ionic::regs::status::EOPCODE as usize,
        ),
        (
            "IONIC_RC_EFAULT",
            ernic_ionic::regs::status::EFAULT as usize,
        ),
        (
            "IONIC_RC_EINVAL",
            ernic_ionic::regs::status::EINVAL as usize,
        ),
    ]
}

const PRELUDE: &str = r#"
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
typedef uint8_t u8; typedef uint16_t u16; typedef uint32_t u32; typedef uint64_t u64;
typedef int8_t s8; typedef int16_t s16; typedef int32_t s32; typedef int64_t s64;
typedef uint16_t __le16; typedef uint32_t __le32; typedef uint64_t __le64;
typedef uint64_t dma_addr_t;
#define BIT(n) (1UL << (n))
#define BIT_ULL(n) (1ULL << (n))
#define __packed __attribute__((packed))
#define __iomem
#include "ionic_if.h"
#include "ionic_regs.h"
"#;

/// Where the guest kernel's headers are; `None` (after saying so) when
/// they are missing and not required.
fn headers(file: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("ERNIC_IONIC_HEADERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/ernic-vm/headers"));
    if dir.join(file).exists() {
        return Some(dir);
    }
    assert_ne!(
        std::env::var("ERNIC_REQUIRE_IONIC_HEADERS").as_deref(),
        Ok("1"),
        "ERNIC_REQUIRE_IONIC_HEADERS=1 but {} has no {file}",
        dir.display()
    );
    println!(
        "skipped: no {file} in {} (vm/ionic-headers.sh fetches it)",
        dir.display()
    );
    None
}

/// Builds a C probe of `source` (with `stubs` as extra headers, path and
/// text) against the headers in `dir`, runs it, and checks that every
/// expression printed equals our value.
fn probe(
    name: &str,
    dir: &std::path::Path,
    stubs: &[(&str, &str)],
    source: &str,
    rows: &[(String, usize)],
) {
    let work = std::env::temp_dir().join(format!("ernic-ionic-{name}-{}", std::process::id()));
    for (path, text) in stubs {
        let p = work.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::create_dir_all(&work).unwrap();
    let mut c = String::from(source);
    c.push_str("int main(void) {\n");
    for (e, _) in rows {
        c.push_str(&format!(
            "  printf(\"%llu\\n\", (unsigned long long)({e}));\n"
        ));
    }
    c.push_str("  return 0;\n}\n");
    std::fs::write(work.join("probe.c"), c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .arg("-I")
        .arg(&work)
        .arg("-I")
        .arg(dir)
        .arg(work.join("probe.c"))
        .arg("-o")
        .arg(work.join("probe"))
        .output()
        .expect("a C compiler");
    assert!(
        built.status.success(),
        "the probe did not compile:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(work.join("probe")).output().unwrap();
    let got: Vec<usize> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let _ = std::fs::remove_dir_all(&work);
    assert_eq!(got.len(), rows.len());
    let wrong: Vec<String> = rows
        .iter()
        .zip(&got)
        .filter(|((_, ours), theirs)| ours != *theirs)
        .map(|((e, ours), theirs)| format!("{e}: ours {ours}, Linux {theirs}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "layouts differ from Linux's:\n{}",
        wrong.join("\n")
    );
    println!("{name}: {} offsets and values equal Linux's", rows.len());
}

#[test]
fn our_offsets_are_the_guest_kernels() {
    let Some(dir) = headers("ionic_if.h") else {
        return;
    };
    // ionic_regs.h includes <linux/io.h> for its accessors; the probe only
    // needs the types.
    let io = "#define iowrite32(v, p) ((void)(v), (void)(p))\n\
              #define ioread32(p) ((void)(p), 0u)\n\
              #define writeq(v, p) ((void)(v), (void)(p))\n";
    let rows: Vec<(String, usize)> = pairs()
        .into_iter()
        .map(|(e, v)| (e.to_string(), v))
        .collect();
    probe("if", &dir, &[("linux/io.h", io)], PRELUDE, &rows);
}

/// The RDMA side's formats against `ionic_fw.h`, built with stand-ins for
/// the kernel headers it includes (only names; no layout comes from them).
fn fw_pairs() -> Vec<(String, usize)> {
    use ernic_ionic::fw::*;
    let mut v: Vec<(String, usize)> = Vec::new();
    let mut off = |s: &str, f: &str, ours: usize| {
        v.push((format!("offsetof(struct {s}, {f})"), ours));
    };
    off("ionic_v1_admin_wqe", "op", admin_wqe::OP);
    for (f, o) in [
        ("access_perms_flags", query_qp::sq::ACCESS_PERMS_FLAGS_BE),
        ("qkey_dest_qpn", query_qp::sq::QKEY_DEST_QPN_BE),
        ("rq_psn", query_qp::sq::RQ_PSN_BE),
    ] {
        off("ionic_v1_admin_query_qp_sq", f, o);
    }
    for (f, o) in [
        ("state_pmtu", query_qp::rq::STATE_PMTU),
        ("rrq_depth", query_qp::rq::RRQ_DEPTH),
        ("rsq_depth", query_qp::rq::RSQ_DEPTH),
        ("sq_psn", query_qp::rq::SQ_PSN_BE),
        ("access_perms_flags", query_qp::rq::ACCESS_PERMS_FLAGS_BE),
    ] {
        off("ionic_v1_admin_query_qp_rq", f, o);
    }

    off("ionic_v1_admin_wqe", "len", admin_wqe::LEN);
    off("ionic_v1_admin_wqe", "cmd", admin_wqe::CMD);
    for (f, o) in [
        ("eq_id", create_cq::EQ_ID),
        ("depth_log2", create_cq::DEPTH_LOG2),
        ("stride_log2", create_cq::STRIDE_LOG2),
        ("page_size_log2", create_cq::PAGE_SIZE_LOG2),
        ("cq_flags", create_cq::CQ_FLAGS),
        ("id_ver", create_cq::ID_VER),
        ("tbl_index", create_cq::TBL_INDEX),
        ("map_count", create_cq::MAP_COUNT),
        ("dma_addr", create_cq::DMA_ADDR),
        ("dbid_flags", create_cq::DBID_FLAGS),
    ] {
        off("ionic_admin_create_cq", f, o);
    }
    for (f, o) in [
        ("pd_id", create_qp::PD_ID),
        ("priv_flags", create_qp::PRIV_FLAGS_BE),
        ("sq_cq_id", create_qp::SQ_CQ_ID),
        ("sq_depth_log2", create_qp::SQ_DEPTH_LOG2),
        ("sq_stride_log2", create_qp::SQ_STRIDE_LOG2),
        ("sq_page_size_log2", create_qp::SQ_PAGE_SIZE_LOG2),
        ("sq_tbl_index_xrcd_id", create_qp::SQ_TBL_INDEX_XRCD_ID),
        ("sq_map_count", create_qp::SQ_MAP_COUNT),
        ("sq_dma_addr", create_qp::SQ_DMA_ADDR),
        ("rq_cq_id", create_qp::RQ_CQ_ID),
        ("rq_depth_log2", create_qp::RQ_DEPTH_LOG2),
        ("rq_stride_log2", create_qp::RQ_STRIDE_LOG2),
        ("rq_page_size_log2", create_qp::RQ_PAGE_SIZE_LOG2),
        ("rq_tbl_index_srq_id", create_qp::RQ_TBL_INDEX_SRQ_ID),
        ("rq_map_count", create_qp::RQ_MAP_COUNT),
        ("rq_dma_addr", create_qp::RQ_DMA_ADDR),
        ("id_ver", create_qp::ID_VER),
        ("dbid_flags", create_qp::DBID_FLAGS),
        ("type_state", create_qp::TYPE_STATE),
    ] {
        off("ionic_admin_create_qp", f, o);
    }
    for (f, o) in [
        ("attr_mask", mod_qp::ATTR_MASK_BE),
        ("access_flags", mod_qp::ACCESS_FLAGS_BE),
        ("rq_psn", mod_qp::RQ_PSN),
        ("sq_psn", mod_qp::SQ_PSN),
        ("qkey_dest_qpn", mod_qp::QKEY_DEST_QPN),
        ("pmtu", mod_qp::PMTU),
        ("retry", mod_qp::RETRY),
        ("rnr_timer", mod_qp::RNR_TIMER),
        ("ah_id_len", mod_qp::AH_ID_LEN),
        ("type_state", mod_qp::TYPE_STATE),
        ("dma_addr", mod_qp::DMA_ADDR),
        ("id_ver", mod_qp::ID_VER),
    ] {
        off("ionic_admin_mod_qp", f, o);
    }
    for (f, o) in [
        ("hdr_dma_addr", query_qp::HDR_DMA_ADDR),
        ("sq_dma_addr", query_qp::SQ_DMA_ADDR),
        ("rq_dma_addr", query_qp::RQ_DMA_ADDR),
        ("ah_id", query_qp::AH_ID),
        ("id_ver", query_qp::ID_VER),
    ] {
        off("ionic_admin_query_qp", f, o);
    }
    for (f, o) in [
        ("va", create_mr::VA),
        ("length", create_mr::LENGTH),
        ("pd_id", create_mr::PD_ID),
        ("id_ver", create_mr::ID_VER),
        ("tbl_index", create_mr::TBL_INDEX),
        ("map_count", create_mr::MAP_COUNT),
        ("dma_addr", create_mr::DMA_ADDR),
        ("dbid_flags", create_mr::DBID_FLAGS),
        ("pt_type", create_mr::PT_TYPE),
        ("dir_size_log2", create_mr::DIR_SIZE_LOG2),
        ("page_size_log2", create_mr::PAGE_SIZE_LOG2),
    ] {
        off("ionic_admin_create_mr", f, o);
    }
    for (f, o) in [
        ("dma_addr", create_ah::DMA_ADDR),
        ("length", create_ah::LENGTH),
        ("pd_id", create_ah::PD_ID),
        ("id_ver", create_ah::ID_VER),
    ] {
        off("ionic_admin_create_ah", f, o);
    }
    for (f, o) in [
        ("dma_addr", stats_hdr::DMA_ADDR),
        ("length", stats_hdr::LENGTH),
        ("id_ver", stats_hdr::ID_VER),
    ] {
        off("ionic_admin_stats_hdr", f, o);
    }
    for (f, o) in [
        ("admin.cmd_idx", cqe::ADMIN_CMD_IDX_BE),
        ("admin.cmd_op", cqe::ADMIN_CMD_OP),
        ("recv.wqe_id", cqe::RECV_WQE_ID),
        ("recv.src_qpn_op", cqe::RECV_SRC_QPN_OP_BE),
        ("recv.src_mac", cqe::RECV_SRC_MAC),
        ("recv.imm_data_rkey", cqe::RECV_IMM_DATA_RKEY_BE),
        ("send.msg_msn", cqe::SEND_MSG_MSN_BE),
        ("send.npg_wqe_id", cqe::SEND_NPG_WQE_ID),
        ("status_length", cqe::STATUS_LENGTH_BE),
        ("qid_type_flags", cqe::QID_TYPE_FLAGS_BE),
    ] {
        off("ionic_v1_cqe", f, o);
    }
    for (f, o) in [
        ("base.wqe_id", wqe::WQE_ID),
        ("base.op", wqe::OP),
        ("base.num_sge_key", wqe::NUM_SGE_KEY),
        ("base.flags", wqe::FLAGS_BE),
        ("base.imm_data_key", wqe::IMM_DATA_KEY_BE),
        ("common.send.ah_id", wqe::AH_ID_BE),
        ("common.send.dest_qpn", wqe::DEST_QPN_BE),
        ("common.send.dest_qkey", wqe::DEST_QKEY_BE),
        ("common.rdma.remote_va_high", wqe::REMOTE_VA_HIGH_BE),
        ("common.rdma.remote_va_low", wqe::REMOTE_VA_LOW_BE),
        ("common.rdma.remote_rkey", wqe::REMOTE_RKEY_BE),
        ("common.length", wqe::LENGTH_BE),
        ("common.pld", wqe::PLD),
        ("recv.pld", wqe::PLD),
        ("atomic.swap_add_high", wqe::SWAP_ADD_HIGH_BE),
        ("atomic.swap_add_low", wqe::SWAP_ADD_LOW_BE),
        ("atomic.compare_high", wqe::COMPARE_HIGH_BE),
        ("atomic.compare_low", wqe::COMPARE_LOW_BE),
        ("atomic.sge", wqe::ATOMIC_SGE),
        ("reg_mr.va", wqe::REG_VA_BE),
        ("reg_mr.length", wqe::REG_LENGTH_BE),
        ("reg_mr.offset", wqe::REG_OFFSET_BE),
        ("reg_mr.dma_addr", wqe::REG_DMA_ADDR_BE),
        ("reg_mr.map_count", wqe::REG_MAP_COUNT_BE),
        ("reg_mr.flags", wqe::REG_FLAGS_BE),
        ("reg_mr.page_size_log2", wqe::REG_PAGE_SIZE_LOG2),
    ] {
        off("ionic_v1_wqe", f, o);
    }
    for (e, ours) in [
        ("sizeof(struct ionic_sge)", wqe::SGE_LEN),
        ("sizeof(struct ionic_v1_stat)", stat::LEN),
        ("offsetof(struct ionic_v1_stat, name)", stat::NAME),
        ("sizeof(((struct ionic_v1_stat *)0)->name)", stat::NAME_LEN),
        ("IONIC_V1_STAT_TYPE_SHIFT", stat::TYPE_SHIFT as usize),
        ("IONIC_V1_STAT_TYPE_NONE", stat::TYPE_NONE as usize),
        ("IONIC_V1_STAT_TYPE_LE64", stat::TYPE_LE64 as usize),
        ("sizeof(struct ionic_v1_wqe)", wqe::MIN_LEN),
        ("IONIC_V1_FLAG_FENCE", wqe::FLAG_FENCE.into()),
        ("IONIC_V1_FLAG_SOL", wqe::FLAG_SOL.into()),
        ("IONIC_V1_FLAG_INL", wqe::FLAG_INL.into()),
        ("IONIC_V1_FLAG_SIG", wqe::FLAG_SIG.into()),
        ("IONIC_V1_FLAG_SPEC32", wqe::FLAG_SPEC32.into()),
        ("IONIC_V1_FLAG_SPEC16", wqe::FLAG_SPEC16.into()),
        ("IONIC_V1_SPEC_FIRST_SGE", wqe::SPEC_FIRST_SGE),
        ("IONIC_V1_OP_SEND", op::SEND.into()),
        ("IONIC_V1_OP_SEND_INV", op::SEND_INV.into()),
        ("IONIC_V1_OP_SEND_IMM", op::SEND_IMM.into()),
        ("IONIC_V1_OP_RDMA_READ", op::RDMA_READ.into()),
        ("IONIC_V1_OP_RDMA_WRITE", op::RDMA_WRITE.into()),
        ("IONIC_V1_OP_RDMA_WRITE_IMM", op::RDMA_WRITE_IMM.into()),
        ("IONIC_V1_OP_ATOMIC_CS", op::ATOMIC_CS.into()),
        ("IONIC_V1_OP_ATOMIC_FA", op::ATOMIC_FA.into()),
        ("IONIC_V1_OP_REG_MR", op::REG_MR.into()),
        ("IONIC_V1_OP_LOCAL_INV", op::LOCAL_INV.into()),
        ("IONIC_V1_OP_BIND_MW", op::BIND_MW.into()),
        ("IONIC_STS_OK", status::OK as usize),
        ("IONIC_STS_LOCAL_LEN_ERR", status::LOCAL_LEN_ERR as usize),
        (
            "IONIC_STS_LOCAL_QP_OPER_ERR",
            status::LOCAL_QP_OPER_ERR as usize,
        ),
        ("IONIC_STS_LOCAL_PROT_ERR", status::LOCAL_PROT_ERR as usize),
        (
            "IONIC_STS_WQE_FLUSHED_ERR",
            status::WQE_FLUSHED_ERR as usize,
        ),
        (
            "IONIC_STS_MEM_MGMT_OPER_ERR",
            status::MEM_MGMT_OPER_ERR as usize,
        ),
        ("IONIC_STS_BAD_RESP_ERR", status::BAD_RESP_ERR as usize),
        ("IONIC_STS_LOCAL_ACC_ERR", status::LOCAL_ACC_ERR as usize),
        (
            "IONIC_STS_REMOTE_INV_REQ_ERR",
            status::REMOTE_INV_REQ_ERR as usize,
        ),
        ("IONIC_STS_REMOTE_ACC_ERR", status::REMOTE_ACC_ERR as usize),
        (
            "IONIC_STS_REMOTE_OPER_ERR",
            status::REMOTE_OPER_ERR as usize,
        ),
        ("IONIC_STS_RETRY_EXCEEDED", status::RETRY_EXCEEDED as usize),
        (
            "IONIC_STS_RNR_RETRY_EXCEEDED",
            status::RNR_RETRY_EXCEEDED as usize,
        ),
        ("IONIC_V1_CQE_RECV_OP_SEND", recv_op::SEND as usize),
        ("IONIC_V1_CQE_RECV_OP_SEND_INV", recv_op::SEND_INV as usize),
        ("IONIC_V1_CQE_RECV_OP_SEND_IMM", recv_op::SEND_IMM as usize),
        ("IONIC_V1_CQE_RECV_OP_RDMA_IMM", recv_op::RDMA_IMM as usize),
        ("IONIC_V1_CQE_RECV_OP_SHIFT", recv_op::SHIFT as usize),
        ("IONIC_V1_CQE_RECV_IS_IPV4", recv_op::IS_IPV4 as usize),
        ("IONIC_V1_CQE_RECV_QPN_MASK", 0xff_ffff),
    ] {
        v.push((e.to_string(), ours));
    }
    for (e, ours) in [
        ("sizeof(struct ionic_admin_create_cq)", create_cq::LEN),
        ("sizeof(struct ionic_admin_create_qp)", create_qp::LEN),
        ("sizeof(struct ionic_admin_mod_qp)", mod_qp::LEN),
        ("sizeof(struct ionic_admin_query_qp)", query_qp::LEN),
        ("sizeof(struct ionic_admin_create_mr)", create_mr::LEN),
        ("sizeof(struct ionic_admin_create_ah)", create_ah::LEN),
        ("sizeof(struct ionic_admin_stats_hdr)", stats_hdr::LEN),
        ("sizeof(struct ionic_v1_cqe)", cqe::LEN),
        (
            "sizeof(struct ionic_v1_admin_query_qp_sq)",
            query_qp::sq::LEN,
        ),
        (
            "sizeof(struct ionic_v1_admin_query_qp_rq)",
            query_qp::rq::LEN,
        ),
        ("sizeof(struct ionic_v1_eqe)", eqe::LEN),
        ("ADMIN_WQE_STRIDE", admin_wqe::STRIDE),
        ("ADMIN_WQE_HDR_LEN", admin_wqe::HDR_LEN),
        ("IONIC_V1_ADMIN_NOOP", admin_op::NOOP.into()),
        ("IONIC_V1_ADMIN_CREATE_CQ", admin_op::CREATE_CQ.into()),
        ("IONIC_V1_ADMIN_CREATE_QP", admin_op::CREATE_QP.into()),
        ("IONIC_V1_ADMIN_CREATE_MR", admin_op::CREATE_MR.into()),
        ("IONIC_V1_ADMIN_STATS_HDRS", admin_op::STATS_HDRS.into()),
        ("IONIC_V1_ADMIN_STATS_VALS", admin_op::STATS_VALS.into()),
        ("IONIC_V1_ADMIN_DESTROY_MR", admin_op::DESTROY_MR.into()),
        ("IONIC_V1_ADMIN_RSVD_7", admin_op::RESIZE_CQ.into()),
        ("IONIC_V1_ADMIN_DESTROY_CQ", admin_op::DESTROY_CQ.into()),
        ("IONIC_V1_ADMIN_MODIFY_QP", admin_op::MODIFY_QP.into()),
        ("IONIC_V1_ADMIN_QUERY_QP", admin_op::QUERY_QP.into()),
        ("IONIC_V1_ADMIN_DESTROY_QP", admin_op::DESTROY_QP.into()),
        ("IONIC_V1_ADMIN_DEBUG", admin_op::DEBUG.into()),
        ("IONIC_V1_ADMIN_CREATE_AH", admin_op::CREATE_AH.into()),
        ("IONIC_V1_ADMIN_QUERY_AH", admin_op::QUERY_AH.into()),
        ("IONIC_V1_ADMIN_MODIFY_DCQCN", admin_op::MODIFY_DCQCN.into()),
        ("IONIC_V1_ADMIN_DESTROY_AH", admin_op::DESTROY_AH.into()),
        (
            "IONIC_V1_ADMIN_QP_STATS_HDRS",
            admin_op::QP_STATS_HDRS.into(),
        ),
        (
            "IONIC_V1_ADMIN_QP_STATS_VALS",
            admin_op::QP_STATS_VALS.into(),
        ),
        ("IONIC_V1_ADMIN_OPCODES_MAX", admin_op::COUNT.into()),
        ("IONIC_V1_ASTS_OK", admin_status::OK as usize),
        ("IONIC_V1_ASTS_BAD_CMD", admin_status::BAD_CMD as usize),
        ("IONIC_V1_ASTS_BAD_INDEX", admin_status::BAD_INDEX as usize),
        ("IONIC_V1_ASTS_BAD_STATE", admin_status::BAD_STATE as usize),
        ("IONIC_V1_ASTS_BAD_TYPE", admin_status::BAD_TYPE as usize),
        ("IONIC_V1_ASTS_BAD_ATTR", admin_status::BAD_ATTR as usize),
        (
            "IONIC_V1_ASTS_MSG_TOO_BIG",
            admin_status::MSG_TOO_BIG as usize,
        ),
        ("IONIC_V1_CQE_COLOR", cqe::COLOR as usize),
        ("IONIC_V1_CQE_ERROR", cqe::ERROR as usize),
        ("IONIC_V1_CQE_TYPE_SHIFT", cqe::TYPE_SHIFT as usize),
        ("IONIC_V1_CQE_QID_SHIFT", cqe::QID_SHIFT as usize),
        ("IONIC_V1_CQE_TYPE_ADMIN", cqe::TYPE_ADMIN as usize),
        ("IONIC_V1_CQE_TYPE_RECV", cqe::TYPE_RECV as usize),
        ("IONIC_V1_CQE_TYPE_SEND_MSN", cqe::TYPE_SEND_MSN as usize),
        ("IONIC_V1_CQE_TYPE_SEND_NPG", cqe::TYPE_SEND_NPG as usize),
        ("IONIC_V1_EQE_COLOR", eqe::COLOR as usize),
        ("IONIC_V1_EQE_TYPE_SHIFT", eqe::TYPE_SHIFT as usize),
        ("IONIC_V1_EQE_CODE_SHIFT", eqe::CODE_SHIFT as usize),
        ("IONIC_V1_EQE_QID_SHIFT", eqe::QID_SHIFT as usize),
        ("IONIC_V1_EQE_TYPE_CQ", eqe::TYPE_CQ as usize),
        ("IONIC_V1_EQE_CQ_NOTIFY", eqe::CQ_NOTIFY as usize),
        ("IONIC_QPT_RC", qpt::RC.into()),
        ("IONIC_QPT_UC", qpt::UC.into()),
        ("IONIC_QPT_UD", qpt::UD.into()),
        ("IONIC_QPS_RESET", qps::RESET.into()),
        ("IONIC_QPS_INIT", qps::INIT.into()),
        ("IONIC_QPS_RTR", qps::RTR.into()),
        ("IONIC_QPS_RTS", qps::RTS.into()),
        ("IONIC_QPS_SQD", qps::SQD.into()),
        ("IONIC_QPS_SQE", qps::SQE.into()),
        ("IONIC_QPS_ERR", qps::ERR.into()),
        ("IONIC_QPF_REMOTE_WRITE", qpf::REMOTE_WRITE.into()),
        ("IONIC_QPF_REMOTE_READ", qpf::REMOTE_READ.into()),
        ("IONIC_QPF_REMOTE_ATOMIC", qpf::REMOTE_ATOMIC.into()),
        ("IONIC_QPF_PRIVILEGED", qpf::PRIVILEGED.into()),
        ("IONIC_MRF_LOCAL_WRITE", mrf::LOCAL_WRITE.into()),
        ("IONIC_MRF_REMOTE_WRITE", mrf::REMOTE_WRITE.into()),
        ("IONIC_MRF_REMOTE_READ", mrf::REMOTE_READ.into()),
        ("IONIC_MRF_REMOTE_ATOMIC", mrf::REMOTE_ATOMIC.into()),
    ] {
        v.push((e.to_string(), ours));
    }
    v
}

/// Stand-ins for what `ionic_fw.h` includes from the kernel: types, byte
/// order helpers and the IB enums its inline helpers name.
const FW_STUBS: &str = r#"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <assert.h>
#include <errno.h>
typedef uint8_t u8; typedef uint16_t u16; typedef uint32_t u32; typedef uint64_t u64;
typedef uint8_t __u8; typedef uint16_t __u16; typedef uint32_t __u32; typedef uint64_t __u64;
typedef uint16_t __le16; typedef uint32_t __le32; typedef uint64_t __le64;
typedef uint16_t __be16; typedef uint32_t __be32; typedef uint64_t __be64;
#define BIT(n) (1UL << (n))
#define __packed __attribute__((packed))
#define cpu_to_be32(x) __builtin_bswap32(x)
#define be32_to_cpu(x) __builtin_bswap32(x)
enum ib_qp_state { IB_QPS_RESET, IB_QPS_INIT, IB_QPS_RTR, IB_QPS_RTS, IB_QPS_SQD,
    IB_QPS_SQE, IB_QPS_ERR };
enum ib_qp_type { IB_QPT_SMI, IB_QPT_GSI, IB_QPT_RC, IB_QPT_UC, IB_QPT_UD,
    IB_QPT_XRC_INI = 9, IB_QPT_XRC_TGT };
enum ib_wc_status { IB_WC_SUCCESS, IB_WC_LOC_LEN_ERR, IB_WC_LOC_QP_OP_ERR,
    IB_WC_LOC_PROT_ERR = 4, IB_WC_WR_FLUSH_ERR, IB_WC_MW_BIND_ERR, IB_WC_BAD_RESP_ERR,
    IB_WC_LOC_ACCESS_ERR, IB_WC_REM_INV_REQ_ERR, IB_WC_REM_ACCESS_ERR, IB_WC_REM_OP_ERR,
    IB_WC_RETRY_EXC_ERR, IB_WC_RNR_RETRY_EXC_ERR, IB_WC_GENERAL_ERR = 21 };
enum { IB_ACCESS_LOCAL_WRITE = 1, IB_ACCESS_REMOTE_WRITE = 2, IB_ACCESS_REMOTE_READ = 4,
    IB_ACCESS_REMOTE_ATOMIC = 8, IB_ACCESS_MW_BIND = 16, IB_ZERO_BASED = 32 };
"#;

#[test]
fn rdma_formats_are_the_guest_kernels() {
    let Some(dir) = headers("ionic_fw.h") else {
        return;
    };
    let stubs = [("linux/kernel.h", FW_STUBS), ("rdma/ib_verbs.h", "")];
    let source = "#include <stdio.h>\n#include \"ionic_fw.h\"\n";
    probe("fw", &dir, &stubs, source, &fw_pairs());
}
