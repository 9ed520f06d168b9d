#!/usr/bin/env bash
# Install the Debian packages the harness needs, or say which are missing.
#
#   qemu-run/deps.sh [build|report|all|lava-run|deb]
#
# As root the missing packages are installed with apt-get (after one
# apt-get update); otherwise the command to run is printed and the exit
# status is 1.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# package:command-or-file that proves it is there (rsync: the kselftests'
# install; python3-ply and python3-git: checkpatch's SPDX check in series-check.sh;
# stress-ng: copied into the guest with its libraries, guest/image.sh, for
# bench's part stressng)
BUILD_PKGS="linux-source-6.12:$LINUX_TARBALL gcc:gcc make:make flex:flex bison:bison
bc:bc libelf-dev:/usr/include/gelf.h libssl-dev:/usr/include/openssl/ssl.h
cpio:cpio e2fsprogs:mke2fs busybox-static:/bin/busybox qemu-system-x86:qemu-system-x86_64
python3:python3 git:git file:file xz-utils:xz shellcheck:shellcheck
rsync:rsync python3-ply:/usr/lib/python3/dist-packages/ply
python3-git:/usr/lib/python3/dist-packages/git stress-ng:/usr/bin/stress-ng"
# python3-jsonschema: the KCIDB export's schema check (reports/kcidb.py);
# lava-common and python3-yaml: the LAVA jobs' schema (qemu-run/lab/lava.py)
REPORT_PKGS="sqlite3:sqlite3 gnuplot-nox:gnuplot
python3-jsonschema:/usr/lib/python3/dist-packages/jsonschema
lava-common:/usr/lib/python3/dist-packages/lava_common
python3-yaml:/usr/lib/python3/dist-packages/yaml"
# lava-dispatcher: lava-run, to run a LAVA job here (make lava-run; large)
LAVA_RUN_PKGS="lava-dispatcher:/usr/bin/lava-run"
# Debian's own kernel configurations and what make bindeb-pkg runs (make deb)
DEB_PKGS="linux-config-6.12:/usr/src/linux-config-6.12 dpkg-dev:dpkg-buildpackage kmod:/usr/bin/kmod
debhelper:/usr/bin/dh"

want=$BUILD_PKGS
case "${1:-build}" in
build) ;;
report) want="$REPORT_PKGS" ;;
all) want="$BUILD_PKGS $REPORT_PKGS" ;;
lava-run) want="$LAVA_RUN_PKGS" ;;
deb) want="$BUILD_PKGS $DEB_PKGS" ;;
*) die "usage: deps.sh [build|report|all|lava-run|deb]" ;;
esac

missing=()
for pc in $want; do
	pkg=${pc%%:*}
	probe=${pc#*:}
	case "$probe" in
	/*) [ -e "$probe" ] ;;
	*) command -v "$probe" >/dev/null ;;
	esac || missing+=("$pkg")
done
[ ${#missing[@]} = 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	die "missing Debian packages: ${missing[*]}
  install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}"
fi
say "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || die "apt-get update failed: check the network or the apt sources"
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
	die "apt-get install failed for: ${missing[*]}"
