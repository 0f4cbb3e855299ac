#!/bin/sh
# Installs what `--cpu aarch64`, its tests and the HTML report test need where missing: the
# cross compiler aarch64-linux-gnu-gcc (Debian/Ubuntu package gcc-aarch64-linux-gnu),
# qemu-aarch64 (package qemu-user) and a headless browser, chromium (package chromium), that
# test/python/test_html_report.py opens `--report-html` pages in. Where that cannot be done
# (no apt-get, not root and no password-less sudo) it says so and exits 0: everything else
# works, and those tests skip with the reason.
need=""
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need="$need gcc-aarch64-linux-gnu"
command -v qemu-aarch64 >/dev/null 2>&1 || need="$need qemu-user"
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
    || need="$need chromium"
[ -z "$need" ] && exit 0
why="--cpu aarch64 and the HTML report test need them"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-cross-tools: no apt-get on this system; not installing$need ($why)"
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    run=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    run="sudo -n"
else
    echo "install-cross-tools: not root (and no password-less sudo); not installing$need ($why)"
    exit 0
fi
echo "install-cross-tools: apt-get install$need"
if ! { $run apt-get update -qq && DEBIAN_FRONTEND=noninteractive $run apt-get install -y -qq $need; }; then
    echo "install-cross-tools: apt-get failed; $why:$need"
fi
exit 0
