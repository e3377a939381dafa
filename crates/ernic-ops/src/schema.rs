//! The stats file's schema, `ernic-stats/1`.
//!
//! One JSON object:
//!
//! ```json
//! {
//!   "schema": "ernic-stats/1",
//!   "instance": { "program": "ernic-server", "name": "host:1234", "pid": 1234,
//!                 "version": "0.1.0", "started_unix_ms": 1764680000000,
//!                 "node_id": 2, "gids": ["::ffff:10.0.0.2"], "socket": "/run/ernic.sock" },
//!   "written_unix_ms": 1764680005000,
//!   "groups": [
//!     { "kind": "device", "labels": {}, "counters": { "req_tx_writes": 10 }, "gauges": {} },
//!     { "kind": "qp", "labels": { "qpn": "17" }, "counters": { "req_tx_writes": 10 } },
//!     { "kind": "port", "labels": { "port": "1" }, "counters": { "packets_received": 3 } }
//!   ],
//!   "faults": [ { "spec": "rx_drop:every=10", "event": "rx_drop", "seen": 30, "fired": 3 } ]
//! }
//! ```
//!
//! A group is a set of counters (monotonic, `u64`) and gauges (values that go
//! up and down, such as a queue's depth) under one kind and one set of
//! labels. The kinds, their labels and their counters are listed in
//! `docs/stats.md`; a reader must take kinds, labels and counters it does not
//! know (a newer writer adds them without changing the schema's version), and
//! refuse a schema whose major version it does not know. The exporter names
//! a counter `ernic_{kind}_{counter}_total` and a gauge `ernic_{kind}_{gauge}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The schema this crate writes and reads.
pub const SCHEMA: &str = "ernic-stats/1";

/// Who wrote the file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// The program (`ernic-server`, `ernic perf`, `nccl-net-ernic`, …).
    pub program: String,
    /// The instance's name, as the exporter's `instance` label: what
    /// `--stats-name` says, else `HOST:PID`.
    pub name: String,
    /// Its process id.
    pub pid: u32,
    /// ernic's version.
    pub version: String,
    /// When the process started, in milliseconds since the Unix epoch.
    pub started_unix_ms: u64,
    /// Its mesh node id, when it is on a mesh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<u32>,
    /// The GIDs it answers for.
    #[serde(default)]
    pub gids: Vec<String>,
    /// The vfio-user socket it serves, for a server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
}

impl Instance {
    /// This process as `program`, named `HOST:PID` unless `name` is given,
    /// started now.
    pub fn this_process(program: &str, name: Option<&str>) -> Instance {
        let pid = std::process::id();
        Instance {
            program: program.to_string(),
            name: name.map_or_else(|| format!("{}:{pid}", hostname()), str::to_string),
            pid,
            version: env!("CARGO_PKG_VERSION").to_string(),
            started_unix_ms: unix_ms(std::time::SystemTime::now()),
            ..Instance::default()
        }
    }
}

/// One kind of counters under one set of labels.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// What the counters count: `device`, `qp`, `lif`, `port`, `link`,
    /// `admin`, `mesh`, `mesh_peer`, `comm`, `nvmeof`, `s3`, `p4`, …
    pub kind: String,
    /// What tells this group from the others of its kind (`qpn`, `port`,
    /// `peer`, `comm`, …).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Monotonic counts.
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    /// Values that go up and down.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gauges: BTreeMap<String, f64>,
}

impl Group {
    /// An empty group of `kind`.
    pub fn new(kind: &str) -> Group {
        Group {
            kind: kind.to_string(),
            ..Group::default()
        }
    }

    /// With the label `key`=`value`.
    pub fn label(mut self, key: &str, value: impl ToString) -> Group {
        self.labels.insert(key.to_string(), value.to_string());
        self
    }

    /// With the counter `name` at `value`.
    pub fn counter(mut self, name: &str, value: u64) -> Group {
        self.counters.insert(name.to_string(), value);
        self
    }

    /// With every (name, value) of `values` as a counter.
    pub fn counters<'a>(mut self, values: impl IntoIterator<Item = (&'a str, u64)>) -> Group {
        for (k, v) in values {
            self.counters.insert(k.to_string(), v);
        }
        self
    }

    /// With every counter of a core counter set (device or QP), by its
    /// `hw_counters` name.
    pub fn core_counters(self, c: &ernic_core::Counters) -> Group {
        self.counters(c.iter())
    }

    /// With the gauge `name` at `value`.
    pub fn gauge(mut self, name: &str, value: f64) -> Group {
        self.gauges.insert(name.to_string(), value);
        self
    }
}

/// An armed fault and its counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultStat {
    /// The fault as a spec item (`rx_drop:every=10`).
    pub spec: String,
    /// Its event.
    pub event: String,
    /// Events it counted.
    pub seen: u64,
    /// Times it fired.
    pub fired: u64,
}

impl FaultStat {
    /// The counts of every fault `injector` arms.
    pub fn all(injector: &ernic_core::Injector) -> Vec<FaultStat> {
        injector
            .report()
            .into_iter()
            .map(|f| FaultStat {
                spec: f.spec,
                event: f.event.name().to_string(),
                seen: f.seen,
                fired: f.fired,
            })
            .collect()
    }
}

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatsDoc {
    /// [`SCHEMA`].
    pub schema: String,
    /// Who wrote it.
    pub instance: Instance,
    /// When, in milliseconds since the Unix epoch.
    pub written_unix_ms: u64,
    /// The counters.
    pub groups: Vec<Group>,
    /// The armed faults.
    #[serde(default)]
    pub faults: Vec<FaultStat>,
}

impl StatsDoc {
    /// A document for `instance`, written now, with no groups yet.
    pub fn new(instance: &Instance) -> StatsDoc {
        StatsDoc {
            schema: SCHEMA.to_string(),
            instance: instance.clone(),
            written_unix_ms: unix_ms(std::time::SystemTime::now()),
            groups: Vec::new(),
            faults: Vec::new(),
        }
    }

    /// Adds a group.
    pub fn push(&mut self, g: Group) {
        self.groups.push(g);
    }

    /// The first group of `kind` whose labels include every one of `labels`.
    pub fn group(&self, kind: &str, labels: &[(&str, &str)]) -> Option<&Group> {
        self.groups.iter().find(|g| {
            g.kind == kind
                && labels
                    .iter()
                    .all(|(k, v)| g.labels.get(*k).is_some_and(|x| x == v))
        })
    }

    /// A counter of the first matching group (see [`StatsDoc::group`]).
    pub fn counter(&self, kind: &str, labels: &[(&str, &str)], name: &str) -> Option<u64> {
        self.group(kind, labels)?.counters.get(name).copied()
    }
}

/// Milliseconds since the Unix epoch (0 before it).
pub fn unix_ms(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}
