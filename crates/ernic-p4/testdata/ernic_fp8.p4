// ernic_fp8.json, written by hand in p4c's bmv2 JSON format, is this
// program for ernic's RDMA path: a send WQE enters on port 2 as the
// ernic_wqe header (ernic_p4::target); an RDMA WRITE becomes fp8 E4M3
// accumulation into its local destination (wqe_ops' default action), or
// is dropped for the lengths wqe_ops holds with `drop`.
#include <core.p4>
#include <v1model.p4>

extern void ernic_fp8_accumulate(in bit<8> fmt, in bit<8> saturate);

header ernic_wqe_t {
    bit<8> opcode; bit<8> nsge; bit<8> remote_is_local; bit<8> reserved;
    bit<32> qpn; bit<32> dest_qpn; bit<32> length; bit<32> lkey; bit<64> laddr;
    bit<32> rkey; bit<64> raddr; bit<32> imm;
}
struct headers { ernic_wqe_t ernic_wqe; }
struct metadata { }

parser P(packet_in b, out headers hdr, inout metadata m, inout standard_metadata_t sm) {
    state start { transition select(sm.ingress_port) { 2: parse_wqe; default: accept; } }
    state parse_wqe { b.extract(hdr.ernic_wqe); transition accept; }
}
control Ingress(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) wqe_ops_counter;
    action drop() { mark_to_drop(sm); }
    action fp8_accumulate(bit<8> fmt, bit<8> saturate) { ernic_fp8_accumulate(fmt, saturate); }
    table wqe_ops {
        key = { hdr.ernic_wqe.length: exact; }
        actions = { fp8_accumulate; drop; NoAction; }
        default_action = fp8_accumulate(0, 1);
        counters = wqe_ops_counter;
    }
    apply { if (hdr.ernic_wqe.isValid() && hdr.ernic_wqe.opcode == 2) { wqe_ops.apply(); } }
}
control Egress(inout headers hdr, inout metadata m, inout standard_metadata_t sm) { apply { } }
control Vrfy(inout headers hdr, inout metadata m) { apply { } }
control Upd(inout headers hdr, inout metadata m) { apply { } }
control D(packet_out b, in headers hdr) { apply { b.emit(hdr.ernic_wqe); } }
V1Switch(P(), Vrfy(), Ingress(), Egress(), Upd(), D()) main;
