use super::*;

fn cmd(line: &str) -> Command {
    parse_line(line).unwrap().unwrap()
}

fn printed(line: &str) -> String {
    parse_line(line).unwrap_err().printed()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn table_commands_keep_names_and_raw_tokens() {
    assert_eq!(
        cmd("table_add ipv4_lpm ipv4_forward 10.0.1.1/32 => 00:00:00:00:01:01 1"),
        Command::TableAdd {
            table: "ipv4_lpm".into(),
            action: "ipv4_forward".into(),
            args: strings(&["10.0.1.1/32", "=>", "00:00:00:00:01:01", "1"]),
        }
    );
    assert_eq!(
        cmd("table_set_default ipv4_lpm drop"),
        Command::TableSetDefault {
            table: "ipv4_lpm".into(),
            action: "drop".into(),
            params: vec![]
        }
    );
    assert_eq!(
        cmd("  table_modify t a 7 => 1 2"),
        Command::TableModify {
            table: "t".into(),
            action: "a".into(),
            handle: 7,
            params: strings(&["1", "2"])
        }
    );
    assert_eq!(
        cmd("table_modify t a 7 1"),
        Command::TableModify {
            table: "t".into(),
            action: "a".into(),
            handle: 7,
            params: strings(&["1"])
        }
    );
    assert_eq!(
        cmd("table_delete t 3"),
        Command::TableDelete {
            table: "t".into(),
            handle: 3
        }
    );
    assert_eq!(
        cmd("table_reset_default t"),
        Command::TableResetDefault { table: "t".into() }
    );
    assert_eq!(
        cmd("table_dump t"),
        Command::TableDump { table: "t".into() }
    );
    assert_eq!(
        cmd("table_dump_entry t 0"),
        Command::TableDumpEntry {
            table: "t".into(),
            handle: 0
        }
    );
    assert_eq!(
        cmd("table_dump_entry_from_key t 0x1&&&0xff 5"),
        Command::TableDumpEntryFromKey {
            table: "t".into(),
            args: strings(&["0x1&&&0xff", "5"])
        }
    );
    assert_eq!(
        cmd("table_clear t"),
        Command::TableClear { table: "t".into() }
    );
    assert_eq!(
        cmd("table_num_entries t"),
        Command::TableNumEntries { table: "t".into() }
    );
    assert_eq!(
        cmd("table_info t"),
        Command::TableInfo { table: "t".into() }
    );
    assert_eq!(
        cmd("table_show_actions t"),
        Command::TableShowActions { table: "t".into() }
    );
    assert_eq!(cmd("show_tables"), Command::ShowTables);
    assert_eq!(cmd("show_actions"), Command::ShowActions);
    assert_eq!(
        cmd("table_set_timeout t 1 500"),
        Command::TableSetTimeout {
            table: "t".into(),
            handle: 1,
            timeout_ms: 500
        }
    );
}

#[test]
fn entry_tails_split_as_table_add_does() {
    let e = split_entry(
        &strings(&["10.0.1.1/32", "=>", "00:00:00:00:01:01", "1"]),
        false,
    )
    .unwrap();
    assert_eq!(e.match_key, strings(&["10.0.1.1/32"]));
    assert_eq!(e.params, strings(&["00:00:00:00:01:01", "1"]));
    assert_eq!(e.priority, None);
    let e = split_entry(&strings(&["0x1&&&0xf", "=>", "9", "10"]), true).unwrap();
    assert_eq!((e.params, e.priority), (strings(&["9"]), Some(10)));
    // Without "=>", runtime_CLI drops the last token as if it were "=>".
    let e = split_entry(&strings(&["1", "2", "3"]), false).unwrap();
    assert_eq!((e.match_key, e.params), (strings(&["1", "2"]), vec![]));
    assert_eq!(
        split_entry(&strings(&["1", "=>", "x"]), true),
        Err(CliError::NoPriority)
    );
    assert_eq!(
        CliError::NoPriority.printed(),
        "Error: Table is ternary, but could not extract a valid priority from args"
    );
    assert_eq!(
        split_entry(&strings(&["5"]), true),
        Err(CliError::InsufficientArgs)
    );

    let i = split_indirect_entry(&strings(&["0x0a", "=>", "4"]), false).unwrap();
    assert_eq!(
        (i.match_key, i.handle, i.priority),
        (strings(&["0x0a"]), 4, None)
    );
    assert_eq!(
        split_indirect_entry(&strings(&["0x0a", "4"]), false),
        Err(CliError::NoHandle)
    );
    assert_eq!(
        split_indirect_entry(&strings(&["0x0a", "=>", "4", "5"]), false),
        Err(CliError::NoHandle)
    );
    assert_eq!(
        split_indirect_entry(&strings(&["1", "=>", "h"]), false)
            .unwrap_err()
            .printed(),
        "Error: Bad format for handle"
    );
    assert_eq!(
        split_key(&strings(&["1&&&1", "3"]), true),
        Ok((strings(&["1&&&1"]), Some(3)))
    );
}

#[test]
fn action_profile_commands_and_their_legacy_table_forms() {
    let p = |s: &str| ProfileRef::Profile(s.into());
    let t = |s: &str| ProfileRef::Table(s.into());
    assert_eq!(
        cmd("act_prof_create_member ap a 1 2"),
        Command::ActProfCreateMember {
            profile: p("ap"),
            action: "a".into(),
            params: strings(&["1", "2"])
        }
    );
    assert_eq!(
        cmd("table_indirect_create_member tbl a"),
        Command::ActProfCreateMember {
            profile: t("tbl"),
            action: "a".into(),
            params: vec![]
        }
    );
    assert_eq!(
        cmd("act_prof_delete_member ap 3"),
        Command::ActProfDeleteMember {
            profile: p("ap"),
            member: 3
        }
    );
    assert_eq!(
        cmd("act_prof_modify_member ap a 3 => 9"),
        Command::ActProfModifyMember {
            profile: p("ap"),
            action: "a".into(),
            member: 3,
            params: strings(&["9"])
        }
    );
    assert_eq!(
        cmd("act_prof_create_group ap"),
        Command::ActProfCreateGroup { profile: p("ap") }
    );
    assert_eq!(
        cmd("act_prof_delete_group ap 2"),
        Command::ActProfDeleteGroup {
            profile: p("ap"),
            group: 2
        }
    );
    assert_eq!(
        cmd("act_prof_add_member_to_group ap 1 2"),
        Command::ActProfAddMemberToGroup {
            profile: p("ap"),
            member: 1,
            group: 2
        }
    );
    assert_eq!(
        cmd("table_indirect_remove_member_from_group tbl 1 2"),
        Command::ActProfRemoveMemberFromGroup {
            profile: t("tbl"),
            member: 1,
            group: 2
        }
    );
    assert_eq!(
        cmd("act_prof_dump ap"),
        Command::ActProfDump {
            profile: "ap".into()
        }
    );
    assert_eq!(
        cmd("act_prof_dump_member ap 1"),
        Command::ActProfDumpMember {
            profile: p("ap"),
            member: 1
        }
    );
    assert_eq!(
        cmd("table_dump_group tbl 1"),
        Command::ActProfDumpGroup {
            profile: t("tbl"),
            group: 1
        }
    );
    assert_eq!(
        cmd("table_indirect_add_with_group tbl 0x1 => 2"),
        Command::TableIndirectAdd {
            table: "tbl".into(),
            args: strings(&["0x1", "=>", "2"]),
            with_group: true
        }
    );
    assert_eq!(
        cmd("table_indirect_set_default tbl 2"),
        Command::TableIndirectSetDefault {
            table: "tbl".into(),
            handle: 2,
            with_group: false
        }
    );
    assert_eq!(
        cmd("table_indirect_delete tbl 2"),
        Command::TableIndirectDelete {
            table: "tbl".into(),
            handle: 2
        }
    );
    // The legacy wrapper checks for a table name first.
    assert_eq!(
        printed("table_indirect_delete_group"),
        "Error: Insufficient number of args"
    );
    assert_eq!(
        printed("act_prof_delete_group"),
        "Error: Wrong number of args, expected 2 but got 0"
    );
    assert_eq!(
        printed("act_prof_delete_member ap x"),
        "Error: Bad format for member handle"
    );
    assert_eq!(
        printed("act_prof_add_member_to_group ap 1 g"),
        "Error: Bad format for group handle"
    );
}

#[test]
fn counters_registers_meters() {
    assert_eq!(
        cmd("counter_read c 3"),
        Command::CounterRead {
            counter: "c".into(),
            index: 3
        }
    );
    assert_eq!(
        cmd("counter_reset c"),
        Command::CounterReset {
            counter: "c".into()
        }
    );
    assert_eq!(
        cmd("counter_write c 1 10 1500"),
        Command::CounterWrite {
            counter: "c".into(),
            index: 1,
            packets: 10,
            bytes: 1500
        }
    );
    assert_eq!(
        printed("counter_write c 1 x 1500"),
        "Error: Bad format for packets"
    );
    assert_eq!(
        printed("counter_read c"),
        "Error: Wrong number of args, expected 2 but got 1"
    );
    assert_eq!(
        cmd("register_read r"),
        Command::RegisterRead {
            register: "r".into(),
            index: None
        }
    );
    assert_eq!(
        cmd("register_read r 2"),
        Command::RegisterRead {
            register: "r".into(),
            index: Some(2)
        }
    );
    assert_eq!(
        printed("register_read r 2 3"),
        "Error: Wrong number of args, expected 2 but got 3"
    );
    assert_eq!(
        cmd("register_write cIngress.regfile 5 100"),
        Command::RegisterWrite {
            register: "cIngress.regfile".into(),
            index: 5,
            value: 100
        }
    );
    // register_write's value is int(v): decimal only.
    assert_eq!(
        printed("register_write r 5 0x10"),
        "Error: Bad format for value, must be an integer"
    );
    assert_eq!(
        cmd("register_reset r"),
        Command::RegisterReset {
            register: "r".into()
        }
    );
    assert_eq!(
        cmd("meter_array_set_rates cIngress.meter0 0.000006:7 0.00008:9"),
        Command::MeterArraySetRates {
            meter: "cIngress.meter0".into(),
            rates: vec![
                MeterRate {
                    rate: 0.000006,
                    burst: 7
                },
                MeterRate {
                    rate: 0.00008,
                    burst: 9
                }
            ],
        }
    );
    assert_eq!(
        cmd("meter_set_rates m 2 1e-3:4"),
        Command::MeterSetRates {
            meter: "m".into(),
            index: 2,
            rates: vec![MeterRate {
                rate: 0.001,
                burst: 4
            }]
        }
    );
    assert_eq!(
        printed("meter_set_rates m 2 0.5"),
        "Error: Error while parsing rates"
    );
    assert_eq!(
        printed("meter_set_rates m 2 0.5:1.5"),
        "Error: Error while parsing rates"
    );
    assert_eq!(
        printed("meter_set_rates m x 0.5:1"),
        "Error: Bad format for index"
    );
    assert_eq!(
        cmd("meter_get_rates m 1"),
        Command::MeterGetRates {
            meter: "m".into(),
            index: 1
        }
    );
}

#[test]
fn multicast_and_mirroring() {
    assert_eq!(
        cmd("mc_mgrp_create 1113"),
        Command::McMgrpCreate { mgrp: 1113 }
    );
    assert_eq!(cmd("mc_mgrp_destroy 1"), Command::McMgrpDestroy { mgrp: 1 });
    assert_eq!(
        cmd("mc_node_create 257 8 6"),
        Command::McNodeCreate {
            rid: 257,
            ports: vec![6, 8],
            lags: vec![]
        }
    );
    assert_eq!(
        cmd("mc_node_create 0 1 | 3 2"),
        Command::McNodeCreate {
            rid: 0,
            ports: vec![1],
            lags: vec![2, 3]
        }
    );
    assert_eq!(
        cmd("mc_node_create 5"),
        Command::McNodeCreate {
            rid: 5,
            ports: vec![],
            lags: vec![]
        }
    );
    assert_eq!(
        printed("mc_node_create 0 1 x"),
        "Error: 'x' is not a valid port number"
    );
    assert_eq!(
        printed("mc_node_create 0 -1"),
        "Error: '-1' is not a valid port number"
    );
    assert_eq!(
        printed("mc_node_create 0 2 1 2"),
        "Error: Found duplicate port number '2'"
    );
    assert_eq!(
        printed("mc_node_create 0 | 4 4"),
        "Error: Found duplicate lag number '4'"
    );
    assert_eq!(printed("mc_node_create r 1"), "Error: Bad format for rid");
    assert_eq!(
        cmd("mc_node_update 3 1 2"),
        Command::McNodeUpdate {
            node: 3,
            ports: vec![1, 2],
            lags: vec![]
        }
    );
    assert_eq!(
        cmd("mc_node_associate 1113 0"),
        Command::McNodeAssociate {
            mgrp: 1113,
            node: 0
        }
    );
    assert_eq!(
        cmd("mc_node_dissociate 1113 0"),
        Command::McNodeDissociate {
            mgrp: 1113,
            node: 0
        }
    );
    assert_eq!(
        printed("mc_node_associate g 0"),
        "Error: Bad format for multicast group id"
    );
    assert_eq!(cmd("mc_node_destroy 4"), Command::McNodeDestroy { node: 4 });
    assert_eq!(
        cmd("mc_set_lag_membership 1 3 2"),
        Command::McSetLagMembership {
            lag: 1,
            ports: vec![2, 3]
        }
    );
    assert_eq!(cmd("mc_dump"), Command::McDump);
    assert_eq!(
        cmd("mirroring_add 5 4"),
        Command::MirroringAdd {
            session: 5,
            port: 4
        }
    );
    assert_eq!(
        cmd("mirroring_add_mc 8 3"),
        Command::MirroringAddMc {
            session: 8,
            mgrp: 3
        }
    );
    assert_eq!(
        cmd("mirroring_delete 5"),
        Command::MirroringDelete { session: 5 }
    );
    assert_eq!(
        cmd("mirroring_get 10"),
        Command::MirroringGet { session: 10 }
    );
    assert_eq!(
        printed("mirroring_add x 4"),
        "Error: Bad format for mirror_id, expected integer"
    );
    assert_eq!(
        printed("mirroring_add 1"),
        "Error: Wrong number of args, expected 2 but got 1"
    );
}

#[test]
fn switch_and_queue_commands() {
    assert_eq!(
        cmd("set_queue_depth 64"),
        Command::SetQueueDepth {
            depth: 64,
            port: None,
            priority: None
        }
    );
    assert_eq!(
        cmd("set_queue_depth 64 2"),
        Command::SetQueueDepth {
            depth: 64,
            port: Some(2),
            priority: None
        }
    );
    assert_eq!(
        cmd("set_queue_rate 1000 2 7"),
        Command::SetQueueRate {
            rate_pps: 1000,
            port: Some(2),
            priority: Some(7)
        }
    );
    assert_eq!(
        printed("set_queue_rate fast"),
        "Error: Bad format for rate_pps, expected integer"
    );
    assert_eq!(
        printed("set_queue_depth"),
        "Error: Insufficient number of args"
    );
    assert_eq!(cmd("reset_state"), Command::ResetState);
    assert_eq!(
        printed("reset_state now"),
        "Error: Wrong number of args, expected 0 but got 1"
    );
    assert_eq!(cmd("help"), Command::Help(None));
    assert_eq!(cmd("?table_add"), Command::Help(Some("table_add".into())));
    assert_eq!(cmd("!ls -l"), Command::Shell("ls -l".into()));
    assert_eq!(cmd("EOF"), Command::Eof);
    assert_eq!(
        cmd("pvs_add p 0x10"),
        Command::PvsAdd {
            pvs: "p".into(),
            value: "0x10".into()
        }
    );
    assert_eq!(
        cmd("port_add veth0 3 /tmp/p.pcap"),
        Command::PortAdd {
            iface: "veth0".into(),
            port: 3,
            pcap: Some("/tmp/p.pcap".into())
        }
    );
    assert_eq!(
        printed("port_remove x"),
        "Error: Bad format for port_num, must be an integer"
    );
    assert_eq!(
        cmd("set_crc16_parameters calc 0x1021 0xffff 0 false True"),
        Command::SetCrcParameters {
            width: 16,
            name: "calc".into(),
            polynomial: 0x1021,
            initial_remainder: 0xffff,
            final_xor_value: 0,
            data_reflected: false,
            remainder_reflected: true,
        }
    );
    assert_eq!(
        printed("set_crc16_parameters c 0x10000 0 0 0 0"),
        "Error: Integer cannot fit within 16 bits"
    );
    assert_eq!(
        printed("set_crc32_parameters c 1 0 0 maybe 0"),
        "Error: Invalid bool parameter"
    );
    assert_eq!(
        cmd("set_toeplitz_hash_key h 6d5a56da"),
        Command::SetToeplitzHashKey {
            name: "h".into(),
            key: vec![0x6d, 0x5a, 0x56, 0xda]
        }
    );
    assert_eq!(
        printed("set_toeplitz_hash_key h 6d5a"),
        "Error: Toeplitz hash key must be a multiple of 4 bytes in length"
    );
    assert_eq!(
        printed("set_toeplitz_hash_key h xyz0"),
        "Error: Toeplitz hash key must be a hex string"
    );
}

#[test]
fn bmv2s_simple_router_commands_end_to_end() {
    // From behavioral-model's targets/simple_router/commands.txt.
    let script = "table_set_default send_frame _drop\n\
                  table_add send_frame rewrite_mac 1 => 00:aa:bb:00:00:00\n\
                  table_add ipv4_lpm set_nhop 10.0.0.10/32 => 10.0.0.10 1\n";
    let out = parse_script(script);
    assert_eq!(out.len(), 3);
    let Ok(Command::TableAdd { args, .. }) = &out[2].1 else {
        panic!("{out:?}")
    };
    let e = split_entry(args, false).unwrap();
    use crate::text::key::{MatchKind, MatchText, parse_match};
    use crate::text::value::parse_value;
    let MatchText::Lpm { value, prefix_len } =
        parse_match(&e.match_key[0], MatchKind::Lpm, 32).unwrap()
    else {
        panic!()
    };
    assert_eq!((value.bytes, prefix_len), (vec![10, 0, 0, 10], 32));
    assert_eq!(parse_value(&e.params[0], 32).unwrap().bytes, [10, 0, 0, 10]);
    assert_eq!(parse_value(&e.params[1], 9).unwrap().bytes, [0, 1]);
    let Ok(Command::TableAdd { args, .. }) = &out[1].1 else {
        panic!()
    };
    let e = split_entry(args, false).unwrap();
    assert_eq!(
        parse_value(&e.params[0], 48).unwrap().bytes,
        [0, 0xaa, 0xbb, 0, 0, 0]
    );
}
