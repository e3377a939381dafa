# Shared by vm/lane.sh and vm/ionic-headers.sh: builds (once) the Debian
# sid chroot with QEMU, busybox and the guest kernel in $work/sid, and sets
# $sid and $kernel. Expects $work, $mirror, and say/fail.
sid=$work/sid
mkdir -p "$work"
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v cpio >/dev/null || need+=(cpio)
command -v xz >/dev/null || need+=(xz-utils)
if [ ${#need[@]} -gt 0 ]; then
    say "installing ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" > /dev/null
fi
if [ ! -x "$sid/usr/bin/qemu-system-x86_64" ]; then
    say "building the sid chroot in $sid"
    rm -rf "$sid"
    debootstrap --variant=minbase --include=qemu-system-x86,busybox-static,kmod,xz-utils \
        sid "$sid" "$mirror" > "$work/debootstrap.log" 2>&1 || fail "debootstrap (see $work/debootstrap.log)"
fi
mountpoint -q "$sid/proc" || mount -t proc proc "$sid/proc"
kernel=$(ls "$sid"/boot/vmlinuz-* 2>/dev/null | head -1 || true)
if [ -z "$kernel" ]; then
    say "installing the guest kernel"
    chroot "$sid" apt-get -o Acquire::Check-Valid-Until=false update -qq
    image=$(chroot "$sid" apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: \(linux-image-[0-9].*\)/\1/p' | head -1)
    [ -n "$image" ] || fail "no linux-image package found"
    chroot "$sid" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$image" \
        > "$work/kernel.log" 2>&1 || fail "installing $image (see $work/kernel.log)"
    kernel=$(ls "$sid"/boot/vmlinuz-* | head -1)
fi
