//! CM MADs (`ernic_cm`): the MAD header, any CM message by its attribute
//! id (REQ, REP, RTU, REJ, MRA, DREQ, DREP), every message's own view, and
//! the private data rdma_cm and NVMe/RDMA put inside (also fed raw).
//! Invariants: nothing panics; whatever parses emits back and re-parses to
//! the same `Repr`.
#![no_main]

use ernic_cm::mad::{self, MAD_LEN};
use ernic_cm::private_data::{cma, nvme};
use ernic_cm::{CmMessage, drep, dreq, mra, rej, rep, req, rtu};

/// A `Repr` type's parse, emit and re-parse.
macro_rules! round_trip {
    ($m:path, $data:expr, $len:expr) => {{
        use $m as m;
        if let Ok(p) = m::Packet::new_checked($data) {
            if let Ok(r) = m::Repr::parse(&p) {
                assert_eq!(r.buffer_len(), $len);
                let mut out = [0u8; $len];
                r.emit(&mut m::Packet::new_checked(&mut out[..]).unwrap());
                let again = m::Repr::parse(&m::Packet::new_checked(&out[..]).unwrap());
                assert_eq!(again, Ok(r), "emit then parse gives the same Repr");
            }
        } else {
            assert!($data.len() < $len);
        }
    }};
}

fn private_data(b: &[u8]) {
    round_trip!(cma, b, cma::LEN);
    round_trip!(nvme::req, b, nvme::req::LEN);
    round_trip!(nvme::rep, b, nvme::rep::LEN);
    round_trip!(nvme::rej, b, nvme::rej::LEN);
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    round_trip!(mad, data, mad::HEADER_LEN);
    if let Ok(p) = req::Packet::new_checked(data) {
        let _ = (p.path(&req::field::PRIMARY), p.path(&req::field::ALTERNATE));
        let _ = (p.service_id(), p.local_qpn(), p.private_data().len());
    }
    if let Ok(p) = rep::Packet::new_checked(data) {
        let _ = (p.vendor_id(), p.local_ca_guid(), p.private_data().len());
    }
    if let Ok(p) = rej::Packet::new_checked(data) {
        let _ = (p.ari().len(), p.rejected_info_length(), p.reason());
    }
    round_trip!(req, data, MAD_LEN);
    round_trip!(rep, data, MAD_LEN);
    round_trip!(rtu, data, MAD_LEN);
    round_trip!(rej, data, MAD_LEN);
    round_trip!(mra, data, MAD_LEN);
    round_trip!(dreq, data, MAD_LEN);
    round_trip!(drep, data, MAD_LEN);

    if let Ok(m) = CmMessage::parse(data) {
        let mut out = [0u8; MAD_LEN];
        m.emit(&mut out).unwrap();
        assert_eq!(
            CmMessage::parse(&out),
            Ok(m),
            "a message re-parses the same"
        );
        match m {
            CmMessage::Req(r) => {
                private_data(&r.private_data);
                private_data(&r.private_data[cma::LEN..]);
            }
            CmMessage::Rep(r) => private_data(&r.private_data),
            CmMessage::Rej(r) => {
                assert!(r.ari_info().len() <= rej::ARI_LEN);
                private_data(&r.private_data);
            }
            _ => {}
        }
    }
    private_data(data);
});
