/*
 * SPDX-FileCopyrightText: 2019 Barefoot Networks, Inc.
 * Copyright 2019-present Barefoot Networks, Inc.
 *
 * SPDX-License-Identifier: Apache-2.0
 */

#include <core.p4>
#include <v1model.p4>

header hdr_t {
    bit<8> in_;
    bit<32> entropy;
}

struct Headers {
    hdr_t hdr;
}

struct Meta {}

parser p(packet_in b, out Headers h,
         inout Meta m, inout standard_metadata_t sm) {
    state start {
        b.extract(h.hdr);
        transition accept;
    }
}

control vrfy(inout Headers h, inout Meta m) { apply {} }
control update(inout Headers h, inout Meta m) { apply {} }

control egress(inout Headers h, inout Meta m, inout standard_metadata_t sm) {
    apply {}
}

control deparser(packet_out b, in Headers h) {
    apply { b.emit(h); }
}

control ingress(inout Headers h, inout Meta m, inout standard_metadata_t sm) {
    @name(".ActProfWS")
    action_selector(HashAlgorithm.crc16, 32w128, 32w16) ActProfWS;

    @name(".send")
    action send(bit<9> eg_port) {
        sm.egress_spec = eg_port;
    }

    @name(".IndirectWS")
    table IndirectWS {
        key = {
            h.hdr.in_ : exact;
            h.hdr.entropy : selector;
        }
        actions = { send; }
        implementation = ActProfWS;
        size = 512;
    }

    apply {
        IndirectWS.apply();
    }
}

V1Switch(p(), vrfy(), ingress(), egress(), update(), deparser()) main;
