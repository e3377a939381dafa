// ernic_frames.json, written by hand in p4c's bmv2 JSON format, is this
// program: on the frames the guest transmits (port 0) it drops ARP for the
// addresses arp_filter holds; on the frames from the wire (port 1) it may
// rewrite the Ethernet source (rx_rewrite's default action). ernic presets
// egress_spec to the other side, so everything else passes through.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header arp_t {
    bit<16> htype; bit<16> ptype; bit<8> hlen; bit<8> plen; bit<16> oper;
    bit<48> sha; bit<32> spa; bit<48> tha; bit<32> tpa;
}
struct headers { ethernet_t ethernet; arp_t arp; }
struct metadata { }

parser P(packet_in b, out headers hdr, inout metadata m, inout standard_metadata_t sm) {
    state start {
        b.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0806: parse_arp; default: accept; }
    }
    state parse_arp { b.extract(hdr.arp); transition accept; }
}
control Ingress(inout headers hdr, inout metadata m, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action set_src(bit<48> mac) { hdr.ethernet.srcAddr = mac; }
    table arp_filter { key = { hdr.arp.tpa: exact; } actions = { drop; NoAction; } default_action = NoAction(); }
    table rx_rewrite { actions = { set_src; NoAction; } default_action = NoAction(); size = 1; }
    apply {
        if (hdr.arp.isValid() && sm.ingress_port == 0) { arp_filter.apply(); }
        else if (hdr.ethernet.isValid() && sm.ingress_port == 1) { rx_rewrite.apply(); }
    }
}
control Egress(inout headers hdr, inout metadata m, inout standard_metadata_t sm) { apply { } }
control Vrfy(inout headers hdr, inout metadata m) { apply { } }
control Upd(inout headers hdr, inout metadata m) { apply { } }
control D(packet_out b, in headers hdr) { apply { b.emit(hdr.ethernet); b.emit(hdr.arp); } }
V1Switch(P(), Vrfy(), Ingress(), Egress(), Upd(), D()) main;
