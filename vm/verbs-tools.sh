#!/usr/bin/env bash
# Installs rdma-core's tools and headers of Debian sid (rdma-core 65) in the
# VM lane's chroot: perftest, ibverbs-utils, rdmacm-utils and
# libibverbs-dev, so that ernic's libibverbs is checked against a newer
# rdma-core than the host's (crates/ernic-ibverbs/tests/layout.rs probes
# sid's verbs.h; tests/ibverbs_stock.rs runs sid's builds of the programs).
#
#   vm/verbs-tools.sh [WORKDIR]        (default /var/cache/ernic-vm)
#
# Needs root and the Debian package mirrors; reuses the VM lane's chroot.
set -euo pipefail
work=${1:-/var/cache/ernic-vm}
here=$(cd "$(dirname "$0")" && pwd)
mirror=${ERNIC_VM_MIRROR:-http://deb.debian.org/debian}

say() { echo "verbs-tools: $*"; }
fail() { echo "verbs-tools: FAILED: $*"; exit 1; }

source "$here/chroot.sh"
trap 'umount "$sid/proc" 2>/dev/null || true' EXIT
pkgs="perftest ibverbs-utils rdmacm-utils libibverbs-dev librdmacm-dev"
if chroot "$sid" sh -c 'command -v ib_write_bw && command -v ibv_rc_pingpong && command -v rping &&
        test -e /usr/include/infiniband/verbs.h' > /dev/null 2>&1; then
    say "already in the chroot"
    exit 0
fi
say "installing $pkgs in the chroot"
chroot "$sid" apt-get -o Acquire::Check-Valid-Until=false update -qq
chroot "$sid" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    $pkgs > "$work/verbs-tools.log" 2>&1 || fail "installing $pkgs (see $work/verbs-tools.log)"
say "rdma-core $(chroot "$sid" dpkg-query -W -f '${Version}' libibverbs1)"
