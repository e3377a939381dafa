//! The engine as the device runs it (`ernic_p4::target`): ports, the
//! frame path's pass-through default, WQE verdicts and transforms, and
//! device commands 70-72.

use ernic_p4::fp8::{Fp8, Overflow};
use ernic_p4::program::Program;
use ernic_p4::target::{Op, Target, WqeDecision, WqeMeta};

fn program(name: &str) -> Program {
    let p = format!("{}/testdata/{name}.json", env!("CARGO_MANIFEST_DIR"));
    Program::load(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn arp(target: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 42];
    f[..6].fill(0xff);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f[28..32].copy_from_slice(&[10, 0, 0, 2]);
    f[38..42].copy_from_slice(&target);
    f
}

fn frames(t: &mut Target, from_guest: bool, f: &[u8]) -> Vec<(bool, Vec<u8>)> {
    let mut v = Vec::new();
    t.frame(from_guest, f, &mut |to_guest, b| {
        v.push((to_guest, b.to_vec()))
    });
    v
}

#[test]
fn frames_pass_through_unless_the_program_says_otherwise() {
    let mut t = Target::new(Some(program("ernic_frames")));
    let mut out = Vec::new();
    t.command(71, b"table_add arp_filter drop 10.0.0.99 =>\n", &mut out)
        .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "Entry has been added with handle 0\n"
    );
    assert!(
        frames(&mut t, true, &arp([10, 0, 0, 99])).is_empty(),
        "the ARP for .99 is dropped"
    );
    assert_eq!(
        frames(&mut t, true, &arp([10, 0, 0, 1])),
        vec![(false, arp([10, 0, 0, 1]))],
        "to the wire"
    );
    // From the wire: unchanged to the guest until rx_rewrite is set.
    let ip: Vec<u8> = [
        vec![2, 0, 0, 0, 0, 2],
        vec![0xa; 6],
        vec![0x08, 0x00],
        vec![0x45; 20],
    ]
    .concat();
    assert_eq!(frames(&mut t, false, &ip), vec![(true, ip.clone())]);
    let mut out = Vec::new();
    t.command(
        71,
        b"table_set_default rx_rewrite set_src 02:aa:bb:cc:dd:ee\n",
        &mut out,
    )
    .unwrap();
    let mut want = ip.clone();
    want[6..12].copy_from_slice(&[2, 0xaa, 0xbb, 0xcc, 0xdd, 0xee]);
    assert_eq!(frames(&mut t, false, &ip), vec![(true, want)]);
    // A runt frame (no Ethernet header) passes untouched.
    assert_eq!(
        frames(&mut t, true, &[1, 2, 3]),
        vec![(false, vec![1, 2, 3])]
    );
    assert_eq!(t.stats.frames_dropped, 1);
}

#[test]
fn no_program_passes_everything() {
    let mut t = Target::new(None);
    assert_eq!(frames(&mut t, true, b"abc"), vec![(false, b"abc".to_vec())]);
    assert_eq!(
        t.wqe(&WqeMeta {
            opcode: 2,
            ..Default::default()
        }),
        WqeDecision::Pass
    );
    let mut out = Vec::new();
    assert!(t.command(71, b"table_num_entries x\n", &mut out).is_err());
    t.command(72, b"", &mut out).unwrap();
    assert!(String::from_utf8_lossy(&out).starts_with("program: none"));
}

#[test]
fn an_rdma_write_becomes_fp8_accumulation() {
    let mut t = Target::new(Some(program("ernic_fp8")));
    let w = WqeMeta {
        opcode: 2,
        nsge: 1,
        remote_is_local: true,
        qpn: 5,
        dest_qpn: 6,
        length: 16,
        lkey: 0x100,
        laddr: 0x1000,
        rkey: 0x200,
        raddr: 0x2000,
        imm: 0,
        sges: Default::default(),
    };
    let WqeDecision::Transform(tok) = t.wqe(&w) else {
        panic!("not transformed")
    };
    assert_eq!(
        t.op(tok),
        Some(Op::Accumulate(Fp8::E4M3, Overflow::Saturate))
    );
    let src: Vec<u8> = (0..16)
        .map(|i| Fp8::E4M3.from_f32(i as f32 * 0.5, Overflow::Saturate))
        .collect();
    let mut dst: Vec<u8> = (0..16)
        .map(|i| Fp8::E4M3.from_f32(i as f32, Overflow::Saturate))
        .collect();
    let before = dst.clone();
    t.op(tok).unwrap().apply(&src, &mut dst).unwrap();
    for i in 0..16 {
        let want = Fp8::E4M3.from_f32(
            Fp8::E4M3.to_f32(before[i]) + Fp8::E4M3.to_f32(src[i]),
            Overflow::Saturate,
        );
        assert_eq!(dst[i], want, "element {i}");
    }
    // SENDs pass; a WRITE of a length wqe_ops drops is dropped.
    assert_eq!(t.wqe(&WqeMeta { opcode: 0, ..w }), WqeDecision::Pass);
    let mut out = Vec::new();
    t.command(71, b"table_add wqe_ops drop 12 =>\n", &mut out)
        .unwrap();
    assert_eq!(t.wqe(&WqeMeta { length: 12, ..w }), WqeDecision::Drop);
    assert_eq!(
        (t.stats.wqes, t.stats.wqes_dropped, t.stats.wqes_transformed),
        (3, 1, 1)
    );
}

#[test]
fn command_70_loads_and_72_reports() {
    let mut t = Target::new(None);
    let text = std::fs::read(format!(
        "{}/testdata/ernic_fp8.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut out = Vec::new();
    t.command(70, &text, &mut out).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out),
        "program loaded: 1 tables, 3 actions\n"
    );
    let e = t
        .command(
            70,
            b"{\"actions\": [{\"name\": \"x\", \"id\": 0, \"primitives\": [{\"op\": \"nope\"}]}]}",
            &mut Vec::new(),
        )
        .unwrap_err();
    assert!(
        e.contains("actions[0].primitives[0]") && e.contains("nope"),
        "{e}"
    );
    let mut out = Vec::new();
    t.command(72, b"", &mut out).unwrap();
    assert!(
        String::from_utf8_lossy(&out).starts_with("program: 1 tables"),
        "the good program stays loaded"
    );
}

#[test]
fn a_wqe_is_its_header_then_one_record_per_sge() {
    let mut sges = [(0u32, 0u64, 0u32); ernic_p4::target::MAX_SGES];
    sges[0] = (0x11, 0x1000, 8);
    sges[1] = (0x22, 0x2000_0000_0000, 24);
    let w = WqeMeta {
        opcode: 2,
        nsge: 2,
        qpn: 0x12,
        length: 32,
        lkey: 0x11,
        laddr: 0x1000,
        sges,
        ..Default::default()
    };
    let mut b = Vec::new();
    w.encode_into(&mut b);
    assert_eq!(
        b.len(),
        ernic_p4::target::WQE_BYTES + 2 * ernic_p4::target::SGE_BYTES
    );
    assert_eq!(&b[..8], &[2, 2, 0, 0, 0, 0, 0, 0x12]);
    assert_eq!(&b[12..16], &32u32.to_be_bytes(), "length");
    assert_eq!(&b[16..20], &0x11u32.to_be_bytes(), "the first lkey");
    assert_eq!(
        &b[44..60],
        &[0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 8]
    );
    assert_eq!(&b[60..64], &0x22u32.to_be_bytes());
    assert_eq!(&b[64..72], &0x2000_0000_0000u64.to_be_bytes());
    assert_eq!(&b[72..76], &24u32.to_be_bytes());
}
