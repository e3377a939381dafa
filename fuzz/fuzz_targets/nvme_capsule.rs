//! NVMe/RDMA command capsules (`ernic_nvmeof::wire`): the 64-byte SQE, its
//! data pointer as an SGL descriptor, the same bytes as a Fabrics Connect or
//! Property Get/Set, the bytes after the SQE as Connect data, and the first
//! 16 bytes as a completion entry and as a descriptor.
//! Invariants: nothing panics; whatever parses emits back and re-parses to
//! the same `Repr`.
#![no_main]

use ernic_nvmeof::wire::fabrics::{self, connect, connect_data, property};
use ernic_nvmeof::wire::{cqe, sgl, sqe, status::Status};

fn descriptor(d: sgl::Descriptor) {
    let mut out = [0u8; sgl::LEN];
    d.emit(&mut sgl::Packet::new_unchecked(&mut out[..]))
        .expect("a parsed descriptor emits");
    assert_eq!(sgl::Descriptor::from_dptr(&out), d, "descriptor re-parses");
    if let sgl::Descriptor::Keyed { len, .. } = d {
        assert!(len <= sgl::KEYED_LEN_MAX);
    }
}

fn sqe_view(data: &[u8]) {
    let Ok(p) = sqe::Packet::new_checked(data) else {
        assert!(data.len() < sqe::LEN);
        return;
    };
    let _ = (p.opcode(), p.fuse(), p.psdt(), p.is_sgl(), p.command_id());
    let _ = (p.nsid(), p.cdw2(0), p.cdw2(1), p.metadata());
    for n in 10..=15 {
        assert!(p.cdw(n).is_some());
    }
    assert_eq!(p.cdw(16), None);
    let admin = sqe::AdminOpcode::from(p.opcode());
    assert_eq!(u8::from(admin), p.opcode());
    let io = sqe::IoOpcode::from(p.opcode());
    assert_eq!(u8::from(io), p.opcode());
    descriptor(sgl::Descriptor::from_dptr(&p.dptr()));

    let f = fabrics::Packet::new_checked(data).expect("an SQE is a Fabrics command's size");
    assert_eq!(u8::from(f.fctype()), f.fctype_raw());
}

fn connect_command(data: &[u8]) {
    let Ok(r) = connect::Repr::parse(&connect::Packet::new_unchecked(data)) else {
        return;
    };
    let mut out = [0u8; connect::LEN];
    r.emit(&mut connect::Packet::new_unchecked(&mut out[..]))
        .expect("a parsed Connect emits");
    let again = connect::Repr::parse(&connect::Packet::new_unchecked(&out[..]));
    assert_eq!(again, Ok(r), "Connect re-parses");
}

fn property_command(data: &[u8]) {
    let Ok(r) = property::Repr::parse(&property::Packet::new_unchecked(data)) else {
        return;
    };
    let mut out = [0u8; property::LEN];
    r.emit(&mut property::Packet::new_unchecked(&mut out[..]))
        .expect("a parsed property command emits");
    let again = property::Repr::parse(&property::Packet::new_unchecked(&out[..]));
    assert_eq!(again, Ok(r), "property command re-parses");
}

fn connect_data(data: &[u8]) {
    let Ok(p) = connect_data::Packet::new_checked(data) else {
        assert!(data.len() < connect_data::LEN);
        return;
    };
    assert!(p.subsysnqn().len() <= connect_data::NQN_FIELD_LEN);
    assert!(p.hostnqn().len() <= connect_data::NQN_FIELD_LEN);
    let Ok(r) = connect_data::Repr::parse(&p) else {
        return;
    };
    assert!(r.subsysnqn.len() <= connect_data::NQN_MAX);
    assert_eq!(r.hostnqn.as_str().as_bytes(), p.hostnqn());
    let mut out = [0u8; connect_data::LEN];
    r.emit(&mut connect_data::Packet::new_unchecked(&mut out[..]))
        .expect("parsed Connect data emits");
    let again = connect_data::Repr::parse(&connect_data::Packet::new_unchecked(&out[..]));
    assert_eq!(again, Ok(r), "Connect data re-parses");
}

fn completion(data: &[u8]) {
    let Ok(p) = cqe::Packet::new_checked(data) else {
        assert!(data.len() < cqe::LEN);
        return;
    };
    let field = p.status_field();
    let status = Status::from_field(field);
    assert_eq!(Status::from_field(status.to_field()), status);
    let r = cqe::Repr::parse(&p).expect("16 bytes are a completion");
    let mut out = [0u8; cqe::LEN];
    r.emit(&mut cqe::Packet::new_unchecked(&mut out[..]));
    let again = cqe::Repr::parse(&cqe::Packet::new_unchecked(&out[..]));
    assert_eq!(again, Ok(r), "completion re-parses");
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sqe_view(data);
    connect_command(data);
    property_command(data);
    connect_data(data.get(sqe::LEN..).unwrap_or(&[]));
    connect_data(data);
    completion(data);
    if let Ok(p) = sgl::Packet::new_checked(data) {
        descriptor(sgl::Descriptor::parse(&p).expect("16 bytes are a descriptor"));
    }
});
