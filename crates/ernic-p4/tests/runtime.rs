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
