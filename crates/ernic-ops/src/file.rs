//! Writing the stats file atomically, and reading it back.
//!
//! A write goes to a temporary file beside the target (`.NAME.tmp`), is
//! fsynced, renamed over the target and the directory fsynced, so a reader
//! sees the old document or the new one, never half of one. A failed write
//! is logged once, and once more when writing works again; it never stops
//! the process that counts.
//!
//! Reading is bounded ([`MAX_STATS_FILE`]): the file comes from outside the
//! reader (the exporter runs beside other users' processes).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::schema::{SCHEMA, StatsDoc};

/// The largest stats file a reader takes (a server with thousands of QPs
/// writes well under this).
pub const MAX_STATS_FILE: u64 = 64 << 20;

/// Checks at start that `path` can be written: its directory exists and is
/// writable, and it is not a directory. The error says what to fix.
pub fn check_writable(path: &Path) -> Result<(), String> {
    let dir = parent(path);
    if !dir.is_dir() {
        return Err(format!(
            "{}: the directory {} does not exist",
            path.display(),
            dir.display()
        ));
    }
    if path.is_dir() {
        return Err(format!("{}: is a directory", path.display()));
    }
    let probe = tmp_path(path);
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| format!("{}: cannot write {}: {e}", path.display(), dir.display()))
}

fn parent(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "stats".into(), |n| n.to_string_lossy().into_owned());
    parent(path).join(format!(".{name}.tmp"))
}

/// Writes `doc` to `path` atomically (write, fsync, rename, fsync the
/// directory).
pub fn write_atomic(path: &Path, doc: &StatsDoc) -> std::io::Result<()> {
    let tmp = tmp_path(path);
    let mut f = std::fs::File::create(&tmp)?;
    let body = serde_json::to_vec(doc).map_err(std::io::Error::other)?;
    f.write_all(&body)?;
    f.write_all(b"\n")?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(parent(path))?.sync_all()
}

/// A stats file a loop writes about every `every`.
#[derive(Debug)]
pub struct StatsFile {
    path: PathBuf,
    every: Duration,
    next: Instant,
    failing: bool,
}

impl StatsFile {
    /// A file at `path` written every `every`, first at the first
    /// [`StatsFile::due`].
    pub fn new(path: PathBuf, every: Duration) -> StatsFile {
        StatsFile {
            path,
            every,
            next: Instant::now(),
            failing: false,
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a write is due at `now`.
    #[inline]
    pub fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    /// Writes `doc` now, and sets the next write `every` from `now`. A
    /// failure is logged once (and its end once).
    pub fn write(&mut self, now: Instant, doc: &StatsDoc) {
        self.next = now + self.every;
        match write_atomic(&self.path, doc) {
            Ok(()) if self.failing => {
                self.failing = false;
                tracing::warn!(path = %self.path.display(), "stats file written again");
            }
            Ok(()) => {}
            Err(e) if !self.failing => {
                self.failing = true;
                tracing::warn!(path = %self.path.display(), error = %e, "cannot write the stats file");
            }
            Err(e) => {
                tracing::debug!(path = %self.path.display(), error = %e, "stats file still failing")
            }
        }
    }
}

/// A thread that writes a stats file every `every` from a snapshot function,
/// and once more when it is dropped (the end of a run).
pub struct StatsThread {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for StatsThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatsThread").finish_non_exhaustive()
    }
}

impl StatsThread {
    /// Starts writing `snapshot()` to `path` every `every`.
    pub fn spawn(
        path: PathBuf,
        every: Duration,
        snapshot: impl Fn() -> StatsDoc + Send + 'static,
    ) -> std::io::Result<StatsThread> {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("ernic-stats".into())
            .spawn(move || {
                let mut file = StatsFile::new(path, every);
                loop {
                    file.write(Instant::now(), &snapshot());
                    match rx.recv_timeout(every) {
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                        _ => break,
                    }
                }
                file.write(Instant::now(), &snapshot());
            })?;
        Ok(StatsThread {
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    /// Writes the last document and stops (as dropping does).
    pub fn finish(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for StatsThread {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Why a stats file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Larger than [`MAX_STATS_FILE`].
    #[error("{path}: {len} bytes, more than a stats file may hold ({MAX_STATS_FILE})")]
    TooLarge {
        /// The file.
        path: String,
        /// Its length.
        len: u64,
    },
    /// Not JSON of the schema.
    #[error("{path}: not an ernic stats file: {source}")]
    Json {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A schema this reader does not know.
    #[error("{path}: schema {found:?}, this reader takes {SCHEMA:?}")]
    Schema {
        /// The file.
        path: String,
        /// What it says.
        found: String,
    },
}

/// Reads and checks a stats file.
pub fn read_stats(path: &Path) -> Result<StatsDoc, ReadError> {
    use std::io::Read;
    let name = || path.display().to_string();
    let io = |source| ReadError::Io {
        path: name(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let mut body = Vec::new();
    f.take(MAX_STATS_FILE + 1)
        .read_to_end(&mut body)
        .map_err(io)?;
    if body.len() as u64 > MAX_STATS_FILE {
        return Err(ReadError::TooLarge {
            path: name(),
            len: body.len() as u64,
        });
    }
    parse_stats(&body).map_err(|e| match e {
        ParseError::Json(source) => ReadError::Json {
            path: name(),
            source,
        },
        ParseError::Schema(found) => ReadError::Schema {
            path: name(),
            found,
        },
    })
}

/// Why a document's bytes were refused.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Not JSON of the schema.
    #[error("not an ernic stats document: {0}")]
    Json(#[source] serde_json::Error),
    /// A schema whose major version is not this reader's.
    #[error("schema {0:?}, this reader takes {SCHEMA:?}")]
    Schema(String),
}

/// Reads a document from bytes (the fuzzed decoder).
pub fn parse_stats(body: &[u8]) -> Result<StatsDoc, ParseError> {
    let doc: StatsDoc = serde_json::from_slice(body).map_err(ParseError::Json)?;
    // A minor version may follow ("ernic-stats/1.2"): same major, same reader.
    let major = doc.schema.split('.').next().unwrap_or("");
    if major != SCHEMA {
        return Err(ParseError::Schema(doc.schema));
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Group, Instance};

    fn doc(n: u64) -> StatsDoc {
        let mut d = StatsDoc::new(&Instance::this_process("test", Some("t")));
        d.push(
            Group::new("qp")
                .label("qpn", 17)
                .counter("rdma_writes", n)
                .gauge("depth", 2.0),
        );
        d
    }

    #[test]
    fn a_written_file_reads_back_the_same() {
        let dir = std::env::temp_dir().join(format!("ernic-ops-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("stats.json");
        check_writable(&p).unwrap();
        let d = doc(5);
        write_atomic(&p, &d).unwrap();
        let back = read_stats(&p).unwrap();
        assert_eq!(back, d);
        assert_eq!(back.counter("qp", &[("qpn", "17")], "rdma_writes"), Some(5));
        assert!(!tmp_path(&p).exists(), "the temporary file is renamed away");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_reader_refuses_other_schemas_and_non_json_and_takes_unknown_fields() {
        assert!(matches!(parse_stats(b"{"), Err(ParseError::Json(_))));
        let mut d = doc(1);
        d.schema = "ernic-stats/2".into();
        let body = serde_json::to_vec(&d).unwrap();
        assert!(matches!(parse_stats(&body), Err(ParseError::Schema(_))));
        d.schema = "ernic-stats/1.3".into();
        let mut v: serde_json::Value = serde_json::to_value(&d).unwrap();
        v["new_field"] = 1.into();
        v["groups"][0]["new_too"] = "x".into();
        assert!(parse_stats(v.to_string().as_bytes()).is_ok());
    }

    #[test]
    fn check_writable_names_what_is_wrong() {
        let e = check_writable(Path::new("/nonexistent-dir-ernic/x.json")).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        let e = check_writable(&std::env::temp_dir()).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
    }

    #[test]
    fn the_thread_writes_at_start_and_at_the_end() {
        let dir = std::env::temp_dir().join(format!("ernic-ops-t-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.json");
        let n = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(1));
        let n2 = n.clone();
        let t = StatsThread::spawn(p.clone(), Duration::from_secs(3600), move || {
            doc(n2.load(std::sync::atomic::Ordering::Relaxed))
        })
        .unwrap();
        // The first write happens at once; wait for it, bounded.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !p.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        n.store(42, std::sync::atomic::Ordering::Relaxed);
        t.finish();
        let back = read_stats(&p).unwrap();
        assert_eq!(back.counter("qp", &[], "rdma_writes"), Some(42));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
