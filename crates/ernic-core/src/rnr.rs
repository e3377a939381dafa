//! How long a request waits for its peer to post a receive: verbs'
//! `rnr_retry` on the requesting QP and `min_rnr_timer` on the responding
//! one, as the InfiniBand specification defines them (and as Linux's
//! `ib_verbs.h` and rdma-core's rxe spell the timer codes).
//!
//! A real requester retries a SEND its peer refused with an RNR NAK after
//! the peer's timer, up to `rnr_retry` times (7: forever). Here the
//! responder holds the message instead of refusing it, so it is given the
//! whole budget at once: `rnr_retry` times the timer. A QP that never set
//! `rnr_retry` (the Rust API, a guest whose driver does not say) gets the
//! engine's `rnr_timeout`. Between engines a budget without limit ends a
//! tenth of the request timeout short of it, so that a held message is
//! refused before its requester gives up on it, never delivered after.

use std::time::Duration;

/// The `rnr_retry` that retries without limit.
pub const RETRY_FOREVER: u8 = 7;

/// Microseconds of each 5-bit `min_rnr_timer` code (the RNR NAK timer field of the InfiniBand specification): code
/// 0 is the longest, 655.36 ms; 1 to 31 run from 0.01 ms to 491.52 ms.
const TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// The wait a `min_rnr_timer` code stands for (its low five bits).
pub fn timer(code: u8) -> Duration {
    Duration::from_micros(u64::from(TIMER_US[usize::from(code & 0x1f)]))
}

/// How long a message may wait for a receive: `retry` is the requester's
/// `rnr_retry` (`None`: it set none, and `default` applies), `code` the
/// responder's `min_rnr_timer`. `None` is without limit.
pub fn budget(retry: Option<u8>, code: u8, default: Duration) -> Option<Duration> {
    match retry {
        None => Some(default),
        Some(r) if r >= RETRY_FOREVER => None,
        Some(r) => Some(timer(code) * u32::from(r)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_codes_follow_the_ib_table() {
        assert_eq!(timer(0), Duration::from_micros(655_360));
        assert_eq!(timer(1), Duration::from_micros(10));
        // perftest and rdma_cm's default, 12: 0.64 ms.
        assert_eq!(timer(12), Duration::from_micros(640));
        assert_eq!(timer(14), Duration::from_micros(1_280));
        assert_eq!(timer(25), Duration::from_micros(61_440));
        assert_eq!(timer(31), Duration::from_micros(491_520));
        assert_eq!(timer(32 + 1), timer(1), "only the low five bits count");
    }

    #[test]
    fn the_budget_is_retries_times_the_timer() {
        let d = Duration::from_secs(5);
        assert_eq!(budget(None, 12, d), Some(d));
        assert_eq!(budget(Some(0), 12, d), Some(Duration::ZERO));
        assert_eq!(
            budget(Some(3), 14, d),
            Some(Duration::from_micros(3 * 1_280))
        );
        assert_eq!(budget(Some(7), 12, d), None);
    }
}
