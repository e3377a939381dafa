use proptest::prelude::*;

use super::resolve::*;
use super::*;

/// Parses one line that must be one statement.
fn one(line: &str) -> StfStatement {
    let mut out = parse_stf(line);
    assert_eq!(out.len(), 1, "{line}");
    out.remove(0).unwrap().1
}

fn err(line: &str) -> StfErrorKind {
    parse_stf(line).remove(0).unwrap_err().kind
}

fn action(name: &str, args: &[(&str, &str)]) -> StfAction {
    StfAction {
        name: name.into(),
        args: args
            .iter()
            .map(|(a, v)| (a.to_string(), v.to_string()))
            .collect(),
    }
}

fn key(field: &str, v: &str) -> StfKey {
    StfKey {
        field: field.into(),
        value: StfValue::Number(v.into()),
    }
}

// Lines below are quoted from p4c's testdata/*.stf (the file is named).

#[test]
fn add_lines_from_p4c_testdata() {
    // p4_14_samples/action_chain1.stf
    assert_eq!(
        one("add ex1 100 extra$0.h:0x25** act1(val:0x25)"),
        StfStatement::Add {
            table: "ex1".into(),
            priority: Some(100),
            keys: vec![key("extra$0.h", "0x25**")],
            action: action("act1", &[("val", "0x25")]),
            handle_name: None,
        }
    );
    // p4_14_samples/counter1.stf
    assert_eq!(
        one("add tab1 ethernet.dstAddr:0xa1a2a3a4a5a6 act(port:2) = A"),
        StfStatement::Add {
            table: "tab1".into(),
            priority: None,
            keys: vec![key("ethernet.dstAddr", "0xa1a2a3a4a5a6")],
            action: action("act", &[("port", "2")]),
            handle_name: Some("A".into()),
        }
    );
    // p4_14_samples/basic_routing.stf
    let StfStatement::Add { keys, priority, .. } =
        one("add ipv4_fib_lpm 1600 vrf:30 dstAddr:0xc0a8**** fib_hit_nexthop(nexthop_index:1)")
    else {
        panic!()
    };
    assert_eq!(
        (priority, keys),
        (
            Some(1600),
            vec![key("vrf", "30"), key("dstAddr", "0xc0a8****")]
        )
    );
    // p4_14_samples/ternary_match2.stf
    let StfStatement::Add {
        keys, action: a, ..
    } = one("add test1    0 data.f1:0b*******************************1 setb1(port:4, val:0)")
    else {
        panic!()
    };
    assert_eq!(
        keys,
        vec![key("data.f1", "0b*******************************1")]
    );
    assert_eq!(a, action("setb1", &[("port", "4"), ("val", "0")]));
    // p4_16_samples/lpm_ebpf.stf
    let StfStatement::Add { keys, .. } =
        one("add pipe_Check_src_ip 0 key.field0:0x010a/16 pipe_Reject()")
    else {
        panic!()
    };
    assert_eq!(
        keys[0].value,
        StfValue::Prefix {
            value: "0x010a".into(),
            len: "16".into()
        }
    );
    // p4_14_samples/basic_routing.stf
    assert_eq!(
        one("setdefault ipv4_fib_lpm on_miss()"),
        StfStatement::SetDefault {
            table: "ipv4_fib_lpm".into(),
            action: action("on_miss", &[])
        }
    );
    // Keywords are case-insensitive (stf_parser.py's own example).
    assert!(matches!(
        one("ADD test2 100 data.f2:0x04040404 c4_6(val4:0x4040, val5:0x5050, val6:0x6060, port:2)"),
        StfStatement::Add { .. }
    ));
}

#[test]
fn packet_and_expect_lines_from_p4c_testdata() {
    // p4_16_samples/arith2-inline-bmv2.stf
    let StfStatement::Expect {
        port: 0,
        packet: Some(e),
    } = one("expect 0 00000000 00000000 01 $")
    else {
        panic!()
    };
    assert!(e.exact_len && e.nibbles.len() == 18);
    assert!(e.matches(&[0, 0, 0, 0, 0, 0, 0, 0, 1]));
    assert!(!e.matches(&[0, 0, 0, 0, 0, 0, 0, 0, 1, 0]));
    // p4_16_samples/bvec-hdr-bmv2.stf
    let StfStatement::Expect {
        port: 1,
        packet: Some(e),
    } = one("expect 1 01 **** ** ** ** $")
    else {
        panic!()
    };
    assert!(e.matches(&[1, 9, 9, 9, 9, 9]));
    // p4_14_samples/basic_routing.stf: a `*` inside a checksum.
    let line = "expect 3 000303030303 010303030303 0800 4500 002c 0000 0065 3f 11 6*55 01020304 0a000002 0064 0065 0010 0000 000102030405060708090a0b0c0d0e0f";
    let StfStatement::Expect {
        port: 3,
        packet: Some(e),
    } = one(line)
    else {
        panic!()
    };
    assert_eq!(e.nibbles[48], Some(6));
    assert_eq!(e.nibbles[49], None);
    let line = "packet 2 aaaaaaaaaaaa bbbbbbbbbbbb 0800 4500 002c 0000 0065 40 11 6c55 01020304 0a000002 0064 0065 0010 0000 000102030405060708090a0b0c0d0e0f";
    let StfStatement::Packet { port: 2, data } = one(line) else {
        panic!()
    };
    assert_eq!(data.len(), 58);
    assert_eq!(data[..3], [0xaa, 0xaa, 0xaa]);
    assert_eq!(data[24..26], [0x6c, 0x55]);
    assert!(!e.matches(&data));
    // `expect` with no data: any packet on that port.
    assert_eq!(
        one("expect 5"),
        StfStatement::Expect {
            port: 5,
            packet: None
        }
    );
    // p4c's lexer reads "10ab" as port 10, data ab.
    assert_eq!(
        one("packet 10ab"),
        StfStatement::Packet {
            port: 10,
            data: vec![0xab]
        }
    );
    assert_eq!(one("no_packet"), StfStatement::NoPacket);
}

#[test]
fn counters_waits_and_direct_commands() {
    // p4_14_samples/counter1.stf, counter2.stf, counter4.stf, counter3.stf
    let check = |count, op, value: &str| CounterCheck {
        count,
        op,
        value: value.into(),
    };
    assert_eq!(
        one("check_counter cnt($A) packets == 1"),
        StfStatement::CheckCounter {
            counter: "cnt".into(),
            index: CounterIndex::Id("$A".into()),
            check: check(Some(CountType::Packets), CmpOp::Eq, "1"),
        }
    );
    assert_eq!(
        one("check_counter cnt($A)"),
        StfStatement::CheckCounter {
            counter: "cnt".into(),
            index: CounterIndex::Id("$A".into()),
            check: check(None, CmpOp::Eq, "0"),
        }
    );
    assert_eq!(
        one("check_counter cntDum(10) packets == 1"),
        StfStatement::CheckCounter {
            counter: "cntDum".into(),
            index: CounterIndex::Number("10".into()),
            check: check(Some(CountType::Packets), CmpOp::Eq, "1"),
        }
    );
    let StfStatement::CheckCounter { check: c, .. } = one("check_counter cnt($A) bytes >= 12")
    else {
        panic!()
    };
    assert_eq!((c.count, c.op), (Some(CountType::Bytes), CmpOp::Ge));
    assert_eq!(one("wait"), StfStatement::Wait);
    assert_eq!(one("remove all"), StfStatement::RemoveAll);

    use crate::text::cli::{Command, MeterRate};
    let cli = |line: &str| match one(line) {
        StfStatement::Cli { line, command } => (line, command),
        other => panic!("{other:?}"),
    };
    // p4_16_samples/psa-multicast-basic-2-bmv2.stf, psa-e2e-cloning-basic-bmv2.stf,
    // psa-register-read-write-bmv2.stf, psa-meter7-bmv2.stf, v1model-special-ops-bmv2.stf
    assert_eq!(
        cli("mc_node_create 257 6 8").1,
        Ok(Command::McNodeCreate {
            rid: 257,
            ports: vec![6, 8],
            lags: vec![]
        })
    );
    assert_eq!(
        cli("mirroring_add_mc 8 3").1,
        Ok(Command::MirroringAddMc {
            session: 8,
            mgrp: 3
        })
    );
    assert_eq!(
        cli("mirroring_add 5 4").1,
        Ok(Command::MirroringAdd {
            session: 5,
            port: 4
        })
    );
    assert_eq!(
        cli("register_write cIngress.regfile 5 100").1,
        Ok(Command::RegisterWrite {
            register: "cIngress.regfile".into(),
            index: 5,
            value: 100
        })
    );
    let (line, command) = cli("meter_array_set_rates cIngress.meter0 0.000006:7 0.00008:9");
    assert_eq!(
        line,
        "meter_array_set_rates cIngress.meter0 0.000006:7 0.00008:9"
    );
    assert_eq!(
        command,
        Ok(Command::MeterArraySetRates {
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
        })
    );
    // A hex number passes STF's grammar, and the CLI then refuses it.
    let (_, command) = cli("mirroring_add 0x5 4");
    assert_eq!(
        command.unwrap_err().printed(),
        "Error: Bad format for mirror_id, expected integer"
    );
}

#[test]
fn malformed_lines_are_refused_with_the_parsers_words() {
    assert_eq!(
        err("add t a()"),
        StfErrorKind::UnexpectedToken {
            value: "(".into(),
            ty: "punctuation"
        }
    );
    assert_eq!(
        err("packet 0 0a0"),
        StfErrorKind::OddPacketData("0a0".into())
    );
    assert_eq!(
        err("packet 0 0a *"),
        StfErrorKind::UnexpectedToken {
            value: "*".into(),
            ty: "DATA_TERN"
        }
    );
    assert_eq!(
        err("expect 0 00 $ 00"),
        StfErrorKind::UnexpectedToken {
            value: "00".into(),
            ty: "DATA_HEX"
        }
    );
    assert_eq!(
        err("packet 0 00 # no comments in packet data"),
        StfErrorKind::InvalidPacketData
    );
    assert_eq!(err("packet"), StfErrorKind::UnexpectedEnd);
    assert_eq!(err("add t k:-1 a()"), StfErrorKind::IllegalCharacter('-'));
    assert_eq!(
        err("frobnicate 1"),
        StfErrorKind::UnexpectedToken {
            value: "frobnicate".into(),
            ty: "ID"
        }
    );
    assert_eq!(err("mc_node_create 1"), StfErrorKind::UnexpectedEnd);
    assert_eq!(
        err("check_counter ingress.cnt(1)"),
        StfErrorKind::UnexpectedToken {
            value: ".".into(),
            ty: "punctuation"
        }
    );
    assert_eq!(
        err("packet 99999999999 00"),
        StfErrorKind::NumberTooLarge("99999999999".into())
    );
    let e = parse_stf("wait\n\n# c\nwait wait").remove(1).unwrap_err();
    assert_eq!(e.line, 4);
    assert_eq!(
        e.to_string(),
        "parse error (line 4): Unexpected token 'wait' (of type ID)."
    );
}

#[test]
fn comments_and_blank_lines_give_nothing_and_lines_are_numbered() {
    let text = "# SPDX header\n\nadd tab1 ethernet.dstAddr:0xa1a2a3a4a5a6 act(port:2) = A # trailing\n\npacket 0 a1a2a3a4a5a6\n";
    let out = parse_stf(text);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].as_ref().unwrap().0, 3);
    assert_eq!(out[1].as_ref().unwrap().0, 5);
}

#[test]
fn keys_translate_as_bmv2stf_does() {
    let n = |v: &str| StfValue::Number(v.into());
    assert_eq!(
        match_token("f", &n("0x****0101"), "ternary").unwrap(),
        "0x00000101&&&0x0000FFFF"
    );
    assert_eq!(
        match_token("f", &n("0b1*"), "ternary").unwrap(),
        "0b10&&&0b10"
    );
    assert_eq!(
        match_token("f", &n("7"), "ternary"),
        Err(ResolveError::DecimalTernary("7".into()))
    );
    assert_eq!(
        match_token("f", &n("0xc0a8****"), "lpm").unwrap(),
        "0xc0a80000/16"
    );
    assert_eq!(
        match_token("f", &n("0x0a******"), "lpm").unwrap(),
        "0x0a000000/8"
    );
    assert_eq!(match_token("f", &n("10"), "lpm").unwrap(), "0xa/4");
    assert_eq!(match_token("f", &n("0x800"), "exact").unwrap(), "0x800");
    let p = StfValue::Prefix {
        value: "0x010a".into(),
        len: "16".into(),
    };
    assert_eq!(match_token("f", &p, "lpm").unwrap(), "0x010a/16");
    assert!(matches!(
        match_token("f", &p, "exact"),
        Err(ResolveError::PrefixNotLpm { .. })
    ));

    let fields = ["extra[0].h", "hdr.ipv4.dstAddr", "data.$valid$", "meta.f$"];
    assert_eq!(find_key_field("extra$0.h", &fields), Ok(0));
    assert_eq!(find_key_field("ipv4.dstAddr", &fields), Ok(1));
    assert_eq!(find_key_field("data.valid", &fields), Ok(2));
    assert_eq!(find_key_field("data", &fields), Ok(2));
    assert_eq!(find_key_field("meta.f", &fields), Ok(3));
    assert_eq!(find_key_field("f", &fields), Ok(3));
    assert_eq!(
        find_key_field("nope", &fields),
        Err(ResolveError::UnexpectedKeyField("nope".into()))
    );

    // basic_routing.stf's ipv4_fib_lpm key: vrf exact, dstAddr lpm.
    let keys = [key("dstAddr", "0xc0a8****")];
    let tokens = entry_match_tokens(
        &keys,
        &[("ingress_metadata.vrf", "exact"), ("ipv4.dstAddr", "lpm")],
    )
    .unwrap();
    assert_eq!(tokens, ["0", "0xc0a80000/16"]);
    assert_eq!(
        entry_match_tokens(&[], &[("a", "ternary"), ("b", "range")]),
        Err(ResolveError::UnexpectedKeyType("range".into()))
    );
    assert_eq!(bmv2_priority(100), 9900);
}

#[test]
fn names_and_arguments_resolve_as_bmv2stf_does() {
    let tables = ["ingress.ipv4_lpm", "ingress.acl", "egress.acl"];
    assert_eq!(find_table("ingress.acl", &tables), Ok(1));
    assert_eq!(find_table("ipv4_lpm", &tables), Ok(0));
    assert_eq!(
        find_table("acl", &tables).unwrap_err().to_string(),
        "Table name acl is ambiguous between ingress.acl and egress.acl"
    );
    assert_eq!(
        find_table("x", &tables).unwrap_err().to_string(),
        "Could not find table x"
    );
    let actions = ["ingress.fwd", "ingress.drop", "NoAction"];
    assert_eq!(find_action("drop", "t", &actions), Ok(1));
    assert_eq!(
        find_action("set", "t", &actions).unwrap_err().to_string(),
        "No action set in table t"
    );
    let a = action("fwd", &[("port", "2"), ("val", "0x7f")]);
    assert_eq!(action_params(&a, &["val", "port"]).unwrap(), ["0x7f", "2"]);
    assert_eq!(
        action_params(&a, &["val"]),
        Err(ResolveError::UnexpectedActionArg("port".into()))
    );
    assert_eq!(
        action_params(&a, &["val", "port", "idx"]),
        Err(ResolveError::MissingActionArg("idx".into()))
    );
}

#[test]
fn add_and_setdefault_become_the_cli_lines_bmv2stf_sends() {
    // p4_14_samples/basic_routing.stf, against its tables' keys.
    let StfStatement::Add {
        keys,
        action: a,
        priority,
        ..
    } = one("add ipv4_fib_lpm 1600 vrf:30 dstAddr:0xc0a8**** fib_hit_nexthop(nexthop_index:1)")
    else {
        panic!()
    };
    let tokens = entry_match_tokens(
        &keys,
        &[("ingress_metadata.vrf", "exact"), ("ipv4.dstAddr", "lpm")],
    )
    .unwrap();
    let params = action_params(&a, &["nexthop_index"]).unwrap();
    let line = table_add_line(
        "ipv4_fib_lpm",
        "fib_hit_nexthop",
        &tokens,
        &params,
        priority,
        "lpm",
    )
    .unwrap();
    assert_eq!(
        line,
        "table_add ipv4_fib_lpm fib_hit_nexthop 30 0xc0a80000/16 => 1"
    );
    let line =
        table_add_line("t", "a", &["0x25&&&0xFF".into()], &[], Some(100), "ternary").unwrap();
    assert_eq!(line, "table_add t a 0x25&&&0xFF =>  9900");
    assert_eq!(
        table_add_line("t", "a", &[], &[], None, "ternary"),
        Err(ResolveError::MissingPriority("t".into()))
    );
    assert_eq!(
        table_set_default_line("ipv4_fib_lpm", "on_miss", &[]),
        "table_set_default ipv4_fib_lpm on_miss"
    );
    assert_eq!(
        table_set_default_line("t", "a", &["1".into(), "2".into()]),
        "table_set_default t a 1 2"
    );
    // And the CLI parser takes them.
    let cmd = crate::text::cli::parse_line("table_add t a 0x25&&&0xFF =>  9900")
        .unwrap()
        .unwrap();
    let crate::text::cli::Command::TableAdd { args, .. } = cmd else {
        panic!()
    };
    let e = crate::text::cli::split_entry(&args, true).unwrap();
    assert_eq!(
        (e.match_key.len(), e.params.len(), e.priority),
        (1, 0, Some(9900))
    );
}

proptest! {
    #[test]
    fn parse_stf_never_panics(text in "(?s).{0,200}") {
        let _ = parse_stf(&text);
    }

    #[test]
    fn statement_shaped_lines_never_panic(
        kw in prop::sample::select(vec!["add", "setdefault", "packet", "expect", "check_counter", "meter_set_rates", "mc_node_create", "remove"]),
        rest in "[a-z0-9$*:(),./=<>!\" \\[\\]#]{0,40}",
    ) {
        let _ = parse_stf(&format!("{kw} {rest}"));
    }

    #[test]
    fn expected_packets_match_themselves(bytes in prop::collection::vec(any::<u8>(), 0..40), star in any::<usize>(), extra in any::<u8>()) {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut text = hex.clone();
        if !text.is_empty() {
            let i = star % text.len();
            text.replace_range(i..i + 1, "*");
        }
        let prefix = ExpectedPacket::parse(&text).unwrap();
        let exact = ExpectedPacket::parse(&format!("{text}$")).unwrap();
        let mut longer = bytes.clone();
        longer.push(extra);
        prop_assert!(prefix.matches(&bytes) && prefix.matches(&longer));
        prop_assert!(exact.matches(&bytes) && !exact.matches(&longer));
        if !bytes.is_empty() {
            prop_assert!(!prefix.matches(&bytes[..bytes.len() - 1]));
        }
    }
}
