//! ernic's libibverbs through the C API: tests/c/verbs_check.c, compiled
//! against the system's <infiniband/verbs.h> and linked with -libverbs as
//! any program is, then run with the library cargo built first on its
//! library path. It checks the device and port queries, the data path (SEND
//! with immediate, inline, WRITE, READ, WRITE with immediate, atomics), the
//! error paths (bad lkey and rkey, a too-small receive, RNR, a destroyed
//! peer, flush on ERROR, refused posts and transitions), completion
//! channels (poll(2) on the fd, non-blocking and blocking waits), SRQs and
//! their limit event, UD with a GRH, the extended CQ's poll API and the
//! new post-send API (`ibv_wr_*`), and that what is not offered fails
//! cleanly.

use std::path::PathBuf;
use std::process::Command;

/// The library cargo built beside the tests, under the name programs
/// load, in a directory of its own.
fn library_dir(test: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test path");
    let deps = exe.parent().expect("deps dir");
    let built = [
        deps.join("libibverbs.so"),
        deps.parent().expect("target dir").join("libibverbs.so"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .expect("cargo builds libibverbs.so with the tests");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ibverbs-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // One file under both names, as `ernic run` links it.
    for name in ["libibverbs.so.1", "librdmacm.so.1"] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&built, &link).unwrap();
    }
    dir
}

/// Whether the system's verbs headers and library (to link against) are
/// here; outside CI a machine without them skips, saying so.
fn have_libibverbs_dev() -> bool {
    let ok = std::path::Path::new("/usr/include/infiniband/verbs.h").exists();
    if !ok {
        assert_ne!(
            std::env::var("ERNIC_REQUIRE_VERBS_HEADERS").as_deref(),
            Ok("1"),
            "ERNIC_REQUIRE_VERBS_HEADERS=1 but /usr/include/infiniband/verbs.h is missing"
        );
        println!("skipped: no /usr/include/infiniband/verbs.h (apt-get install libibverbs-dev)");
    }
    ok
}

/// Builds `tests/c/NAME.c` with `libs` against the system's headers and
/// runs it over the library, with `env` and no mesh; answers its output,
/// after asserting that it built and exited 0.
fn build_and_run(name: &str, libs: &[&str], env: &[(&str, &str)]) -> String {
    let lib = library_dir(name);
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let bin = lib.join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .args(["-Wall", "-Werror", "-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .args(libs)
        .output()
        .expect("a C compiler");
    assert!(
        built.status.success(),
        "{name}.c did not build:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(&bin)
        .env("LD_LIBRARY_PATH", &lib)
        .env_remove("ERNIC_MESH")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let _ = std::fs::remove_dir_all(&lib);
    assert!(
        out.status.success(),
        "{name} failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn a_c_program_built_against_rdma_core_runs_over_ernic() {
    if !have_libibverbs_dev() {
        return;
    }
    let text = build_and_run(
        "verbs_check",
        &["-libverbs"],
        &[("ERNIC_RNR_TIMEOUT_MS", "200")],
    );
    for case in [
        "device",
        "mr_access",
        "rc_data",
        "bad_lkey",
        "bad_rkey",
        "out_of_range_rkey",
        "small_receive",
        "rnr",
        "rnr_retry",
        "destroyed_peer",
        "flush",
        "bad_post",
        "channel",
        "srq",
        "ud",
        "extended",
        "unsupported",
        "done",
    ] {
        assert!(
            text.lines().any(|l| l == format!("ok {case}")),
            "case {case} did not pass:\n{text}"
        );
    }
}

#[test]
fn a_c_program_built_against_librdmacm_runs_over_ernic() {
    if !have_libibverbs_dev() {
        return;
    }
    if !std::path::Path::new("/usr/include/rdma/rdma_cma.h").exists() {
        assert_ne!(
            std::env::var("ERNIC_REQUIRE_VERBS_HEADERS").as_deref(),
            Ok("1"),
            "ERNIC_REQUIRE_VERBS_HEADERS=1 but /usr/include/rdma/rdma_cma.h is missing"
        );
        println!("skipped: no /usr/include/rdma/rdma_cma.h (apt-get install librdmacm-dev)");
        return;
    }
    let text = build_and_run("cm_check", &["-lrdmacm", "-libverbs"], &[]);
    for case in ["getaddrinfo", "migrate_id", "ud_reject", "done"] {
        assert!(
            text.lines().any(|l| l == format!("ok {case}")),
            "case {case} did not pass:\n{text}"
        );
    }
}
