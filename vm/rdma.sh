# Sourced by vm/lane.sh after chroot.sh: the guest's RDMA half.
#
# - Installs in the chroot what the guest runs and what builds the driver
#   Debian does not ship: the kernel headers, gcc-16 and make; rdma-core's
#   verbs library with the ionic provider, ibverbs-utils, perftest and
#   rdmacm-utils; nvme-cli and fio, which only the NVMe lane's image
#   carries (vm/nvme.sh) (once).
# - Builds ionic_rdma.ko from linux-source's drivers/infiniband/hw/ionic
#   against the guest kernel (once, cached as $work/ionic_rdma-$version.ko).
# - Puts into the initramfs at $initrd: the modules the verbs stack needs
#   (in load order, listed in /modules), and the tools with every library
#   they load (the ionic provider is dlopened, so it is added by name).
#
# Expects $work, $sid, $version, $initrd and say/fail.

rdma_pkgs="linux-headers-$version gcc-16 make ibverbs-providers ibverbs-utils perftest rdmacm-utils nvme-cli fio"
if ! chroot "$sid" sh -c 'command -v ib_write_bw && command -v ibv_devinfo && command -v rping && command -v make &&
        command -v nvme && command -v fio' > /dev/null 2>&1; then
    say "installing the verbs tools and the module build tools in the chroot"
    chroot "$sid" apt-get -o Acquire::Check-Valid-Until=false update -qq
    chroot "$sid" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        $rdma_pkgs > "$work/rdma-packages.log" 2>&1 || fail "installing $rdma_pkgs (see $work/rdma-packages.log)"
fi

rdma_ko=$work/ionic_rdma-$version.ko
if [ ! -s "$rdma_ko" ]; then
    series=$(echo "$version" | cut -d. -f1-2)
    say "building ionic_rdma.ko from linux-source-$series"
    src=$sid/usr/src/ionic-build
    rm -rf "$src" && mkdir -p "$src"
    rm -f "$sid"/tmp/linux-source-*.deb
    chroot "$sid" sh -c "cd /tmp && apt-get download -qq linux-source-$series" \
        || fail "downloading linux-source-$series"
    deb=$(ls "$sid"/tmp/linux-source-"$series"_*.deb | head -1)
    dpkg-deb --fsys-tarfile "$deb" \
        | tar -xO "./usr/src/linux-source-$series.tar.xz" \
        | tar -xJ -C "$src" --strip-components=1 --wildcards \
            '*/drivers/infiniband/hw/ionic/*' '*/drivers/net/ethernet/pensando/*'
    rm -f "$deb"
    chroot "$sid" make -C "/usr/src/linux-headers-$version" M=/usr/src/ionic-build/drivers/infiniband/hw/ionic \
        CONFIG_INFINIBAND_IONIC=m CC=gcc-16 \
        ccflags-y=-I/usr/src/ionic-build/drivers/net/ethernet/pensando/ionic modules \
        > "$work/ionic_rdma-build.log" 2>&1 || fail "building ionic_rdma.ko (see $work/ionic_rdma-build.log)"
    cp "$src/drivers/infiniband/hw/ionic/ionic_rdma.ko" "$rdma_ko"
fi

# Modules, dependencies first.
rdma_loaded=" "
add_module() {
    local m=$1 d f
    case "$rdma_loaded" in *" $m "*) return ;; esac
    for d in $(chroot "$sid" modinfo -k "$version" -F depends "$m" | tr ',' ' '); do
        add_module "$d"
    done
    f=$(chroot "$sid" modinfo -k "$version" -F filename "$m") || fail "no module $m"
    case "$f" in
        *.xz) xz -dc "$sid$f" > "$initrd/lib/modules/$m.ko" ;;
        *.zst) zstd -qdc "$sid$f" > "$initrd/lib/modules/$m.ko" ;;
        *) cp "$sid$f" "$initrd/lib/modules/$m.ko" ;;
    esac
    echo "$m" >> "$initrd/modules"
    rdma_loaded="$rdma_loaded$m "
}
mkdir -p "$initrd/lib/modules"
: > "$initrd/modules"
for m in ib_uverbs rdma_ucm; do add_module "$m"; done
cp "$rdma_ko" "$initrd/lib/modules/ionic_rdma.ko"
echo ionic_rdma >> "$initrd/modules"

# Tools and the libraries they load.
add_file() {
    local f=$1
    [ -e "$initrd$f" ] && return
    mkdir -p "$initrd$(dirname "$f")"
    cp -L "$sid$f" "$initrd$f"
}
add_elf() {
    local f=$1 lib
    add_file "$f"
    for lib in $(chroot "$sid" ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
        add_file "$lib"
    done
}
for t in ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong ib_write_bw ib_read_bw ib_send_bw \
         ib_send_lat ib_atomic_bw rping; do
    add_elf "$(chroot "$sid" sh -c "command -v $t")"
done
# Loaded at run time too: the provider, and libgcc_s (pthread_exit needs it).
add_elf /usr/lib/x86_64-linux-gnu/libgcc_s.so.1
for p in "$sid"/usr/lib/x86_64-linux-gnu/libibverbs/libionic-*.so; do
    add_elf "${p#$sid}"
done
mkdir -p "$initrd/etc/libibverbs.d"
cp "$sid"/etc/libibverbs.d/ionic.driver "$initrd/etc/libibverbs.d/"
