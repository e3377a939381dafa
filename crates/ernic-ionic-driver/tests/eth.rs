//! The driver's Ethernet queues against an ionic function whose segment
//! holds one host that echoes every frame back: frames out through the TX
//! queue come back through the RX queue byte for byte, past several wraps
//! of both rings (their colors flip), and frames that do not fit are
//! refused.

use std::time::{Duration, Instant};

use ernic_ionic::function::IonicFunction;
use ernic_ionic_driver::{Driver, Error, FRAME_BUF};

mod common;

fn serve() -> std::path::PathBuf {
    let f = IonicFunction::new(Default::default()).with_endpoint(Box::new(common::Echo::new()));
    common::serve_function("eth", f)
}

fn frame(i: usize) -> Vec<u8> {
    let len = 60 + (i * 97) % (1514 - 60);
    (0..len).map(|k| (k * 31 + i) as u8).collect()
}

#[test]
fn frames_sent_come_back_through_the_receive_queue_across_wraps() {
    let sock = serve();
    let mut d = Driver::attach(&sock, 8 << 20).unwrap();
    let mut buf = vec![0u8; FRAME_BUF];
    assert!(matches!(d.send_frame(&[0; 60]), Err(Error::Unsupported(_))));
    assert!(matches!(d.recv_frame(&mut buf), Err(Error::Unsupported(_))));
    d.eth_up().unwrap();
    assert!(d.eth_up().is_err(), "a second bring-up is refused");
    assert_eq!(d.recv_frame(&mut buf).unwrap(), None, "nothing yet");
    // 200 frames: three passes of the 64-deep rings.
    for i in 0..200 {
        let f = frame(i);
        d.send_frame(&f).unwrap();
        let end = Instant::now() + Duration::from_secs(5);
        let n = loop {
            if let Some(n) = d.recv_frame(&mut buf).unwrap() {
                break n;
            }
            assert!(Instant::now() < end, "frame {i} did not come back");
            std::thread::sleep(Duration::from_micros(50));
        };
        assert_eq!(&buf[..n], &f[..], "frame {i}");
    }
    assert_eq!(d.recv_frame(&mut buf).unwrap(), None);
    // Too big for a buffer, or empty: refused before the device sees it.
    assert!(matches!(
        d.send_frame(&vec![0; FRAME_BUF + 1]),
        Err(Error::FrameSize { .. })
    ));
    assert!(matches!(d.send_frame(&[]), Err(Error::FrameSize { .. })));
    // A frame longer than the caller's buffer is dropped with an error,
    // and the next one still comes.
    d.send_frame(&frame(1)).unwrap();
    d.send_frame(&frame(2)).unwrap();
    let mut small = [0u8; 16];
    let end = Instant::now() + Duration::from_secs(5);
    let got = loop {
        match d.recv_frame(&mut small) {
            Ok(None) => {
                assert!(Instant::now() < end, "no frame came back");
                std::thread::sleep(Duration::from_micros(50));
            }
            other => break other,
        }
    };
    assert!(
        matches!(got, Err(Error::FrameSize { room: 16, .. })),
        "{got:?}"
    );
    let end = Instant::now() + Duration::from_secs(5);
    let n = loop {
        if let Some(n) = d.recv_frame(&mut buf).unwrap() {
            break n;
        }
        assert!(Instant::now() < end, "the second frame did not come back");
        std::thread::sleep(Duration::from_micros(50));
    };
    assert_eq!(&buf[..n], &frame(2)[..]);
    let _ = std::fs::remove_dir_all(sock.parent().unwrap());
}
