#!/bin/busybox sh
# The guest's /init in the VM lane: load the stock ionic driver, bring the
# netdev up, load ionic_rdma and run the verbs tools, and print what the
# lane checks between ERNIC-VM markers.
#
# The kernel command line may say ernic.ip=ADDR (default 192.0.2.2) and
# ernic.role=solo|server|client with ernic.peer=ADDR: solo runs each tool's
# two sides in this guest; in two guests the server side runs in one and
# the client side, connecting to the peer, in the other.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp
role=solo; addr=192.0.2.2; peer=127.0.0.1
for a in $(cat /proc/cmdline); do
    case "$a" in
        ernic.role=*) role=${a#*=} ;;
        ernic.ip=*) addr=${a#*=} ;;
        ernic.peer=*) peer=${a#*=} ;;
    esac
done
echo "ERNIC-VM: booted as $role, $addr"
for d in /sys/bus/pci/devices/*; do
    echo "ERNIC-VM: pci $(cat $d/vendor):$(cat $d/device) sub $(cat $d/subsystem_vendor):$(cat $d/subsystem_device) class $(cat $d/class)"
done
insmod /ionic.ko
sleep 3
for n in /sys/class/net/*; do
    [ -e "$n/device/driver" ] || continue
    i=$(basename $n)
    echo "ERNIC-VM: netdev $i driver $(basename $(readlink $n/device/driver)) mac $(cat $n/address)"
    ip link set "$i" up
    sleep 2
    echo "ERNIC-VM: carrier $i $(cat $n/carrier) speed $(cat $n/speed)"
    ip addr add "$addr/24" dev "$i"
    if ping -c 3 -W 3 192.0.2.1 > /tmp/ping 2>&1; then
        echo "ERNIC-VM: ping ok $(grep -o '[0-9]* packets received' /tmp/ping)"
    else
        echo "ERNIC-VM: ping failed: $(tail -2 /tmp/ping | tr '\n' ' ')"
    fi
    echo "ERNIC-VM: counters $i rx_packets $(cat $n/statistics/rx_packets) tx_packets $(cat $n/statistics/tx_packets)"
done
# The RDMA half: the verbs modules and ionic_rdma, then the tools.
ip link set lo up
for m in $(cat /modules 2>/dev/null); do
    insmod /lib/modules/$m.ko || echo "ERNIC-VM: insmod $m failed"
done
for _ in $(seq 30); do [ -e /sys/class/infiniband/ionic_0 ] && break; sleep 1; done
echo "ERNIC-VM: ibdev $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')"
if ibv_devinfo -v > /tmp/devinfo 2>&1; then
    grep -E "hca_id|fw_ver|state:|max_qp:|max_cq:|max_mr:|max_qp_wr|phys_port_cnt|link_layer|active_mtu|GID\[" /tmp/devinfo \
        | sed 's/^[[:space:]]*/ERNIC-VM: devinfo /'
else
    sed 's/^/ERNIC-VM: devinfo failed: /' /tmp/devinfo
fi
# Stock verbs tools: solo, a server and a client in this guest (the
# pingpongs and perftest exchange QP details over TCP to 127.0.0.1); in two
# guests, the servers here one after another, or the clients there, each
# retried until its server is up. GID 1 is the netdev's IPv4 address.
side() {
    name=$1; shift
    case "$role" in
        solo)
            timeout 60 "$@" > /tmp/$name-s 2>&1 &
            sleep 1
            timeout 60 "$@" 127.0.0.1 > /tmp/$name-c 2>&1 && wait $!
            ;;
        server)
            timeout 120 "$@" > /tmp/$name-c 2>&1
            ;;
        client)
            for _ in $(seq 40); do
                timeout 60 "$@" "$peer" > /tmp/$name-c 2>&1 && return 0
                sleep 1
            done
            return 1
            ;;
    esac
}
run() {
    name=$1
    if side "$@"; then
        echo "ERNIC-VM: ok $name"
    else
        echo "ERNIC-VM: failed $name"
        wait
        # What both sides said last (solo: the server ran here too).
        tail -n 8 /tmp/$name-c | sed "s/^/ERNIC-VM: $name client: /"
        [ -e /tmp/$name-s ] && tail -n 8 /tmp/$name-s | sed "s/^/ERNIC-VM: $name server: /"
    fi
    grep -E "iters in|^ *[0-9]+ +[0-9]+ +[0-9.]+|rror|ouldn" /tmp/$name-c | sed "s/^/ERNIC-VM: $name: /"
}
run rc_pingpong ibv_rc_pingpong -d ionic_0 -g 1 -n 100
run ud_pingpong ibv_ud_pingpong -d ionic_0 -g 1 -n 100
run write_bw ib_write_bw -d ionic_0 -x 1 -s 65536 -n 200
run read_bw ib_read_bw -d ionic_0 -x 1 -s 65536 -n 200
run send_bw ib_send_bw -d ionic_0 -x 1 -s 65536 -n 200
run send_lat ib_send_lat -d ionic_0 -x 1 -s 8 -n 200
run atomic_bw ib_atomic_bw -d ionic_0 -x 1 -n 200
# rdma_cm over the GSI QP: rping connects, pings three times, disconnects.
rping_side() {
    case "$role" in
        solo)
            timeout 60 rping -s -a "$addr" -C 3 -v > /tmp/rping-s 2>&1 &
            sleep 1
            timeout 60 rping -c -a "$addr" -C 3 -v > /tmp/rping-c 2>&1 && wait $!
            ;;
        server) timeout 120 rping -s -a "$addr" -C 3 -v > /tmp/rping-c 2>&1 ;;
        client)
            for _ in $(seq 40); do
                timeout 60 rping -c -a "$peer" -C 3 -v > /tmp/rping-c 2>&1 && return 0
                sleep 1
            done
            return 1
            ;;
    esac
}
if rping_side; then
    echo "ERNIC-VM: ok rping $(grep -c 'ping data' /tmp/rping-c) pings"
else
    echo "ERNIC-VM: failed rping"
    wait
    tail -5 /tmp/rping-c | sed "s/^/ERNIC-VM: rping: /"
fi
# The device's counters as the kernel shows them (STATS_HDRS/VALS).
hc=/sys/class/infiniband/ionic_0/ports/1/hw_counters
[ -d $hc ] || hc=/sys/class/infiniband/ionic_0/hw_counters
for c in rdma_writes rdma_reads rdma_sends rdma_recvs rdma_atomics; do
    echo "ERNIC-VM: hw_counter $c $(cat $hc/$c 2>/dev/null || echo missing)"
done
dmesg | grep -i -E "ionic|1dd8|rdma|ib_" | sed 's/^/ERNIC-VM: dmesg /'
echo "ERNIC-VM: done"
poweroff -f
