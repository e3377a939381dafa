//! What the two stores share, so that they behave alike: the capacity
//! account, the writer's running length and MD5, the id generator, the
//! key-range selection of a listing, the order and markers of the uploads
//! listing, and the checks of CompleteMultipartUpload.
//!
//! Nothing here touches a file or holds an object's bytes; every function
//! is total (no panics on any input).

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hasher};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

use md5::{Digest, Md5};

use super::{
    CompletePart, ListFrom, MAX_PART_NUMBER, MIN_PART_SIZE, StoreError, UploadInfo, etag_md5, hex,
    multipart_etag,
};

/// The bytes a store holds against its capacity. Writers reserve as they
/// write; commits, deletes and dropped writers release.
#[derive(Debug)]
pub(crate) struct Capacity {
    capacity: u64,
    used: AtomicU64,
}

impl Capacity {
    /// An account of `capacity` bytes with `used` already held.
    pub(crate) fn new(capacity: u64, used: u64) -> Capacity {
        Capacity {
            capacity,
            used: AtomicU64::new(used),
        }
    }

    /// Takes `n` bytes, or fails with [`StoreError::Full`] taking nothing.
    pub(crate) fn reserve(&self, n: u64) -> Result<(), StoreError> {
        let full = StoreError::Full {
            capacity: self.capacity,
        };
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|t| *t <= self.capacity)
            })
            .map(|_| ())
            .map_err(|_| full)
    }

    /// Gives back `n` bytes (saturating: an account never goes negative).
    pub(crate) fn release(&self, n: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                Some(u.saturating_sub(n))
            });
    }

    /// Takes `n` bytes whatever the capacity (for bytes that replace ones
    /// already counted, such as a completed upload's parts).
    pub(crate) fn add(&self, n: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                Some(u.saturating_add(n))
            });
    }

    /// Bytes held.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// The capacity.
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }
}

/// A writer's running length and MD5.
#[derive(Clone, Default)]
pub(crate) struct Digesting {
    md5: Md5,
    written: u64,
}

impl Digesting {
    /// Counts and hashes `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.md5.update(data);
        self.written = self.written.saturating_add(data.len() as u64);
    }

    /// Bytes seen.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// The MD5 so far, leaving the state as it is.
    pub(crate) fn md5(&self) -> [u8; 16] {
        self.md5.clone().finalize().into()
    }

    /// The MD5 so far in hex: the ETag of a single-part object or a part.
    pub(crate) fn etag(&self) -> String {
        hex(&self.md5())
    }
}

/// splitmix64's finaliser: a bijection on u64 that scatters its input.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Unique, random-looking ids: a counter mixed with a per-store seed.
#[derive(Debug)]
pub(crate) struct IdGen {
    seed: u64,
    seed2: u64,
    counter: AtomicU64,
}

impl IdGen {
    /// A generator with a fresh random seed (from the standard library's
    /// per-process hash keys and the clock).
    pub(crate) fn new() -> IdGen {
        let rs = std::collections::hash_map::RandomState::new();
        let mut h = rs.build_hasher();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        h.write_u64(nanos);
        let seed = h.finish();
        h.write_u64(seed);
        IdGen {
            seed,
            seed2: h.finish(),
            counter: AtomicU64::new(0),
        }
    }

    /// A new upload id: 32 hex digits, never the same twice from one
    /// generator (the first 16 are a bijection of the counter).
    pub(crate) fn upload_id(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let a = mix(self.seed.wrapping_add(n));
        let b = mix(self.seed2 ^ a);
        format!("{a:016x}{b:016x}")
    }

    /// An upload id that `taken` does not already name.
    pub(crate) fn fresh_upload_id(&self, taken: impl Fn(&str) -> bool) -> String {
        loop {
            let id = self.upload_id();
            if !taken(&id) {
                return id;
            }
        }
    }

    /// A new 16-hex-digit name (unique per generator) for a temporary file.
    pub(crate) fn tmp_name(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("{:016x}", mix(self.seed2.wrapping_add(n)))
    }
}

/// Whether `id` could be an upload id this crate made or accepts:
/// 1 to 64 bytes of `[0-9a-zA-Z_-]`.
pub(crate) fn plausible_upload_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Refuses a part number outside 1..=[`MAX_PART_NUMBER`].
pub(crate) fn check_part_number(number: u32) -> Result<(), StoreError> {
    if (1..=MAX_PART_NUMBER).contains(&number) {
        Ok(())
    } else {
        Err(StoreError::InvalidPartNumber { number })
    }
}

/// The smallest string greater than every string that starts with `p`, in
/// UTF-8 byte order (= code point order), or None when there is none
/// (`p` empty or all `char::MAX`).
pub(crate) fn prefix_successor(p: &str) -> Option<String> {
    let mut s: Vec<char> = p.chars().collect();
    while let Some(c) = s.pop() {
        let next = match c as u32 {
            0xD7FF => Some('\u{E000}'),
            n => char::from_u32(n + 1),
        };
        if let Some(n) = next {
            s.push(n);
            return Some(s.into_iter().collect());
        }
    }
    None
}

/// The entries of `map` a listing returns: keys starting with `prefix`,
/// from `from` on, ascending, at most `limit`. Costs O(log n + returned):
/// it seeks with a range and `AfterPrefix` seeks past the whole prefix.
pub(crate) fn select_keys<'m, V>(
    map: &'m BTreeMap<String, V>,
    prefix: &'m str,
    from: ListFrom<'_>,
    limit: usize,
) -> impl Iterator<Item = (&'m String, &'m V)> + 'm {
    let lo: Option<Bound<String>> = match from {
        ListFrom::Start => Some(Bound::Included(prefix.to_owned())),
        ListFrom::After(k) if k < prefix => Some(Bound::Included(prefix.to_owned())),
        ListFrom::After(k) => Some(Bound::Excluded(k.to_owned())),
        ListFrom::AfterPrefix(p) => match prefix_successor(p) {
            Some(s) if s.as_str() < prefix => Some(Bound::Included(prefix.to_owned())),
            Some(s) => Some(Bound::Included(s)),
            None => None,
        },
    };
    let range = lo.map(|lo| map.range::<String, _>((lo, Bound::Unbounded)));
    range
        .into_iter()
        .flatten()
        .take_while(move |(k, _)| k.starts_with(prefix))
        .take(limit)
}

/// Where an upload sits in a uploads listing: by key, then initiation,
/// then id (for uploads made in the same millisecond).
pub(crate) type UploadOrder = BTreeSet<(String, i64, String)>;

/// The uploads a ListMultipartUploads returns from `order`: keys starting
/// with `prefix`, after the marker, at most `limit`. A marker `(key, None)`
/// starts after every upload of `key`; `(key, Some(id))` starts after that
/// upload if it is one of `key`'s, else after every upload of `key`.
pub(crate) fn select_uploads(
    order: &UploadOrder,
    prefix: &str,
    after: Option<(&str, Option<&str>)>,
    limit: usize,
    initiated_of: impl Fn(&str) -> Option<(String, i64)>,
) -> Vec<UploadInfo> {
    let mut lo = Bound::Included((prefix.to_owned(), i64::MIN, String::new()));
    if let Some((key, id)) = after {
        let found = id.and_then(|id| match initiated_of(id) {
            Some((k, t)) if k == key => Some((k, t, id.to_owned())),
            _ => None,
        });
        let marker = match found {
            Some(m) => Bound::Excluded(m),
            // Past every (key, _, _): the next key in byte order is key + "\0".
            None => Bound::Included((format!("{key}\0"), i64::MIN, String::new())),
        };
        let tighter = match (&marker, &lo) {
            (Bound::Excluded(m) | Bound::Included(m), Bound::Included(l)) => m > l,
            _ => false,
        };
        if tighter {
            lo = marker;
        }
    }
    order
        .range((lo, Bound::Unbounded))
        .take_while(|(k, _, _)| k.starts_with(prefix))
        .take(limit)
        .map(|(k, t, id)| UploadInfo {
            key: k.clone(),
            upload_id: id.clone(),
            initiated_ms: *t,
        })
        .collect()
}

/// What a store knows of one uploaded part, for the completion checks.
pub(crate) struct PartFacts {
    /// Its length.
    pub(crate) size: u64,
    /// Its ETag (hex MD5).
    pub(crate) etag: String,
}

/// Checks CompleteMultipartUpload's list against the parts uploaded
/// (`lookup` gives a part's facts by number): not empty and strictly
/// ascending ([`StoreError::InvalidPartOrder`]), each uploaded with that
/// ETag ([`StoreError::InvalidPart`], ETags compared as MD5s, so case and
/// quotes do not matter), each but the last at least [`MIN_PART_SIZE`]
/// ([`StoreError::EntityTooSmall`]). Returns the object's size and ETag.
pub(crate) fn check_completion(
    named: &[CompletePart],
    lookup: impl Fn(u32) -> Option<PartFacts>,
) -> Result<(u64, String), StoreError> {
    if named.is_empty() || named.windows(2).any(|w| w[0].number >= w[1].number) {
        return Err(StoreError::InvalidPartOrder);
    }
    let mut md5s = Vec::with_capacity(named.len());
    let mut size: u64 = 0;
    for (i, p) in named.iter().enumerate() {
        let invalid = || StoreError::InvalidPart {
            number: p.number,
            etag: p.etag.chars().take(80).collect(),
        };
        let facts = lookup(p.number).ok_or_else(invalid)?;
        let given = etag_md5(p.etag.trim_matches('"').to_ascii_lowercase().as_str());
        let have = etag_md5(&facts.etag);
        let md5 = match (given, have) {
            (Some(g), Some(h)) if g == h => h,
            _ => return Err(invalid()),
        };
        if i + 1 < named.len() && facts.size < MIN_PART_SIZE {
            return Err(StoreError::EntityTooSmall {
                number: p.number,
                size: facts.size,
            });
        }
        md5s.push(md5);
        size = size.saturating_add(facts.size);
    }
    Ok((size, multipart_etag(&md5s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_successor_is_the_next_string_past_the_prefix() {
        assert_eq!(prefix_successor("a/").as_deref(), Some("a0"));
        assert_eq!(prefix_successor("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(prefix_successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_successor("\u{10FFFF}"), None);
        assert_eq!(prefix_successor(""), None);
    }

    #[test]
    fn after_prefix_seeks_past_the_prefix_and_none_means_nothing_left() {
        let map: BTreeMap<String, ()> = ["a", "a\u{10FFFF}", "a\u{10FFFF}z", "b", "\u{10FFFF}"]
            .into_iter()
            .map(|k| (k.to_owned(), ()))
            .collect();
        let keys = |from, prefix| -> Vec<&str> {
            select_keys(&map, prefix, from, 10)
                .map(|(k, _)| k.as_str())
                .collect()
        };
        assert_eq!(
            keys(ListFrom::AfterPrefix("a\u{10FFFF}"), ""),
            ["b", "\u{10FFFF}"]
        );
        assert!(keys(ListFrom::AfterPrefix("\u{10FFFF}"), "").is_empty());
        assert_eq!(keys(ListFrom::AfterPrefix("a"), "b"), ["b"]);
        assert_eq!(
            keys(ListFrom::After("a"), "a"),
            ["a\u{10FFFF}", "a\u{10FFFF}z"]
        );
    }

    #[test]
    fn capacity_refuses_a_reservation_past_it_and_never_goes_negative() {
        let c = Capacity::new(10, 0);
        c.reserve(10).unwrap();
        assert!(matches!(
            c.reserve(1),
            Err(StoreError::Full { capacity: 10 })
        ));
        assert!(c.reserve(u64::MAX).is_err());
        c.release(20);
        assert_eq!(c.used(), 0);
    }
}
