//! The control plane's operations on a running switch, by name, with the
//! checks bmv2 makes: the table and action exist, the action is one of the
//! table's, the data has the action's parameter count and each value fits
//! its width, the key has the table's shape. The runtime CLI
//! ([`crate::runtime`]) is text over these.

use crate::program::TableImpl;

use super::meter::Rate;
use super::switch::Switch;
use super::tables::{EntryAction, MatchParam, TableError};

/// Why a control-plane operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// No table of that name.
    #[error("Invalid table name ({0})")]
    NoTable(String),
    /// No action of that name (or not one of the table's).
    #[error("Invalid action name ({0})")]
    NoAction(String),
    /// No such counter array.
    #[error("Invalid counter name ({0})")]
    NoCounter(String),
    /// No such register array.
    #[error("Invalid register name ({0})")]
    NoRegister(String),
    /// No such meter array.
    #[error("Invalid meter name ({0})")]
    NoMeter(String),
    /// No such action profile.
    #[error("Invalid action profile name ({0})")]
    NoProfile(String),
    /// No such parse value set.
    #[error("Invalid parse value set name ({0})")]
    NoValueSet(String),
    /// Wrong number of action parameters.
    #[error("Action {action} needs {expected} parameters")]
    ParamCount {
        /// The action.
        action: String,
        /// Its parameter count.
        expected: usize,
    },
    /// A value wider than its field or parameter.
    #[error("Invalid value for {what}: {value:#x} does not fit in {bits} bits")]
    TooWide {
        /// What it was for.
        what: String,
        /// The value.
        value: i128,
        /// The width.
        bits: u32,
    },
    /// An index past an array's end.
    #[error("Invalid index {index} for {array} (size {size})")]
    Index {
        /// The array.
        array: String,
        /// The index.
        index: u64,
        /// Its size.
        size: usize,
    },
    /// The table refused the operation.
    #[error("{0}")]
    Table(#[from] TableError),
}

impl Switch {
    fn table_id(&self, name: &str) -> Result<usize, ControlError> {
        self.program
            .table(name)
            .map(|t| t as usize)
            .ok_or_else(|| ControlError::NoTable(name.into()))
    }

    /// Checks `action` is one of table `t`'s and `data` fits it.
    fn action_for(&self, t: usize, action: &str, data: &[i128]) -> Result<u32, ControlError> {
        let table = &self.program.tables[t];
        let a = table
            .actions
            .iter()
            .copied()
            .find(|&a| {
                let n = &self.program.actions[a as usize].name;
                n == action || n.rsplit('.').next() == Some(action)
            })
            .ok_or_else(|| ControlError::NoAction(action.into()))?;
        self.check_data(a, data)?;
        Ok(a)
    }

    fn check_data(&self, a: u32, data: &[i128]) -> Result<(), ControlError> {
        let act = &self.program.actions[a as usize];
        if act.params.len() != data.len() {
            return Err(ControlError::ParamCount {
                action: act.name.clone(),
                expected: act.params.len(),
            });
        }
        for ((name, bits), &v) in act.params.iter().zip(data) {
            fits(name, v, *bits)?;
        }
        Ok(())
    }

    /// `table_add`: returns the entry's handle.
    pub fn table_add(
        &mut self,
        table: &str,
        action: &str,
        key: Vec<MatchParam>,
        data: Vec<i128>,
        priority: i32,
    ) -> Result<u32, ControlError> {
        let t = self.table_id(table)?;
        if self.program.tables[t].immutable {
            return Err(TableError::Immutable.into());
        }
        let a = self.action_for(t, action, &data)?;
        let entry = EntryAction::Direct { action: a, data };
        super::tables::TableState::check_impl(self.program.tables[t].imp, &entry)?;
        Ok(self.state.tables[t].add(key, priority, entry)?)
    }

    /// `table_indirect_add` / `_with_group`: an entry naming a member or a
    /// group of the table's action profile.
    pub fn table_add_indirect(
        &mut self,
        table: &str,
        key: Vec<MatchParam>,
        target: EntryAction,
        priority: i32,
    ) -> Result<u32, ControlError> {
        let t = self.table_id(table)?;
        if self.program.tables[t].immutable {
            return Err(TableError::Immutable.into());
        }
        super::tables::TableState::check_impl(self.program.tables[t].imp, &target)?;
        self.check_target(t, &target)?;
        Ok(self.state.tables[t].add(key, priority, target)?)
    }

    fn check_target(&self, t: usize, target: &EntryAction) -> Result<(), ControlError> {
        let prof = match self.program.tables[t].imp {
            TableImpl::Indirect(p) | TableImpl::IndirectWs(p) => p as usize,
            TableImpl::Simple => return Ok(()),
        };
        let ps = &self.state.profiles[prof];
        match target {
            EntryAction::Member(m) if ps.members.get(*m as usize).is_some_and(Option::is_some) => {
                Ok(())
            }
            EntryAction::Member(_) => Err(TableError::InvalidMember.into()),
            EntryAction::Group(g) if ps.groups.get(*g as usize).is_some_and(Option::is_some) => {
                Ok(())
            }
            EntryAction::Group(_) => Err(TableError::InvalidGroup.into()),
            EntryAction::Direct { .. } => Ok(()),
        }
    }

    /// `table_modify`.
    pub fn table_modify(
        &mut self,
        table: &str,
        action: &str,
        handle: u32,
        data: Vec<i128>,
    ) -> Result<(), ControlError> {
        let t = self.table_id(table)?;
        if self.program.tables[t].immutable {
            return Err(TableError::Immutable.into());
        }
        let a = self.action_for(t, action, &data)?;
        Ok(self.state.tables[t].modify(handle, EntryAction::Direct { action: a, data })?)
    }

    /// `table_delete`.
    pub fn table_delete(&mut self, table: &str, handle: u32) -> Result<(), ControlError> {
        let t = self.table_id(table)?;
        if self.program.tables[t].immutable {
            return Err(TableError::Immutable.into());
        }
        Ok(self.state.tables[t].delete(handle)?)
    }

    /// `table_clear`.
    pub fn table_clear(&mut self, table: &str) -> Result<(), ControlError> {
        let t = self.table_id(table)?;
        if self.program.tables[t].immutable {
            return Err(TableError::Immutable.into());
        }
        self.state.tables[t].clear();
        Ok(())
    }

    /// `table_set_default`.
    pub fn table_set_default(
        &mut self,
        table: &str,
        action: &str,
        data: Vec<i128>,
    ) -> Result<(), ControlError> {
        let t = self.table_id(table)?;
        let a = self.action_for(t, action, &data)?;
        if let Some(d) = &self.program.tables[t].default {
            if d.action_const && d.action != a {
                return Err(TableError::DefaultConst.into());
            }
            if d.entry_const {
                return Err(TableError::DefaultConst.into());
            }
        }
        let ts = &mut self.state.tables[t];
        ts.default = EntryAction::Direct { action: a, data };
        ts.default_set = true;
        Ok(())
    }

    /// `table_indirect_set_default` / `_with_group`.
    pub fn table_set_default_indirect(
        &mut self,
        table: &str,
        target: EntryAction,
    ) -> Result<(), ControlError> {
        let t = self.table_id(table)?;
        super::tables::TableState::check_impl(self.program.tables[t].imp, &target)?;
        self.check_target(t, &target)?;
        let ts = &mut self.state.tables[t];
        ts.default = target;
        ts.default_set = true;
        Ok(())
    }

    /// `table_reset_default`: back to the file's default entry.
    pub fn table_reset_default(&mut self, table: &str) -> Result<(), ControlError> {
        let t = self.table_id(table)?;
        let fresh = super::tables::TableState::new(&self.program.tables[t]);
        let ts = &mut self.state.tables[t];
        ts.default = fresh.default;
        ts.default_set = fresh.default_set;
        Ok(())
    }

    fn profile_id(&self, name: &str) -> Result<usize, ControlError> {
        crate::program::find_by_name(
            self.program.action_profiles.iter().map(|a| a.name.as_str()),
            name,
        )
        .map(|p| p as usize)
        .ok_or_else(|| ControlError::NoProfile(name.into()))
    }

    /// `act_prof_create_member`: returns the member handle.
    pub fn member_create(
        &mut self,
        profile: &str,
        action: &str,
        data: Vec<i128>,
    ) -> Result<u32, ControlError> {
        let p = self.profile_id(profile)?;
        let a = self
            .program
            .action(action)
            .ok_or_else(|| ControlError::NoAction(action.into()))?;
        self.check_data(a, &data)?;
        Ok(self.state.profiles[p].add_member(a, data))
    }

    /// `act_prof_modify_member`.
    pub fn member_modify(
        &mut self,
        profile: &str,
        action: &str,
        member: u32,
        data: Vec<i128>,
    ) -> Result<(), ControlError> {
        let p = self.profile_id(profile)?;
        let a = self
            .program
            .action(action)
            .ok_or_else(|| ControlError::NoAction(action.into()))?;
        self.check_data(a, &data)?;
        let slot = self.state.profiles[p]
            .members
            .get_mut(member as usize)
            .filter(|m| m.is_some())
            .ok_or(TableError::InvalidMember)?;
        *slot = Some((a, data));
        Ok(())
    }

    /// `act_prof_delete_member`.
    pub fn member_delete(&mut self, profile: &str, member: u32) -> Result<(), ControlError> {
        let p = self.profile_id(profile)?;
        let slot = self.state.profiles[p]
            .members
            .get_mut(member as usize)
            .filter(|m| m.is_some())
            .ok_or(TableError::InvalidMember)?;
        *slot = None;
        for g in self.state.profiles[p].groups.iter_mut().flatten() {
            g.retain(|&m| m != member);
        }
        Ok(())
    }

    /// `act_prof_create_group`: returns the group handle.
    pub fn group_create(&mut self, profile: &str) -> Result<u32, ControlError> {
        let p = self.profile_id(profile)?;
        Ok(self.state.profiles[p].add_group())
    }

    /// `act_prof_delete_group`.
    pub fn group_delete(&mut self, profile: &str, group: u32) -> Result<(), ControlError> {
        let p = self.profile_id(profile)?;
        let slot = self.state.profiles[p]
            .groups
            .get_mut(group as usize)
            .filter(|g| g.is_some())
            .ok_or(TableError::InvalidGroup)?;
        *slot = None;
        Ok(())
    }

    /// `act_prof_add_member_to_group` / `_remove_member_from_group`.
    pub fn group_member(
        &mut self,
        profile: &str,
        member: u32,
        group: u32,
        add: bool,
    ) -> Result<(), ControlError> {
        let p = self.profile_id(profile)?;
        let ps = &mut self.state.profiles[p];
        if !ps.members.get(member as usize).is_some_and(Option::is_some) {
            return Err(TableError::InvalidMember.into());
        }
        let g = ps
            .groups
            .get_mut(group as usize)
            .and_then(Option::as_mut)
            .ok_or(TableError::InvalidGroup)?;
        if add {
            // bmv2 keeps a group's members ordered by handle, and the
            // selector's hash picks among them in that order.
            if let Err(at) = g.binary_search(&member) {
                g.insert(at, member);
            }
        } else {
            g.retain(|&m| m != member);
        }
        Ok(())
    }

    fn counter_id(&self, name: &str) -> Result<usize, ControlError> {
        crate::program::find_by_name(self.program.counters.iter().map(|c| c.name.as_str()), name)
            .map(|c| c as usize)
            .ok_or_else(|| ControlError::NoCounter(name.into()))
    }

    /// `counter_read`: `(packets, bytes)` of a cell (a direct counter's
    /// cell is its table entry's handle).
    pub fn counter_read(&mut self, name: &str, index: u64) -> Result<(u64, u64), ControlError> {
        let c = self.counter_id(name)?;
        if let Some(t) = self.direct_table(c) {
            let e = self.state.tables[t].entry_mut(index as u32)?;
            return Ok((e.packets, e.bytes));
        }
        let arr = &self.state.counters[c];
        cell(arr, name, index)
    }

    /// `counter_write`.
    pub fn counter_write(
        &mut self,
        name: &str,
        index: u64,
        packets: u64,
        bytes: u64,
    ) -> Result<(), ControlError> {
        let c = self.counter_id(name)?;
        if let Some(t) = self.direct_table(c) {
            let e = self.state.tables[t].entry_mut(index as u32)?;
            (e.packets, e.bytes) = (packets, bytes);
            return Ok(());
        }
        let arr = &mut self.state.counters[c];
        let cell = cell_mut(arr, name, index)?;
        *cell = (packets, bytes);
        Ok(())
    }

    /// `counter_reset`: every cell to zero.
    pub fn counter_reset(&mut self, name: &str) -> Result<(), ControlError> {
        let c = self.counter_id(name)?;
        if let Some(t) = self.direct_table(c) {
            for e in self.state.tables[t].entries_mut() {
                (e.packets, e.bytes) = (0, 0);
            }
            return Ok(());
        }
        self.state.counters[c].fill((0, 0));
        Ok(())
    }

    fn direct_table(&self, c: usize) -> Option<usize> {
        let t = self.program.counters[c].direct_table.as_deref()?;
        self.program.table(t).map(|t| t as usize)
    }

    fn register_id(&self, name: &str) -> Result<usize, ControlError> {
        crate::program::find_by_name(self.program.registers.iter().map(|r| r.name.as_str()), name)
            .map(|r| r as usize)
            .ok_or_else(|| ControlError::NoRegister(name.into()))
    }

    /// `register_read` of one cell.
    pub fn register_read(&self, name: &str, index: u64) -> Result<u128, ControlError> {
        let r = self.register_id(name)?;
        let arr = &self.state.registers[r];
        cell(arr, name, index)
    }

    /// `register_read` of every cell.
    pub fn register_read_all(&self, name: &str) -> Result<&[u128], ControlError> {
        Ok(&self.state.registers[self.register_id(name)?])
    }

    /// `register_write`.
    pub fn register_write(
        &mut self,
        name: &str,
        index: u64,
        value: i128,
    ) -> Result<(), ControlError> {
        let r = self.register_id(name)?;
        let bits = self.program.registers[r].bits;
        fits(name, value, bits)?;
        let arr = &mut self.state.registers[r];
        let cell = cell_mut(arr, name, index)?;
        *cell = value as u128 & super::bits::mask(bits);
        Ok(())
    }

    /// `register_reset`.
    pub fn register_reset(&mut self, name: &str) -> Result<(), ControlError> {
        let r = self.register_id(name)?;
        self.state.registers[r].fill(0);
        Ok(())
    }

    /// `meter_set_rates` of one cell (`None`: every cell,
    /// `meter_array_set_rates`). A direct meter's cell is its entry's
    /// handle.
    pub fn meter_set_rates(
        &mut self,
        name: &str,
        index: Option<u64>,
        rates: Vec<Rate>,
    ) -> Result<(), ControlError> {
        let m =
            crate::program::find_by_name(self.program.meters.iter().map(|m| m.name.as_str()), name)
                .map(|m| m as usize)
                .ok_or_else(|| ControlError::NoMeter(name.into()))?;
        if let Some(t) = self.program.meters[m]
            .direct_table
            .as_deref()
            .and_then(|t| self.program.table(t))
        {
            match index {
                Some(h) => self.state.tables[t as usize]
                    .entry_mut(h as u32)?
                    .meter
                    .set_rates(rates),
                None => {
                    for e in self.state.tables[t as usize].entries_mut() {
                        e.meter.set_rates(rates.clone());
                    }
                }
            }
            return Ok(());
        }
        let arr = &mut self.state.meters[m];
        match index {
            Some(i) => {
                let size = arr.len();
                arr.get_mut(i as usize)
                    .ok_or(ControlError::Index {
                        array: name.into(),
                        index: i,
                        size,
                    })?
                    .set_rates(rates)
            }
            None => arr.iter_mut().for_each(|c| c.set_rates(rates.clone())),
        }
        Ok(())
    }

    /// `meter_get_rates`: a cell's rates (a direct meter's cell is its
    /// entry's handle).
    pub fn meter_rates(&mut self, name: &str, index: u64) -> Result<Vec<Rate>, ControlError> {
        let m =
            crate::program::find_by_name(self.program.meters.iter().map(|m| m.name.as_str()), name)
                .map(|m| m as usize)
                .ok_or_else(|| ControlError::NoMeter(name.into()))?;
        if let Some(t) = self.program.meters[m]
            .direct_table
            .as_deref()
            .and_then(|t| self.program.table(t))
        {
            return Ok(self.state.tables[t as usize]
                .entry_mut(index as u32)?
                .meter
                .rates
                .clone());
        }
        let arr = &self.state.meters[m];
        arr.get(index as usize)
            .map(|c| c.rates.clone())
            .ok_or(ControlError::Index {
                array: name.into(),
                index,
                size: arr.len(),
            })
    }

    /// `mirroring_add`: clone session → port.
    pub fn mirroring_add(&mut self, session: u32, port: u32) {
        self.state.mirrors.insert(session, port);
    }

    /// `mirroring_delete`.
    pub fn mirroring_delete(&mut self, session: u32) -> bool {
        self.state.mirrors.remove(&session).is_some()
    }

    fn value_set_id(&self, name: &str) -> Result<usize, ControlError> {
        crate::program::find_by_name(
            self.program.value_sets.iter().map(|v| v.name.as_str()),
            name,
        )
        .map(|s| s as usize)
        .ok_or_else(|| ControlError::NoValueSet(name.into()))
    }

    /// `pvs_add`: a value of the set's compressed width (its key fields'
    /// values concatenated without padding); at most
    /// [`MAX_VALUE_SET`] values a set.
    pub fn value_set_add(&mut self, name: &str, value: u128) -> Result<(), ControlError> {
        let s = self.value_set_id(name)?;
        fits(
            name,
            value as i128,
            self.program.value_sets[s].bits.min(128),
        )?;
        let set = &mut self.state.value_sets[s];
        if !set.contains(&value) {
            if set.len() >= MAX_VALUE_SET {
                return Err(TableError::Full.into());
            }
            set.push(value);
        }
        Ok(())
    }

    /// `pvs_remove`.
    pub fn value_set_remove(&mut self, name: &str, value: u128) -> Result<bool, ControlError> {
        let s = self.value_set_id(name)?;
        let set = &mut self.state.value_sets[s];
        let before = set.len();
        set.retain(|&v| v != value);
        Ok(set.len() != before)
    }

    /// `pvs_get`: the values, in the order added.
    pub fn value_set_get(&self, name: &str) -> Result<&[u128], ControlError> {
        Ok(&self.state.value_sets[self.value_set_id(name)?])
    }

    /// `pvs_clear`.
    pub fn value_set_clear(&mut self, name: &str) -> Result<(), ControlError> {
        let s = self.value_set_id(name)?;
        self.state.value_sets[s].clear();
        Ok(())
    }
}

/// Values one parse value set may hold.
pub const MAX_VALUE_SET: usize = 4096;

/// Cell `index` of array `name`, or the CLI's index error.
fn cell_mut<'a, T>(arr: &'a mut [T], name: &str, index: u64) -> Result<&'a mut T, ControlError> {
    let size = arr.len();
    arr.get_mut(index as usize).ok_or(ControlError::Index {
        array: name.into(),
        index,
        size,
    })
}

/// Cell `index` of array `name`, copied, or the CLI's index error.
fn cell<T: Copy>(arr: &[T], name: &str, index: u64) -> Result<T, ControlError> {
    arr.get(index as usize).copied().ok_or(ControlError::Index {
        array: name.into(),
        index,
        size: arr.len(),
    })
}

/// Checks `v` fits `bits` (as an unsigned value, or a negative one that
/// fits as two's complement).
pub(crate) fn fits(what: &str, v: i128, bits: u32) -> Result<(), ControlError> {
    let ok = if bits >= 128 {
        true
    } else if v >= 0 {
        (v as u128) >> bits == 0
    } else {
        v >= -(1i128 << (bits - 1).min(126))
    };
    if ok {
        Ok(())
    } else {
        Err(ControlError::TooWide {
            what: what.into(),
            value: v,
            bits,
        })
    }
}
