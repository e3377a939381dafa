//! The patterns and the spec syntax, from the words: every Nth, a
//! run from the Nth, a burst of B in every M, an explicit list.

use super::*;

fn fires(p: &Pattern, upto: u64) -> Vec<u64> {
    (1..=upto).filter(|n| p.fires(*n)).collect()
}

#[test]
fn each_pattern_fires_on_the_event_numbers_it_names() {
    assert_eq!(fires(&Pattern::Every(3), 10), [3, 6, 9]);
    assert_eq!(fires(&Pattern::From(8), 10), [8, 9, 10]);
    assert_eq!(
        fires(&Pattern::Burst { fail: 2, of: 5 }, 12),
        [1, 2, 6, 7, 11, 12]
    );
    assert_eq!(fires(&Pattern::At(vec![3, 7, 19]), 20), [3, 7, 19]);
}

#[test]
fn a_spec_reads_events_arguments_and_at_lists_with_commas() {
    let f =
        parse_spec("rx_drop:every=10, send_err=rnr_retry_exc:at=3,7,19,mesh_delay=20ms:burst=1/4")
            .unwrap();
    assert_eq!(f.len(), 3);
    assert_eq!(f[0].event, Event::RxDrop);
    assert_eq!(f[0].pattern, Pattern::Every(10));
    assert_eq!(f[1].arg, Arg::Status(WcStatus::RnrRetryExcErr));
    assert_eq!(f[1].pattern, Pattern::At(vec![3, 7, 19]));
    assert_eq!(f[2].arg, Arg::Millis(20));
    assert_eq!(f[2].pattern, Pattern::Burst { fail: 1, of: 4 });
    // Display gives back a spec that reads the same.
    let again: Vec<String> = f.iter().map(Fault::to_string).collect();
    assert_eq!(parse_spec(&again.join(",")).unwrap(), f);
    assert!(parse_spec("").unwrap().is_empty());
}

#[test]
fn defaults_of_the_arguments() {
    let f = parse_spec("send_err:every=1,recv_err:every=1,mesh_delay:every=1,admin_err:every=1")
        .unwrap();
    assert_eq!(f[0].arg, Arg::Status(WcStatus::RemAccessErr));
    assert_eq!(f[1].arg, Arg::Status(WcStatus::LocLenErr));
    assert_eq!(f[2].arg, Arg::Millis(50));
    assert_eq!(f[3].arg, Arg::None);
}

#[test]
fn bad_specs_are_refused_with_what_to_write() {
    let cases = [
        ("rx_drop", "EVENT[=ARG]:PATTERN"),
        ("nosuch:every=1", "not an event"),
        ("rx_drop:every=0", "N from 1"),
        ("rx_drop:sometimes=3", "a pattern is"),
        ("rx_drop:burst=5/2", "a pattern is"),
        ("rx_drop=3:every=1", "no argument"),
        ("send_err=success:every=1", "an error status"),
        ("admin_err=300:every=1", "an admin opcode"),
        ("mesh_delay=999999:every=1", "milliseconds"),
    ];
    for (spec, want) in cases {
        let e = parse_spec(spec).unwrap_err().to_string();
        assert!(e.contains(want), "{spec}: {e}");
    }
    let many = vec!["rx_drop:every=1"; MAX_FAULTS + 1].join(",");
    assert_eq!(parse_spec(&many), Err(SpecError::TooMany));
}

#[test]
fn the_same_events_fail_the_same_way_twice() {
    let run = || {
        let inj = Injector::parse("tx_drop:burst=2/5,tx_drop:at=4").unwrap();
        let fired: Vec<u64> = (1..=12)
            .filter(|_| inj.check(Event::TxDrop).is_some())
            .collect();
        (fired, inj.report())
    };
    let (a, ra) = run();
    let (b, rb) = run();
    assert_eq!(a, [1, 2, 4, 6, 7, 11, 12]);
    assert_eq!(a, b);
    assert_eq!(ra, rb);
    assert_eq!(ra[0].seen, 12);
    assert_eq!(ra[0].fired, 6);
    assert_eq!(ra[1].fired, 1);
}

#[test]
fn other_events_are_not_counted_and_admin_counts_by_opcode() {
    let inj = Injector::parse("admin_err=7:at=2,stats_vals:every=2").unwrap();
    assert!(inj.check(Event::RxDrop).is_none());
    assert!(!inj.arms(Event::RxDrop));
    assert!(inj.check_admin(9).is_none());
    assert!(inj.check_admin(7).is_none());
    assert!(inj.check_admin(9).is_none());
    let f = inj
        .check_admin(7)
        .expect("the second opcode-7 command fails");
    assert_eq!(f.n, 2);
    assert!(inj.check(Event::StatsVals).is_none());
    assert!(inj.check(Event::StatsVals).is_some());
    assert_eq!(inj.fired(), 2);
}
