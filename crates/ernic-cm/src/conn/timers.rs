//! The CM's clock arithmetic: how IBTA's 5-bit time exponents become
//! durations, the local ACK timeout a REQ announces, and the one timer a
//! connection runs (a retransmission or the end of TIMEWAIT).
//!
//! The formulas are Linux's, `drivers/infiniband/core/cm.c`:
//! `cm_convert_to_ms` (4.096 us x 2^t, approximated as 2^(t-8) ms, at
//! least 1 ms) and `cm_ack_timeout`. Nothing here reads a clock: every
//! deadline is an `Instant` handed in by the caller plus a duration.

use std::time::{Duration, Instant};

/// The largest value of a 5-bit IBTA time exponent.
pub(crate) const MAX_EXPONENT: u8 = 31;

/// `cm_convert_to_ms`: 4.096 us x 2^`t`, as cm.c approximates it, 2^(t-8)
/// ms with a floor of 1 ms. `t` above 31 is read as 31 (the fields are 5
/// bits wide).
pub fn iba_time(t: u8) -> Duration {
    let t = t.min(MAX_EXPONENT);
    Duration::from_millis(1u64 << t.saturating_sub(8))
}

/// `cm_ack_timeout`: the exponent of 4.096 us x 2^ack_delay + 2 x 4.096 us
/// x 2^life_time, rounded the way cm.c rounds it (take the larger of
/// `ca_ack_delay` and `packet_life_time + 1`, add one when the other is
/// within a factor of two), capped at 31.
pub fn ack_timeout(ca_ack_delay: u8, packet_life_time: u8) -> u8 {
    let delay = i32::from(ca_ack_delay.min(MAX_EXPONENT));
    let life = i32::from(packet_life_time.min(MAX_EXPONENT)) + 1;
    let t = if life >= delay {
        life + i32::from(delay >= life - 1)
    } else {
        delay + i32::from(life >= delay - 1)
    };
    // `t` lies in 1..=33; the cap brings it into a u8's 5 bits.
    t.min(i32::from(MAX_EXPONENT)) as u8
}

/// `now + d`, or `now` itself in the (unreachable in practice) case that
/// the sum does not fit an `Instant`: a deadline must never panic.
pub(crate) fn after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d).unwrap_or(now)
}

/// What a connection's timer does when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimerKind {
    /// Resend the connection's outstanding MAD (REQ, REP or DREQ) while
    /// retries are left, then give up (cm.c's MAD send with `timeout_ms`
    /// and `retries`, and `cm_process_send_error` when it fails).
    Retransmit {
        /// Retransmissions left (starts at the REQ's max CM retries).
        retries_left: u8,
        /// The wait after each send (`msg->timeout_ms`; an MRA changes it,
        /// as `ib_modify_mad` does).
        timeout: Duration,
    },
    /// The end of TIMEWAIT (`cm_timewait_handler`): the id is freed.
    Timewait,
}

/// A connection's one pending timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timer {
    /// When it fires.
    pub deadline: Instant,
    /// What it does then.
    pub kind: TimerKind,
}

impl Timer {
    /// A retransmission timer for a MAD sent at `now`.
    pub fn retransmit(now: Instant, timeout: Duration, retries: u8) -> Timer {
        Timer {
            deadline: after(now, timeout),
            kind: TimerKind::Retransmit {
                retries_left: retries,
                timeout,
            },
        }
    }

    /// The TIMEWAIT timer entered at `now` for a connection whose address
    /// vector timeout exponent is `av_timeout` (`cm_enter_timewait`).
    pub fn timewait(now: Instant, av_timeout: u8) -> Timer {
        Timer {
            deadline: after(now, iba_time(av_timeout)),
            kind: TimerKind::Timewait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iba_times_follow_cm_convert_to_ms() {
        // 4.096 us x 2^t; cm.c rounds everything below 2^9 up to 1 ms.
        assert_eq!(iba_time(0), Duration::from_millis(1));
        assert_eq!(iba_time(8), Duration::from_millis(1));
        assert_eq!(iba_time(9), Duration::from_millis(2));
        assert_eq!(iba_time(16), Duration::from_millis(256));
        assert_eq!(iba_time(20), Duration::from_millis(4096));
        assert_eq!(iba_time(31), Duration::from_millis(1 << 23));
        assert_eq!(iba_time(200), iba_time(31));
    }

    #[test]
    fn ack_timeouts_round_as_cm_ack_timeout_does() {
        // life 16 -> 17; the ack delay 15 is not within 50%: stays 17.
        assert_eq!(ack_timeout(15, 16), 17);
        // life 16 -> 17; ack delay 16 is: rounds up to 18.
        assert_eq!(ack_timeout(16, 16), 18);
        // The ack delay dominates: 20, and life + 1 = 19 is within 50%.
        assert_eq!(ack_timeout(20, 18), 21);
        assert_eq!(ack_timeout(20, 10), 20);
        assert_eq!(ack_timeout(0, 0), 2);
        assert_eq!(ack_timeout(31, 31), 31);
    }
}
