//! Loading the bmv2 test programs in `testdata/`, and refusals.

use super::*;

fn testdata(name: &str) -> String {
    let p = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn every_test_program_loads() {
    for name in [
        "counter",
        "exact_match_1",
        "header_stack",
        "loopback",
        "parser_deparser_1",
        "swap_1",
        "ternary",
    ] {
        let p = Program::load(&testdata(&format!("{name}.json")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            p.ingress.init.is_some() || name == "parser_deparser_1",
            "{name}: no ingress"
        );
    }
}

#[test]
fn parser_deparser_1_has_its_states() {
    let p = Program::load(&testdata("parser_deparser_1.json")).unwrap();
    let names: Vec<_> = p.parser.states.iter().map(|s| s.name.as_str()).collect();
    for s in [
        "start",
        "parse_ethernet",
        "parse_ipv4",
        "parse_tcp",
        "parse_udp",
    ] {
        assert!(names.contains(&s), "{s} missing from {names:?}");
    }
    let eth = p
        .parser
        .states
        .iter()
        .find(|s| s.name == "parse_ethernet")
        .unwrap();
    assert_eq!(eth.key_bytes, 2);
    assert!(
        matches!(&eth.transitions[0].value, TransitionValue::Hex { value, .. } if value == &[0x08, 0x00])
    );
    assert_eq!(p.deparser.order.len(), 4);
}

#[test]
fn ternary_table_has_its_key_and_default() {
    let p = Program::load(&testdata("ternary.json")).unwrap();
    let t = &p.tables[p.table("ter").expect("table ter") as usize];
    assert_eq!(t.key.len(), 1);
    assert_eq!(t.key[0].kind, MatchKind::Ternary);
    assert_eq!(t.key[0].bits, 16);
    let d = t.default.as_ref().expect("default entry");
    assert_eq!(p.actions[d.action as usize].name, "NoAction");
}

fn refused(text: &str) -> String {
    Program::load(text)
        .expect_err("should be refused")
        .to_string()
}

#[test]
fn refusals_name_the_path() {
    let base = testdata("swap_1.json");
    let v: serde_json::Value = serde_json::from_str(&base).unwrap();

    let mut bad = v.clone();
    bad["actions"][0]["primitives"] = serde_json::json!([{"op": "frobnicate", "parameters": []}]);
    let e = refused(&bad.to_string());
    assert!(
        e.starts_with("actions[0].primitives[0]: not supported") && e.contains("frobnicate"),
        "{e}"
    );

    let mut bad = v.clone();
    bad["header_types"][1]["fields"][0][1] = serde_json::json!(129);
    let e = refused(&bad.to_string());
    assert!(
        e.starts_with("header_types[1].fields[0][1]:") && e.contains("over the limit of 128"),
        "{e}"
    );

    let mut bad = v.clone();
    bad["pipelines"][0]["tables"][0]["key"][0]["match_type"] = serde_json::json!("fuzzy");
    let e = refused(&bad.to_string());
    assert!(
        e.contains("pipelines[0].tables[0].key[0].match_type") && e.contains("fuzzy"),
        "{e}"
    );

    let mut bad = v.clone();
    bad["__meta__"] = serde_json::json!({"version": [3, 0]});
    assert!(refused(&bad.to_string()).contains("3.0 is not supported"));

    assert!(refused("{").starts_with("not JSON"));
    assert!(refused("[]").contains("expected a JSON object"));
}

#[test]
fn a_cycle_in_the_control_graph_is_refused() {
    let v: serde_json::Value = serde_json::from_str(&testdata("exact_match_1.json")).unwrap();
    let mut bad = v.clone();
    let tables = bad["pipelines"][0]["tables"].as_array_mut().unwrap();
    let first = tables[0]["name"].clone();
    let last = tables.len() - 1;
    tables[last]["base_default_next"] = first.clone();
    for (_, n) in tables[last]["next_tables"].as_object_mut().unwrap() {
        *n = first.clone();
    }
    let e = refused(&bad.to_string());
    assert!(e.contains("cycle"), "{e}");
}

#[test]
fn a_backward_jump_is_refused() {
    let v: serde_json::Value = serde_json::from_str(&testdata("swap_1.json")).unwrap();
    let mut bad = v.clone();
    bad["actions"][0]["primitives"] = serde_json::json!([
        {"op": "no_op", "parameters": []},
        {"op": "_jump", "parameters": [{"type": "hexstr", "value": "0x0"}]}
    ]);
    assert!(refused(&bad.to_string()).contains("only forward jumps"));
}

/// Loads every `.json` in `$ERNIC_P4_CORPUS` (a checkout's test programs),
/// printing what is refused; a survey, not a check, so it asserts only that
/// loading never panics.
#[test]
fn survey_corpus_if_given() {
    let Ok(dir) = std::env::var("ERNIC_P4_CORPUS") else {
        return;
    };
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(&p).unwrap();
            match Program::load(&text) {
                Ok(_) => println!("ok   {}", p.display()),
                Err(e) => println!("FAIL {}: {e}", p.display()),
            }
        }
    }
}

/// Runs packets through every loadable program of `$ERNIC_P4_CORPUS`,
/// printing drops and errors; a survey that asserts only no panic.
#[test]
fn survey_corpus_packets_if_given() {
    let Ok(dir) = std::env::var("ERNIC_P4_CORPUS") else {
        return;
    };
    let mut pkt = [0u8; 128];
    for (i, b) in pkt.iter_mut().enumerate() {
        *b = (i * 37 + 11) as u8;
    }
    pkt[12] = 0x08;
    pkt[13] = 0x00;
    pkt[14] = 0x45;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(prog) = Program::load(&std::fs::read_to_string(&p).unwrap()) else {
            continue;
        };
        let mut sw = crate::exec::Switch::new(prog);
        let mut out = Vec::new();
        for n in [0usize, 1, 14, 34, 60, 128] {
            sw.process(1, &pkt[..n], n as u64, &mut out);
        }
        println!(
            "{}: {} out, {} errors, log {:?}",
            p.display(),
            out.len(),
            sw.state.errors,
            sw.state.log.iter().take(2).collect::<Vec<_>>()
        );
    }
}
