//! Match tables at run time: entries added by the control plane (or const
//! entries from the file), the lookup structures for each match kind, entry
//! handles as bmv2 numbers them, direct counters and meters, and action
//! profiles with members, groups and selection.
//!
//! Handles follow bmv2's `match_units.cpp`: the lowest free index in the
//! low 24 bits and a version in the top 8 that a delete increments, so a
//! handle kept past a delete is refused as expired. Ternary and range
//! entries are tried in priority order, lower number first; ties go to the
//! entry found first.

use std::collections::{BTreeMap, HashMap};

use crate::program::{ConstMatch, MatchKind, Table, TableImpl};

use super::meter::Meter;

/// One field of an entry's key, as the control plane gives it (bytes are
/// big-endian, padded to the field's byte width).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchParam {
    /// Exact.
    Exact(Vec<u8>),
    /// Prefix of `len` bits.
    Lpm(Vec<u8>, u32),
    /// Value and mask.
    Ternary(Vec<u8>, Vec<u8>),
    /// Inclusive range.
    Range(Vec<u8>, Vec<u8>),
    /// Validity.
    Valid(bool),
}

impl From<&ConstMatch> for MatchParam {
    fn from(c: &ConstMatch) -> MatchParam {
        match c {
            ConstMatch::Exact(v) => MatchParam::Exact(v.clone()),
            ConstMatch::Lpm(v, l) => MatchParam::Lpm(v.clone(), *l),
            ConstMatch::Ternary(v, m) => MatchParam::Ternary(v.clone(), m.clone()),
            ConstMatch::Range(a, b) => MatchParam::Range(a.clone(), b.clone()),
            ConstMatch::Valid(v) => MatchParam::Valid(*v),
        }
    }
}

/// What an entry runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryAction {
    /// An action with its data.
    Direct {
        /// The action.
        action: u32,
        /// Its data.
        data: Vec<i128>,
    },
    /// An action profile member.
    Member(u32),
    /// An action profile group.
    Group(u32),
}

/// A table entry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The key as given.
    pub key: Vec<MatchParam>,
    /// Priority (ternary and range tables).
    pub priority: i32,
    /// What it runs.
    pub action: EntryAction,
    /// Direct counter: packets.
    pub packets: u64,
    /// Direct counter: bytes.
    pub bytes: u64,
    /// Direct meter.
    pub meter: Meter,
    /// Value bytes and mask bytes for the whole key, for lookup.
    value: Vec<u8>,
    mask: Vec<u8>,
}

/// Why a control-plane operation on a table failed (bmv2's
/// `MatchErrorCode`s, with its wording in the CLI).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// The table holds `max_size` entries.
    #[error("TABLE_FULL")]
    Full,
    /// An entry with the same key exists.
    #[error("DUPLICATE_ENTRY")]
    Duplicate,
    /// No entry has this handle.
    #[error("INVALID_HANDLE")]
    InvalidHandle,
    /// The handle's entry was deleted since.
    #[error("EXPIRED_HANDLE")]
    ExpiredHandle,
    /// Wrong number of key fields.
    #[error("BAD_MATCH_KEY")]
    BadMatchKey,
    /// A key field of the wrong kind or width.
    #[error("BAD_MATCH_KEY_PARAM")]
    BadMatchKeyParam,
    /// The action is not one of the table's.
    #[error("INVALID_ACTION_NAME")]
    InvalidAction,
    /// Wrong number of action parameters.
    #[error("BAD_ACTION_DATA")]
    BadActionData,
    /// The file made the table immutable.
    #[error("DEFAULT_ENTRY_IS_CONST")]
    DefaultConst,
    /// The file gave const entries.
    #[error("CONST_TABLE")]
    Immutable,
    /// Wrong kind of entry for the table's implementation.
    #[error("WRONG_TABLE_TYPE")]
    WrongType,
    /// No such member or group.
    #[error("INVALID_MBR_HANDLE")]
    InvalidMember,
    /// No such group.
    #[error("INVALID_GRP_HANDLE")]
    InvalidGroup,
    /// The table has no direct counters.
    #[error("COUNTERS_DISABLED")]
    CountersDisabled,
    /// The table has no direct meters.
    #[error("METERS_DISABLED")]
    MetersDisabled,
}

/// A table's run-time state.
#[derive(Clone, Debug)]
pub struct TableState {
    entries: Vec<Option<Entry>>,
    versions: Vec<u8>,
    free: std::collections::BTreeSet<u32>,
    count: usize,
    /// Exact tables: key bytes → index.
    exact: HashMap<Vec<u8>, u32>,
    /// LPM tables: prefix length (bits of the whole key) → masked key →
    /// index, longest first.
    lpm: BTreeMap<std::cmp::Reverse<u32>, HashMap<Vec<u8>, u32>>,
    /// Ternary and range tables: indices in priority order.
    ordered: Vec<u32>,
    /// The default action.
    pub default: EntryAction,
    /// Whether the default entry was set (a miss with none runs nothing).
    pub default_set: bool,
    kind: MatchKind,
    key_widths: Vec<(MatchKind, usize, u32)>,
    max_size: usize,
    /// Scratch for masking keys in lookups.
    scratch: Vec<u8>,
}

impl TableState {
    /// A table's state as the program loads it: const entries, the file's
    /// default entry.
    pub fn new(t: &Table) -> TableState {
        let kind = if t.key.iter().any(|k| k.kind == MatchKind::Range) {
            MatchKind::Range
        } else if t
            .key
            .iter()
            .any(|k| matches!(k.kind, MatchKind::Ternary | MatchKind::Optional))
        {
            MatchKind::Ternary
        } else if t.key.iter().any(|k| k.kind == MatchKind::Lpm) {
            MatchKind::Lpm
        } else {
            MatchKind::Exact
        };
        let (default, default_set) = match &t.default {
            Some(d) => (
                EntryAction::Direct {
                    action: d.action,
                    data: d.data.clone(),
                },
                true,
            ),
            None => (
                EntryAction::Direct {
                    action: u32::MAX,
                    data: Vec::new(),
                },
                false,
            ),
        };
        let mut s = TableState {
            entries: Vec::new(),
            versions: Vec::new(),
            free: Default::default(),
            count: 0,
            exact: HashMap::new(),
            lpm: BTreeMap::new(),
            ordered: Vec::new(),
            default,
            default_set,
            kind,
            key_widths: t.key.iter().map(|k| (k.kind, k.nbytes(), k.bits)).collect(),
            max_size: (t.max_size as usize).max(t.entries.len()),
            scratch: Vec::with_capacity(t.key_bytes),
        };
        for e in &t.entries {
            let key: Vec<MatchParam> = e.key.iter().map(MatchParam::from).collect();
            // Const entries were checked against the key at load.
            let _ = s.add(
                key,
                e.priority,
                EntryAction::Direct {
                    action: e.action,
                    data: e.data.clone(),
                },
            );
        }
        s
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The entry with `handle`.
    pub fn get(&self, handle: u32) -> Result<&Entry, TableError> {
        let (idx, ver) = split(handle);
        let e = self
            .entries
            .get(idx as usize)
            .and_then(Option::as_ref)
            .ok_or(TableError::InvalidHandle)?;
        if self.versions[idx as usize] != ver {
            return Err(TableError::ExpiredHandle);
        }
        Ok(e)
    }

    fn get_mut(&mut self, handle: u32) -> Result<&mut Entry, TableError> {
        self.get(handle)?;
        let (idx, _) = split(handle);
        self.entries[idx as usize]
            .as_mut()
            .ok_or(TableError::InvalidHandle)
    }

    /// Every entry's handle, in index order.
    pub fn handles(&self) -> Vec<u32> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_some())
            .map(|(i, _)| join(i as u32, self.versions[i]))
            .collect()
    }

    /// Checks a key against the table's key and turns it into value and
    /// mask bytes.
    fn encode(&self, key: &[MatchParam]) -> Result<(Vec<u8>, Vec<u8>), TableError> {
        if key.len() != self.key_widths.len() {
            return Err(TableError::BadMatchKey);
        }
        let mut value = Vec::new();
        let mut mask = Vec::new();
        for (p, &(kind, nbytes, bits)) in key.iter().zip(&self.key_widths) {
            let full = field_mask(nbytes, bits);
            let (v, m) = match (kind, p) {
                (MatchKind::Exact, MatchParam::Exact(v)) => (v.clone(), full),
                (MatchKind::Valid, MatchParam::Valid(_) | MatchParam::Exact(_)) if nbytes == 1 => {
                    let b = match p {
                        MatchParam::Valid(b) => *b,
                        MatchParam::Exact(v) => v[0] != 0,
                        _ => false,
                    };
                    (vec![b as u8], vec![1])
                }
                (MatchKind::Lpm, MatchParam::Lpm(v, len)) => {
                    if *len > bits {
                        return Err(TableError::BadMatchKeyParam);
                    }
                    (v.clone(), prefix_mask(nbytes, bits, *len))
                }
                (MatchKind::Ternary | MatchKind::Optional, MatchParam::Ternary(v, m)) => {
                    (v.clone(), m.clone())
                }
                (MatchKind::Optional | MatchKind::Ternary, MatchParam::Exact(v)) => {
                    (v.clone(), full)
                }
                (MatchKind::Range, MatchParam::Range(lo, _)) => (lo.clone(), vec![0; nbytes]),
                (MatchKind::Range, MatchParam::Exact(v)) => (v.clone(), vec![0; nbytes]),
                _ => return Err(TableError::BadMatchKeyParam),
            };
            if v.len() != nbytes || m.len() != nbytes {
                return Err(TableError::BadMatchKeyParam);
            }
            // Bits of the value outside the mask do not take part.
            value.extend(v.iter().zip(&m).map(|(a, b)| a & b));
            mask.extend(m);
        }
        Ok((value, mask))
    }

    /// Adds an entry, returning its handle.
    pub fn add(
        &mut self,
        key: Vec<MatchParam>,
        priority: i32,
        action: EntryAction,
    ) -> Result<u32, TableError> {
        let (value, mask) = self.encode(&key)?;
        let key = normalise_ranges(key, &self.key_widths);
        if self.find_same(&value, &mask, &key, priority).is_some() {
            return Err(TableError::Duplicate);
        }
        if self.count >= self.max_size {
            return Err(TableError::Full);
        }
        let idx = match self.free.pop_first() {
            Some(i) => i,
            None => {
                self.entries.push(None);
                self.versions.push(0);
                (self.entries.len() - 1) as u32
            }
        };
        let entry = Entry {
            key,
            priority,
            action,
            packets: 0,
            bytes: 0,
            meter: Meter::default(),
            value,
            mask,
        };
        self.index(idx, &entry);
        self.entries[idx as usize] = Some(entry);
        self.count += 1;
        if matches!(self.kind, MatchKind::Ternary | MatchKind::Range) {
            self.order();
        }
        Ok(join(idx, self.versions[idx as usize]))
    }

    fn find_same(
        &self,
        value: &[u8],
        mask: &[u8],
        key: &[MatchParam],
        priority: i32,
    ) -> Option<u32> {
        self.entries
            .iter()
            .position(|e| {
                e.as_ref().is_some_and(|e| {
                    e.value == value
                        && e.mask == mask
                        && e.key == key
                        && (!matches!(self.kind, MatchKind::Ternary | MatchKind::Range)
                            || e.priority == priority)
                })
            })
            .map(|i| i as u32)
    }

    fn index(&mut self, idx: u32, e: &Entry) {
        match self.kind {
            MatchKind::Exact | MatchKind::Valid => {
                self.exact.insert(e.value.clone(), idx);
            }
            MatchKind::Lpm => {
                let plen = e.mask.iter().map(|b| b.count_ones()).sum();
                self.lpm
                    .entry(std::cmp::Reverse(plen))
                    .or_default()
                    .insert(e.value.clone(), idx);
            }
            _ => {}
        }
    }

    fn order(&mut self) {
        let mut v: Vec<u32> = (0..self.entries.len() as u32)
            .filter(|&i| self.entries[i as usize].is_some())
            .collect();
        v.sort_by_key(|&i| {
            (
                self.entries[i as usize]
                    .as_ref()
                    .map_or(i32::MAX, |e| e.priority),
                i,
            )
        });
        self.ordered = v;
    }

    /// Deletes the entry with `handle`.
    pub fn delete(&mut self, handle: u32) -> Result<(), TableError> {
        self.get(handle)?;
        let (idx, _) = split(handle);
        let Some(e) = self.entries[idx as usize].take() else {
            return Err(TableError::InvalidHandle);
        };
        match self.kind {
            MatchKind::Exact | MatchKind::Valid => {
                self.exact.remove(&e.value);
            }
            MatchKind::Lpm => {
                let plen = e.mask.iter().map(|b| b.count_ones()).sum();
                if let Some(m) = self.lpm.get_mut(&std::cmp::Reverse(plen)) {
                    m.remove(&e.value);
                    if m.is_empty() {
                        self.lpm.remove(&std::cmp::Reverse(plen));
                    }
                }
            }
            _ => self.ordered.retain(|&i| i != idx),
        }
        self.versions[idx as usize] = self.versions[idx as usize].wrapping_add(1);
        self.free.insert(idx);
        self.count -= 1;
        Ok(())
    }

    /// Replaces the action of the entry with `handle`.
    pub fn modify(&mut self, handle: u32, action: EntryAction) -> Result<(), TableError> {
        self.get_mut(handle)?.action = action;
        Ok(())
    }

    /// Removes every entry (the default entry stays).
    pub fn clear(&mut self) {
        for h in self.handles() {
            let _ = self.delete(h);
        }
    }

    /// Direct counter of an entry, mutable (the control plane's write).
    pub fn entry_mut(&mut self, handle: u32) -> Result<&mut Entry, TableError> {
        self.get_mut(handle)
    }

    /// Every entry, for counter resets.
    pub fn entries_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.entries.iter_mut().flatten()
    }

    /// Looks up `key` (the table's key bytes for the packet), returning the
    /// hit entry's index.
    pub fn lookup(&mut self, key: &[u8]) -> Option<u32> {
        if self.count == 0 {
            return None;
        }
        match self.kind {
            MatchKind::Exact | MatchKind::Valid => self.exact.get(key).copied(),
            MatchKind::Lpm => {
                for map in self.lpm.values() {
                    let Some(&idx) = map.values().next() else {
                        continue;
                    };
                    let mask = &self.entries[idx as usize].as_ref()?.mask;
                    self.scratch.clear();
                    self.scratch
                        .extend(key.iter().zip(mask).map(|(a, b)| a & b));
                    if let Some(&i) = map.get(&self.scratch) {
                        return Some(i);
                    }
                }
                None
            }
            _ => {
                let widths = &self.key_widths;
                self.ordered.iter().copied().find(|&i| {
                    let Some(e) = self.entries[i as usize].as_ref() else {
                        return false;
                    };
                    matches_masked(key, e, widths)
                })
            }
        }
    }

    /// The entry at lookup index `idx`.
    pub fn at(&mut self, idx: u32) -> Option<&mut Entry> {
        self.entries.get_mut(idx as usize).and_then(Option::as_mut)
    }

    /// The handle of the entry at index `idx`.
    pub fn handle_of(&self, idx: u32) -> u32 {
        join(idx, self.versions.get(idx as usize).copied().unwrap_or(0))
    }

    /// Whether the table's implementation takes this kind of entry.
    pub fn check_impl(imp: TableImpl, a: &EntryAction) -> Result<(), TableError> {
        match (imp, a) {
            (TableImpl::Simple, EntryAction::Direct { .. }) => Ok(()),
            (TableImpl::Indirect(_), EntryAction::Member(_)) => Ok(()),
            (TableImpl::IndirectWs(_), EntryAction::Member(_) | EntryAction::Group(_)) => Ok(()),
            _ => Err(TableError::WrongType),
        }
    }

    /// The key of the entry with `handle`, as matched (for dumps).
    pub fn find_key(&self, key: &[MatchParam], priority: i32) -> Result<u32, TableError> {
        let (value, mask) = self.encode(key)?;
        let key = normalise_ranges(key.to_vec(), &self.key_widths);
        self.find_same(&value, &mask, &key, priority)
            .map(|i| self.handle_of(i))
            .ok_or(TableError::InvalidHandle)
    }
}

fn matches_masked(key: &[u8], e: &Entry, widths: &[(MatchKind, usize, u32)]) -> bool {
    if key.len() != e.value.len() {
        return false;
    }
    if !key
        .iter()
        .zip(&e.mask)
        .zip(&e.value)
        .all(|((k, m), v)| k & m == *v)
    {
        return false;
    }
    // Range fields: lo <= k <= hi, big-endian byte strings of equal length.
    let mut off = 0;
    for (p, &(kind, nbytes, _)) in e.key.iter().zip(widths) {
        if kind == MatchKind::Range {
            if let MatchParam::Range(lo, hi) = p {
                let k = &key[off..off + nbytes];
                if k < lo.as_slice() || k > hi.as_slice() {
                    return false;
                }
            }
        }
        off += nbytes;
    }
    true
}

/// A range key given as `Exact` becomes the one-value range.
fn normalise_ranges(key: Vec<MatchParam>, widths: &[(MatchKind, usize, u32)]) -> Vec<MatchParam> {
    key.into_iter()
        .zip(widths)
        .map(|(p, w)| match (w.0, p) {
            (MatchKind::Range, MatchParam::Exact(v)) => MatchParam::Range(v.clone(), v),
            (_, p) => p,
        })
        .collect()
}

/// All ones over a field's `bits`, right-aligned in `nbytes`.
pub(crate) fn field_mask(nbytes: usize, bits: u32) -> Vec<u8> {
    prefix_mask(nbytes, bits, bits)
}

/// The first `len` bits of a `bits`-wide field right-aligned in `nbytes`.
pub(crate) fn prefix_mask(nbytes: usize, bits: u32, len: u32) -> Vec<u8> {
    let pad = nbytes as u32 * 8 - bits;
    (0..nbytes as u32)
        .map(|i| {
            let mut b = 0u8;
            for j in 0..8 {
                let pos = i * 8 + j;
                if pos >= pad && pos < pad + len {
                    b |= 0x80 >> j;
                }
            }
            b
        })
        .collect()
}

fn split(handle: u32) -> (u32, u8) {
    (handle & 0x00ff_ffff, (handle >> 24) as u8)
}

fn join(idx: u32, ver: u8) -> u32 {
    (u32::from(ver) << 24) | idx
}

/// An action profile's members and groups.
#[derive(Clone, Debug, Default)]
pub struct ProfileState {
    /// Members: action and data.
    pub members: Vec<Option<(u32, Vec<i128>)>>,
    /// Groups: their members.
    pub groups: Vec<Option<Vec<u32>>>,
}

impl ProfileState {
    /// Adds a member, returning its handle (lowest free).
    pub fn add_member(&mut self, action: u32, data: Vec<i128>) -> u32 {
        lowest_free(&mut self.members, (action, data))
    }

    /// Adds an empty group, returning its handle.
    pub fn add_group(&mut self) -> u32 {
        lowest_free(&mut self.groups, Vec::new())
    }
}

fn lowest_free<T>(v: &mut Vec<Option<T>>, x: T) -> u32 {
    match v.iter().position(Option::is_none) {
        Some(i) => {
            v[i] = Some(x);
            i as u32
        }
        None => {
            v.push(Some(x));
            (v.len() - 1) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_align_right_in_the_padded_bytes() {
        // A 12-bit field in 2 bytes: the top 4 bits are padding.
        assert_eq!(field_mask(2, 12), vec![0x0f, 0xff]);
        assert_eq!(prefix_mask(4, 32, 8), vec![0xff, 0, 0, 0]);
        assert_eq!(prefix_mask(2, 12, 4), vec![0x0f, 0x00]);
    }
}
