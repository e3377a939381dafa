//! Stock RDMA programs over ernic's libibverbs, between two processes, each
//! started by `ernic run` as a person would: Debian's perftest (ib_*_bw,
//! ib_*_lat, RC, and UD for send) and ibverbs-utils (the four pingpongs,
//! with their own data checks; ibv_devinfo), rdmacm-utils and rdma-core's
//! examples over rdma_cm, and libfabric's verbs provider (fi_pingpong, its
//! MSG, RDM and DGRAM endpoints). Each pair meets on a mesh the
//! first `ernic run` hosts; both programs must exit 0 and the client print
//! its results.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Whether the programs are installed; outside CI a machine without them
/// skips, saying so.
fn have(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert_ne!(
        std::env::var("ERNIC_REQUIRE_RDMA_TOOLS").as_deref(),
        Ok("1"),
        "ERNIC_REQUIRE_RDMA_TOOLS=1 but {missing:?} are not installed"
    );
    println!(
        "skipped: {missing:?} not installed \
         (apt-get install perftest ibverbs-utils rdmacm-utils libfabric-bin)"
    );
    false
}

/// `ernic run --port MESH -- ARGS`, output piped.
fn run(mesh: u16, args: &[String]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ernic"));
    // Its own process group, so a late one is stopped with its program.
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    c.args([
        "--log-level",
        "warn",
        "run",
        "--port",
        &mesh.to_string(),
        "--",
    ])
    .args(args)
    .env_remove("ERNIC_MESH")
    .env_remove("ERNIC_GID")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    c
}

/// Whether something listens on TCP `port` of this host (read from
/// /proc, so no connection is made: the servers take only one).
fn listening(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let v: Vec<&str> = l.split_whitespace().collect();
                v.len() > 3
                    && v[3] == "0A"
                    && v[1]
                        .rsplit(':')
                        .next()
                        .is_some_and(|p| u16::from_str_radix(p, 16) == Ok(port))
            })
        })
    })
}

/// Waits for `child` at most `limit`, killing it (and its process group)
/// if it is late.
fn finish(mut child: Child, limit: Duration) -> Output {
    let end = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            // The whole group: `ernic run` and its program.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Runs `args` as a server and `args HOST` as its client, each started by
/// `launch` (with the program's TCP port as `-p`, and a mesh port); answers
/// the client's standard output.
fn pair(n: usize, args: &[&str]) -> String {
    let mesh = 19_600 + n as u16 * 2;
    pair_with(mesh + 1, args, &|a| run(mesh, a))
}

fn pair_with(tcp: u16, args: &[&str], launch: &dyn Fn(&[String]) -> Command) -> String {
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(["-p".into(), tcp.to_string()]);
    let server = launch(&a).spawn().unwrap();
    // Over rdma_cm (-R) the server has no socket to wait for; the
    // client's connect asks again until it listens.
    if !args.contains(&"-R") {
        common::within(
            &format!("{args:?}'s server"),
            Duration::from_secs(30),
            || listening(tcp).then_some(()),
        );
    }
    let mut c = a.clone();
    c.push("127.0.0.1".into());
    let client = finish(launch(&c).spawn().unwrap(), Duration::from_secs(90));
    let server = finish(server, Duration::from_secs(30));
    let text = |o: &Output| {
        format!(
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert!(
        client.status.success() && server.status.success(),
        "{args:?}: client {}, server {}\n-- client\n{}\n-- server\n{}",
        client.status,
        server.status,
        text(&client),
        text(&server)
    );
    String::from_utf8_lossy(&client.stdout).into_owned()
}

#[test]
fn perftest_and_the_pingpongs_run_between_two_processes() {
    if !have(&["ib_write_bw", "ibv_rc_pingpong", "ibv_devinfo"]) {
        return;
    }
    let info = run(19_598, &["ibv_devinfo".into(), "-v".into()])
        .output()
        .unwrap();
    let info_text = String::from_utf8_lossy(&info.stdout);
    assert!(info.status.success(), "ibv_devinfo: {info_text}");
    for want in [
        "hca_id:\ternic0",
        "PORT_ACTIVE",
        "link_layer:\t\tEthernet",
        "GID[  0]:",
    ] {
        assert!(
            info_text.contains(want),
            "ibv_devinfo -v lacks {want:?}:\n{info_text}"
        );
    }
    let bw = [
        &["ib_write_bw", "-x", "0", "-n", "200"][..],
        &["ib_read_bw", "-x", "0", "-n", "200"],
        &["ib_send_bw", "-x", "0", "-n", "200"],
        &["ib_send_bw", "-x", "0", "-n", "200", "-c", "UD"],
        &["ib_atomic_bw", "-x", "0", "-n", "200"],
        &["ib_write_lat", "-x", "0", "-n", "200"],
        &["ib_read_lat", "-x", "0", "-n", "200"],
        &["ib_send_lat", "-x", "0", "-n", "200"],
    ];
    let mut n = 0;
    for args in bw {
        n += 1;
        let out = pair(n, args);
        // The results table: its header and one row of figures.
        let row = out
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("#bytes"))
            .nth(1)
            .unwrap_or_default();
        assert!(
            row.split_whitespace().count() >= 4
                && row.split_whitespace().all(|f| f.parse::<f64>().is_ok()),
            "{args:?}: no results row:\n{out}"
        );
        println!("{}: {}", args.join(" "), row.trim());
    }
    for args in [
        &["ibv_rc_pingpong", "-g", "0", "-n", "200"][..],
        &["ibv_uc_pingpong", "-g", "0", "-n", "200"],
        &["ibv_ud_pingpong", "-g", "0", "-n", "200"],
        &["ibv_srq_pingpong", "-g", "0", "-n", "200"],
        &["ibv_rc_pingpong", "-g", "0", "-n", "200", "-e"],
    ] {
        n += 1;
        let out = pair(n, args);
        let line = out
            .lines()
            .find(|l| l.contains("iters in"))
            .unwrap_or_else(|| panic!("{args:?}: no figures:\n{out}"));
        println!("{}: {}", args.join(" "), line.trim());
    }
}

#[test]
fn rdma_cm_programs_connect_through_it() {
    if !have(&["rping", "ib_send_bw"]) {
        return;
    }
    // rping: its own data checks on 100 rounds of READ and WRITE.
    let mesh = 19_650;
    let tcp = mesh + 1;
    let port = tcp.to_string();
    let server = run(
        mesh,
        &["rping", "-s", "-v", "-C", "100", "-p", &port].map(String::from),
    )
    .spawn()
    .unwrap();
    common::within("rping's server", Duration::from_secs(30), || {
        // rping listens through rdma_cm, not a socket: give it its start.
        std::thread::sleep(Duration::from_millis(500));
        Some(())
    });
    let client = finish(
        run(
            mesh,
            &[
                "rping",
                "-c",
                "-v",
                "-C",
                "100",
                "-a",
                "127.0.0.1",
                "-p",
                &port,
            ]
            .map(String::from),
        )
        .spawn()
        .unwrap(),
        Duration::from_secs(90),
    );
    let server = finish(server, Duration::from_secs(30));
    let out = String::from_utf8_lossy(&client.stdout);
    assert!(
        client.status.success() && server.status.success(),
        "rping: client {} server {}\n{out}\n{}\n{}",
        client.status,
        server.status,
        String::from_utf8_lossy(&client.stderr),
        String::from_utf8_lossy(&server.stderr)
    );
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("ping data: rdma-ping-"))
            .count(),
        100,
        "rping -C 100 pings 100 times:\n{out}"
    );
    println!("rping -v -C 100: 100 pings");
    // rdma-core's synchronous examples: rdma_create_ep, rdma_get_request,
    // blocking accept and connect, a message each way.
    let (mesh, port) = (19_660, "19661");
    let server = run(mesh, &["rdma_server", "-p", port].map(String::from))
        .spawn()
        .unwrap();
    let client = finish(
        run(
            mesh,
            &["rdma_client", "-s", "127.0.0.1", "-p", port].map(String::from),
        )
        .spawn()
        .unwrap(),
        Duration::from_secs(60),
    );
    let server = finish(server, Duration::from_secs(30));
    for (who, o) in [("rdma_client", &client), ("rdma_server", &server)] {
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && text.contains(&format!("{who}: end 0")),
            "{who}: {}\n{text}{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    println!("rdma_server / rdma_client: end 0 on both");
    // udaddy: UD over rdma_cm (SIDR), messages both ways.
    let mesh = 19_670;
    let server = run(mesh, &["udaddy".to_string()]).spawn().unwrap();
    let client = finish(
        run(mesh, &["udaddy", "-s", "127.0.0.1"].map(String::from))
            .spawn()
            .unwrap(),
        Duration::from_secs(60),
    );
    let server = finish(server, Duration::from_secs(30));
    for (who, o) in [("udaddy client", &client), ("udaddy server", &server)] {
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && text.contains("return status 0"),
            "{who}: {}\n{text}{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    println!("udaddy: return status 0 on both");
    // perftest over rdma_cm (-R): its handshake goes through the CM too.
    let mut n = 40;
    for args in [
        &["ib_send_bw", "-R", "-n", "200"][..],
        &["ib_write_lat", "-R", "-n", "200"],
        &["ib_write_bw", "-R", "-n", "200"],
    ] {
        n += 1;
        let out = pair(n, args);
        let row = out
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("#bytes"))
            .nth(1)
            .unwrap_or_else(|| panic!("{args:?}: no results row:\n{out}"));
        println!("{}: {}", args.join(" "), row.trim());
    }
}

#[test]
fn a_port_without_rdma_cm_listeners_does_not_stall_a_connect() {
    if !have(&["udaddy", "rping", "ibv_rc_pingpong"]) {
        return;
    }
    // A verbs program with no rdma_cm (an ibv_rc_pingpong server, waiting
    // on its socket) is a port at 127.0.0.1 that listens on nothing. It
    // joins first, so a client joining last asks it before the real
    // server (candidates go in node order): its answer must move the
    // client on to the next port, and so must its silence once it is
    // stopped (SIGSTOP: a port whose CM does not answer, as one that has
    // yet to start its CM), not leave the client waiting.
    let mesh = 19_740;
    let tcp = mesh + 1;
    // The mesh's host, so that stopping the quiet port stops no manager;
    // each group is killed however the test ends.
    let _host = Group(run(mesh, &["sleep".into(), "120".into()]).spawn().unwrap());
    common::within("the mesh's host", Duration::from_secs(30), || {
        listening(mesh).then_some(())
    });
    let quiet = Group(
        run(
            mesh,
            &["ibv_rc_pingpong", "-g", "0", "-p", &tcp.to_string()].map(String::from),
        )
        .spawn()
        .unwrap(),
    );
    common::within("ibv_rc_pingpong's server", Duration::from_secs(30), || {
        listening(tcp).then_some(())
    });
    let port = (mesh + 2).to_string();
    let udaddy = (vec!["udaddy"], vec!["udaddy", "-s", "127.0.0.1"]);
    let rping = (
        vec!["rping", "-s", "-C", "10", "-p", &port],
        vec!["rping", "-c", "-C", "10", "-a", "127.0.0.1", "-p", &port],
    );
    for (case, (server, client), stop) in [
        ("udaddy past a port with no listener", &udaddy, false),
        ("rping past a port with no listener", &rping, false),
        ("udaddy past a port that does not answer", &udaddy, true),
    ] {
        let server_args: Vec<String> = server.iter().map(|s| s.to_string()).collect();
        let client_args: Vec<String> = client.iter().map(|s| s.to_string()).collect();
        let s = run(mesh, &server_args).spawn().unwrap();
        // Neither server has a socket to wait for: give it its start.
        std::thread::sleep(Duration::from_millis(500));
        if stop {
            let _ = Command::new("kill")
                .args(["-STOP", "--", &format!("-{}", quiet.0.id())])
                .status();
        }
        let began = Instant::now();
        let c = finish(
            run(mesh, &client_args).spawn().unwrap(),
            Duration::from_secs(30),
        );
        let took = began.elapsed();
        let s = finish(s, Duration::from_secs(10));
        for (who, o) in [("client", &c), ("server", &s)] {
            assert!(
                o.status.success(),
                "{case}: {who} {}\n{}{}",
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        // Asking the quiet port costs at most its two unanswered sends.
        assert!(took < Duration::from_secs(10), "{case}: {took:?}");
        println!("{case}: exit 0 in {took:?}");
    }
}

/// A process group that is killed when dropped.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

#[test]
fn libfabric_verbs_provider_runs_over_it() {
    if !have(&["fi_pingpong"]) {
        return;
    }
    // libfabric's verbs provider finds the device and its addresses
    // through both libraries, and each endpoint type takes its own path:
    // MSG over rdma_cm (RC), RDM through ofi_rxm over MSG, DGRAM over UD
    // QPs and AHs. `-c` checks every message's bytes.
    let mut n = 0;
    for args in [
        &["-p", "verbs", "-e", "msg"][..],
        &["-p", "verbs;ofi_rxm", "-e", "rdm", "-m", "tagged"],
        &["-p", "verbs", "-e", "dgram"],
    ] {
        n += 1;
        let mesh = 19_700 + n * 2;
        let tcp = (mesh + 1).to_string();
        let mut a: Vec<String> = ["fi_pingpong", "-c", "-I", "100"]
            .iter()
            .chain(args)
            .map(|s| s.to_string())
            .collect();
        let mut s = a.clone();
        s.extend(["-B".into(), tcp.clone()]);
        let server = run(mesh, &s).spawn().unwrap();
        common::within("fi_pingpong's server", Duration::from_secs(30), || {
            listening(mesh + 1).then_some(())
        });
        a.extend(["-P".into(), tcp, "127.0.0.1".into()]);
        let client = finish(run(mesh, &a).spawn().unwrap(), Duration::from_secs(90));
        let server = finish(server, Duration::from_secs(30));
        let out = String::from_utf8_lossy(&client.stdout);
        assert!(
            client.status.success() && server.status.success(),
            "fi_pingpong {args:?}: client {}, server {}\n{out}\n{}\n{}",
            client.status,
            server.status,
            String::from_utf8_lossy(&client.stderr),
            String::from_utf8_lossy(&server.stderr)
        );
        // A row per size: bytes, sent, "=acked", … ; every message acked.
        let rows: Vec<&str> = out.lines().filter(|l| l.contains(" =100 ")).collect();
        assert!(
            !rows.is_empty() && out.lines().filter(|l| l.contains(" =")).count() == rows.len(),
            "fi_pingpong {args:?}: not every size was acked 100 times:\n{out}"
        );
        println!(
            "fi_pingpong {}: {} sizes, 100 checked round trips each",
            args.join(" "),
            rows.len()
        );
    }
}

#[test]
fn a_killed_ernic_run_takes_its_program_with_it() {
    // A program that would outlive the test by far; its run hosts a mesh.
    let mut r = run(19_720, &["sleep".to_string(), "300".to_string()])
        .spawn()
        .unwrap();
    let child = |parent: u32| -> Option<u32> {
        let kids =
            std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).ok()?;
        kids.split_whitespace().next()?.parse().ok()
    };
    let prog = common::within("ernic run's program", Duration::from_secs(30), || {
        child(r.id())
    });
    r.kill().unwrap();
    r.wait().unwrap();
    // Gone, or a zombie waiting for a reaper: either way not running.
    common::within("the program to end", Duration::from_secs(10), || {
        let stat = std::fs::read_to_string(format!("/proc/{prog}/stat")).unwrap_or_default();
        let state = stat.rsplit(") ").next().and_then(|t| t.chars().next());
        matches!(state, None | Some('Z' | 'X')).then_some(())
    });
    println!("SIGKILL to ernic run: its program ended too");
}

/// The VM lane's Debian sid chroot, whose rdma-core is 65.
const SID: &str = "/var/cache/ernic-vm/sid";

/// Whether sid's programs can be run here (the chroot with them, and root
/// to enter it); outside CI a machine without them skips, saying so.
fn have_sid() -> bool {
    let tools = std::path::Path::new(SID)
        .join("usr/bin/ib_write_bw")
        .exists()
        && std::path::Path::new(SID)
            .join("usr/bin/ibv_rc_pingpong")
            .exists();
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    });
    if tools && root {
        return true;
    }
    assert_ne!(
        std::env::var("ERNIC_REQUIRE_SID_VERBS").as_deref(),
        Ok("1"),
        "ERNIC_REQUIRE_SID_VERBS=1 but sid's tools (vm/verbs-tools.sh) or root are missing"
    );
    println!(
        "skipped: no sid chroot with rdma-core's tools at {SID} (vm/verbs-tools.sh), or not root"
    );
    false
}

/// A mesh manager for the sid programs to join (they run in the chroot,
/// where `ernic run` is not).
struct Manager(Child);

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn rdma_core_65_builds_of_the_programs_run_over_it_too() {
    if !have_sid() {
        return;
    }
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_ernic"));
    let built = exe.parent().unwrap().join("deps/libibverbs.so");
    let inside = format!("/tmp/ernic-ibverbs-{}", std::process::id());
    let lib = PathBuf::from(format!("{SID}{inside}"));
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::copy(&built, lib.join("libibverbs.so.1")).unwrap();
    let mesh = 19_700;
    let _manager = Manager(
        Command::new(&exe)
            .args([
                "--log-level",
                "warn",
                "mesh",
                "manager",
                "--listen",
                &mesh.to_string(),
            ])
            .env("ERNIC_TCP_LISTEN", "127.0.0.1")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    common::within("the manager", Duration::from_secs(10), || {
        listening(mesh).then_some(())
    });
    // In a mount namespace of its own: sid's /proc is the host's (perftest
    // and the mesh read it), and the mount goes with the program.
    let launch = |a: &[String]| {
        let mut c = Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "--", "sh", "-c"])
            .arg(format!(
                "mount --bind /proc {SID}/proc && exec chroot {SID} env \
                 LD_LIBRARY_PATH={inside} ERNIC_MESH=tcp:worker:127.0.0.1:{mesh} \"$@\""
            ))
            .arg("sh")
            .args(a)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let info = launch(&["ibv_devinfo".into()]).output().unwrap();
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(
        info.status.success() && text.contains("hca_id:\ternic0"),
        "sid's ibv_devinfo: {text}{}",
        String::from_utf8_lossy(&info.stderr)
    );
    let mut port = mesh;
    for args in [
        &["ib_write_bw", "-x", "0", "-n", "200"][..],
        &["ib_send_lat", "-x", "0", "-n", "200"],
        &["ibv_rc_pingpong", "-g", "0", "-n", "200"],
        &["ibv_ud_pingpong", "-g", "0", "-n", "200"],
    ] {
        port += 1;
        let out = pair_with(port, args, &launch);
        let figures = out
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("#bytes"))
            .nth(1)
            .or_else(|| out.lines().find(|l| l.contains("iters in")))
            .unwrap_or_else(|| panic!("sid's {args:?}: no figures:\n{out}"));
        println!("sid {}: {}", args.join(" "), figures.trim());
    }
    let _ = std::fs::remove_dir_all(&lib);
}
