//! Network namespaces for tests of separate hosts: three hosts on one
//! bridge (`Net`), and whether this environment can make them (root and
//! iproute2; in CI it must).

use std::process::Command;

pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether this environment can run the test; in CI it must.
pub fn can_run() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    let has_ip = Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if root && has_ip {
        return true;
    }
    let why = if !root {
        "not running as root"
    } else {
        "iproute2's ip is not installed"
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must run the network namespace test, but {why}"
    );
    println!("skipping the network namespace test: {why} (CI runs it)");
    false
}

/// Three hosts on one bridge: host i is 10.77.7.(i+1).
pub struct Net {
    prefix: String,
}

impl Net {
    pub fn new() -> Net {
        let prefix = format!("ern{}", std::process::id() % 100_000);
        let net = Net { prefix };
        let br = net.ns("br");
        ip(&["netns", "add", &br]);
        ip(&["-n", &br, "link", "set", "lo", "up"]);
        ip(&["-n", &br, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &br, "link", "set", "br0", "up"]);
        for i in 0..3 {
            let h = net.ns(&format!("h{i}"));
            let (vh, vb) = (format!("vh{i}"), format!("vb{i}"));
            ip(&["netns", "add", &h]);
            ip(&["-n", &h, "link", "set", "lo", "up"]);
            ip(&[
                "link", "add", &vh, "netns", &h, "type", "veth", "peer", "name", &vb, "netns", &br,
            ]);
            ip(&[
                "-n",
                &h,
                "addr",
                "add",
                &format!("10.77.7.{}/24", i + 1),
                "dev",
                &vh,
            ]);
            ip(&["-n", &h, "link", "set", &vh, "up"]);
            ip(&["-n", &br, "link", "set", &vb, "master", "br0"]);
            ip(&["-n", &br, "link", "set", &vb, "up"]);
        }
        net
    }

    pub fn ns(&self, name: &str) -> String {
        format!("{}-{name}", self.prefix)
    }

    /// Takes host `i`'s link down (at the bridge) or up again.
    pub fn link(&self, i: usize, up: bool) {
        ip(&[
            "-n",
            &self.ns("br"),
            "link",
            "set",
            &format!("vb{i}"),
            if up { "up" } else { "down" },
        ]);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for n in ["h0", "h1", "h2", "br"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(n)])
                .status();
        }
    }
}
