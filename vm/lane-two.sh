#!/usr/bin/env bash
# The two-guest VM lane: two QEMU guests (TCG) on two ernic-servers joined
# by the TCP mesh (--backend tcp: one manager, one worker), their Ethernet
# TAPs bridged in a network namespace. Guest A (192.0.2.2) runs the server
# side of each stock verbs tool, guest B (192.0.2.3) the client side, so
# every RDMA operation crosses the mesh between the two servers.
#
#   vm/lane-two.sh ERNIC_SERVER_BINARY [WORKDIR]
#
# Needs root and the Debian package mirrors (the chroot is vm/lane.sh's,
# built once). Exits non-zero, with the reason on the last line, when a
# tool did not complete on both sides.
set -euo pipefail
server=$(realpath "$1")
work=${2:-/var/cache/ernic-vm}
here=$(cd "$(dirname "$0")" && pwd)
mirror=${ERNIC_VM_MIRROR:-http://deb.debian.org/debian}

say() { echo "vm-lane-two: $*"; }
fail() {
    # What the servers said, then the reason (kept on the last line).
    for g in a b; do
        [ -f "$work/server-$g.log" ] && tail -n 20 "$work/server-$g.log" | sed "s/^/vm-lane-two: server $g: /"
    done
    echo "vm-lane-two: FAILED: $*"
    exit 1
}

# One lane at a time per work directory: they share the chroot, the guest
# image and its socket paths.
mkdir -p "$work"
exec 9> "$work/.lane.lock"
flock 9
source "$here/guest.sh"

ns=ernic-vm2-$$
ip netns add "$ns"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
    umount "$sid/proc" 2>/dev/null || true
}
trap cleanup EXIT
ip netns exec "$ns" ip link set lo up
ip netns exec "$ns" ip link add br0 type bridge
ip netns exec "$ns" ip addr add 192.0.2.1/24 dev br0
ip netns exec "$ns" ip link set br0 up
port=$((20000 + $$ % 20000))

# Server A is the mesh manager, B a worker; each is told its guest's GIDs
# (the IPv4 address's and the link-local one its MAC gives).
printf 'mac = 02:00:45:52:4e:02\n' > "$work/guest-b.ini"
# The two servers share a mesh key, so the lane also proves the keyed
# handshake (a keyless manager on every address would only warn).
key=$work/mesh.key
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$key")
start() {
    local name=$1 tap=$2 gids=$3 mesh=$4 extra=$5
    local sock=$sid/tmp/ernic-$name.sock
    rm -f "$sock"
    ip netns exec "$ns" env ERNIC_TCP_GUEST_GIDS="$gids" ERNIC_MESH_KEY_FILE="$key" "$server" --socket "$sock" --tap "$tap" \
        --backend tcp --mesh "$mesh" --mesh-wait 30 $extra > "$work/server-$name.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 300); do [ -S "$sock" ] && break; sleep 0.1; done
    [ -S "$sock" ] || fail "ernic-server $name made no socket (see $work/server-$name.log)"
    ip netns exec "$ns" ip link set "$tap" master br0
    ip netns exec "$ns" ip link set "$tap" up
}
start a ernic0 "::ffff:192.0.2.2,fe80::45ff:fe52:4e01" "tcp:manager:listen:$port" ""
start b ernic1 "::ffff:192.0.2.3,fe80::45ff:fe52:4e02" "tcp:worker:127.0.0.1:$port" \
    "--nic-profile compat,$work/guest-b.ini"

say "booting two guests (TCG, one host thread each: see lane.sh)"
boot() {
    local name=$1 append=$2
    timeout "${ERNIC_VM_TIMEOUT:-300}" chroot "$sid" qemu-system-x86_64 \
        -machine q35,memory-backend=mem -object memory-backend-memfd,id=mem,size=1G,share=on \
        -accel "${ERNIC_VM_ACCEL:-tcg,thread=single}" -m 1G -smp 4 -cpu max -nographic -no-reboot \
        -kernel /tmp/vmlinuz -initrd /tmp/initramfs.cpio.gz \
        -append "console=ttyS0 panic=-1 $append" \
        -device "{\"driver\":\"vfio-user-pci\",\"socket\":{\"path\":\"/tmp/ernic-$name.sock\",\"type\":\"unix\"}}" \
        > "$work/console-$name.log" 2>&1 || true
}
boot a "ernic.role=server ernic.ip=192.0.2.2" &
qa=$!
boot b "ernic.role=client ernic.ip=192.0.2.3 ernic.peer=192.0.2.2" &
qb=$!
wait $qa $qb
for g in a b; do
    tr -d '\r' < "$work/console-$g.log" | grep -a '^ERNIC-VM:' | sed "s/^/$g /" > "$work/markers-$g.log" || true
    grep -E "ok |failed|ibdev|: +[0-9]+ +[0-9]+ |iters in" "$work/markers-$g.log" || true
done
for g in a b; do
    if ! grep -q 'ERNIC-VM: booted' "$work/markers-$g.log"; then
        # Its kernel never ran /init: where its boot log stopped.
        tr -d '\r' < "$work/console-$g.log" | tail -n 15 | sed "s/^/vm-lane-two: console $g: /"
        fail "guest $g's kernel did not reach /init (see $work/console-$g.log)"
    fi
    grep -q 'ERNIC-VM: done' "$work/markers-$g.log" || fail "guest $g did not finish (see $work/console-$g.log)"
    for t in rc_pingpong ud_pingpong write_bw read_bw send_bw send_lat atomic_bw; do
        grep -q "ERNIC-VM: ok $t" "$work/markers-$g.log" || fail "$t did not complete in guest $g"
    done
    grep -q 'ERNIC-VM: ok rping' "$work/markers-$g.log" || fail "rping did not complete in guest $g"
done
say "passed: ibv_rc/ud_pingpong, ib_write/read/send_bw, ib_send_lat, ib_atomic_bw and rping" \
    "between two guests on two ernic-servers joined by the mesh"
