//! The mesh pump ([`Mesh::pass`]) with real sockets on loopback: a worker
//! sends the manager messages, and one pass applies each of them to the
//! target's engine, hands completions on once, and gives every buffer back
//! to the inbound bound.

use std::time::{Duration, Instant};

use ernic_core::{Engine, EngineConfig, NodeId, Outgoing, ProcessMemory, Remote};
use ernic_mesh::{Mesh, MeshConfig, PassOptions, PassTarget, Spec};

const T: Duration = Duration::from_secs(20);

/// An engine, and how many times the pass handed its completions on.
struct Target {
    engine: Engine<ProcessMemory>,
    completed: usize,
}

impl PassTarget for Target {
    type Memory = ProcessMemory;

    fn engine(&mut self) -> &mut Engine<ProcessMemory> {
        &mut self.engine
    }

    fn complete(&mut self) {
        self.completed += 1;
    }
}

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + T;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_pass_applies_every_queued_message_and_gives_every_buffer_back() {
    let mut cfg = MeshConfig::new(Spec::Manager { port: 1 });
    cfg.spec = Spec::Manager { port: 0 };
    cfg.same_host = false;
    let manager = Mesh::start(cfg).unwrap();
    let mut cfg = MeshConfig::new(Spec::Worker {
        host: "127.0.0.1".into(),
        port: manager.listen_addr().port(),
    });
    cfg.same_host = false;
    let worker = Mesh::start(cfg).unwrap();
    assert_eq!(worker.wait_registered(T), Some(NodeId(1)));

    // Three messages no engine understands: each is applied (and counted
    // malformed), and its buffer goes back.
    let mut carrier = worker.carrier();
    for i in 0..3u8 {
        let mut fill = |b: &mut [u8]| b.fill(0xf0 | i);
        let out = Outgoing {
            reply: false,
            tag: 0,
            len: 64,
            fill: &mut fill,
        };
        carrier.send(NodeId(0), out).expect("queued");
    }
    until("the manager has the three messages", || {
        manager.inbound_usage().1 == 3
    });

    let mut target = Target {
        engine: Engine::new(EngineConfig::default(), ProcessMemory::new()),
        completed: 0,
    };
    let how = PassOptions {
        yield_after_by_ref: true,
        flush: true,
        poller: false,
    };
    let applied = manager.pass(&mut target, Instant::now(), how);
    assert_eq!(applied, 3, "no by-reference read: the pass takes them all");
    assert_eq!(target.engine.remote_stats().malformed, 3);
    assert_eq!(target.completed, 1, "completions handed on once per pass");
    assert_eq!(manager.inbound_usage(), (0, 0), "every buffer given back");
    assert!(!manager.has_messages());

    // A pass with nothing queued still runs timers and completes.
    assert_eq!(manager.pass(&mut target, Instant::now(), how), 0);
    assert_eq!(target.completed, 2);
}
