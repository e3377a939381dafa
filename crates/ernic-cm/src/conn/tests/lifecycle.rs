//! A connection made, used and torn down from either side.

use super::*;

#[test]
fn a_connection_is_made_used_and_torn_down_from_the_requester() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let (ida, idb) = p.establish(t0);
    assert_eq!(p.a.state(ida), Some(State::Established));
    assert_eq!(p.b.state(idb), Some(State::Established));
    assert_eq!(p.a.next_deadline(), None);
    assert_eq!(p.b.next_deadline(), None);

    let t1 = t0 + Duration::from_secs(10);
    p.a.disconnect(t1, ida, b"bye").unwrap();
    assert_eq!(p.a.state(ida), Some(State::DreqSent));
    let dreq = p.a_to_b(t1);
    assert_eq!(dreq.iter().map(attr).collect::<Vec<_>>(), [AttrId::Dreq]);
    assert_eq!(
        events(&mut p.b),
        [
            Event::DisconnectRequested { id: idb },
            Event::Disconnected { id: idb }
        ]
    );
    let drep = p.b_to_a(t1);
    assert_eq!(drep.iter().map(attr).collect::<Vec<_>>(), [AttrId::Drep]);
    // The DREP answers the DREQ's transaction.
    assert_eq!(tid(&drep[0].mad), tid(&dreq[0].mad));
    assert_eq!(events(&mut p.a), [Event::Disconnected { id: ida }]);

    for (cm, id) in [(&mut p.a, ida), (&mut p.b, idb)] {
        assert_eq!(cm.state(id), Some(State::Timewait));
        assert_eq!(cm.next_deadline(), Some(t1 + TIMEWAIT));
        cm.poll(t1 + TIMEWAIT - Duration::from_nanos(1));
        assert_eq!(cm.state(id), Some(State::Timewait));
        cm.poll(t1 + TIMEWAIT);
        assert_eq!(cm.state(id), None);
        assert_eq!(events(cm), [Event::TimewaitExit { id }]);
        assert_eq!(cm.conn_count(), 0);
        assert_eq!(cm.next_deadline(), None);
    }
}

#[test]
fn the_responder_may_disconnect_too() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let (ida, idb) = p.establish(t0);
    p.b.disconnect(t0, idb, &[]).unwrap();
    p.b_to_a(t0);
    assert_eq!(
        events(&mut p.a),
        [
            Event::DisconnectRequested { id: ida },
            Event::Disconnected { id: ida }
        ]
    );
    p.a_to_b(t0);
    assert_eq!(events(&mut p.b), [Event::Disconnected { id: idb }]);
    assert_eq!(p.a.state(ida), Some(State::Timewait));
    assert_eq!(p.b.state(idb), Some(State::Timewait));
    p.a.poll(t0 + TIMEWAIT);
    p.b.poll(t0 + TIMEWAIT);
    assert_eq!((p.a.state(ida), p.b.state(idb)), (None, None));
}
