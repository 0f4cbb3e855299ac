#!/bin/sh
# Installs what `--cpu aarch64` and its tests need where missing: the cross compiler
# aarch64-linux-gnu-gcc (Debian/Ubuntu package gcc-aarch64-linux-gnu) and qemu-aarch64
# (package qemu-user). Where that cannot be done (no apt-get, not root and no password-less
# sudo) it says so and exits 0: everything else works, and the aarch64 tests skip with the
# reason.
need=""
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need="$need gcc-aarch64-linux-gnu"
command -v qemu-aarch64 >/dev/null 2>&1 || need="$need qemu-user"
[ -z "$need" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-cross-tools: no apt-get on this system; not installing$need (--cpu aarch64 needs them)"
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    run=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    run="sudo -n"
else
    echo "install-cross-tools: not root (and no password-less sudo); not installing$need (--cpu aarch64 needs them)"
    exit 0
fi
echo "install-cross-tools: apt-get install$need"
if ! { $run apt-get update -qq && DEBIAN_FRONTEND=noninteractive $run apt-get install -y -qq $need; }; then
    echo "install-cross-tools: apt-get failed; --cpu aarch64 and its tests need$need"
fi
exit 0
