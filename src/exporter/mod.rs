//! `ernic-exporter`'s logic: stats files in, Prometheus metrics out.
//!
//! Every scrape reads each stats file fresh ([`ernic_ops::read_stats`],
//! bounded by [`ernic_ops::file::MAX_STATS_FILE`]) and turns it into metric
//! families ([`families`]): a group counter `C` of kind `K` becomes the
//! counter `ernic_K_C_total`, a gauge `G` the gauge `ernic_K_G`, labelled
//! with the file's `instance` and the group's own labels. A file that is
//! missing, unreadable, of another schema or older than `stale_after` is
//! never an error: it shows as `ernic_up{instance,path} 0` and its groups
//! are left out. Nothing read from a file can make a scrape fail; at worst a
//! name or a label is sanitized, or a series that would repeat one already
//! served is dropped (and said at debug level).
//!
//! [`encode`] writes the families with the Prometheus client crate's
//! OpenMetrics encoder, or as the Prometheus text format 0.0.4; [`http`]
//! serves them.

pub mod encode;
pub mod http;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use ernic_ops::StatsDoc;

/// The prefix of every metric this exporter serves.
pub const PREFIX: &str = "ernic";

/// What a family's samples are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// Monotonic: served as `NAME_total`.
    Counter,
    /// Up and down.
    Gauge,
}

/// One metric family: a name (without `_total`), its type, its help text
/// and its samples (labels in order, value).
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// The family's name, `ernic_…`, without the counter's `_total`.
    pub name: String,
    /// Counter or gauge.
    pub ty: Type,
    /// The `# HELP` text.
    pub help: String,
    /// The samples.
    pub samples: Vec<(Vec<(String, String)>, Value)>,
}

/// A sample's value: a counter's exact count, or a gauge's reading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A count (counters).
    Int(u64),
    /// A reading (gauges).
    Float(f64),
}

/// One stats file as a scrape found it.
#[derive(Debug)]
pub struct Scraped {
    /// The path it was read from.
    pub path: PathBuf,
    /// The document, when the file read and parsed.
    pub doc: Option<StatsDoc>,
    /// Why it is down, when it is (missing, unreadable, stale, …).
    pub down: Option<String>,
    /// Seconds since it was written (when it read).
    pub age: Option<f64>,
}

impl Scraped {
    /// Whether the file counts as up: read, parsed, and fresh.
    pub fn up(&self) -> bool {
        self.doc.is_some() && self.down.is_none()
    }
}

/// Reads `path` now and judges it against `stale_after`.
pub fn scrape_file(path: &Path, stale_after: Duration, now: SystemTime) -> Scraped {
    // A FIFO or a device at the path would block the scrape, a directory
    // cannot be read: only a regular file is opened.
    let regular = std::fs::metadata(path).map(|m| m.is_file());
    if let Ok(false) = regular {
        return Scraped {
            path: path.to_path_buf(),
            doc: None,
            down: Some(format!("{}: not a regular file", path.display())),
            age: None,
        };
    }
    match ernic_ops::read_stats(path) {
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "stats file down");
            Scraped {
                path: path.to_path_buf(),
                doc: None,
                down: Some(e.to_string()),
                age: None,
            }
        }
        Ok(doc) => {
            let now_ms = ernic_ops::schema::unix_ms(now);
            let age = now_ms.saturating_sub(doc.written_unix_ms) as f64 / 1000.0;
            let down = (age > stale_after.as_secs_f64()).then(|| {
                format!(
                    "{}: written {age:.1} s ago, more than {} s",
                    path.display(),
                    stale_after.as_secs_f64()
                )
            });
            Scraped {
                path: path.to_path_buf(),
                doc: Some(doc),
                down,
                age: Some(age),
            }
        }
    }
}

/// `name` with every character outside `[a-zA-Z0-9_]` made `_` (and a
/// leading digit prefixed with `_`), as a metric or label name must be.
pub fn sanitize(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

/// A group label's name as a Prometheus label: sanitized, and renamed
/// `group_NAME` where it would clash with the exporter's own labels
/// (`instance`, `path`) or Prometheus' reserved `__` prefix.
fn label_name(key: &str) -> String {
    let s = sanitize(key);
    if s == "instance" || s == "path" || s.starts_with("__") {
        format!("group_{}", s.trim_start_matches('_'))
    } else {
        s
    }
}

/// The instance label each file gets: its `instance.name`, or its path
/// when it did not read; a name two files share is told apart by `@PATH`
/// on the later ones, so label sets never collide.
fn instance_names(files: &[Scraped]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    files
        .iter()
        .map(|f| {
            let base = f
                .doc
                .as_ref()
                .map_or_else(|| f.path.display().to_string(), |d| d.instance.name.clone());
            if seen.insert(base.clone()) {
                base
            } else {
                let named = format!("{base}@{}", f.path.display());
                seen.insert(named.clone());
                named
            }
        })
        .collect()
}

/// Collects families by name; a sample whose label set repeats one already
/// in its family is dropped.
#[derive(Default)]
struct Builder {
    families: BTreeMap<String, Family>,
    series: BTreeSet<(String, Vec<(String, String)>)>,
}

impl Builder {
    fn add(&mut self, name: String, ty: Type, help: &str, labels: Vec<(String, String)>, v: Value) {
        let fam = self.families.entry(name.clone()).or_insert_with(|| Family {
            name: name.clone(),
            ty,
            help: help.to_string(),
            samples: Vec::new(),
        });
        if fam.ty != ty {
            tracing::debug!(%name, "a counter and a gauge share a name; the later one is left out");
            return;
        }
        if !self.series.insert((name.clone(), labels.clone())) {
            tracing::debug!(%name, ?labels, "a repeated series is left out");
            return;
        }
        fam.samples.push((labels, v));
    }
}

fn l(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

/// The metric families of a scrape of `files`.
pub fn families(files: &[Scraped]) -> Vec<Family> {
    let mut b = Builder::default();
    let names = instance_names(files);
    for (f, inst) in files.iter().zip(&names) {
        let path = f.path.display().to_string();
        b.add(
            format!("{PREFIX}_up"),
            Type::Gauge,
            "1 when the stats file read, is of this schema and was written within --stale-after; else 0.",
            vec![l("instance", inst), l("path", &path)],
            Value::Float(if f.up() { 1.0 } else { 0.0 }),
        );
        let Some(doc) = &f.doc else { continue };
        let me = || vec![l("instance", inst)];
        if let Some(age) = f.age {
            b.add(
                format!("{PREFIX}_stats_age_seconds"),
                Type::Gauge,
                "Seconds since the stats file was written.",
                me(),
                Value::Float(age),
            );
        }
        b.add(
            format!("{PREFIX}_start_time_seconds"),
            Type::Gauge,
            "When the instance started, in seconds since the Unix epoch.",
            me(),
            Value::Float(doc.instance.started_unix_ms as f64 / 1000.0),
        );
        let node = doc
            .instance
            .node_id
            .map(|n| n.to_string())
            .unwrap_or_default();
        b.add(
            format!("{PREFIX}_info"),
            Type::Gauge,
            "1, labelled with the instance's program, version and mesh node id.",
            vec![
                l("instance", inst),
                l("program", &doc.instance.program),
                l("version", &doc.instance.version),
                l("node_id", &node),
                l("pid", &doc.instance.pid.to_string()),
            ],
            Value::Float(1.0),
        );
        if !f.up() {
            continue;
        }
        for fault in &doc.faults {
            let labels = vec![
                l("instance", inst),
                l("fault", &fault.spec),
                l("event", &fault.event),
            ];
            let help_seen = "Events an armed fault counted (--inject).";
            let help_fired = "Times an armed fault fired (--inject).";
            b.add(
                format!("{PREFIX}_fault_events"),
                Type::Counter,
                help_seen,
                labels.clone(),
                Value::Int(fault.seen),
            );
            b.add(
                format!("{PREFIX}_fault_fired"),
                Type::Counter,
                help_fired,
                labels,
                Value::Int(fault.fired),
            );
        }
        for g in &doc.groups {
            let kind = sanitize(&g.kind);
            let mut labels = me();
            labels.extend(g.labels.iter().map(|(k, v)| (label_name(k), v.clone())));
            labels.sort();
            labels.dedup_by(|a, b| a.0 == b.0);
            for (c, v) in &g.counters {
                let c = sanitize(c);
                let help =
                    format!("Counter {c} of the stats file's {kind} groups (docs/stats.md).");
                b.add(
                    format!("{PREFIX}_{kind}_{c}"),
                    Type::Counter,
                    &help,
                    labels.clone(),
                    Value::Int(*v),
                );
            }
            for (c, v) in &g.gauges {
                let c = sanitize(c);
                let help = format!("Gauge {c} of the stats file's {kind} groups (docs/stats.md).");
                b.add(
                    format!("{PREFIX}_{kind}_{c}"),
                    Type::Gauge,
                    &help,
                    labels.clone(),
                    Value::Float(*v),
                );
            }
        }
    }
    b.families.into_values().collect()
}

/// Scrapes every one of `paths` now.
pub fn scrape(paths: &[PathBuf], stale_after: Duration) -> Vec<Family> {
    let now = SystemTime::now();
    let files: Vec<Scraped> = paths
        .iter()
        .map(|p| scrape_file(p, stale_after, now))
        .collect();
    families(&files)
}
