//! The message buffer: a sliding window over sequence numbers, mapping each
//! in-flight message's sequence number to its element (a request, or a
//! received control message waiting for its request).
//!
//! Sequence numbers are `bits` wide and wrap (10 bits in the protocol's
//! immediate word). A window of `size` entries covers the numbers from the
//! oldest incomplete message on; a number is *in progress* inside the
//! window, *completed* if it is at most `size` below it, *not started* if
//! there is room for it ahead, and *unavailable* otherwise. The window must
//! be at most half the sequence space, or completed and not-started numbers
//! could not be told apart: with 10 bits and 128 messages in flight per
//! comm, a window of 256 never aliases two live messages.

/// Where a sequence number stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Inside the window, inserted and not yet completed.
    InProgress,
    /// Recently completed.
    Completed,
    /// Ahead of the window, and there is room for it.
    NotStarted,
    /// Ahead of the window, with no room for it yet.
    Unavailable,
}

/// An operation refused for the sequence number's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("sequence number {seq} is {status:?}")]
pub struct InvalidIndex {
    /// The sequence number.
    pub seq: u16,
    /// Its status.
    pub status: Status,
}

#[derive(Debug, Clone)]
struct Slot<T> {
    /// NotStarted (skipped over by a later insert), InProgress or Completed.
    state: Status,
    elem: Option<T>,
}

/// The window.
#[derive(Debug, Clone)]
pub struct MsgBuff<T> {
    slots: Vec<Slot<T>>,
    mask: u16,
    /// The oldest sequence number not yet completed.
    last_incomplete: u16,
    /// One past the newest inserted.
    next: u16,
}

impl<T> MsgBuff<T> {
    /// A window of `size` entries over `bits`-bit sequence numbers.
    ///
    /// # Panics
    ///
    /// If `size` is 0 or more than half the sequence space (a programming
    /// error: the window would alias).
    pub fn new(size: u16, bits: u32) -> MsgBuff<T> {
        assert!((1..=16).contains(&bits), "sequence numbers of {bits} bits");
        let space = 1u32 << bits;
        assert!(
            size > 0 && u32::from(size) <= space / 2,
            "window {size} over {bits}-bit numbers"
        );
        MsgBuff {
            slots: (0..size)
                .map(|_| Slot {
                    state: Status::NotStarted,
                    elem: None,
                })
                .collect(),
            mask: (space - 1) as u16,
            last_incomplete: 0,
            next: 0,
        }
    }

    fn size(&self) -> u16 {
        self.slots.len() as u16
    }

    fn sub(&self, a: u16, b: u16) -> u16 {
        a.wrapping_sub(b) & self.mask
    }

    fn slot(&self, seq: u16) -> usize {
        (seq % self.size()) as usize
    }

    /// Where `seq` stands.
    pub fn status(&self, seq: u16) -> Status {
        let seq = seq & self.mask;
        let inflight = self.sub(self.next, self.last_incomplete);
        if self.sub(seq, self.last_incomplete) < inflight {
            return self.slots[self.slot(seq)].state;
        }
        if seq != self.last_incomplete && self.sub(self.last_incomplete, seq) <= self.size() {
            return Status::Completed;
        }
        if self.sub(seq, self.next) < self.size() - inflight {
            return Status::NotStarted;
        }
        Status::Unavailable
    }

    /// Starts `seq` with `elem`. Numbers skipped on the way enter the window
    /// as not started: they may still be inserted later (a message may
    /// arrive before an earlier one).
    pub fn insert(&mut self, seq: u16, elem: T) -> Result<(), InvalidIndex> {
        let seq = seq & self.mask;
        let status = self.status(seq);
        if status != Status::NotStarted {
            return Err(InvalidIndex { seq, status });
        }
        // A number ahead of the window opens every number up to it; one
        // skipped earlier is already inside.
        if self.sub(seq, self.last_incomplete) >= self.in_flight() {
            while self.next != seq {
                let i = self.slot(self.next);
                self.slots[i] = Slot {
                    state: Status::NotStarted,
                    elem: None,
                };
                self.next = self.next.wrapping_add(1) & self.mask;
            }
            self.next = seq.wrapping_add(1) & self.mask;
        }
        let i = self.slot(seq);
        self.slots[i] = Slot {
            state: Status::InProgress,
            elem: Some(elem),
        };
        Ok(())
    }

    /// Puts `elem` at `seq`: replaces the element of an in-progress `seq`
    /// (something that came first, such as a message before its receive),
    /// or starts it.
    pub fn put(&mut self, seq: u16, elem: T) -> Result<(), InvalidIndex> {
        if self.status(seq) == Status::InProgress {
            self.replace(seq, elem).map(|_| ())
        } else {
            self.insert(seq, elem)
        }
    }

    /// Replaces the element of an in-progress `seq`.
    pub fn replace(&mut self, seq: u16, elem: T) -> Result<Option<T>, InvalidIndex> {
        let seq = seq & self.mask;
        match self.status(seq) {
            Status::InProgress => {
                let i = self.slot(seq);
                Ok(self.slots[i].elem.replace(elem))
            }
            status => Err(InvalidIndex { seq, status }),
        }
    }

    /// The element of an in-progress `seq`.
    pub fn retrieve(&self, seq: u16) -> Result<Option<&T>, InvalidIndex> {
        let seq = seq & self.mask;
        match self.status(seq) {
            Status::InProgress => Ok(self.slots[self.slot(seq)].elem.as_ref()),
            // Unavailable only means something to insert.
            Status::Unavailable => Err(InvalidIndex {
                seq,
                status: Status::NotStarted,
            }),
            status => Err(InvalidIndex { seq, status }),
        }
    }

    /// Completes an in-progress `seq`, returning its element; the window's
    /// tail moves past every completed number.
    pub fn complete(&mut self, seq: u16) -> Result<Option<T>, InvalidIndex> {
        let seq = seq & self.mask;
        match self.status(seq) {
            Status::InProgress => {
                let i = self.slot(seq);
                self.slots[i].state = Status::Completed;
                let elem = self.slots[i].elem.take();
                while self.last_incomplete != self.next
                    && self.slots[self.slot(self.last_incomplete)].state == Status::Completed
                {
                    self.last_incomplete = (self.last_incomplete.wrapping_add(1)) & self.mask;
                }
                Ok(elem)
            }
            Status::Unavailable => Err(InvalidIndex {
                seq,
                status: Status::NotStarted,
            }),
            status => Err(InvalidIndex { seq, status }),
        }
    }

    /// Messages between the oldest incomplete and the newest inserted.
    pub fn in_flight(&self) -> u16 {
        self.sub(self.next, self.last_incomplete)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// aws-ofi-nccl tests/unit/msgbuff.c, with a 4-entry window.
    #[test]
    fn upstream_scenario() {
        let mut m: MsgBuff<u16> = MsgBuff::new(4, 16);
        for i in 0..4u16 {
            m.insert(i, i).unwrap();
        }
        assert_eq!(
            m.insert(4, 9),
            Err(InvalidIndex {
                seq: 4,
                status: Status::Unavailable
            }),
            "full"
        );
        assert_eq!(
            m.insert(3, 9),
            Err(InvalidIndex {
                seq: 3,
                status: Status::InProgress
            }),
            "duplicate"
        );
        for i in 0..4u16 {
            assert_eq!(m.retrieve(i), Ok(Some(&i)));
        }
        assert_eq!(m.retrieve(4).unwrap_err().status, Status::NotStarted);
        assert_eq!(m.retrieve(u16::MAX).unwrap_err().status, Status::Completed);
        for i in 0..4u16 {
            assert_eq!(m.complete(i), Ok(Some(i)));
        }
        assert_eq!(m.complete(4).unwrap_err().status, Status::NotStarted);
        assert_eq!(m.complete(0).unwrap_err().status, Status::Completed);
    }

    #[test]
    fn ten_bit_numbers_wrap_over_many_rounds() {
        let mut m: MsgBuff<u32> = MsgBuff::new(256, 10);
        let mut live = std::collections::VecDeque::new();
        for n in 0u32..10_000 {
            let seq = (n % 1024) as u16;
            m.insert(seq, n).unwrap();
            live.push_back((seq, n));
            if live.len() == 128 {
                let (s, v) = live.pop_front().unwrap();
                assert_eq!(m.retrieve(s), Ok(Some(&v)));
                assert_eq!(m.complete(s), Ok(Some(v)));
                assert_eq!(m.status(s), Status::Completed);
            }
        }
        assert_eq!(
            m.in_flight(),
            127,
            "each round keeps 127 live after completing the oldest"
        );
    }

    #[test]
    fn out_of_order_completion_holds_the_tail() {
        let mut m: MsgBuff<u8> = MsgBuff::new(4, 10);
        for s in 0..4 {
            m.insert(s, s as u8).unwrap();
        }
        m.complete(2).unwrap();
        assert_eq!(m.status(2), Status::Completed);
        assert_eq!(
            m.insert(4, 0).unwrap_err().status,
            Status::Unavailable,
            "0 still holds the window"
        );
        m.complete(0).unwrap();
        m.complete(1).unwrap();
        assert_eq!(m.in_flight(), 1, "the tail moved past 0, 1 and 2");
        m.insert(4, 4).unwrap();
        m.insert(5, 5).unwrap();
        m.insert(6, 6).unwrap();
        assert_eq!(m.insert(7, 7).unwrap_err().status, Status::Unavailable);
    }

    #[test]
    fn a_number_skipped_by_a_later_insert_can_still_be_inserted() {
        let mut m: MsgBuff<u8> = MsgBuff::new(8, 10);
        m.insert(3, 3).unwrap();
        assert_eq!(m.status(1), Status::NotStarted);
        assert_eq!(m.retrieve(1).unwrap_err().status, Status::NotStarted);
        m.insert(1, 1).unwrap();
        assert_eq!(m.retrieve(1), Ok(Some(&1)));
        assert_eq!(m.replace(1, 9), Ok(Some(1)));
        assert_eq!(m.put(1, 8), Ok(()), "put replaces an in-progress number");
        assert_eq!(m.retrieve(1), Ok(Some(&8)));
        assert_eq!(m.insert(1, 1).unwrap_err().status, Status::InProgress);
        // The tail waits for 0 and 2, which were never inserted.
        m.complete(1).unwrap();
        m.complete(3).unwrap();
        assert_eq!(m.in_flight(), 4);
        m.insert(0, 0).unwrap();
        m.insert(2, 2).unwrap();
        m.complete(0).unwrap();
        m.complete(2).unwrap();
        assert_eq!(m.in_flight(), 0);
        assert_eq!(m.status(3), Status::Completed);
    }
}
