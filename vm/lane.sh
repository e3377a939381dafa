#!/usr/bin/env bash
# The VM lane: a QEMU guest (TCG, 4 vCPUs: ionic_rdma wants an event
# queue per CPU and at least four) with a Debian sid kernel whose stock
# ionic and ionic_rdma drivers bind to ernic-server over vfio-user, and
# rdma-core's tools on top. See ../shared/VM-LANE.md for what was found to
# work on these machines.
#
#   vm/lane.sh ERNIC_SERVER_BINARY [WORKDIR]
#
# Needs root and the Debian package mirrors (debootstrap, apt). The chroot
# (QEMU, busybox, the kernel) is built once in WORKDIR (default
# /var/cache/ernic-vm) and reused. Exits non-zero, with the reason on the
# last line, when the guest does not see what it must.
set -euo pipefail
server=$(realpath "$1")
work=${2:-/var/cache/ernic-vm}
here=$(cd "$(dirname "$0")" && pwd)
mirror=${ERNIC_VM_MIRROR:-http://deb.debian.org/debian}

say() { echo "vm-lane: $*"; }
fail() {
    # What the server said, then the reason (kept on the last line).
    [ -f "$work/server.log" ] && tail -n 20 "$work/server.log" | sed 's/^/vm-lane: server: /'
    echo "vm-lane: FAILED: $*"
    exit 1
}

# One lane at a time per work directory: they share the chroot, the guest
# image and its socket paths.
mkdir -p "$work"
exec 9> "$work/.lane.lock"
flock 9
source "$here/guest.sh"

# The host end of the guest's Ethernet: a TAP made by ernic-server in a
# network namespace of its own, addressed 192.0.2.1/24.
ns=ernic-vm-$$
ip netns add "$ns"
sock=$sid/tmp/ernic.sock
rm -f "$sock"
ip netns exec "$ns" "$server" --socket "$sock" --tap ernic0 --stats-file "$work/stats.json" ${ERNIC_VM_SERVER_ARGS:-} \
    > "$work/server.log" 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null || true; ip netns del "$ns" 2>/dev/null || true; umount "$sid/proc" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || fail "ernic-server made no socket (see $work/server.log)"
ip netns exec "$ns" ip addr add 192.0.2.1/24 dev ernic0
ip netns exec "$ns" ip link set ernic0 up

say "booting the guest (TCG)"
# One host thread runs all four vCPUs. With a thread each (MTTCG) the guest
# kernel now and then took an int3 Oops in its scheduler while patching its
# own text at boot, and about 1 run in 10 here hung a perftest tool although
# the device had written every completion; with one thread, 18 runs in a
# row passed. ERNIC_VM_ACCEL overrides.
timeout "${ERNIC_VM_TIMEOUT:-180}" chroot "$sid" qemu-system-x86_64 \
    -machine q35,memory-backend=mem -object memory-backend-memfd,id=mem,size=1G,share=on \
    -accel "${ERNIC_VM_ACCEL:-tcg,thread=single}" -m 1G -smp 4 -cpu max -nographic -no-reboot \
    -kernel /tmp/vmlinuz -initrd /tmp/initramfs.cpio.gz -append "console=ttyS0 panic=-1" \
    -device '{"driver":"vfio-user-pci","socket":{"path":"/tmp/ernic.sock","type":"unix"}}' \
    > "$work/console.log" 2>&1 || true
sleep 0.5 # the server logs the client's departure
ip netns exec "$ns" ip -s link show ernic0 > "$work/tap.log" 2>&1 || true
ip netns exec "$ns" ip neigh show >> "$work/tap.log" 2>&1 || true
tr -d '\r' < "$work/console.log" | grep -a '^ERNIC-VM:' > "$work/markers.log" || true
cat "$work/markers.log"

grep -q 'ERNIC-VM: done' "$work/markers.log" || fail "the guest did not finish (see $work/console.log)"
grep -q 'ERNIC-VM: pci 0x1dd8:0x1002 sub 0x1dd8:0x5400 class 0x020000' "$work/markers.log" \
    || fail "the guest does not see 1dd8:1002 (subsystem 1dd8:5400, class 02:00:00)"
grep -q 'ERNIC-VM: netdev .* driver ionic' "$work/markers.log" || fail "no netdev bound to ionic"
# (ionic_rdma is built here, so the kernel notes it is unsigned: not an error.)
if grep -v -E 'module verification failed|out-of-tree module' "$work/markers.log" \
        | grep -E -q 'ERNIC-VM: dmesg .*(fail|error|Error|abort|WARNING)'; then
    fail "the ionic driver reported an error"
fi
want_speed=${ERNIC_VM_SPEED:-100000}
grep -q "ERNIC-VM: carrier .* 1 speed $want_speed" "$work/markers.log" \
    || fail "no carrier at $want_speed Mb/s"
grep -q 'ERNIC-VM: ping ok 3 packets received' "$work/markers.log" \
    || fail "the guest could not ping 192.0.2.1 on the host TAP"
grep -E -q 'ERNIC-VM: counters .* rx_packets [1-9][0-9]* tx_packets [1-9]' "$work/markers.log" \
    || fail "the netdev's counters did not move"
grep -q 'ERNIC-VM: ibdev ionic_0' "$work/markers.log" \
    || fail "ionic_rdma registered no ionic_0 (see $work/console.log)"
grep -q 'ERNIC-VM: devinfo .*state:.*PORT_ACTIVE' "$work/markers.log" \
    || fail "ibv_devinfo does not show ionic_0's port ACTIVE"
for t in rc_pingpong ud_pingpong write_bw read_bw send_bw send_lat atomic_bw; do
    grep -q "ERNIC-VM: ok $t" "$work/markers.log" || fail "$t did not complete in the guest (see $work/console.log)"
done
grep -q 'ERNIC-VM: ok rping 3 pings' "$work/markers.log" || fail "rping (rdma_cm over GSI) did not complete"
grep -E -q 'ERNIC-VM: hw_counter req_tx_writes [1-9]' "$work/markers.log" \
    || fail "the device's hw_counters do not count the writes (see $work/markers.log)"
# The guest's hw_counters, read after its last RDMA work, equal the server's
# stats file, which it rewrites when the client leaves. Sends are left out:
# the guest's CM may still send a MAD on QP1 after its last read.
for _ in $(seq 100); do
    grep -q 'client left\|client dropped' "$work/server.log" && break
    sleep 0.1
done
python3 - "$work/stats.json" "$work/markers.log" <<'PY' || fail "the guest's hw_counters differ from the stats file"
import json, re, sys
doc = json.load(open(sys.argv[1]))
dev = next(g["counters"] for g in doc["groups"] if g["kind"] == "device")
bad = []
for m in re.finditer(r"ERNIC-VM: hw_counter (\w+) (\S+)", open(sys.argv[2]).read()):
    name, guest = m.group(1), m.group(2)
    if "send" in name or name == "req_cqe_success":
        continue
    if str(dev.get(name)) != guest:
        bad.append(f"{name}: guest {guest}, file {dev.get(name)}")
print("hw_counters vs stats file:", "; ".join(bad) or "all equal")
sys.exit(1 if bad else 0)
PY
want_qp=${ERNIC_VM_MAX_QP:-1024}
grep -E -q "ERNIC-VM: devinfo max_qp:[[:space:]]+$want_qp\$" "$work/markers.log" \
    || fail "ibv_devinfo does not show the profile's max_qp $want_qp"
say "passed: ionic bound, carrier at $want_speed Mb/s, ping over the TAP, counters moved;" \
    "ionic_rdma registered ionic_0, ibv_devinfo shows its port ACTIVE and max_qp $want_qp;" \
    "ibv_rc/ud_pingpong, ib_write/read/send_bw, ib_send_lat, ib_atomic_bw and rping completed"
