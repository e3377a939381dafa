# Sourced by vm/lane.sh, vm/lane-two.sh and vm/lane-nvme.sh: the chroot
# (chroot.sh), then the guest image in it — the kernel as /tmp/vmlinuz and
# an initramfs of busybox, the stock ionic module, the RDMA half (rdma.sh),
# with $guest_nvme set the NVMe over Fabrics half (nvme.sh), with $guest_s3
# the S3 half (s3.sh), and init.sh as
# /tmp/initramfs.cpio.gz. Expects $here, $work, $mirror and say/fail.
source "$here/chroot.sh"
version=${kernel##*/vmlinuz-}
ionic=$(find "$sid/lib/modules/$version" -name 'ionic.ko*' | head -1)
[ -n "$ionic" ] || fail "the guest kernel $version has no ionic module"

say "guest kernel $version, initramfs with the stock ionic module"
initrd=$work/initrd
rm -rf "$initrd" && mkdir -p "$initrd/bin" "$initrd/proc" "$initrd/sys" "$initrd/dev"
cp "$sid/bin/busybox" "$initrd/bin/busybox"
case "$ionic" in
    *.xz) xz -dc "$ionic" > "$initrd/ionic.ko" ;;
    *) cp "$ionic" "$initrd/ionic.ko" ;;
esac
cp "$here/init.sh" "$initrd/init" && chmod +x "$initrd/init"
source "$here/rdma.sh"
if [ -n "${guest_nvme:-}" ]; then
    source "$here/nvme.sh"
fi
if [ -n "${guest_s3:-}" ]; then
    source "$here/s3.sh"
fi
(cd "$initrd" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$sid/tmp/initramfs.cpio.gz"
cp "$kernel" "$sid/tmp/vmlinuz"
