#!/bin/busybox sh
# The guest's /init in the VM lane: load the stock ionic driver, bring the
# netdev up, load ionic_rdma and run the verbs tools, and print what the
# lane checks between ERNIC-VM markers.
#
# The kernel command line may say ernic.ip=ADDR (default 192.0.2.2) and
# ernic.role=solo|server|client with ernic.peer=ADDR: solo runs each tool's
# two sides in this guest; in two guests the server side runs in one and
# the client side, connecting to the peer, in the other. With
# ernic.nvme=ADDR:PORT:NQN (vm/lane-nvme.sh) the guest runs the NVMe over
# Fabrics checks against that target instead of the verbs tools, and with
# ernic.s3=ADDR:ACCESS_KEY:SECRET (vm/lane-s3.sh) the S3 checks against the
# store at ADDR.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# The lanes boot without `quiet`, so a kernel that hangs before this shows
# in the console log where; from here on only emergencies reach the
# console, so no kernel line breaks into a marker.
echo 1 > /proc/sys/kernel/printk
mkdir -p /tmp
role=solo; addr=192.0.2.2; peer=127.0.0.1; nvme=; s3=
for a in $(cat /proc/cmdline); do
    case "$a" in
        ernic.role=*) role=${a#*=} ;;
        ernic.ip=*) addr=${a#*=} ;;
        ernic.peer=*) peer=${a#*=} ;;
        ernic.nvme=*) nvme=${a#*=} ;;
        ernic.s3=*) s3=${a#*=} ;;
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

# NVMe over Fabrics (ernic.nvme=ADDR:PORT:NQN): the stock nvme_rdma host,
# driven by nvme-cli and fio, over ionic_rdma to the target ernic-server
# runs at ADDR. Every step prints "ok nvme-STEP ..." or "failed nvme-STEP
# WHY" with the tool's last lines; the first failure ends the steps (each
# needs the one before), and the kernel's nvme/ionic lines are checked
# after them either way.
nvme_fail() {
    echo "ERNIC-VM: failed nvme-$1 $2"
    [ -n "$3" ] && [ -s "$3" ] && tail -n 8 "$3" | sed "s/^/ERNIC-VM: nvme-$1: /"
    return 1
}
# Runs step $1's tool for at most $2 s, its output in /tmp/nvme-$1; when
# it fails, the step's marker says how, and what it ran. (A fabrics
# command the target never answers ends after the kernel's 60 s admin
# timeout whatever the signal, so the connecting steps allow 90 s and the
# tool prints the kernel's error.)
nvme_run() {
    step=$1 secs=$2
    shift 2
    timeout "$secs" "$@" > /tmp/nvme-$step 2>&1 && return 0
    rc=$?
    case $rc in
        124|143) nvme_fail "$step" "timed out after $secs s: $*" /tmp/nvme-$step ;;
        *) nvme_fail "$step" "exit $rc: $*" /tmp/nvme-$step ;;
    esac
}
# The block device of namespace ID $1, once it is there (waiting up to
# $2 s). By its nsid, not its name: the kernel scans namespaces in
# parallel, so nvme0n1 is whichever came first (the per-path devices of
# native multipath, nvme0c0n1, are hidden).
nvme_disk() {
    for _ in $(seq "$2"); do
        for b in /sys/block/nvme*; do
            case "${b##*/}" in *c*) continue ;; esac
            [ "$(cat $b/nsid 2>/dev/null)" = "$1" ] && [ -e "/dev/${b##*/}" ] \
                && { echo "${b##*/}"; return 0; }
        done
        sleep 1
    done
    return 1
}
# Connects (step $1) with two I/O queues of 32 entries and sets $ctrl,
# $ns1 and $ns2 (empty when the target has one namespace). A lost
# connection fails I/O after 10 s instead of retrying for the default
# 600 s, so a broken target ends in a marker, not in QEMU's timeout.
nvme_connect() {
    nvme_run "$1" 90 nvme connect -t rdma -a "$nvme_addr" -s "$nvme_port" -n "$nvme_nqn" \
        --nr-io-queues=2 --queue-size=32 --ctrl-loss-tmo=10 --reconnect-delay=2 || return 1
    ns1=$(nvme_disk 1 30) || { nvme_fail "$1" "no block device for namespace 1" /tmp/nvme-$1; return 1; }
    # The kernel scans the namespaces together: a second one comes with
    # the first, or there is none.
    ns2=$(nvme_disk 2 3) || ns2=
    ctrl=
    for c in /sys/class/nvme/nvme*; do
        [ "$(cat $c/subsysnqn 2>/dev/null)" = "$nvme_nqn" ] && ctrl=${c##*/}
    done
    c=/sys/class/nvme/$ctrl
    echo "ERNIC-VM: ok nvme-$1 $(tr '\n' ' ' < /tmp/nvme-$1)nsid 1 $ns1${ns2:+, nsid 2 $ns2}"
    echo "ERNIC-VM: nvme-ctrl $ctrl transport $(cat $c/transport) state $(cat $c/state)" \
        "queue_count $(cat $c/queue_count) sqsize $(cat $c/sqsize) $(cat $c/address)"
}
# Disconnects (step $1): exactly one controller, and its disks go away.
nvme_disconnect() {
    nvme_run "$1" 30 nvme disconnect -n "$nvme_nqn" || return 1
    grep -q 'disconnected 1 controller' /tmp/nvme-$1 \
        || { nvme_fail "$1" "did not disconnect exactly one controller" /tmp/nvme-$1; return 1; }
    for _ in $(seq 10); do [ -e /sys/block/$ns1 ] || break; sleep 1; done
    [ -e /sys/block/$ns1 ] && { nvme_fail "$1" "$ns1 is still there"; return 1; }
    echo "ERNIC-VM: ok nvme-$1 $(tr '\n' ' ' < /tmp/nvme-$1)"
}
# The md5 of $3 MiB at MiB $2 of disk $1 as the target has them (the page
# cache dropped first).
nvme_md5() {
    blockdev --flushbufs /dev/$1
    echo 3 > /proc/sys/vm/drop_caches
    timeout 60 dd if=/dev/$1 bs=1M skip=$2 count=$3 2>/dev/null | md5sum | cut -d' ' -f1
}
nvme_steps() {
    nvme_addr=${nvme%%:*}; rest=${nvme#*:}; nvme_port=${rest%%:*}; nvme_nqn=${rest#*:}
    echo "ERNIC-VM: nvme target $nvme_addr port $nvme_port nqn $nvme_nqn host $(cat /etc/nvme/hostnqn)"
    [ -d /sys/module/nvme_rdma ] && [ -e /dev/nvme-fabrics ] \
        || { nvme_fail module "nvme_rdma is not loaded or /dev/nvme-fabrics is missing"; return 1; }
    echo "ERNIC-VM: ok nvme-module nvme_rdma"
    { nvme version && fio --version; } > /tmp/nvme-tools 2>&1 \
        || { nvme_fail tools "nvme-cli or fio does not run" /tmp/nvme-tools; return 1; }
    echo "ERNIC-VM: ok nvme-tools $(tr '\n' ' ' < /tmp/nvme-tools)"
    # The discovery controller lists the subsystem.
    nvme_run discover 90 nvme discover -t rdma -a "$nvme_addr" -s "$nvme_port" || return 1
    grep -E '^(trtype|subtype|subnqn|traddr|trsvcid):' /tmp/nvme-discover | sed 's/^/ERNIC-VM: nvme-discover /'
    grep '^subnqn:' /tmp/nvme-discover | grep -q -F "$nvme_nqn" \
        || { nvme_fail discover "$nvme_nqn is not in the discovery log" /tmp/nvme-discover; return 1; }
    echo "ERNIC-VM: ok nvme-discover $nvme_nqn"
    nvme_connect connect || return 1
    # Sizes as the block layer has them (512-byte sectors); the lane
    # compares them with the namespaces it gave the server.
    for d in $ns1 $ns2; do
        echo "ERNIC-VM: ok nvme-size nsid $(cat /sys/block/$d/nsid) $d" \
            "$(( $(cat /sys/block/$d/size) * 512 )) bytes lba $(cat /sys/block/$d/queue/logical_block_size)"
    done
    # fio: two jobs (two processes, so two CPUs and both I/O queues), eight
    # in flight each, 4-128 KiB writes over 8 MiB each, then every block
    # read back and checked against its crc32c header.
    fio_job="--name=nvme --ioengine=libaio --direct=1 --rw=write
        --bsrange=4k-128k --size=8M --offset_increment=8M --numjobs=2 --iodepth=8
        --verify=crc32c --verify_fatal=1 --group_reporting"
    nvme_run fio 120 fio --filename=/dev/$ns1 $fio_job || return 1
    grep -E 'err=|WRITE:|READ:' /tmp/nvme-fio | sed 's/^ */ERNIC-VM: nvme-fio /'
    grep -q 'err= 0' /tmp/nvme-fio || { nvme_fail fio "a job reported an error" /tmp/nvme-fio; return 1; }
    echo "ERNIC-VM: ok nvme-fio 2 jobs, iodepth 8, 16 MiB written and verified"
    # dd and md5sum: the last 4 MiB of namespace 1 (past fio's 16), 1 MiB
    # at the start of namespace 2, each read back from the target.
    at=$(( $(cat /sys/block/$ns1/size) / 2048 - 4 ))
    [ "$at" -ge 16 ] || { nvme_fail dd "$ns1 is smaller than 20 MiB"; return 1; }
    dd if=/dev/urandom of=/tmp/pat1 bs=1M count=4 2>/dev/null
    want1=$(md5sum < /tmp/pat1 | cut -d' ' -f1)
    nvme_run dd 60 dd if=/tmp/pat1 of=/dev/$ns1 bs=1M seek=$at conv=fsync || return 1
    got=$(nvme_md5 $ns1 $at 4)
    [ "$got" = "$want1" ] || { nvme_fail dd "$ns1 read back $got, wrote $want1"; return 1; }
    want2=
    if [ -n "$ns2" ]; then
        dd if=/dev/urandom of=/tmp/pat2 bs=1M count=1 2>/dev/null
        want2=$(md5sum < /tmp/pat2 | cut -d' ' -f1)
        nvme_run dd 60 dd if=/tmp/pat2 of=/dev/$ns2 bs=1M conv=fsync || return 1
        got=$(nvme_md5 $ns2 0 1)
        [ "$got" = "$want2" ] || { nvme_fail dd "$ns2 read back $got, wrote $want2"; return 1; }
    fi
    echo "ERNIC-VM: ok nvme-dd md5 $want1 $want2"
    # Disconnect, connect again: the RAM namespaces kept what was written.
    nvme_disconnect disconnect || return 1
    nvme_connect reconnect || return 1
    got=$(nvme_md5 $ns1 $at 4)
    [ "$got" = "$want1" ] || { nvme_fail reread "$ns1 reads $got after reconnecting, was $want1"; return 1; }
    if [ -n "$ns2" ]; then
        got=$(nvme_md5 $ns2 0 1)
        [ "$got" = "$want2" ] || { nvme_fail reread "$ns2 reads $got after reconnecting, was $want2"; return 1; }
    fi
    nvme_run reread 120 fio --filename=/dev/$ns1 $fio_job --verify_only || return 1
    echo "ERNIC-VM: ok nvme-reread md5 $want1 $want2 and fio's 16 MiB verified again"
    nvme_disconnect final-disconnect
}
nvme_checks() {
    nvme_steps
    dmesg | grep -i -E 'nvme|ionic' | grep -v -i 'command line' | sed 's/^/ERNIC-VM: nvme-dmesg /'
    # (ionic_rdma is built here, so the kernel notes it is unsigned.)
    dmesg | grep -i -E 'nvme|ionic' | grep -v -E 'module verification failed|out-of-tree module' \
        | grep -i -E 'error|fail|timeout|timed out' > /tmp/nvme-bad
    if [ -s /tmp/nvme-bad ]; then
        nvme_fail dmesg "the kernel's nvme/ionic lines report errors" /tmp/nvme-bad
    else
        echo "ERNIC-VM: ok nvme-dmesg no error, failure or timeout"
    fi
}
if [ -n "$nvme" ]; then
    nvme_checks
    echo "ERNIC-VM: done"
    poweroff -f
fi

# S3 (ernic.s3=ADDR:ACCESS_KEY:SECRET): the store inside ernic-server is a
# host on this guest's segment, answered by its own TCP/IP stack; the
# guest's stack and its clients talk to it as to any S3 endpoint: curl
# (SigV4 by --aws-sigv4) and the AWS CLI (from the chroot, mounted over
# 9p). Objects go both ways and come back with the same md5. Each step
# prints "ok s3-STEP ..." or "failed s3-STEP WHY"; the first failure ends
# them.
s3_fail() {
    echo "ERNIC-VM: failed s3-$1 $2"
    [ -n "$3" ] && [ -s "$3" ] && tail -n 8 "$3" | sed "s/^/ERNIC-VM: s3-$1: /"
    return 1
}
s3_run() {
    step=$1 secs=$2
    shift 2
    timeout "$secs" "$@" > /tmp/s3-$step 2>&1 && return 0
    s3_fail "$step" "exit $?: $*" /tmp/s3-$step
}
# The two clients as scripts (busybox's timeout runs programs, not shell
# functions), the credential baked in.
s3_clients() {
    printf '#!/bin/sh\nexec curl -sS --max-time 60 --aws-sigv4 aws:amz:us-east-1:s3 --user %s:%s "$@"\n' \
        "$s3_ak" "$s3_sk" > /tmp/s3curl
    printf '#!/bin/sh\nexec chroot /mnt/sid env HOME=/nonexistent AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_PAGER= aws --endpoint-url http://%s "$@"\n' \
        "$s3_ak" "$s3_sk" "$s3_addr" > /tmp/s3aws
    chmod +x /tmp/s3curl /tmp/s3aws
}
s3_steps() {
    s3_addr=${s3%%:*}; rest=${s3#*:}; s3_ak=${rest%%:*}; s3_sk=${rest#*:}
    echo "ERNIC-VM: s3 store $s3_addr"
    s3_clients
    s3_run ping 30 ping -c 3 -W 5 "$s3_addr" || return 1
    echo "ERNIC-VM: ok s3-ping $(grep -o '[0-9]* packets received' /tmp/s3-ping)" \
        "$(ip neigh show "$s3_addr" | grep -o 'lladdr [0-9a-f:]*')"
    s3_run mb 60 /tmp/s3curl -f -X PUT "http://$s3_addr/lane" || return 1
    echo "ERNIC-VM: ok s3-mb"
    dd if=/dev/urandom of=/tmp/up bs=1M count=3 2>/dev/null
    up=$(md5sum < /tmp/up | cut -d' ' -f1)
    s3_run curl-put 120 /tmp/s3curl -f -D /tmp/s3-headers -T /tmp/up "http://$s3_addr/lane/curl.bin" || return 1
    grep -i -q "^etag: \"$up\"" /tmp/s3-headers \
        || { s3_fail curl-put "the ETag is not the md5 $up" /tmp/s3-headers; return 1; }
    echo "ERNIC-VM: ok s3-curl-put md5 $up"
    s3_run curl-get 120 /tmp/s3curl -f -o /tmp/down "http://$s3_addr/lane/curl.bin" || return 1
    got=$(md5sum < /tmp/down | cut -d' ' -f1)
    [ "$got" = "$up" ] || { s3_fail curl-get "got md5 $got, put $up"; return 1; }
    echo "ERNIC-VM: ok s3-curl-get md5 $got"
    code=$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' "http://$s3_addr/lane/curl.bin")
    [ "$code" = 403 ] || { s3_fail anonymous "an unsigned GET got $code, not 403"; return 1; }
    echo "ERNIC-VM: ok s3-anonymous refused with 403"
    mkdir -p /mnt/sid
    s3_run mount 30 mount -t 9p -o trans=virtio,version=9p2000.L,ro sid /mnt/sid || return 1
    mount -o bind /dev /mnt/sid/dev && mount -t proc proc /mnt/sid/proc
    s3_run aws-put 240 sh -c "/tmp/s3aws s3 cp - s3://lane/aws.bin < /tmp/up" || return 1
    s3_run aws-get 240 sh -c "/tmp/s3aws s3 cp s3://lane/curl.bin - > /tmp/down2" || return 1
    got=$(md5sum < /tmp/down2 | cut -d' ' -f1)
    [ "$got" = "$up" ] || { s3_fail aws-get "got md5 $got, put $up"; return 1; }
    s3_run aws-back 120 /tmp/s3curl -f -o /tmp/down3 "http://$s3_addr/lane/aws.bin" || return 1
    got=$(md5sum < /tmp/down3 | cut -d' ' -f1)
    [ "$got" = "$up" ] || { s3_fail aws-back "the AWS CLI's upload reads back as $got, not $up"; return 1; }
    echo "ERNIC-VM: ok s3-aws cp both ways, md5 $got"
    # (The listing by curl: each AWS CLI run costs a minute and more under
    # TCG, most of it Python starting.)
    s3_run list 60 /tmp/s3curl -f "http://$s3_addr/lane?list-type=2" || return 1
    grep -q '<Key>aws.bin</Key>' /tmp/s3-list && grep -q '<Key>curl.bin</Key>' /tmp/s3-list \
        || { s3_fail list "the listing lacks an object" /tmp/s3-list; return 1; }
    echo "ERNIC-VM: ok s3-list $(grep -o '<Key>[^<]*</Key>' /tmp/s3-list | tr '\n' ' ')"
}
if [ -n "$s3" ]; then
    s3_steps
    echo "ERNIC-VM: done"
    poweroff -f
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
for c in req_tx_writes req_tx_reads req_tx_sends resp_rx_sends req_tx_atomics resp_rx_writes req_cqe_success; do
    echo "ERNIC-VM: hw_counter $c $(cat $hc/$c 2>/dev/null || echo missing)"
done
dmesg | grep -i -E "ionic|1dd8|rdma|ib_" | sed 's/^/ERNIC-VM: dmesg /'
echo "ERNIC-VM: done"
poweroff -f
