//! The VM lane (vm/lane.sh): a QEMU guest whose stock Linux ionic driver
//! binds to ernic-server over vfio-user, brings its netdev up, reports a
//! carrier at the profile's speed, pings an address on ernic-server's TAP
//! (in a network namespace), and sees its counters move; then ionic_rdma
//! (built from Debian's linux-source) registers ionic_0 and rdma-core's
//! ibv_devinfo shows its port ACTIVE with the profile's max_qp, and the stock
//! verbs tools (perftest, the pingpongs, rping) complete between two of its
//! processes; then (vm/lane-two.sh) the same tools between two guests on
//! two ernic-servers joined by the TCP mesh; then (vm/lane-nvme.sh) the
//! guest's stock nvme_rdma, driven by nvme-cli and fio, discovers, connects
//! to, writes, verifies and reconnects to ernic-server's NVMe-oF target;
//! then (vm/lane-s3.sh) the guest's TCP stack, curl and the AWS CLI move
//! objects both ways through ernic-server's S3 store on its segment. It
//! needs root and Debian's package mirrors, and takes a minute or two the
//! first time (the chroot is cached): CI runs it (ERNIC_VM_LANE=1);
//! elsewhere it is skipped with one line.

use std::process::Command;

/// Runs `vm/SCRIPT` against this build's ernic-server with `envs`, and
/// asserts that it exits 0 and prints `PASSED` (its last line).
fn run(script: &str, envs: &[(&str, &str)], passed: &str) {
    let out = Command::new(format!("{}/vm/{script}", env!("CARGO_MANIFEST_DIR")))
        .arg(env!("CARGO_BIN_EXE_ernic-server"))
        .envs(envs.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("running vm/{script}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(passed), "{text}");
}

fn lane(server_args: &str, speed: &str, max_qp: &str) {
    let envs = [
        ("ERNIC_VM_SERVER_ARGS", server_args),
        ("ERNIC_VM_SPEED", speed),
        ("ERNIC_VM_MAX_QP", max_qp),
    ];
    run("lane.sh", &envs, "vm-lane: passed");
}

#[test]
fn stock_drivers_and_tools_work_in_one_guest_and_across_two() {
    if std::env::var("ERNIC_VM_LANE").as_deref() != Ok("1") {
        println!(
            "skipped: the VM lane runs with ERNIC_VM_LANE=1 (root, Debian mirrors; CI sets it)"
        );
        return;
    }
    lane("", "100000", "1024");
    // Other profiles: the speed the guest sees follows them, and QEMU
    // takes BAR 2's shared doorbell pages (a sparse-mmap area with its
    // descriptor) while the driver rings only the trapped pages.
    lane("--nic-profile small,shared-doorbells", "25000", "64");
    // Two guests on two servers joined by the mesh (run after the others:
    // the lanes share the chroot and its guest image).
    run("lane-two.sh", &[], "vm-lane-two: passed");
    // NVMe over Fabrics: one guest against the server's own target (its
    // image, with the NVMe tools, is made for it alone).
    run("lane-nvme.sh", &[], "vm-lane-nvme: passed");
    // S3: one guest's TCP stack, curl and the AWS CLI against the server's
    // own store on the guest's segment (its image carries curl and the 9p
    // modules; the AWS CLI runs from the chroot).
    run("lane-s3.sh", &[], "vm-lane-s3: passed");
}
