use proptest::prelude::*;

use super::*;

fn printed(line: &str) -> String {
    parse_line(line).unwrap_err().printed()
}

#[test]
fn unknown_commands_and_wrong_counts_use_the_clis_words() {
    assert_eq!(
        printed("table_ad t a 1 => 2"),
        "*** Unknown syntax: table_ad t a 1 => 2"
    );
    assert_eq!(printed("-x"), "*** Unknown syntax: -x");
    assert_eq!(printed("table-add t"), "*** Unknown syntax: table-add t");
    assert_eq!(
        printed("table_add t a"),
        "Error: Insufficient number of args"
    );
    assert_eq!(
        printed("table_delete t"),
        "Error: Wrong number of args, expected 2 but got 1"
    );
    assert_eq!(
        printed("table_delete t h"),
        "Error: Bad format for entry handle"
    );
    assert_eq!(
        printed("table_modify t a h 1"),
        "Error: Bad format for entry handle"
    );
    assert_eq!(
        printed("show_tables x"),
        "Error: Wrong number of args, expected 0 but got 1"
    );
    assert_eq!(
        printed("table_set_timeout t 1 soon"),
        "Error: Bad format for timeout"
    );
    assert_eq!(
        printed("table_indirect_add t"),
        "Error: Insufficient number of args"
    );
}

#[test]
fn engine_side_messages_have_bmv2s_wording() {
    let cases: Vec<(CliError, &str)> = vec![
        (
            CliError::InvalidTableName("foo".into()),
            "Error: Invalid table name (foo)",
        ),
        (
            CliError::InvalidActionProfileName("ap".into()),
            "Error: Invalid action profile name (ap)",
        ),
        (
            CliError::InvalidCounterName("c".into()),
            "Error: Invalid counter name (c)",
        ),
        (
            CliError::InvalidRegisterName("r".into()),
            "Error: Invalid register name (r)",
        ),
        (
            CliError::InvalidMeterName("m".into()),
            "Error: Invalid meter name (m)",
        ),
        (
            CliError::InvalidCrcName {
                width: 16,
                name: "x".into(),
            },
            "Error: Invalid crc16_custom name (x)",
        ),
        (
            CliError::TableHasNoAction {
                table: "t".into(),
                action: "a".into(),
            },
            "Error: Table t has no action a",
        ),
        (
            CliError::ProfileHasNoAction {
                profile: "p".into(),
                action: "a".into(),
            },
            "Error: Action profile 'p' has no action 'a'",
        ),
        (
            CliError::WrongParamCount {
                action: "fwd".into(),
                expected: 2,
            },
            "Error: Action fwd needs 2 parameters",
        ),
        (
            CliError::WrongKeyCount {
                table: "t".into(),
                expected: 1,
            },
            "Error: Table t needs 1 key fields",
        ),
        (
            CliError::WrongRateCount {
                expected: 2,
                got: 1,
            },
            "Error: Invalid number of rates, expected 2 but got 1",
        ),
        (
            CliError::Operation {
                kind: OperationKind::Table,
                code: "DUPLICATE_ENTRY".into(),
            },
            "Invalid table operation (DUPLICATE_ENTRY)",
        ),
        (
            CliError::Operation {
                kind: OperationKind::Pre,
                code: "INVALID_MGID".into(),
            },
            "Invalid PRE operation (INVALID_MGID)",
        ),
        (
            CliError::RuntimeData {
                field: "0x1ff".into(),
                error: crate::text::value::ValueError::TooLarge,
            },
            "Invalid runtime data: Error while parsing 0x1ff - Parameter is too large",
        ),
        (
            CliError::MatchKey(crate::text::key::MatchError::BadLpm("1".into())),
            "Invalid match key: Invalid LPM value 1, use '/' to separate prefix and length",
        ),
    ];
    for (e, text) in cases {
        assert_eq!(e.printed(), text);
    }
}

#[test]
fn pvs_values_fit_the_sets_width() {
    assert_eq!(parse_pvs_value("0x1ff", 9), Ok(vec![0x01, 0xff]));
    assert_eq!(
        parse_pvs_value("0x200", 9),
        Err(CliError::PvsValueTooLarge(9))
    );
    assert_eq!(
        CliError::PvsValueTooLarge(9).printed(),
        "Error: Input is too large, it should fit within 9 bits"
    );
    assert_eq!(parse_pvs_value("x", 9), Err(CliError::PvsNotAnInteger));
}

#[test]
fn scripts_skip_blank_and_comment_lines_and_number_the_rest() {
    let script = "# set up\n\ntable_set_default t drop\nbogus\n  \nmirroring_add 1 2\n";
    let out = parse_script(script);
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].0, 3);
    assert!(matches!(out[0].1, Ok(Command::TableSetDefault { .. })));
    assert_eq!(
        (out[1].0, out[1].1.clone()),
        (4, Err(CliError::UnknownSyntax("bogus".into())))
    );
    assert_eq!(
        (out[2].0, out[2].1.clone()),
        (
            6,
            Ok(Command::MirroringAdd {
                session: 1,
                port: 2
            })
        )
    );
}

#[test]
fn every_command_runtime_cli_documents_is_parsed_and_has_its_help() {
    assert_eq!(HELP.len(), 84);
    for (name, _) in HELP {
        let r = parse_line(name);
        assert!(!matches!(r, Err(CliError::UnknownSyntax(_))), "{name}");
    }
    assert_eq!(
        help_text("table_add"),
        Some(
            "Add entry to a match table: table_add <table name> <action name> <match fields> => <action parameters> [priority]"
        )
    );
    assert!(
        help_text("table_indirect_create_group")
            .unwrap()
            .ends_with("\nUse 'act_prof_create_group' instead")
    );
    assert_eq!(help_text("greet"), None);
    assert_eq!(help_text("bogus"), None);
}

proptest! {
    #[test]
    fn parse_script_never_panics(text in "(?s).{0,200}") {
        let _ = parse_script(&text);
    }

    #[test]
    fn command_shaped_lines_never_panic(
        name in prop::sample::select(vec![
            "table_add", "table_modify", "act_prof_modify_member", "table_indirect_add", "mc_node_create",
            "meter_set_rates", "set_crc32_parameters", "set_toeplitz_hash_key", "register_read", "set_queue_rate",
        ]),
        args in prop::collection::vec("[0-9a-fx:|=>._&-]{0,6}", 0..8),
        prio in any::<bool>(),
    ) {
        let line = format!("{name} {}", args.join(" "));
        if let Ok(Some(Command::TableAdd { args, .. })) = parse_line(&line) {
            let _ = split_entry(&args, prio);
        }
        if let Ok(Some(Command::TableIndirectAdd { args, .. })) = parse_line(&line) {
            let _ = split_indirect_entry(&args, prio);
        }
    }
}
