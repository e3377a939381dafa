//! p4c STF tests, written from each test program's `.p4` source, run
//! against the program; and a wrong expectation is caught.

use ernic_p4::exec::Switch;
use ernic_p4::program::Program;

fn run(name: &str, stf_text: &str) -> ernic_p4::stf::Report {
    let dir = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{dir}/testdata/{name}.json")).unwrap();
    let mut sw = Switch::new(Program::load(&text).unwrap());
    ernic_p4::stf::run(&mut sw, stf_text)
}

fn stf(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/testdata/{name}.stf",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn every_test_program_passes_its_stf() {
    for name in [
        "swap_1",
        "ternary",
        "counter",
        "loopback",
        "header_stack",
        "exact_match_1",
        "parser_deparser_1",
        "simple_router",
    ] {
        let r = run(name, &stf(name));
        assert!(r.ok(), "{name}:\n{}", r.lines.join("\n"));
        assert!(
            r.passed >= 2,
            "{name}: only {} expectations checked",
            r.passed
        );
    }
}

#[test]
fn a_wrong_expectation_fails_with_the_nibble() {
    let r = run(
        "swap_1",
        "add t_ingress_1 hdr1.f1:0x01 a11()\nexpect 1 01 AB\npacket 0 01 AA\n",
    );
    assert!(!r.ok());
    let all = r.lines.join("\n");
    assert!(
        all.contains("line 2: FAIL") && all.contains("position 3"),
        "{all}"
    );
}

#[test]
fn a_missing_or_extra_packet_fails() {
    let r = run("swap_1", "expect 1 01 AA\npacket 0 01 AA\n");
    assert!(!r.ok(), "no entry: the packet goes to port 0, not 1");
    assert!(
        r.lines
            .join("\n")
            .contains("expected a packet on port 1, none came")
    );
    let r = run("loopback", "expect 2 00\npacket 2 00\npacket 2 01\n");
    assert!(
        r.lines
            .join("\n")
            .contains("Expected 1 packets on port 2 got 2"),
        "{:?}",
        r.lines
    );
    let r = run(
        "counter",
        "add t_redirect sm.packet_length:1 port_redirect() = e\npacket 0 00\ncheck_counter cntr(e) packets == 5\n",
    );
    assert!(
        r.lines.join("\n").contains("counter cntr[0] is 1"),
        "{:?}",
        r.lines
    );
}

#[test]
fn simple_router_drops_what_it_cannot_route() {
    let r = run("simple_router", &stf("simple_router"));
    assert!(r.ok(), "{}", r.lines.join("\n"));
    assert!(
        !r.lines.iter().any(|l| l.contains("unexpected packet")),
        "{}",
        r.lines.join("\n")
    );
}

#[test]
fn simple_router_with_bmv2s_own_commands() {
    // bmv2's targets/simple_router/commands.txt, through the runtime CLI,
    // then the STF's packets without its entries.
    let dir = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{dir}/testdata/simple_router.json")).unwrap();
    let mut sw = Switch::new(Program::load(&text).unwrap());
    let commands =
        std::fs::read_to_string(format!("{dir}/testdata/simple_router.commands")).unwrap();
    let mut out = String::new();
    assert_eq!(
        ernic_p4::runtime::run_script(&mut sw, &commands, &mut out),
        0,
        "{out}"
    );
    let packets: String = stf("simple_router")
        .lines()
        .filter(|l| l.starts_with("expect") || l.starts_with("packet"))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = ernic_p4::stf::run(&mut sw, &packets);
    assert!(r.ok(), "{}", r.lines.join("\n"));
    assert_eq!(r.passed, 2);
}
