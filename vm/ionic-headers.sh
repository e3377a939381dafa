#!/usr/bin/env bash
# Extracts the guest kernel's own ionic headers — Linux's ionic_if.h and
# ionic_regs.h (and ionic_fw.h of the RDMA driver) — from Debian's
# linux-source package into WORKDIR/headers, for the layout tests that
# compare ernic-ionic's offsets with them.
#
#   vm/ionic-headers.sh [WORKDIR]        (default /var/cache/ernic-vm)
#
# Needs root and the Debian package mirrors; reuses the VM lane's chroot.
set -euo pipefail
work=${1:-/var/cache/ernic-vm}
here=$(cd "$(dirname "$0")" && pwd)
mirror=${ERNIC_VM_MIRROR:-http://deb.debian.org/debian}

say() { echo "ionic-headers: $*"; }
fail() { echo "ionic-headers: FAILED: $*"; exit 1; }

source "$here/chroot.sh"
trap 'umount "$sid/proc" 2>/dev/null || true' EXIT
out=$work/headers
if [ -s "$out/ionic_if.h" ] && [ -s "$out/ionic_regs.h" ]; then
    say "already in $out"
    exit 0
fi
version=${kernel##*/vmlinuz-}
series=$(echo "$version" | cut -d. -f1-2)
say "fetching linux-source-$series"
chroot "$sid" apt-get -o Acquire::Check-Valid-Until=false update -qq
rm -f "$sid"/tmp/linux-source-*.deb
chroot "$sid" sh -c "cd /tmp && apt-get download -qq linux-source-$series" \
    || fail "downloading linux-source-$series"
deb=$(ls "$sid"/tmp/linux-source-"$series"_*.deb | head -1)
mkdir -p "$out"
dpkg-deb --fsys-tarfile "$deb" \
    | tar -xO "./usr/src/linux-source-$series.tar.xz" \
    | tar -xJ -C "$out" --transform 's#.*/##' --wildcards \
        '*/drivers/net/ethernet/pensando/ionic/ionic_if.h' \
        '*/drivers/net/ethernet/pensando/ionic/ionic_regs.h' \
        '*/drivers/infiniband/hw/ionic/ionic_fw.h'
rm -f "$deb"
[ -s "$out/ionic_if.h" ] || fail "no ionic_if.h in linux-source-$series"
echo "$version" > "$out/VERSION"
say "ionic_if.h, ionic_regs.h, ionic_fw.h of Linux $version in $out"
