#!/usr/bin/env bash
# The NVMe over Fabrics VM lane: one QEMU guest (TCG, as vm/lane.sh) whose
# stock nvme_rdma, driven by nvme-cli and fio, reaches the NVMe-oF target
# inside ernic-server (--backend nvmeof, an RDMA device of its own at
# 192.0.2.10) through the stock ionic_rdma over RoCE: discovery, connect
# with two I/O queues, both namespaces' sizes, fio with crc32c verify, a dd
# and md5sum round trip, disconnect and reconnect with the data still
# there, and no nvme/ionic error in the guest's kernel log.
#
#   vm/lane-nvme.sh ERNIC_SERVER_BINARY [WORKDIR]
#
# A script of its own rather than an option of lane.sh: the server runs
# another backend with the guest's GIDs, the host end carries the target's
# address, the guest image carries the NVMe tools (vm/nvme.sh) and the
# guest runs other checks; it shares the chroot and the image's making
# (guest.sh) and the lock with the other lanes. ERNIC_VM_NVME_BACKEND
# overrides the backend (ERNIC_VM_NVME_BACKEND=loopback shows how the guest
# fails without a target). Exits non-zero, with the reason on the last
# line, when a check did not pass.
set -euo pipefail
server=$(realpath "$1")
work=${2:-/var/cache/ernic-vm}
here=$(cd "$(dirname "$0")" && pwd)
mirror=${ERNIC_VM_MIRROR:-http://deb.debian.org/debian}
target=192.0.2.10
port=4420
nqn=nqn.2024-01.io.ernic:nvme
# The namespaces, as given to the server and as the guest must see them.
ns_sizes=(64M 32M)
ns_bytes=(67108864 33554432)
backend=${ERNIC_VM_NVME_BACKEND:-nvmeof:ns=${ns_sizes[0]},ns=${ns_sizes[1]},addr=$target,port=$port,nqn=$nqn}

say() { echo "vm-lane-nvme: $*"; }
fail() {
    # What the server said and the guest's nvme/ionic kernel lines, then
    # the reason (kept on the last line).
    [ -f "$work/server-nvme.log" ] && tail -n 30 "$work/server-nvme.log" | sed 's/^/vm-lane-nvme: server: /'
    [ -f "$work/markers-nvme.log" ] && grep -a 'ERNIC-VM: nvme-dmesg' "$work/markers-nvme.log" \
        | tail -n 30 | sed 's/^/vm-lane-nvme: guest: /'
    echo "vm-lane-nvme: FAILED: $*"
    exit 1
}

# One lane at a time per work directory: they share the chroot, the guest
# image and its socket paths.
mkdir -p "$work"
exec 9> "$work/.lane.lock"
flock 9
guest_nvme=1
source "$here/guest.sh"

ns=ernic-vmn-$$
ip netns add "$ns"
# The target is joined to the server's engine through a mesh on loopback.
ip netns exec "$ns" ip link set lo up
sock=$sid/tmp/ernic.sock
rm -f "$sock" "$work/console-nvme.log" "$work/markers-nvme.log"
# The target answers the guest over RoCE at the guest's GIDs: its IPv4
# address's and the link-local one of the default profile's MAC
# (02:00:45:52:4e:01).
ip netns exec "$ns" env ERNIC_TCP_GUEST_GIDS="::ffff:192.0.2.2,fe80::45ff:fe52:4e01" \
    "$server" --socket "$sock" --tap ernic0 --backend "$backend" > "$work/server-nvme.log" 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null || true; ip netns del "$ns" 2>/dev/null || true; umount "$sid/proc" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || fail "ernic-server made no socket (see $work/server-nvme.log)"
# The guest finds the target's MAC by ARP, as on a real fabric: the
# target's address sits on the host end of the TAP too, so the host kernel
# answers for it (with the TAP's MAC). A static neighbour in the guest
# would instead bake one MAC of the server's into the lane.
ip netns exec "$ns" ip addr add 192.0.2.1/24 dev ernic0
ip netns exec "$ns" ip addr add "$target/32" dev ernic0
ip netns exec "$ns" ip link set ernic0 up

say "booting the guest (TCG, one host thread: see lane.sh)"
start=$(date +%s)
timeout "${ERNIC_VM_TIMEOUT:-300}" chroot "$sid" qemu-system-x86_64 \
    -machine q35,memory-backend=mem -object memory-backend-memfd,id=mem,size=1G,share=on \
    -accel "${ERNIC_VM_ACCEL:-tcg,thread=single}" -m 1G -smp 4 -cpu max -nographic -no-reboot \
    -kernel /tmp/vmlinuz -initrd /tmp/initramfs.cpio.gz \
    -append "console=ttyS0 panic=-1 ernic.nvme=$target:$port:$nqn" \
    -device '{"driver":"vfio-user-pci","socket":{"path":"/tmp/ernic.sock","type":"unix"}}' \
    > "$work/console-nvme.log" 2>&1 || true
sleep 0.5 # the server logs the client's departure
say "the guest ran for $(( $(date +%s) - start )) s"
tr -d '\r' < "$work/console-nvme.log" | grep -a '^ERNIC-VM:' > "$work/markers-nvme.log" || true
grep -a -v 'ERNIC-VM: nvme-dmesg' "$work/markers-nvme.log" || true

grep -q 'ERNIC-VM: done' "$work/markers-nvme.log" || fail "the guest did not finish (see $work/console-nvme.log)"
grep -q 'ERNIC-VM: ibdev ionic_0' "$work/markers-nvme.log" \
    || fail "ionic_rdma registered no ionic_0 (see $work/console-nvme.log)"
# Each step, in the guest's order; the guest's own failure line says why.
for step in module tools discover connect fio dd disconnect reconnect reread final-disconnect dmesg; do
    if ! grep -q "ERNIC-VM: ok nvme-$step" "$work/markers-nvme.log"; then
        why=$(grep -a "ERNIC-VM: failed nvme-" "$work/markers-nvme.log" | head -1 || true)
        fail "nvme-$step did not pass${why:+ ($why)}"
    fi
done
grep -q "ERNIC-VM: ok nvme-discover $nqn\$" "$work/markers-nvme.log" || fail "the discovery log lacks $nqn"
grep -E -q 'ERNIC-VM: nvme-ctrl .* transport rdma state live queue_count 3 ' "$work/markers-nvme.log" \
    || fail "the controller is not live over rdma with two I/O queues (queue_count 3)"
for i in 1 2; do
    grep -E -q "ERNIC-VM: ok nvme-size nsid $i nvme[0-9]+n[0-9]+ ${ns_bytes[i-1]} bytes" "$work/markers-nvme.log" \
        || fail "namespace $i is not ${ns_bytes[i-1]} bytes (${ns_sizes[i-1]}) in the guest"
done
say "passed: nvme discover lists $nqn at $target:$port; nvme connect over rdma (ionic_rdma)" \
    "with two I/O queues; namespaces of ${ns_sizes[*]}; fio (2 jobs, iodepth 8) verified crc32c;" \
    "dd and md5sum round trip on both namespaces; disconnect, reconnect, the data read back;" \
    "no nvme/ionic error in dmesg"
