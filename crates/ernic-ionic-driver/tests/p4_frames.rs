//! The P4 frame filter through the real socket and the server's own loop:
//! the driver's frames to the wire pass the filter (an ARP for one address
//! is dropped, and counted in the stats file), and a frame from the wire
//! reaches the driver's receive queue as the filter rewrote it.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use ernic_ionic::function::IonicFunction;
use ernic_ionic::p4hook::{FrameFilter, Side};
use ernic_ionic::tap::Wire;
use ernic_ionic_driver::{Driver, FRAME_BUF};

mod common;
use common::{arp, within};

/// Drops the guest's ARP for 10.0.0.99; sends the guest's other frames to
/// the wire; gives the guest wire frames with byte 14 set to 0x5a.
struct ArpFilter {
    scratch: Vec<u8>,
}

impl FrameFilter for ArpFilter {
    fn filter(&mut self, from: Side, frame: &[u8], emit: &mut dyn FnMut(Side, &[u8])) {
        let arp = frame.get(12..14) == Some(&[0x08, 0x06]);
        match from {
            Side::Guest if arp && frame.get(38..42) == Some(&[10, 0, 0, 99]) => {}
            Side::Guest => emit(Side::Wire, frame),
            Side::Wire => {
                self.scratch.clear();
                self.scratch.extend_from_slice(frame);
                if let Some(b) = self.scratch.get_mut(14) {
                    *b = 0x5a;
                }
                emit(Side::Guest, &self.scratch);
            }
        }
    }
}

#[test]
fn the_filter_drops_counts_and_rewrites_between_driver_and_wire() {
    let dir = std::env::temp_dir().join(format!("ernic-drv-p4-frames-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stats = dir.join("stats.json");
    let (wire, theirs): (Wire, UnixDatagram) = Wire::socket_pair().unwrap();
    theirs.set_nonblocking(true).unwrap();
    let f = IonicFunction::new(Default::default())
        .with_wire(wire)
        .with_frame_filter(Box::new(ArpFilter {
            scratch: Vec::new(),
        }))
        .with_stats_file(
            stats.clone(),
            Duration::from_millis(5),
            Box::new(|f| f.stats_doc(&ernic_ops::Instance::this_process("p4-frames", None))),
        );
    let path = common::serve_function("p4-frames", f);
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    d.eth_up().unwrap();

    // Out: the ARP for .99 is dropped, the one for .1 reaches the wire.
    d.send_frame(&arp([10, 0, 0, 99])).unwrap();
    d.send_frame(&arp([10, 0, 0, 1])).unwrap();
    let mut buf = vec![0u8; FRAME_BUF];
    let n = within("the ARP for 10.0.0.1 on the wire", || {
        theirs.recv(&mut buf).ok()
    });
    assert_eq!(&buf[..n], &arp([10, 0, 0, 1])[..]);
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        theirs.recv(&mut buf).is_err(),
        "the dropped ARP reached the wire"
    );
    within("the drop in the stats file", || {
        let doc = ernic_ops::read_stats(&stats).ok()?;
        (doc.counter("p4", &[], "frames_dropped") == Some(1)).then_some(())
    });

    // In: a frame from the wire, as the filter rewrote it.
    let mut from_wire: Vec<u8> = (0..64u8).collect();
    from_wire[12..14].copy_from_slice(&[0x08, 0x00]);
    theirs.send(&from_wire).unwrap();
    let n = within("the wire's frame at the driver", || {
        d.recv_frame(&mut buf).unwrap()
    });
    let mut want = from_wire.clone();
    want[14] = 0x5a;
    assert_eq!(&buf[..n], &want[..]);
    let _ = std::fs::remove_dir_all(&dir);
}
