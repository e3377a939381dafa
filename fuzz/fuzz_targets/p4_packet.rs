//! The P4 engine's packet path: one of the bmv2 test programs in
//! `crates/ernic-p4/testdata`, mirroring sessions and a multicast group,
//! table entries with fuzzed keys, actions and
//! data added through the control-plane API, then fuzzed packets on fuzzed
//! ports. Invariants: nothing panics; every packet makes at most
//! `MAX_COPIES` outputs; a refused entry leaves the table's size unchanged.
#![no_main]

use arbitrary::Arbitrary;
use ernic_p4::exec::tables::MatchParam;
use ernic_p4::exec::{MAX_COPIES, Switch};
use ernic_p4::program::{MatchKind, Program};
use libfuzzer_sys::fuzz_target;

const PROGRAMS: [&str; 18] = [
    include_str!("../../crates/ernic-p4/testdata/counter.json"),
    include_str!("../../crates/ernic-p4/testdata/exact_match_1.json"),
    include_str!("../../crates/ernic-p4/testdata/header_stack.json"),
    include_str!("../../crates/ernic-p4/testdata/loopback.json"),
    include_str!("../../crates/ernic-p4/testdata/parser_deparser_1.json"),
    include_str!("../../crates/ernic-p4/testdata/swap_1.json"),
    include_str!("../../crates/ernic-p4/testdata/ternary.json"),
    include_str!("../../crates/ernic-p4/testdata/simple_router.json"),
    include_str!("../../crates/ernic-p4/testdata/truncate.json"),
    include_str!("../../crates/ernic-p4/testdata/parser_error.json"),
    include_str!("../../crates/ernic-p4/testdata/recirc.json"),
    include_str!("../../crates/ernic-p4/testdata/clone.json"),
    include_str!("../../crates/ernic-p4/testdata/multicast.json"),
    include_str!("../../crates/ernic-p4/testdata/action_profile.json"),
    include_str!("../../crates/ernic-p4/testdata/optional.json"),
    include_str!("../../crates/ernic-p4/testdata/parse_vset.json"),
    include_str!("../../crates/ernic-p4/testdata/ernic_frames.json"),
    include_str!("../../crates/ernic-p4/testdata/ernic_fp8.json"),
];

#[derive(Arbitrary, Debug)]
struct Entry {
    table: u8,
    action: u8,
    key: Vec<u8>,
    prefix: u8,
    data: Vec<u16>,
    priority: i8,
}

#[derive(Arbitrary, Debug)]
struct Input {
    program: u8,
    entries: Vec<Entry>,
    defaults: Vec<(u8, u8, Vec<u16>)>,
    packets: Vec<(u16, Vec<u8>)>,
}

fuzz_target!(|input: Input| {
    let p = Program::load(PROGRAMS[input.program as usize % PROGRAMS.len()])
        .expect("test program loads");
    let mut sw = Switch::new(p);
    sw.mirroring_add(5, 3);
    sw.state.mcast_nodes.push(Some((7, vec![2, 3])));
    sw.state.mcast.insert(1, vec![0]);
    for e in input.entries.iter().take(64) {
        let ntables = sw.program.tables.len();
        if ntables == 0 {
            break;
        }
        let t = &sw.program.tables[e.table as usize % ntables];
        let name = t.name.clone();
        let Some(&a) = t.actions.get(e.action as usize % t.actions.len().max(1)) else {
            continue;
        };
        let action = sw.program.actions[a as usize].name.clone();
        let mut at = 0;
        let key: Vec<MatchParam> = t
            .key
            .iter()
            .map(|k| {
                let n = k.nbytes();
                let bytes: Vec<u8> = (0..n)
                    .map(|i| e.key.get(at + i).copied().unwrap_or(0))
                    .collect();
                at += n;
                match k.kind {
                    MatchKind::Lpm => MatchParam::Lpm(bytes, u32::from(e.prefix)),
                    MatchKind::Ternary | MatchKind::Optional => {
                        MatchParam::Ternary(bytes.clone(), bytes.iter().map(|b| !b).collect())
                    }
                    MatchKind::Range => MatchParam::Range(bytes.clone(), bytes),
                    MatchKind::Valid => MatchParam::Valid(e.prefix & 1 == 1),
                    MatchKind::Exact => MatchParam::Exact(bytes),
                }
            })
            .collect();
        let data = e.data.iter().map(|&d| i128::from(d)).collect();
        let tid = sw.program.table(&name).expect("own table") as usize;
        let before = sw.state.tables[tid].len();
        if sw
            .table_add(&name, &action, key, data, i32::from(e.priority))
            .is_err()
        {
            assert_eq!(
                sw.state.tables[tid].len(),
                before,
                "a refused entry changes nothing"
            );
        }
    }
    for (t, a, data) in input.defaults.iter().take(8) {
        let ntables = sw.program.tables.len();
        if ntables == 0 {
            break;
        }
        let t = &sw.program.tables[*t as usize % ntables];
        let Some(&act) = t.actions.get(*a as usize % t.actions.len().max(1)) else {
            continue;
        };
        let (tn, an) = (
            t.name.clone(),
            sw.program.actions[act as usize].name.clone(),
        );
        let _ = sw.table_set_default(&tn, &an, data.iter().map(|&d| i128::from(d)).collect());
    }
    let mut out = Vec::new();
    for (i, (port, pkt)) in input.packets.iter().take(64).enumerate() {
        out.clear();
        sw.process(u32::from(*port), pkt, i as u64 * 1000, &mut out);
        assert!(out.len() <= MAX_COPIES);
    }
});
