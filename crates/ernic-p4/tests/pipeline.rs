//! The bmv2 test programs in `testdata/` run as their `.p4` sources say,
//! through the switch's control-plane API.

use ernic_p4::exec::tables::MatchParam;
use ernic_p4::exec::{Output, Switch};
use ernic_p4::program::Program;

fn switch(name: &str) -> Switch {
    let p = format!("{}/testdata/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    Switch::new(Program::load(&text).unwrap_or_else(|e| panic!("{name}: {e}")))
}

fn run(sw: &mut Switch, port: u32, data: &[u8]) -> Vec<Output> {
    let mut out = Vec::new();
    sw.process(port, data, 0, &mut out);
    out
}

#[test]
fn swap_1_sends_by_f1() {
    // swap_1.p4: t_ingress_1 matches hdr1.f1 exactly; a11 sends to port 1,
    // a12 to port 2.
    let mut sw = switch("swap_1");
    sw.table_add(
        "t_ingress_1",
        "a11",
        vec![MatchParam::Exact(vec![0x01])],
        vec![],
        0,
    )
    .unwrap();
    sw.table_add(
        "t_ingress_1",
        "a12",
        vec![MatchParam::Exact(vec![0x02])],
        vec![],
        0,
    )
    .unwrap();
    let pkt = [0x01, 0xaa, 0xde, 0xad];
    assert_eq!(
        run(&mut sw, 3, &pkt),
        vec![Output {
            port: 1,
            data: pkt.to_vec()
        }]
    );
    let pkt2 = [0x02, 0xbb];
    assert_eq!(
        run(&mut sw, 3, &pkt2),
        vec![Output {
            port: 2,
            data: pkt2.to_vec()
        }]
    );
    // A miss runs no action: egress_spec stays 0.
    assert_eq!(run(&mut sw, 3, &[0x07, 0x00])[0].port, 0);
    // The same key twice is refused, as bmv2 does.
    let e = sw
        .table_add(
            "t_ingress_1",
            "a11",
            vec![MatchParam::Exact(vec![0x01])],
            vec![],
            0,
        )
        .unwrap_err();
    assert_eq!(e.to_string(), "DUPLICATE_ENTRY");
}

#[test]
fn handles_are_bmv2s() {
    let mut sw = switch("swap_1");
    let h0 = sw
        .table_add(
            "t_ingress_1",
            "a11",
            vec![MatchParam::Exact(vec![1])],
            vec![],
            0,
        )
        .unwrap();
    let h1 = sw
        .table_add(
            "t_ingress_1",
            "a11",
            vec![MatchParam::Exact(vec![2])],
            vec![],
            0,
        )
        .unwrap();
    assert_eq!((h0, h1), (0, 1));
    sw.table_delete("t_ingress_1", h0).unwrap();
    // The lowest free index again, with its version bumped.
    let h2 = sw
        .table_add(
            "t_ingress_1",
            "a11",
            vec![MatchParam::Exact(vec![3])],
            vec![],
            0,
        )
        .unwrap();
    assert_eq!(h2, 1 << 24);
    assert_eq!(
        sw.table_delete("t_ingress_1", h0).unwrap_err().to_string(),
        "EXPIRED_HANDLE"
    );
}

#[test]
fn parser_deparser_1_passes_tcp_and_udp_unchanged() {
    let mut sw = switch("parser_deparser_1");
    let mut pkt = vec![0u8; 12];
    pkt.extend_from_slice(&[0x08, 0x00]);
    // IPv4, protocol 6 (TCP), then a 20-byte TCP header and a payload.
    pkt.extend_from_slice(&[
        0x45, 0, 0, 44, 0, 1, 0, 0, 64, 6, 0x12, 0x34, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    pkt.extend_from_slice(&[
        0x04, 0xd2, 0x16, 0x2e, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0,
    ]);
    pkt.extend_from_slice(b"data");
    assert_eq!(
        run(&mut sw, 0, &pkt),
        vec![Output {
            port: 0,
            data: pkt.clone()
        }]
    );
    // A packet too short for its IPv4 header still goes through, unparsed
    // bytes as payload.
    let short = &pkt[..20];
    assert_eq!(
        run(&mut sw, 0, short),
        vec![Output {
            port: 0,
            data: short.to_vec()
        }]
    );
}

#[test]
fn header_stack_pop_drops_the_front() {
    // header_stack.p4: a1(v1) sets hdr[1].f1 = v1, then pops one header.
    let mut sw = switch("header_stack");
    let pkt = [0x00, 0x01, 0x00, 0x02, 0x00, 0x03, 0x00, 0x04, 0xee];
    assert_eq!(
        run(&mut sw, 0, &pkt)[0].data,
        pkt,
        "no default action: unchanged"
    );
    sw.table_set_default("t1", "a1", vec![0xabcd]).unwrap();
    assert_eq!(
        run(&mut sw, 0, &pkt)[0].data,
        vec![0xab, 0xcd, 0x00, 0x04, 0xee]
    );
    let e = sw
        .table_set_default("t1", "a1", vec![0x1_0000])
        .unwrap_err();
    assert!(e.to_string().contains("does not fit in 16 bits"), "{e}");
}

#[test]
fn loopback_returns_to_the_ingress_port() {
    let mut sw = switch("loopback");
    assert_eq!(
        run(&mut sw, 5, b"hello"),
        vec![Output {
            port: 5,
            data: b"hello".to_vec()
        }]
    );
}

#[test]
fn ternary_lower_priority_number_wins() {
    let mut sw = switch("ternary");
    sw.table_add(
        "ter",
        "send_1",
        vec![MatchParam::Ternary(vec![0x00, 0x01], vec![0x00, 0xff])],
        vec![],
        20,
    )
    .unwrap();
    sw.table_add(
        "ter",
        "send_2",
        vec![MatchParam::Ternary(vec![0x10, 0x00], vec![0xff, 0x00])],
        vec![],
        10,
    )
    .unwrap();
    assert_eq!(
        run(&mut sw, 0, &[0x10, 0x01])[0].port,
        2,
        "both match: priority 10 wins"
    );
    assert_eq!(run(&mut sw, 0, &[0x20, 0x01])[0].port, 1);
    assert_eq!(run(&mut sw, 0, &[0x20, 0x02])[0].port, 0, "miss: NoAction");
}

#[test]
fn counter_counts_direct_hits() {
    // counter.p4: t_redirect keyed on packet_length; a hit sends the packet
    // back and counts it in the direct counter.
    let mut sw = switch("counter");
    let h = sw
        .table_add(
            "t_redirect",
            "port_redirect",
            vec![MatchParam::Exact(vec![0, 0, 0, 6])],
            vec![],
            0,
        )
        .unwrap();
    for _ in 0..3 {
        assert_eq!(run(&mut sw, 2, b"sixsix")[0].port, 2);
    }
    assert_eq!(run(&mut sw, 2, b"seven!!")[0].port, 0, "other lengths miss");
    assert_eq!(sw.counter_read("cntr", u64::from(h)).unwrap(), (3, 18));
    sw.counter_reset("cntr").unwrap();
    assert_eq!(sw.counter_read("cntr", u64::from(h)).unwrap(), (0, 0));
}

#[test]
fn exact_match_1_applies_three_tables() {
    let mut sw = switch("exact_match_1");
    let mac = |b: u8| vec![0, 0, 0, 0, 0, b];
    sw.table_add(
        "exact_3",
        "_nop",
        vec![MatchParam::Exact(mac(2)), MatchParam::Exact(mac(1))],
        vec![],
        0,
    )
    .unwrap();
    let mut pkt = mac(1);
    pkt.extend(mac(2));
    pkt.extend([0x88, 0xb5]);
    assert_eq!(
        run(&mut sw, 0, &pkt),
        vec![Output {
            port: 0,
            data: pkt.clone()
        }]
    );
    assert!(
        sw.table_add(
            "exact_3",
            "_nop",
            vec![MatchParam::Exact(mac(2))],
            vec![],
            0
        )
        .is_err(),
        "a key of one field for two"
    );
    assert!(
        sw.table_add(
            "exact_3",
            "nope",
            vec![MatchParam::Exact(mac(2)), MatchParam::Exact(mac(3))],
            vec![],
            0
        )
        .is_err()
    );
}

fn switch_edited(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Switch {
    let p = format!("{}/testdata/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    edit(&mut v);
    Switch::new(Program::load(&v.to_string()).unwrap())
}

#[test]
fn a_parser_that_never_ends_stops_with_parser_timeout() {
    // parser_error.p4 with its start state leading to a state that loops
    // on itself: the parser stops (ParserTimeout), and ingress's "any
    // other error" branch writes f1 = 3.
    let mut sw = switch_edited("parser_error", |v| {
        let states = v["parsers"][0]["parse_states"].as_array_mut().unwrap();
        states[0]["transitions"][0]["next_state"] = serde_json::json!("spin");
        states.push(
            serde_json::json!({"name": "spin", "id": 1, "parser_ops": [], "transition_key": [],
            "transitions": [{"value": "default", "mask": null, "next_state": "spin"}]}),
        );
    });
    assert_eq!(
        run(&mut sw, 2, &[0, 0, 0, 1]),
        vec![Output {
            port: 2,
            data: vec![0, 0, 0, 3]
        }]
    );
}

#[test]
fn a_stack_overflow_stops_the_parser_and_keeps_what_it_extracted() {
    // header_stack.p4 with a parser that extracts hdr.next and loops: the
    // fourth extract overflows the 3-deep stack (StackOutOfBounds); the
    // deparser emits hdr[0] and hdr[1] (its order), hdr[2] is lost, and the
    // bytes after it follow as payload.
    let mut sw = switch_edited("header_stack", |v| {
        let st = &mut v["parsers"][0]["parse_states"][0];
        st["parser_ops"] = serde_json::json!([{"op": "extract", "parameters": [{"type": "stack", "value": "hdr"}]}]);
        st["transitions"] = serde_json::json!([{"type": "default", "value": null, "mask": null, "next_state": "start"}]);
    });
    let pkt: Vec<u8> = (1..=16).collect();
    let mut want: Vec<u8> = (1..=8).collect();
    want.extend(13..=16);
    assert_eq!(run(&mut sw, 0, &pkt)[0].data, want);
}

#[test]
fn width_and_count_mismatches_are_refused_at_load() {
    let p = format!("{}/testdata/ternary.json", env!("CARGO_MANIFEST_DIR"));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    // A const entry whose key is wider than its 16-bit field.
    let mut bad = v.clone();
    bad["pipelines"][0]["tables"][0]["entries"] = serde_json::json!([{
        "match_key": [{"match_type": "ternary", "key": "0x10000", "mask": "0xffff"}],
        "action_entry": {"action_id": 0, "action_data": []}, "priority": 1}]);
    let e = Program::load(&bad.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("entries[0].match_key[0].key") && e.contains("at most 2 bytes"),
        "{e}"
    );
    // A default entry with data for an action that takes none.
    let mut bad = v.clone();
    bad["pipelines"][0]["tables"][0]["default_entry"]["action_data"] = serde_json::json!(["0x1"]);
    let e = Program::load(&bad.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("default_entry.action_data") && e.contains("takes 0 parameters, not 1"),
        "{e}"
    );
}

/// A program written here in p4c's JSON form: `la = lookahead<bit<8>>()`
/// into metadata, `extract(fixed)`, `extract(var, fixed.len * 8)` (a
/// varbit of at most 6 bytes), `advance(16)`; ingress sends the packet to
/// port `la`; the deparser emits fixed and var (the skipped 2 bytes are
/// gone: advance consumes them, and they are not re-emitted).
fn varbit_program() -> Switch {
    Switch::new(Program::load(&varbit_json().to_string()).unwrap())
}

fn varbit_json() -> serde_json::Value {
    let std_fields: Vec<serde_json::Value> = [
        ("ingress_port", 9),
        ("egress_spec", 9),
        ("egress_port", 9),
        ("instance_type", 32),
        ("packet_length", 32),
        ("parser_error", 32),
    ]
    .iter()
    .map(|(n, w)| serde_json::json!([n, w, false]))
    .collect();
    let v = serde_json::json!({
        "__meta__": {"version": [2, 23]},
        "header_types": [
            {"name": "standard_metadata", "id": 0, "fields": std_fields},
            {"name": "meta_t", "id": 1, "fields": [["la", 8, false]]},
            {"name": "fixed_t", "id": 2, "fields": [["len", 8, false]]},
            {"name": "var_t", "id": 3, "fields": [["opts", "*"]], "max_length": 6}
        ],
        "headers": [
            {"name": "standard_metadata", "id": 0, "header_type": "standard_metadata", "metadata": true},
            {"name": "meta", "id": 1, "header_type": "meta_t", "metadata": true},
            {"name": "fixed", "id": 2, "header_type": "fixed_t", "metadata": false},
            {"name": "var", "id": 3, "header_type": "var_t", "metadata": false}
        ],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [{
            "name": "start", "id": 0,
            "parser_ops": [
                {"op": "set", "parameters": [{"type": "field", "value": ["meta", "la"]}, {"type": "lookahead", "value": [0, 8]}]},
                {"op": "extract", "parameters": [{"type": "regular", "value": "fixed"}]},
                {"op": "extract_VL", "parameters": [{"type": "regular", "value": "var"},
                    {"type": "expression", "value": {"op": "<<", "left": {"type": "field", "value": ["fixed", "len"]}, "right": {"type": "hexstr", "value": "0x3"}}}]},
                {"op": "advance", "parameters": [{"type": "hexstr", "value": "0x10"}]}
            ],
            "transition_key": [], "transitions": [{"type": "default", "value": null, "mask": null, "next_state": null}]
        }]}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["fixed", "var"]}],
        "actions": [{"name": "fwd", "id": 0, "runtime_data": [], "primitives": [
            {"op": "assign", "parameters": [{"type": "field", "value": ["standard_metadata", "egress_spec"]}, {"type": "field", "value": ["meta", "la"]}]}
        ]}],
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "t", "tables": [{"name": "t", "id": 0, "key": [], "match_type": "exact",
                "type": "simple", "max_size": 1, "actions": ["fwd"], "next_tables": {"fwd": null}, "base_default_next": null,
                "default_entry": {"action_id": 0, "action_const": true, "action_data": [], "action_entry_const": true}}], "conditionals": []},
            {"name": "egress", "id": 1, "init_table": null, "tables": [], "conditionals": []}
        ]
    });
    v
}

#[test]
fn varbit_lookahead_and_advance() {
    let mut sw = varbit_program();
    // len 3: three option bytes, two skipped, then the payload.
    let pkt = [3, 0xa, 0xb, 0xc, 0xee, 0xff, 0x55];
    assert_eq!(
        run(&mut sw, 0, &pkt),
        vec![Output {
            port: 3,
            data: vec![3, 0xa, 0xb, 0xc, 0x55]
        }]
    );
    // len 0: no options.
    assert_eq!(run(&mut sw, 0, &[0, 1, 2, 9])[0].data, vec![0, 9]);
    // len 7: more than var's 6 bytes: HeaderTooShort; fixed was extracted,
    // the rest is payload.
    assert_eq!(
        run(&mut sw, 0, &[7, 1, 2, 3, 4, 5, 6, 7, 8, 9])[0].data,
        vec![7, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    );
    // Too short for the advance: PacketTooShort after the varbit.
    assert_eq!(run(&mut sw, 0, &[1, 0xa, 0xb])[0].data, vec![1, 0xa, 0xb]);
}

#[test]
fn a_checksum_covers_a_varbit_s_bytes() {
    // The program above with a 16-bit `ck` after `len` and a csum16 over
    // (len, opts) written into ck by the deparser: the varbit's bytes are
    // in the sum, as bmv2 packs them.
    let mut v = varbit_json();
    v["header_types"][2]["fields"] = serde_json::json!([["len", 8, false], ["ck", 16, false]]);
    v["calculations"] = serde_json::json!([{"name": "c", "id": 0, "algo": "csum16",
        "input": [{"type": "field", "value": ["fixed", "len"]}, {"type": "field", "value": ["var", "opts"]}]}]);
    v["checksums"] = serde_json::json!([{"name": "k", "id": 0, "target": ["fixed", "ck"], "type": "generic",
        "calculation": "c", "update": true, "verify": false, "if_cond": null}]);
    let mut sw = Switch::new(Program::load(&v.to_string()).unwrap());
    // len 2, ck 0, opts 0a 0b, two skipped bytes, payload 55: the sum of
    // 0x020a and 0x0b00 is 0x0d0a, its complement 0xf2f5.
    let out = run(&mut sw, 0, &[2, 0, 0, 0xa, 0xb, 0xee, 0xff, 0x55]);
    assert_eq!(
        out,
        vec![Output {
            port: 2,
            data: vec![2, 0xf2, 0xf5, 0xa, 0xb, 0x55]
        }]
    );
}

#[test]
fn a_header_union_holds_one_member_at_a_time() {
    // tag; then union u { a_t a; b_t b; } by tag.t (1: a, 2: b). Ingress:
    // if u.a is valid, add_header(u.b) and set u.b.y = 0xabcd (making a
    // invalid, as P4 unions do); then port 1 if the union holds a member,
    // else port 2 (valid_union).
    let std_fields = serde_json::json!([
        ["ingress_port", 9, false],
        ["egress_spec", 9, false],
        ["egress_port", 9, false],
        ["instance_type", 32, false],
        ["packet_length", 32, false]
    ]);
    let hexs = |v: &str| serde_json::json!({"type": "hexstr", "value": v});
    let v = serde_json::json!({
        "header_types": [
            {"name": "standard_metadata", "id": 0, "fields": std_fields},
            {"name": "tag_t", "id": 1, "fields": [["t", 8, false]]},
            {"name": "a_t", "id": 2, "fields": [["x", 8, false]]},
            {"name": "b_t", "id": 3, "fields": [["y", 16, false]]}
        ],
        "headers": [
            {"name": "standard_metadata", "id": 0, "header_type": "standard_metadata", "metadata": true},
            {"name": "tag", "id": 1, "header_type": "tag_t", "metadata": false},
            {"name": "u.a", "id": 2, "header_type": "a_t", "metadata": false},
            {"name": "u.b", "id": 3, "header_type": "b_t", "metadata": false}
        ],
        "header_union_types": [{"name": "U", "id": 0, "headers": [["a", "a_t"], ["b", "b_t"]]}],
        "header_unions": [{"name": "u", "id": 0, "union_type": "U", "header_ids": [2, 3]}],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0, "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "tag"}]}],
             "transition_key": [{"type": "field", "value": ["tag", "t"]}],
             "transitions": [
                {"type": "hexstr", "value": "0x01", "mask": null, "next_state": "pa"},
                {"type": "hexstr", "value": "0x02", "mask": null, "next_state": "pb"},
                {"type": "default", "value": null, "mask": null, "next_state": null}]},
            {"name": "pa", "id": 1, "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "u.a"}]}],
             "transition_key": [], "transitions": [{"type": "default", "value": null, "mask": null, "next_state": null}]},
            {"name": "pb", "id": 2, "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "u.b"}]}],
             "transition_key": [], "transitions": [{"type": "default", "value": null, "mask": null, "next_state": null}]}
        ]}],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["tag", "u.a", "u.b"]}],
        "actions": [
            {"name": "to_b", "id": 0, "runtime_data": [], "primitives": [
                {"op": "add_header", "parameters": [{"type": "header", "value": "u.b"}]},
                {"op": "assign", "parameters": [{"type": "field", "value": ["u.b", "y"]}, hexs("0xabcd")]}]},
            {"name": "port", "id": 1, "runtime_data": [{"name": "p", "bitwidth": 9}], "primitives": [
                {"op": "assign", "parameters": [{"type": "field", "value": ["standard_metadata", "egress_spec"]}, {"type": "runtime_data", "value": 0}]}]}
        ],
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "c1", "tables": [
                {"name": "t_b", "id": 0, "key": [], "match_type": "exact", "type": "simple", "max_size": 1, "actions": ["to_b"],
                 "next_tables": {"to_b": "c2"}, "base_default_next": "c2",
                 "default_entry": {"action_id": 0, "action_const": true, "action_data": [], "action_entry_const": true}},
                {"name": "t_1", "id": 1, "key": [], "match_type": "exact", "type": "simple", "max_size": 1, "actions": ["port"],
                 "next_tables": {"port": null}, "base_default_next": null,
                 "default_entry": {"action_id": 1, "action_const": true, "action_data": ["0x1"], "action_entry_const": true}},
                {"name": "t_2", "id": 2, "key": [], "match_type": "exact", "type": "simple", "max_size": 1, "actions": ["port"],
                 "next_tables": {"port": null}, "base_default_next": null,
                 "default_entry": {"action_id": 1, "action_const": true, "action_data": ["0x2"], "action_entry_const": true}}
            ], "conditionals": [
                {"name": "c1", "id": 0, "expression": {"type": "expression", "value": {"op": "d2b", "left": null,
                    "right": {"type": "field", "value": ["u.a", "$valid$"]}}}, "true_next": "t_b", "false_next": "c2"},
                {"name": "c2", "id": 1, "expression": {"type": "expression", "value": {"op": "valid_union", "left": null,
                    "right": {"type": "header_union", "value": "u"}}}, "true_next": "t_1", "false_next": "t_2"}
            ]},
            {"name": "egress", "id": 1, "init_table": null, "tables": [], "conditionals": []}
        ]
    });
    let mut sw = Switch::new(Program::load(&v.to_string()).unwrap());
    assert_eq!(
        run(&mut sw, 0, &[1, 0x11, 0x99]),
        vec![Output {
            port: 1,
            data: vec![1, 0xab, 0xcd, 0x99]
        }]
    );
    assert_eq!(
        run(&mut sw, 0, &[2, 0x22, 0x33, 0x99]),
        vec![Output {
            port: 1,
            data: vec![2, 0x22, 0x33, 0x99]
        }]
    );
    assert_eq!(
        run(&mut sw, 0, &[3, 0x99]),
        vec![Output {
            port: 2,
            data: vec![3, 0x99]
        }]
    );
}
