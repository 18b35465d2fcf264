#!/usr/bin/env bash
# Installs httpdns under DESTDIR (staging, empty by default) at PREFIX: `make install`, and the tree
# that scripts/build-deb.sh packages.
#
#   PREFIX/bin/httpdns                          the static release build (INSTALL_SCRATCH, .build-install)
#   PREFIX/share/man/man{1,5,8}/                the man pages (scripts/build-man.sh from that binary)
#   SYSTEMDUNITDIR/                             contrib/systemd's units, ExecStart naming PREFIX/bin/httpdns
#   DOCDIR/examples/serve.json.example          the commented configuration
#
# `--uninstall` removes exactly those files; `--build` only builds the binary (`make test` does,
# before the suite, so that the package test finds it current and compiles nothing among the tests). Environment: DESTDIR, PREFIX (/usr/local), MANDIR,
# SYSTEMDUNITDIR (PREFIX/lib/systemd/system: systemd reads /usr/local/lib/systemd/system too),
# DOCDIR (PREFIX/share/doc/httpdns), INSTALL_SCRATCH, GZIP_MAN=1 to compress the pages (Debian).
set -euo pipefail
cd "$(dirname "$0")/.."
destdir=${DESTDIR:-}
prefix=${PREFIX:-/usr/local}
bindir=$prefix/bin
mandir=${MANDIR:-$prefix/share/man}
unitdir=${SYSTEMDUNITDIR:-$prefix/lib/systemd/system}
docdir=${DOCDIR:-$prefix/share/doc/httpdns}
scratch=${INSTALL_SCRATCH:-.build-install}
units=(httpdns-serve@.service httpdns-stub.service httpdns-stub.socket)
pages=(httpdns.1 httpdns-resolve.1 httpdns-fetch.1 httpdns-check.1 httpdns-proxy.1 httpdns-demo.1 httpdns-zone.5
    httpdns-serve.8 httpdns-stub.8)

if [[ ${1:-} == --uninstall ]]; then
    rm -f "$destdir$bindir/httpdns" "$destdir$docdir/examples/serve.json.example"
    for unit in "${units[@]}"; do rm -f "$destdir$unitdir/$unit"; done
    for page in "${pages[@]}"; do rm -f "$destdir$mandir/man${page##*.}/$page" "$destdir$mandir/man${page##*.}/$page.gz"; done
    rmdir "$destdir$docdir/examples" "$destdir$docdir" 2>/dev/null || true
    exit 0
fi

# The installed binary carries the Swift runtime (--static-swift-stdlib): a host without the
# toolchain runs it with Debian's libraries alone. Its own scratch path keeps the debug and
# release-test builds warm.
swift build -c release --static-swift-stdlib --scratch-path "$scratch" --product httpdns -Xswiftc -warnings-as-errors >&2
binary="$(swift build -c release --scratch-path "$scratch" --show-bin-path)/httpdns"
[[ ${1:-} == --build ]] && exit 0
HTTPDNS=$binary BINDIR=$bindir MAN_OUT="$scratch/man" scripts/build-man.sh

install -d "$destdir$bindir" "$destdir$unitdir" "$destdir$docdir/examples"
install -m 0755 "$binary" "$destdir$bindir/httpdns"
for page in "${pages[@]}"; do
    section=${page##*.}
    install -d "$destdir$mandir/man$section"
    install -m 0644 "$scratch/man/$page" "$destdir$mandir/man$section/$page"
    if [[ ${GZIP_MAN:-0} == 1 ]]; then gzip -9nf "$destdir$mandir/man$section/$page"; fi
done
for unit in "${units[@]}"; do
    sed "s|/usr/local/bin/httpdns|$bindir/httpdns|g" "contrib/systemd/$unit" >"$destdir$unitdir/$unit"
    chmod 0644 "$destdir$unitdir/$unit"
done
install -m 0644 contrib/httpdns/serve.json.example "$destdir$docdir/examples/serve.json.example"
