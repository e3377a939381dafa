//! The plugin's operations side, from its environment:
//!
//! - `ERNIC_INJECT=SPEC` arms deterministic faults (`EVENT:PATTERN[,…]`, as
//!   `--inject` everywhere) on the transport's provider: `fi_eagain` (a post
//!   answers EAGAIN and is retried) and `fi_cq_err` (a write completes in
//!   error, which the request's `test` reports as `ncclRemoteError`).
//! - `ERNIC_STATS_FILE=PATH` writes the stats file (`ernic-stats/1`) about
//!   once a second from a thread of its own while the plugin is loaded, and
//!   once more when the plugin is dropped: the transport's counters (per
//!   comm, labelled `dev` 0, and in total), the devices' (ernic provider)
//!   and the faults armed.
//!
//! A spec that does not parse, or a file that cannot be written, fails
//! `init` with one line naming the variable.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ernic_core::Injector;
use ernic_net::inject::Injected;
use ernic_net::provider::Provider;
use ernic_net::verbs_provider::Devices;
use ernic_ops::file::StatsThread;
use ernic_ops::schema::{FaultStat, Group, Instance, StatsDoc};

use crate::plugin::{Code, Failure, Outcome};

/// What the environment asked for.
#[derive(Debug, Default)]
pub struct Ops {
    injector: Option<Arc<Injector>>,
    stats: Option<PathBuf>,
}

impl Ops {
    /// Reads `ERNIC_INJECT` and `ERNIC_STATS_FILE` through `lookup`.
    pub fn from_env(lookup: &dyn Fn(&str) -> Option<String>) -> Outcome<Ops> {
        let injector = match lookup("ERNIC_INJECT").filter(|s| !s.is_empty()) {
            Some(spec) => {
                Some(Arc::new(Injector::parse(&spec).map_err(|e| {
                    Failure::invalid(format!("ERNIC_INJECT={spec}: {e}"))
                })?))
            }
            None => None,
        };
        let stats = match lookup("ERNIC_STATS_FILE").filter(|s| !s.is_empty()) {
            Some(p) => {
                let p = PathBuf::from(p);
                ernic_ops::file::check_writable(&p)
                    .map_err(|e| Failure::invalid(format!("ERNIC_STATS_FILE: {e}")))?;
                Some(p)
            }
            None => None,
        };
        Ok(Ops { injector, stats })
    }

    /// `provider`, under the armed faults if any.
    pub fn wrap(&self, provider: Box<dyn Provider>) -> Box<dyn Provider> {
        match &self.injector {
            Some(i) => Box::new(Injected::new(provider, i.clone())),
            None => provider,
        }
    }

    /// Starts the stats file's thread, if one was asked for.
    pub fn start(&self, devices: Option<Devices>) -> Outcome<Option<StatsThread>> {
        let Some(path) = self.stats.clone() else {
            return Ok(None);
        };
        let instance = Instance::this_process("nccl-net-ernic", None);
        let injector = self.injector.clone();
        StatsThread::spawn(path, Duration::from_secs(1), move || {
            let mut doc = StatsDoc::new(&instance);
            doc.groups = ernic_net::stats::stats_groups();
            for d in devices.as_ref().map(Devices::list).unwrap_or_default() {
                doc.push(
                    Group::new("device")
                        .label("gid", d.gid())
                        .core_counters(&d.counters()),
                );
            }
            if let Some(i) = &injector {
                doc.faults = FaultStat::all(i);
            }
            doc
        })
        .map(Some)
        .map_err(|e| Failure {
            code: Code::System,
            message: format!("ERNIC_STATS_FILE: cannot start its thread: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn a_bad_spec_or_file_names_its_variable() {
        let e = Ops::from_env(&env(vec![("ERNIC_INJECT", "fi_eagain:often".into())])).unwrap_err();
        assert_eq!(e.code, Code::Invalid);
        assert!(
            e.message.starts_with("ERNIC_INJECT=fi_eagain:often: "),
            "{}",
            e.message
        );
        let e = Ops::from_env(&env(vec![(
            "ERNIC_STATS_FILE",
            "/nonexistent-dir/stats.json".into(),
        )]))
        .unwrap_err();
        assert!(e.message.starts_with("ERNIC_STATS_FILE: "), "{}", e.message);
    }

    /// The plugin opened with both variables: the file is there at once,
    /// with the transport's totals and the armed fault, which has seen the
    /// endpoint's first posts (its rx buffers: 256 per rail, one control
    /// and one data rail), every third answered EAGAIN.
    #[test]
    fn the_plugin_writes_its_stats_file_with_the_faults() {
        let dir = std::env::temp_dir().join(format!("ernic-plugin-ops-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("nccl.json");
        let p = crate::plugin::Plugin::open(&env(vec![
            ("ERNIC_INJECT", "fi_eagain:every=3".into()),
            ("ERNIC_STATS_FILE", path.to_str().unwrap().into()),
        ]))
        .unwrap();
        drop(p);
        let doc = ernic_ops::file::read_stats(&path).unwrap();
        assert_eq!(doc.instance.program, "nccl-net-ernic");
        assert!(doc.group("transport", &[]).is_some(), "{doc:?}");
        assert_eq!(doc.faults.len(), 1);
        assert_eq!(doc.faults[0].spec, "fi_eagain:every=3");
        // Opening posts 512 rx buffers; the first EAGAIN parks the rest
        // behind it, so only the first two checks are made before progress.
        assert!(doc.faults[0].seen >= 3, "{:?}", doc.faults);
        assert_eq!(doc.faults[0].fired, doc.faults[0].seen / 3);
        assert!(doc.groups.iter().any(|g| g.kind == "device"), "{doc:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
