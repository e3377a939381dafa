//! The mesh key: a secret every node of one mesh holds, which the handshake
//! (the `auth` module) proves without sending it.
//!
//! It comes from the environment, so every program that starts a mesh node
//! gets it with no flag of its own: `ERNIC_MESH_KEY_FILE=PATH` names a file
//! that holds it (the usual way), `ERNIC_MESH_KEY=TEXT` gives it literally
//! (for tests and throw-away meshes: a process's environment is readable by
//! its user). Setting both is an error, and so is a key file that anyone
//! may read (mode `o+r`: a key the whole host can read keeps no one out;
//! `chmod 600` it), a file larger than [`MAX_KEY`] bytes (read no further)
//! and a key shorter than [`MIN_KEY`] bytes. Trailing whitespace (the
//! newline an editor adds) is not part of the key. A key that cannot be read
//! is never taken as "no key": the node refuses to start instead.

use std::fmt;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Most bytes of a key (a key file is read no further than one byte past).
pub const MAX_KEY: usize = 4096;
/// Fewest bytes of a key (128 bits).
pub const MIN_KEY: usize = 16;

/// A pre-shared mesh key. Its `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct MeshKey(Vec<u8>);

impl fmt::Debug for MeshKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MeshKey({} bytes)", self.0.len())
    }
}

/// Why the mesh key could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Both variables are set.
    #[error(
        "both ERNIC_MESH_KEY and ERNIC_MESH_KEY_FILE are set: set one (the file, unless this is a test)"
    )]
    Both,
    /// The key file could not be opened or read.
    #[error("mesh key file {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// What the system said.
        reason: String,
    },
    /// Anyone on the host may read the key file.
    #[error("mesh key file {path} is readable by every user (mode {mode:o}): chmod 600 it")]
    WorldReadable {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// The key is longer than [`MAX_KEY`].
    #[error("the mesh key from {from} is longer than {MAX_KEY} bytes")]
    TooLong {
        /// `ERNIC_MESH_KEY` or the file's path.
        from: String,
    },
    /// The key is shorter than [`MIN_KEY`].
    #[error(
        "the mesh key from {from} has {len} bytes, fewer than {MIN_KEY}: use a long random one (head -c 32 /dev/urandom | base64)"
    )]
    TooShort {
        /// `ERNIC_MESH_KEY` or the file's path.
        from: String,
        /// Its length.
        len: usize,
    },
}

impl MeshKey {
    /// A key from bytes, checked against [`MIN_KEY`] and [`MAX_KEY`]
    /// (trailing whitespace dropped). `from` names where it came from.
    pub fn new(bytes: &[u8], from: &str) -> Result<MeshKey, KeyError> {
        let end = bytes
            .iter()
            .rposition(|b| !b.is_ascii_whitespace())
            .map_or(0, |i| i + 1);
        let k = &bytes[..end];
        if k.len() > MAX_KEY {
            return Err(KeyError::TooLong { from: from.into() });
        }
        if k.len() < MIN_KEY {
            return Err(KeyError::TooShort {
                from: from.into(),
                len: k.len(),
            });
        }
        Ok(MeshKey(k.to_vec()))
    }

    /// Reads a key file: refused when every user may read it; read no
    /// further than [`MAX_KEY`] bytes (and the whitespace after).
    pub fn from_file(path: &Path) -> Result<MeshKey, KeyError> {
        let shown = path.display().to_string();
        let unreadable = |e: std::io::Error| KeyError::Unreadable {
            path: shown.clone(),
            reason: e.to_string(),
        };
        let f = std::fs::File::open(path).map_err(unreadable)?;
        let meta = f.metadata().map_err(unreadable)?;
        if !meta.is_file() {
            return Err(KeyError::Unreadable {
                path: shown,
                reason: "not a regular file".into(),
            });
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o004 != 0 {
            return Err(KeyError::WorldReadable { path: shown, mode });
        }
        let mut buf = Vec::new();
        // A few bytes past the limit leave room for a trailing newline.
        f.take(MAX_KEY as u64 + 64)
            .read_to_end(&mut buf)
            .map_err(unreadable)?;
        MeshKey::new(&buf, &shown)
    }

    /// The key the environment gives: `ERNIC_MESH_KEY_FILE` or
    /// `ERNIC_MESH_KEY`, or none.
    pub fn from_env() -> Result<Option<MeshKey>, KeyError> {
        let file = std::env::var_os("ERNIC_MESH_KEY_FILE").filter(|v| !v.is_empty());
        let literal = std::env::var_os("ERNIC_MESH_KEY").filter(|v| !v.is_empty());
        match (file, literal) {
            (Some(_), Some(_)) => Err(KeyError::Both),
            (Some(path), None) => MeshKey::from_file(Path::new(&path)).map(Some),
            (None, Some(text)) => {
                use std::os::unix::ffi::OsStrExt;
                MeshKey::new(text.as_bytes(), "ERNIC_MESH_KEY").map(Some)
            }
            (None, None) => Ok(None),
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(name: &str, body: &[u8], mode: u32) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("ernic-key-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn a_private_file_gives_its_key_without_the_newline() {
        let p = file("ok", b"0123456789abcdef-and-more\n", 0o600);
        let k = MeshKey::from_file(&p).unwrap();
        assert_eq!(k.bytes(), b"0123456789abcdef-and-more");
        assert!(!format!("{k:?}").contains("0123"), "Debug hides the key");
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn world_readable_huge_short_and_missing_files_are_refused() {
        let p = file("world", b"0123456789abcdef", 0o644);
        assert_eq!(
            MeshKey::from_file(&p),
            Err(KeyError::WorldReadable {
                path: p.display().to_string(),
                mode: 0o644
            })
        );
        let _ = std::fs::remove_file(p);
        let p = file("huge", &vec![b'k'; MAX_KEY + 1000], 0o600);
        assert!(matches!(
            MeshKey::from_file(&p),
            Err(KeyError::TooLong { .. })
        ));
        let _ = std::fs::remove_file(p);
        let p = file("short", b"short\n", 0o640);
        assert!(matches!(
            MeshKey::from_file(&p),
            Err(KeyError::TooShort { len: 5, .. })
        ));
        let _ = std::fs::remove_file(p);
        let e = MeshKey::from_file(Path::new("/nonexistent/ernic.key")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ernic.key"), "{e}");
        assert!(matches!(
            MeshKey::from_file(Path::new("/")),
            Err(KeyError::Unreadable { .. })
        ));
    }
}
