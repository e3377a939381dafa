//! The transport's counters after a known workload, and the fault
//! injection wrapper's faults, counted exactly: messages, bytes, eager and
//! written messages, CTRLs, EAGAIN deferrals, error completions.
#![allow(unsafe_code)]

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::*;

use ernic_core::Injector;
use ernic_net::config::Config;
use ernic_net::inject::Injected;
use ernic_net::provider::Provider;
use ernic_net::rdma::Endpoint;
use ernic_net::verbs_provider::ErnicProvider;
use ernic_ops::schema::Group;
use ernic_verbs::Fabric;

/// Ten eager messages of 100 bytes, then five written ones of 100000.
fn workload() -> Vec<usize> {
    let mut v = vec![100; 10];
    v.extend([100_000; 5]);
    v
}

fn counter(groups: &[Group], kind: &str, role: Option<&str>, name: &str) -> u64 {
    let g = groups
        .iter()
        .find(|g| {
            g.kind == kind && role.is_none_or(|r| g.labels.get("role").is_some_and(|x| x == r))
        })
        .unwrap_or_else(|| panic!("no {kind} group {role:?} in {groups:?}"));
    g.counters[name]
}

/// Runs the workload on one rail from `a` to `b`; answers the failed
/// sends and both endpoints' groups (the sender's, then the receiver's),
/// after every parked post has been retried.
fn run(p: &dyn Provider) -> (usize, Vec<Group>, Vec<Group>) {
    let cfg = Config::default();
    let mut a = side(p, 1, &cfg, 1 << 20);
    let mut b = side(p, 1, &cfg, 1 << 20);
    let (s, r) = connect(&mut a, &mut b);
    let sizes = workload();
    let failed = transfer(&mut a, &mut b, s, r, &sizes, &sizes, 4);
    settle(&mut a.ep, &mut b.ep);
    (failed, a.ep.stats_groups(), b.ep.stats_groups())
}

/// Progress until neither endpoint has a post parked.
fn settle(a: &mut Endpoint, b: &mut Endpoint) {
    let end = Instant::now() + T;
    while a.parked() + b.parked() > 0 {
        a.progress();
        b.progress();
        assert!(Instant::now() < end, "parked posts were never retried");
    }
}

#[test]
fn a_known_workload_counts_messages_bytes_eager_rdma_and_ctrls() {
    let (failed, a, b) = run(&ErnicProvider::new(Fabric::new()));
    assert_eq!(failed, 0);
    let bytes = 10 * 100 + 5 * 100_000;
    for (g, kind, role) in [(&a, "comm", Some("send")), (&a, "transport", None)] {
        assert_eq!(counter(g, kind, role, "messages_sent"), 15);
        assert_eq!(counter(g, kind, role, "bytes_sent"), bytes);
        assert_eq!(counter(g, kind, role, "messages_received"), 0);
        assert_eq!(counter(g, kind, role, "eager_messages"), 10);
        assert_eq!(counter(g, kind, role, "rdma_messages"), 5);
        // A CTRL per receive, eager ones included (the sender's credits).
        assert_eq!(counter(g, kind, role, "ctrl_received"), 15);
        assert_eq!(counter(g, kind, role, "ctrl_sent"), 0);
        // (EAGAIN deferrals: the provider's own, a few while its queue
        // pairs to a new peer connect; see the storm test.)
        assert_eq!(counter(g, kind, role, "error_completions"), 0);
        assert_eq!(counter(g, kind, role, "failed_requests"), 0);
    }
    // Nothing stray or malformed came.
    assert_eq!(counter(&a, "transport", None, "dropped"), 0);
    assert_eq!(counter(&b, "transport", None, "dropped"), 0);
    for (g, kind, role) in [(&b, "comm", Some("recv")), (&b, "transport", None)] {
        assert_eq!(counter(g, kind, role, "messages_received"), 15);
        assert_eq!(counter(g, kind, role, "bytes_received"), bytes);
        assert_eq!(counter(g, kind, role, "eager_messages"), 10);
        assert_eq!(counter(g, kind, role, "rdma_messages"), 5);
        assert_eq!(counter(g, kind, role, "ctrl_sent"), 15);
        assert_eq!(counter(g, kind, role, "messages_sent"), 0);
    }
    let send = a.iter().find(|g| g.kind == "comm").unwrap();
    let recv = b.iter().find(|g| g.kind == "comm").unwrap();
    assert_eq!(send.labels["peer_comm"], recv.labels["comm"]);
    assert_eq!(recv.labels["peer_comm"], send.labels["comm"]);
}

/// The posts the workload makes, each answered once with success:
/// every rx buffer of both endpoints (256 per control rail and per data
/// rail, one of each), the CONN and the CONN_RESP and the two rx buffers
/// they took, reposted; per message its CTRL and the sender's rx buffer
/// it took; per eager message its send and the receiver's rx buffer;
/// per written message its one write (one rail).
const POSTS: u64 = 2 * (256 + 256) + 2 + 2 + 15 * 2 + 10 * 2 + 5;

#[test]
fn eagain_storms_are_deferred_retried_and_counted_exactly() {
    for spec in ["fi_eagain:every=3", "fi_eagain:burst=50/100"] {
        let outcome = || {
            let inj = Arc::new(Injector::parse(spec).unwrap());
            let p = Injected::new(ErnicProvider::new(Fabric::new()), inj.clone());
            let (failed, a, b) = run(&p);
            assert_eq!(failed, 0, "{spec}: nothing fails, it is only late");
            assert_eq!(counter(&b, "comm", Some("recv"), "messages_received"), 15);
            assert_eq!(counter(&a, "comm", Some("send"), "bytes_sent"), 501_000);
            let deferred = counter(&a, "transport", None, "eagain_deferrals")
                + counter(&b, "transport", None, "eagain_deferrals");
            (deferred, inj.fired(), inj.report()[0].seen)
        };
        // Twice, each run meeting the same exact relations.
        for _ in 0..2 {
            let (deferred, fired, seen) = outcome();
            // Every check of a post either passes it to the provider, which
            // takes it (once per post) or answers EAGAIN itself (a few times,
            // while its queue pairs to a new peer connect), or fires: so the
            // checks are the posts plus the deferrals, and the faults fired
            // are the pattern's hits among that many events.
            assert_eq!(seen, POSTS + deferred, "{spec}");
            let hits = match spec {
                "fi_eagain:every=3" => seen / 3,
                _ => seen / 100 * 50 + (seen % 100).min(50),
            };
            assert_eq!(fired, hits, "{spec}");
            assert!(fired > 500, "{spec}: a storm ({fired} EAGAINs)");
            assert!(
                deferred - fired < 20,
                "{spec}: {deferred} deferrals, {fired} injected"
            );
        }
    }
}

#[test]
fn an_injected_error_completion_fails_that_send_only() {
    let outcome = || {
        let inj = Arc::new(Injector::parse("fi_cq_err:at=2").unwrap());
        let p = Injected::new(ErnicProvider::new(Fabric::new()), inj.clone());
        let (failed, a, b) = run(&p);
        assert_eq!(inj.fired(), 1);
        (failed, a, b)
    };
    let (failed, a, b) = outcome();
    // The second write is the second written message's: its send fails;
    // its bytes still land, so every receive completes intact.
    assert_eq!(failed, 1);
    let send = |n| counter(&a, "comm", Some("send"), n);
    assert_eq!(send("error_completions"), 1);
    assert_eq!(send("failed_requests"), 1);
    assert_eq!(send("messages_sent"), 14);
    assert_eq!(send("rdma_messages"), 4);
    assert_eq!(counter(&b, "comm", Some("recv"), "messages_received"), 15);
    assert_eq!(counter(&b, "comm", Some("recv"), "failed_requests"), 0);
    let (again, a2, _) = outcome();
    assert_eq!(
        (again, counter(&a2, "comm", Some("send"), "messages_sent")),
        (1, 14),
        "the same twice"
    );
}

#[test]
fn closed_endpoints_stay_in_the_process_totals() {
    let before = counter(
        &ernic_net::stats::stats_groups(),
        "transport",
        None,
        "ctrl_sent",
    );
    let (_, _, b) = run(&ErnicProvider::new(Fabric::new()));
    assert_eq!(counter(&b, "transport", None, "ctrl_sent"), 15);
    // Both endpoints are closed now; other tests may run meanwhile, so
    // the totals grew by at least this run's 15.
    let after = counter(
        &ernic_net::stats::stats_groups(),
        "transport",
        None,
        "ctrl_sent",
    );
    assert!(after >= before + 15, "{before} -> {after}");
}
