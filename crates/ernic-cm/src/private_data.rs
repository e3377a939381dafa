//! What rides in the CM messages' private data when the peer is rdma_cm
//! and, on top of it, NVMe/RDMA: [`cma`], the header rdma_cm puts at the
//! start of a REQ's private data (and the service ids it connects to), and
//! [`nvme`], the NVMe/RDMA connect records of the REQ (after the rdma_cm
//! header), the REP and the REJ (at the start: rdma_cm adds nothing to
//! those).

pub mod cma;
pub mod nvme;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::req;
    use std::net::Ipv4Addr;

    #[test]
    fn an_nvme_rdma_connect_sits_after_the_rdma_cm_header_of_a_req() {
        // The private data as rdma_cm + nvme-rdma lay it down, by hand.
        let mut pd = [0u8; req::PRIVATE_DATA_LEN];
        pd[1] = 0x40; // IPv4
        pd[2..4].copy_from_slice(&[0xc3, 0x50]); // port 50000
        pd[16..20].copy_from_slice(&[192, 168, 0, 1]);
        pd[32..36].copy_from_slice(&[192, 168, 0, 2]);
        pd[36 + 2] = 1; // qid 1 (little-endian)
        pd[36 + 4] = 32; // hrqsize
        pd[36 + 6] = 31; // hsqsize

        let h = cma::Repr::parse(&cma::Packet::new_checked(&pd[..]).unwrap()).unwrap();
        assert_eq!(
            h,
            cma::Repr {
                port: 50000,
                addrs: cma::Addrs::V4 {
                    src: Ipv4Addr::new(192, 168, 0, 1),
                    dst: Ipv4Addr::new(192, 168, 0, 2),
                },
            }
        );
        let user = &pd[cma::LEN..];
        let n = nvme::req::Repr::parse(&nvme::req::Packet::new_checked(user).unwrap()).unwrap();
        assert_eq!(
            n,
            nvme::req::Repr {
                qid: 1,
                hrqsize: 32,
                hsqsize: 31
            }
        );
        // 56 bytes remain for the consumer: the NVMe record's 32 fit.
        assert_eq!(user.len(), 56);
    }
}
