//! libibverbs' private interface (`IBVERBS_PRIVATE_34` in rdma-core 44,
//! `IBVERBS_PRIVATE_65` in 65): what rdma-core's provider libraries call.
//! ernic loads no providers, but programs such as perftest link the
//! providers' direct-verbs libraries (libmlx5, libefa), which need these
//! names to load, and whose constructors register their drivers; so every
//! name is here, in both versions (one name in two versions is beyond a
//! version script, so each is bound with `.symver`, and the nodes are in
//! libibverbs.map). A driver registering is ignored; every other call
//! fails as a provider's command to a kernel that has no such device
//! would: EOPNOTSUPP, NULL, or nothing.

use std::ffi::{c_char, c_int, c_void};

use crate::errno;

/// Defines `ernic_priv_NAME` for each name, with the body given, and binds
/// `NAME` to it in both private versions.
macro_rules! private {
    ($ret:ty => $body:expr; $($name:ident),* $(,)?) => {$(
        paste_fn!($name, $ret, $body);
    )*};
}

/// One private entry point.
macro_rules! paste_fn {
    ($name:ident, $ret:ty, $body:expr) => {
        #[unsafe(export_name = concat!("ernic_priv_", stringify!($name)))]
        #[doc = concat!("`", stringify!($name), "`, for providers: not offered.")]
        pub extern "C" fn $name() -> $ret {
            $body
        }
        std::arch::global_asm!(
            concat!(
                ".symver ernic_priv_",
                stringify!($name),
                ", ",
                stringify!($name),
                "@IBVERBS_PRIVATE_34"
            ),
            concat!(
                ".symver ernic_priv_",
                stringify!($name),
                ", ",
                stringify!($name),
                "@IBVERBS_PRIVATE_65"
            ),
        );
    };
}

private!(c_int => { errno::set(libc::EOPNOTSUPP); libc::EOPNOTSUPP };
    ibv_cmd_advise_mr,
    ibv_cmd_alloc_dm,
    ibv_cmd_alloc_dmah,
    ibv_cmd_alloc_mw,
    ibv_cmd_alloc_pd,
    ibv_cmd_attach_mcast,
    ibv_cmd_close_xrcd,
    ibv_cmd_create_ah,
    ibv_cmd_create_comp_cntr,
    ibv_cmd_create_counters,
    ibv_cmd_create_cq,
    ibv_cmd_create_cq_ex,
    ibv_cmd_create_cq_ex2,
    ibv_cmd_create_flow,
    ibv_cmd_create_flow_action_esp,
    ibv_cmd_create_qp,
    ibv_cmd_create_qp_ex,
    ibv_cmd_create_qp_ex2,
    ibv_cmd_create_rwq_ind_table,
    ibv_cmd_create_srq,
    ibv_cmd_create_srq_ex,
    ibv_cmd_create_wq,
    ibv_cmd_dealloc_mw,
    ibv_cmd_dealloc_pd,
    ibv_cmd_dereg_mr,
    ibv_cmd_destroy_ah,
    ibv_cmd_destroy_comp_cntr,
    ibv_cmd_destroy_counters,
    ibv_cmd_destroy_cq,
    ibv_cmd_destroy_flow,
    ibv_cmd_destroy_flow_action,
    ibv_cmd_destroy_qp,
    ibv_cmd_destroy_rwq_ind_table,
    ibv_cmd_destroy_srq,
    ibv_cmd_destroy_wq,
    ibv_cmd_detach_mcast,
    ibv_cmd_export_dmabuf_fd,
    ibv_cmd_free_dm,
    ibv_cmd_free_dmah,
    ibv_cmd_get_context,
    ibv_cmd_inc_comp_cntr,
    ibv_cmd_inc_err_comp_cntr,
    ibv_cmd_modify_cq,
    ibv_cmd_modify_flow_action_esp,
    ibv_cmd_modify_qp,
    ibv_cmd_modify_qp_ex,
    ibv_cmd_modify_srq,
    ibv_cmd_modify_wq,
    ibv_cmd_open_qp,
    ibv_cmd_open_xrcd,
    ibv_cmd_poll_cq,
    ibv_cmd_post_recv,
    ibv_cmd_post_send,
    ibv_cmd_post_srq_recv,
    ibv_cmd_qp_attach_comp_cntr,
    ibv_cmd_query_comp_cntr_caps,
    ibv_cmd_query_context,
    ibv_cmd_query_device,
    ibv_cmd_query_device_any,
    ibv_cmd_query_mr,
    ibv_cmd_query_port,
    ibv_cmd_query_port_speed,
    ibv_cmd_query_qp,
    ibv_cmd_query_srq,
    ibv_cmd_read_comp_cntr,
    ibv_cmd_read_counters,
    ibv_cmd_read_err_comp_cntr,
    ibv_cmd_reg_dm_mr,
    ibv_cmd_reg_dmabuf_mr,
    ibv_cmd_reg_mr,
    ibv_cmd_reg_mr_ex,
    ibv_cmd_req_notify_cq,
    ibv_cmd_rereg_mr,
    ibv_cmd_resize_cq,
    ibv_cmd_set_comp_cntr,
    ibv_cmd_set_err_comp_cntr,
    execute_ioctl,
    __ioctl_final_num_attrs,
    ibv_read_ibdev_sysfs_file,
    ibv_dmabuf_heap_cc_shared_init,
);

private!(*mut c_void => errno::null(libc::EOPNOTSUPP);
    _verbs_init_and_alloc_context,
    verbs_open_device,
    ibv_dmabuf_heap_alloc,
);

private!(() => ();
    __verbs_log,
    verbs_init_cq,
    verbs_set_ops,
    verbs_uninit_context,
    verbs_register_driver_34,
    verbs_register_driver_65,
    ibv_dmabuf_heap_free,
    ibv_dmabuf_heap_destroy,
);

/// `ibv_wr_opcode_str`: rdma-core's names of send opcodes.
#[unsafe(export_name = "ernic_priv_ibv_wr_opcode_str")]
pub extern "C" fn ibv_wr_opcode_str(op: u32) -> *const c_char {
    const NAMES: [&str; 16] = [
        "rdma-write\0",
        "rdma-write-with-imm\0",
        "send\0",
        "send-with-imm\0",
        "rdma-read\0",
        "atomic-cmp-and-swp\0",
        "atomic-fetch-and-add\0",
        "local-inv\0",
        "bind-mw\0",
        "send-with-inv\0",
        "tso\0",
        "driver1\0",
        "unknown\0",
        "unknown\0",
        "flush\0",
        "atomic-write\0",
    ];
    NAMES
        .get(op as usize)
        .map_or(c"unknown".as_ptr(), |s| s.as_ptr().cast())
}

/// `verbs_allow_disassociate_destroy`: a provider's switch, off.
#[unsafe(export_name = "ernic_priv_verbs_allow_disassociate_destroy")]
pub static VERBS_ALLOW_DISASSOCIATE_DESTROY: bool = false;

std::arch::global_asm!(
    ".symver ernic_priv_ibv_wr_opcode_str, ibv_wr_opcode_str@IBVERBS_PRIVATE_34",
    ".symver ernic_priv_ibv_wr_opcode_str, ibv_wr_opcode_str@IBVERBS_PRIVATE_65",
    ".symver ernic_priv_verbs_allow_disassociate_destroy, verbs_allow_disassociate_destroy@IBVERBS_PRIVATE_34",
    ".symver ernic_priv_verbs_allow_disassociate_destroy, verbs_allow_disassociate_destroy@IBVERBS_PRIVATE_65",
);
