//! simple_switch_CLI scripts against the test programs: what bmv2's CLI
//! prints, and its wording for mistakes.

use ernic_p4::exec::Switch;
use ernic_p4::program::Program;
use ernic_p4::runtime::run_script;

fn switch(name: &str) -> Switch {
    let p = format!("{}/testdata/{name}.json", env!("CARGO_MANIFEST_DIR"));
    Switch::new(Program::load(&std::fs::read_to_string(p).unwrap()).unwrap())
}

#[test]
fn swap_1_by_script() {
    let mut sw = switch("swap_1");
    let mut out = String::new();
    let failed = run_script(
        &mut sw,
        "table_add t_ingress_1 a11 0x01 =>\ntable_add t_ingress_1 a12 2 =>\ntable_num_entries t_ingress_1\n",
        &mut out,
    );
    assert_eq!(failed, 0, "{out}");
    assert_eq!(
        out,
        "Entry has been added with handle 0\nEntry has been added with handle 1\n2\n"
    );
    let mut pkts = Vec::new();
    sw.process(0, &[0x02, 0x00], 0, &mut pkts);
    assert_eq!(pkts[0].port, 2);
}

#[test]
fn mistakes_get_bmv2s_wording() {
    let mut sw = switch("swap_1");
    let mut out = String::new();
    let script = "table_add nosuch a11 1 =>\ntable_add t_ingress_1 nope 1 =>\ntable_add t_ingress_1 a11 1 2 =>\ntable_add t_ingress_1 a11 0x100 =>\nfrobnicate\ntable_add t_ingress_1 a11 1 =>\ntable_add t_ingress_1 a11 1 =>\n";
    let failed = run_script(&mut sw, script, &mut out);
    assert_eq!(failed, 6, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "line 1: Error: Invalid table name (nosuch)");
    assert_eq!(
        lines[1],
        "line 2: Error: Table t_ingress_1 has no action nope"
    );
    assert_eq!(
        lines[2],
        "line 3: Error: Table t_ingress_1 needs 1 key fields"
    );
    assert!(
        lines[3].starts_with("line 4: Invalid match key:"),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].starts_with("line 5: *** Unknown syntax: frobnicate"),
        "{}",
        lines[4]
    );
    assert_eq!(lines[5], "Entry has been added with handle 0");
    assert_eq!(
        lines[6],
        "line 7: Invalid table operation (DUPLICATE_ENTRY)"
    );
}

#[test]
fn ternary_needs_a_priority_and_counters_read_back() {
    let mut sw = switch("ternary");
    let mut out = String::new();
    assert_eq!(
        run_script(
            &mut sw,
            "table_add ter send_1 0x0001&&&0x00ff =>\n",
            &mut out
        ),
        1
    );
    assert!(out.contains("could not extract a valid priority"), "{out}");
    out.clear();
    assert_eq!(
        run_script(
            &mut sw,
            "table_add ter send_1 0x0001&&&0x00ff => 5\ntable_dump ter\n",
            &mut out
        ),
        0,
        "{out}"
    );
    assert!(
        out.contains("Priority: 5") && out.contains("send_1"),
        "{out}"
    );

    let mut sw = switch("counter");
    out.clear();
    assert_eq!(
        run_script(
            &mut sw,
            "table_add t_redirect port_redirect 4 =>\n",
            &mut out
        ),
        0,
        "{out}"
    );
    let mut pkts = Vec::new();
    sw.process(1, b"four", 0, &mut pkts);
    out.clear();
    assert_eq!(
        run_script(&mut sw, "counter_read cntr 0\n", &mut out),
        0,
        "{out}"
    );
    assert_eq!(out, "cntr[0]=  BmCounterValue(packets=1, bytes=4)\n");
}

fn out_port(sw: &mut Switch, port: u32, data: &[u8]) -> Option<u32> {
    let mut pkts = Vec::new();
    sw.process(port, data, 0, &mut pkts);
    pkts.first().map(|o| o.port)
}

#[test]
fn an_action_selector_picks_a_group_member_by_crc16_of_its_inputs() {
    // action_profile.p4: IndirectWS matches hdr.in_ and selects a member of
    // ActProfWS's group by crc16 over hdr.entropy; send(p) sends to p.
    let mut sw = switch("action_profile");
    let mut out = String::new();
    let script = "act_prof_create_member ActProfWS send 1\nact_prof_create_member ActProfWS send 2\nact_prof_create_member ActProfWS send 3\n\
                  act_prof_create_group ActProfWS\n\
                  act_prof_add_member_to_group ActProfWS 2 0\nact_prof_add_member_to_group ActProfWS 0 0\nact_prof_add_member_to_group ActProfWS 1 0\n\
                  table_indirect_add_with_group IndirectWS 5 => 0\ntable_indirect_add IndirectWS 6 => 2\n";
    assert_eq!(run_script(&mut sw, script, &mut out), 0, "{out}");
    assert!(
        out.starts_with("Member has been created with handle 0\n"),
        "{out}"
    );
    // CRC-16/ARC of the 4 entropy bytes, modulo 3, indexes the members in
    // handle order: 0 -> member 0 (port 1), 0xc0c1 % 3 = 1 -> port 2,
    // 0x0140 % 3 = 2 -> port 3, 0xe59b % 3 = 0 -> port 1.
    for (entropy, port) in [(0u32, 1), (1, 2), (3, 3), (0xdead_beef, 1), (12345, 3)] {
        let mut pkt = vec![5u8];
        pkt.extend_from_slice(&entropy.to_be_bytes());
        assert_eq!(
            out_port(&mut sw, 0, &pkt),
            Some(port),
            "entropy {entropy:#x}"
        );
    }
    // A member entry: always its action.
    assert_eq!(out_port(&mut sw, 0, &[6, 0, 0, 0, 1]), Some(3));
    // A group handle where a member is expected is refused.
    out.clear();
    assert_eq!(
        run_script(&mut sw, "table_indirect_add IndirectWS 7 => 9\n", &mut out),
        1
    );
    assert!(out.contains("INVALID_MBR_HANDLE"), "{out}");
}

#[test]
fn optional_keys_match_exactly_or_not_at_all() {
    let mut sw = switch("optional");
    let mut out = String::new();
    let script =
        "table_add opt send_1 0x0001&&&0xffff => 1\ntable_add opt send_2 0x0000&&&0x0000 => 2\n";
    assert_eq!(run_script(&mut sw, script, &mut out), 0, "{out}");
    assert_eq!(out_port(&mut sw, 0, &[0x00, 0x01]), Some(1));
    assert_eq!(
        out_port(&mut sw, 0, &[0x00, 0x02]),
        Some(2),
        "the wildcard entry"
    );
}

#[test]
fn parse_value_sets_by_cli() {
    // parse_vset.p4: pv1 and pv2 are 16-bit value sets; routing (lpm on
    // the destination MAC) sets egress_spec and the source MAC.
    let mut sw = switch("parse_vset");
    let mut out = String::new();
    let script = "pvs_add pv1 0x1234\npvs_add pv1 0xabcd\npvs_add pv2 0x2001\npvs_remove pv1 0xabcd\npvs_get pv1\nshow_pvs\n";
    assert_eq!(run_script(&mut sw, script, &mut out), 0, "{out}");
    assert!(out.starts_with("0x1234\npv1"), "{out}");
    out.clear();
    assert_eq!(
        run_script(&mut sw, "pvs_add pv1 0x10000\npvs_add nosuch 1\n", &mut out),
        2
    );
    assert!(
        out.contains("Invalid parser value set name (nosuch)"),
        "{out}"
    );
    // With an entry, a frame of ethertype 0x1234 goes through parse_pv1
    // (and its my_header) and is routed as any other.
    out.clear();
    assert_eq!(
        run_script(
            &mut sw,
            "table_add routing route_eth 0x000000000001/48 => 3 0x0a0a0a0a0a0a\n",
            &mut out
        ),
        0,
        "{out}"
    );
    let mut f = vec![
        0, 0, 0, 0, 0, 1, 9, 9, 9, 9, 9, 9, 0x12, 0x34, 0x20, 0x01, 0xee,
    ];
    let mut pkts = Vec::new();
    sw.process(0, &f, 0, &mut pkts);
    f[6..12].fill(0x0a);
    assert_eq!(pkts, vec![ernic_p4::exec::Output { port: 3, data: f }]);
}

#[test]
fn multicast_nodes_and_groups_as_the_pre_keeps_them() {
    // multicast.p4: mcast_grp = h.hdr.f1; egress writes f1 = egress_rid.
    let mut sw = switch("multicast");
    let mut out = String::new();
    let script = "mc_mgrp_create 1\nmc_node_create 7 2 3\nmc_node_create 9 4\nmc_node_associate 1 0\nmc_node_associate 1 1\nmc_dump\n";
    assert_eq!(run_script(&mut sw, script, &mut out), 0, "{out}");
    assert!(
        out.contains("node was created with handle 1") && out.contains("  -> (port 4, rid 9)"),
        "{out}"
    );
    let mut pkts = Vec::new();
    sw.process(0, &[0, 1], 0, &mut pkts);
    let got: Vec<(u32, Vec<u8>)> = pkts.iter().map(|o| (o.port, o.data.clone())).collect();
    assert_eq!(got, vec![(2, vec![0, 7]), (3, vec![0, 7]), (4, vec![0, 9])]);
    // Dissociate node 0, move node 1 to port 5.
    out.clear();
    assert_eq!(
        run_script(
            &mut sw,
            "mc_node_dissociate 1 0\nmc_node_update 1 5\n",
            &mut out
        ),
        0,
        "{out}"
    );
    pkts.clear();
    sw.process(0, &[0, 1], 0, &mut pkts);
    assert_eq!(pkts.iter().map(|o| o.port).collect::<Vec<_>>(), vec![5]);
    out.clear();
    assert_eq!(
        run_script(
            &mut sw,
            "mc_node_associate 2 1\nmc_node_destroy 8\n",
            &mut out
        ),
        2
    );
    assert!(
        out.contains("INVALID_MGID") && out.contains("INVALID_L1_HANDLE"),
        "{out}"
    );
}
