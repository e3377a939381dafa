//! `ernic p4` as a user runs it: STF tests with a verdict, pcap files
//! through a program (per-port files and one pcapng), and clear errors for
//! a bad program or a bad flag.

use std::path::{Path, PathBuf};
use std::process::Command;

use ernic_p4::pcap::{self, PcapWriter, Record, TsResolution};

fn testdata(name: &str) -> String {
    format!(
        "{}/crates/ernic-p4/testdata/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn ernic(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ernic-p4-tool-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn stf_reports_each_expectation_and_fails_a_wrong_one() {
    let (ok, out) = ernic(&[
        "p4",
        "stf",
        "--program",
        &testdata("simple_router.json"),
        &testdata("simple_router.stf"),
    ]);
    assert!(ok, "{out}");
    assert!(
        out.contains("PASS: 2 expectation(s) met, 0 failed"),
        "{out}"
    );
    let d = scratch("stf");
    let bad = d.join("bad.stf");
    std::fs::write(&bad, "expect 1 00\npacket 0 00\n").unwrap();
    let (ok, out) = ernic(&[
        "p4",
        "stf",
        "--program",
        &testdata("loopback.json"),
        bad.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        out.contains("line 1: FAIL: expected a packet on port 1, none came")
            && out.contains("1 of 1 STF test(s) failed"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(d);
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(f, TsResolution::Micro).unwrap();
    for (i, data) in frames.iter().enumerate() {
        w.write(&Record {
            port: None,
            ts_ns: i as u64 * 1000,
            data: data.clone(),
        })
        .unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn run_routes_pcap_packets_like_simple_switch() {
    // The STF's two routed packets, from a pcap on port 0.
    let stf = std::fs::read_to_string(testdata("simple_router.stf")).unwrap();
    let hex = |l: &str| -> Vec<u8> {
        let h: String = l.split_whitespace().skip(2).filter(|t| *t != "$").collect();
        (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
            .collect()
    };
    let ins: Vec<Vec<u8>> = stf
        .lines()
        .filter(|l| l.starts_with("packet"))
        .map(hex)
        .collect();
    let outs: Vec<Vec<u8>> = stf
        .lines()
        .filter(|l| l.starts_with("expect"))
        .map(hex)
        .collect();
    let d = scratch("run");
    let input = d.join("h1.pcap");
    write_pcap(&input, &ins);
    let (r1, r2, all) = (d.join("r1.pcap"), d.join("r2.pcap"), d.join("all.pcapng"));
    let spec = |p: u32, f: &Path| format!("{p}={}", f.display());
    let (ok, out) = ernic(&[
        "p4",
        "run",
        "--program",
        &testdata("simple_router.json"),
        "--commands",
        &testdata("simple_router.commands"),
        "--in",
        &spec(0, &input),
        "--out",
        &spec(1, &r1),
        "--out",
        &spec(2, &r2),
    ]);
    assert!(ok, "{out}");
    assert!(
        out.contains("4 packet(s) in, 2 out (port 1: 1, port 2: 1), 2 dropped"),
        "{out}"
    );
    // The STF routes the first (10.0.1.10) to port 2 and the second to 1.
    assert_eq!(pcap::read_packets_from_path(&r2).unwrap()[0].data, outs[0]);
    assert_eq!(pcap::read_packets_from_path(&r1).unwrap()[0].data, outs[1]);
    // One pcapng: each packet on its port's interface.
    let (ok, out) = ernic(&[
        "p4",
        "run",
        "--program",
        &testdata("simple_router.json"),
        "--commands",
        &testdata("simple_router.commands"),
        "--in",
        input.to_str().unwrap(),
        "--out",
        all.to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    let recs = pcap::read_packets_from_path(&all).unwrap();
    let got: Vec<(Option<u32>, Vec<u8>)> = recs.into_iter().map(|r| (r.port, r.data)).collect();
    assert_eq!(
        got,
        vec![(Some(2), outs[0].clone()), (Some(1), outs[1].clone())]
    );
    // --copy: no program, each packet out of the port it came in on.
    let copy = d.join("copy.pcapng");
    let (ok, out) = ernic(&[
        "p4",
        "run",
        "--copy",
        "--in",
        &spec(4, &input),
        "--out",
        copy.to_str().unwrap(),
    ]);
    assert!(
        ok && out.contains("4 packet(s) in, 4 out (port 4: 4)") && out.contains("copied at"),
        "{out}"
    );
    let got: Vec<Vec<u8>> = pcap::read_packets_from_path(&copy)
        .unwrap()
        .into_iter()
        .map(|r| r.data)
        .collect();
    assert_eq!(got, ins);
    let _ = std::fs::remove_dir_all(d);
}

#[test]
fn bad_programs_and_flags_are_named() {
    let d = scratch("bad");
    let prog = d.join("p.json");
    std::fs::write(&prog, r#"{"actions": [{"name": "a", "id": 0, "primitives": [{"op": "teleport", "parameters": []}]}]}"#).unwrap();
    let (ok, out) = ernic(&[
        "p4",
        "stf",
        "--program",
        prog.to_str().unwrap(),
        &testdata("swap_1.stf"),
    ]);
    assert!(!ok);
    assert!(
        out.contains("p.json")
            && out.contains("actions[0].primitives[0]")
            && out.contains("teleport"),
        "{out}"
    );
    let (ok, out) = ernic(&[
        "p4",
        "run",
        "--program",
        &testdata("nosuch.json"),
        "--in",
        "x.pcap",
        "--out",
        "y.pcapng",
    ]);
    assert!(!ok && out.contains("nosuch.json"), "{out}");
    let (ok, out) = ernic(&[
        "p4",
        "run",
        "--program",
        &testdata("swap_1.json"),
        "--in",
        "x=y.pcap",
        "--out",
        "o.pcapng",
    ]);
    assert!(!ok && out.contains("is not a port number"), "{out}");
    let _ = std::fs::remove_dir_all(d);
}
