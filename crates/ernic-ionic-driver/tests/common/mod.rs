//! Servers for the driver's tests: an ionic function behind a vfio-user
//! socket, in a thread of the test process, serving one client.

#![allow(dead_code)] // each test file uses some of these

use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::Arc;

use ernic_core::Gid;
use ernic_ionic::function::IonicFunction;
use ernic_ionic::profile;
use ernic_mesh::Mesh;
use ernic_vfio::proto::Capabilities;
use ernic_vfio::server::Server;

/// A fresh socket path for `name` under the temporary directory.
fn socket(name: &str) -> (PathBuf, UnixListener) {
    let dir = std::env::temp_dir().join(format!("ernic-drv-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    (path, listener)
}

fn spawn(listener: UnixListener, f: IonicFunction) {
    std::thread::spawn(move || {
        let mut s = Server::new(f, Capabilities::default());
        if let Ok((c, _)) = listener.accept() {
            let _ = s.serve(&c);
        }
    });
}

/// A server with `profile_spec`, `ini` (key = value lines) layered over it.
pub fn serve(name: &str, profile_spec: &str, ini: &str) -> PathBuf {
    let (path, listener) = socket(name);
    let mut id = profile::load(profile_spec).unwrap();
    profile::apply(&mut id, ini, "test").unwrap();
    let f = IonicFunction::new(id).with_shared_doorbells().unwrap();
    spawn(listener, f);
    path
}

/// A server on `mesh` whose guest has `gid`; requests to a peer that
/// stops answering give up after 300 ms.
pub fn serve_on_mesh(name: &str, mesh: Arc<Mesh>, gid: Gid) -> PathBuf {
    let (path, listener) = socket(name);
    let id = ernic_ionic::bar0::Identity {
        request_timeout_ms: 300,
        ..Default::default()
    };
    spawn(listener, IonicFunction::new(id).with_mesh(mesh, vec![gid]));
    path
}
