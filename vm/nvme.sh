# Sourced by vm/guest.sh after rdma.sh when $guest_nvme is set (by
# vm/lane-nvme.sh): the NVMe over Fabrics half of the guest image.
#
# - The stock nvme_rdma module with what it needs (nvme-fabrics, nvme-core,
#   nvme-keyring, nvme-auth; rdma_cm and ib_core are there already), after
#   ionic_rdma in /modules.
# - nvme-cli and fio with every library they load, and a fixed host NQN and
#   host ID in /etc/nvme, so nvme-cli never falls back to DMI and the target
#   sees the same host on every run.
#
# Only the NVMe lane carries this: Debian's fio links librbd, librados and
# glusterfs (about 60 MB with their libraries), which the other lanes'
# guests would unpack at every boot for nothing. fio's engines used here
# (libaio, psync) are built in; libaio is among the libraries ldd lists.
#
# Expects $sid, $initrd and add_module/add_elf from rdma.sh.

add_module nvme_rdma
for t in nvme fio; do
    f=$(chroot "$sid" sh -c "command -v $t") || fail "no $t in the chroot"
    add_elf "$f"
done
mkdir -p "$initrd/etc/nvme"
echo 45524e49-4300-4e56-8d65-000000000002 > "$initrd/etc/nvme/hostid"
echo nqn.2014-08.org.nvmexpress:uuid:45524e49-4300-4e56-8d65-000000000002 > "$initrd/etc/nvme/hostnqn"
