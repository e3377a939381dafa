//! Helpers shared by the crate's unit tests.

use std::path::PathBuf;

/// A temporary directory under `std::env::temp_dir()`, named with the test
/// and the process id, removed when the guard drops (also when the test
/// panics).
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(test: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("ernic-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
