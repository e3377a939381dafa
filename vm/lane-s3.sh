#!/usr/bin/env bash
# The S3 VM lane: one QEMU guest (TCG, as vm/lane.sh) reaches the S3 store
# inside ernic-server (--backend s3) on its own Ethernet segment: the
# store's smoltcp stack claims the guest's frames for 192.0.2.20 and
# answers ARP, ping and TCP, and the guest's stock ionic driver, its TCP
# stack, curl (SigV4 by --aws-sigv4) and the AWS CLI move objects both
# ways, each read back with the same md5; an unsigned request is refused.
#
#   vm/lane-s3.sh ERNIC_SERVER_BINARY [WORKDIR]
#
# Shares the chroot, the making of the image (guest.sh, with vm/s3.sh) and
# the lock with the other lanes. No TAP: nothing but the store is on the
# segment. Exits non-zero, with the reason on the last line, when a check
# did not pass.
set -euo pipefail
server=$(realpath "$1")
work=${2:-/var/cache/ernic-vm}
here=$(cd "$(dirname "$0")" && pwd)
mirror=${ERNIC_VM_MIRROR:-http://deb.debian.org/debian}
store=192.0.2.20
ak=AKIDERNICVMLANE
sk=vm-lane-secret-key
backend=${ERNIC_VM_S3_BACKEND:-s3:addr=$store,size=256M,access-key=$ak,secret-key=$sk}

say() { echo "vm-lane-s3: $*"; }
fail() {
    [ -f "$work/server-s3.log" ] && tail -n 30 "$work/server-s3.log" | sed 's/^/vm-lane-s3: server: /'
    echo "vm-lane-s3: FAILED: $*"
    exit 1
}

mkdir -p "$work"
exec 9> "$work/.lane.lock"
flock 9
guest_s3=1
source "$here/guest.sh"

ns=ernic-vms-$$
ip netns add "$ns"
ip netns exec "$ns" ip link set lo up
sock=$sid/tmp/ernic.sock
rm -f "$sock" "$work/console-s3.log" "$work/markers-s3.log"
ip netns exec "$ns" env ERNIC_TCP_GUEST_GIDS="::ffff:192.0.2.2,fe80::45ff:fe52:4e01" \
    "$server" --socket "$sock" --backend "$backend" > "$work/server-s3.log" 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null || true; ip netns del "$ns" 2>/dev/null || true; umount "$sid/proc" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || fail "ernic-server made no socket (see $work/server-s3.log)"

say "booting the guest (TCG, one host thread: see lane.sh)"
start=$(date +%s)
# The chroot is the guest's second file system (read-only over 9p): the
# AWS CLI runs from it.
timeout "${ERNIC_VM_TIMEOUT:-600}" chroot "$sid" qemu-system-x86_64 \
    -machine q35,memory-backend=mem -object memory-backend-memfd,id=mem,size=1G,share=on \
    -accel "${ERNIC_VM_ACCEL:-tcg,thread=single}" -m 1G -smp 4 -cpu max -nographic -no-reboot \
    -kernel /tmp/vmlinuz -initrd /tmp/initramfs.cpio.gz \
    -append "console=ttyS0 panic=-1 ernic.s3=$store:$ak:$sk" \
    -device '{"driver":"vfio-user-pci","socket":{"path":"/tmp/ernic.sock","type":"unix"}}' \
    -virtfs local,path=/,mount_tag=sid,security_model=none,readonly=on \
    > "$work/console-s3.log" 2>&1 || true
sleep 0.5
say "the guest ran for $(( $(date +%s) - start )) s"
tr -d '\r' < "$work/console-s3.log" | grep -a '^ERNIC-VM:' > "$work/markers-s3.log" || true
cat "$work/markers-s3.log"

grep -q 'ERNIC-VM: done' "$work/markers-s3.log" || fail "the guest did not finish (see $work/console-s3.log)"
for step in ping mb curl-put curl-get anonymous aws list; do
    if ! grep -q "ERNIC-VM: ok s3-$step" "$work/markers-s3.log"; then
        why=$(grep -a "ERNIC-VM: failed s3-" "$work/markers-s3.log" | head -1 || true)
        fail "s3-$step did not pass${why:+ ($why)}"
    fi
done
grep -q "ERNIC-VM: ok s3-ping 3 packets received lladdr 02:00:c0:00:02:14" "$work/markers-s3.log" \
    || fail "the store did not answer ping and ARP with its MAC"
say "passed: the guest's ionic netdev reaches the store at $store (ARP, ping, TCP by smoltcp);" \
    "curl with SigV4 makes a bucket, puts and gets 3 MiB (ETag = md5); an unsigned GET gets 403;" \
    "the AWS CLI puts and gets the same bytes; the listing has both objects"
