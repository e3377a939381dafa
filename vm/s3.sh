# Sourced by vm/guest.sh after rdma.sh when $guest_s3 is set (by
# vm/lane-s3.sh): the S3 half of the guest image.
#
# - curl (with every library it loads) in the initramfs: the guest's first
#   S3 client, signing with its --aws-sigv4.
# - The AWS CLI is a Python program of many files, so it is not copied:
#   the guest mounts the chroot itself read-only over 9p (virtio) and runs
#   `aws` in it; the initramfs carries the 9p modules (after ionic_rdma in
#   /modules) and the chroot has awscli installed (once, like the lanes'
#   other packages).
#
# Expects $sid, $initrd, $work and add_module/add_elf from rdma.sh.

if ! chroot "$sid" sh -c 'command -v curl && command -v aws' > /dev/null 2>&1; then
    say "installing curl and the AWS CLI in the chroot"
    chroot "$sid" apt-get -o Acquire::Check-Valid-Until=false update -qq
    chroot "$sid" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        curl awscli ca-certificates > "$work/s3-packages.log" 2>&1 \
        || fail "installing curl and awscli (see $work/s3-packages.log)"
fi
add_elf "$(chroot "$sid" sh -c 'command -v curl')"
for m in 9pnet_virtio 9p; do add_module "$m"; done
