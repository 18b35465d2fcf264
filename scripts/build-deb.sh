#!/usr/bin/env bash
# Builds the Debian package of httpdns with dpkg-deb, and checks it with lintian (no error).
#
#   /usr/bin/httpdns                        the static release build (scripts/install.sh)
#   /usr/share/man/man{1,5,8}/*.gz          the man pages
#   /lib/systemd/system/                    httpdns-serve@.service, httpdns-stub.socket and .service
#   /usr/share/doc/httpdns/                 copyright, changelog.Debian.gz, examples/serve.json.example
#
# Depends comes from dpkg-shlibdeps (the libraries the binary links: libcurl, libssl, libh2o,
# libmaxminddb, libhiredis…). The maintainer scripts (contrib/debian) reload systemd and stop the
# units on removal; they enable and start nothing. Prints the package's path last.
# Environment: DEB_OUT (.build-install), INSTALL_SCRATCH (.build-install), DEB_MAINTAINER,
# DEB_COMPRESSION (xz, as Debian's archive; gzip packs the 40 MB binary in a third of the time,
# which the package test takes: lintian refuses zstd).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${INSTALL_SCRATCH:-.build-install}
out=${DEB_OUT:-$scratch}
maintainer=${DEB_MAINTAINER:-swift-httpdns maintainers <maintainers@users.noreply.github.com>}
for tool in dpkg-deb dpkg-shlibdeps lintian; do
    command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing (scripts/ensure-deps.sh installs it)" >&2; exit 1; }
done

work="$scratch/deb"
# debian/httpdns: where dpkg-shlibdeps expects a package's tree (debian/control beside it).
root="$work/debian/httpdns"
rm -rf "$work"
mkdir -p "$root/DEBIAN"
DESTDIR=$root PREFIX=/usr SYSTEMDUNITDIR=/lib/systemd/system GZIP_MAN=1 INSTALL_SCRATCH=$scratch scripts/install.sh

# Stripped as dh_strip strips: the symbols are most of the 90 MB, and nothing resolves them at run time.
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/httpdns"
version="$("$root/usr/bin/httpdns" --version)-1"
architecture=$(dpkg --print-architecture)
doc="$root/usr/share/doc/httpdns"
install -m 0644 contrib/debian/copyright "$doc/copyright"
# The changelog's one entry: this tree, dated by its commit (the same tree builds the same package).
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
date=$(git log -1 --format=%aD 2>/dev/null || date -R)
printf '%s\n' "httpdns ($version) unstable; urgency=medium" "" \
    "  * Built from the swift-httpdns tree at commit $commit." "" \
    " -- $maintainer  $date" >"$doc/changelog.Debian"
gzip -9nf "$doc/changelog.Debian"
for script in postinst prerm postrm; do install -m 0755 "contrib/debian/$script" "$root/DEBIAN/$script"; done
install -D -m 0644 contrib/debian/lintian-overrides "$root/usr/share/lintian/overrides/httpdns"

# dpkg-shlibdeps reads the package names from a debian/control; a minimal one beside the tree.
printf 'Source: httpdns\n\nPackage: httpdns\nArchitecture: any\n' >"$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O -e debian/httpdns/usr/bin/httpdns | sed -n 's/^shlibs:Depends=//p')
[[ -n $depends ]] || { echo "build-deb: dpkg-shlibdeps found no dependency" >&2; exit 1; }
installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: httpdns
Version: $version
Architecture: $architecture
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Section: net
Priority: optional
Description: DNS over HTTP(S) resolver, server and local stub against DNS hijacking
 httpdns resolves names over HTTPDNS services (DNSPod, Alibaba, DNS over
 HTTPS) instead of a local resolver that may lie, and uses them: resolve
 and fetch like dig and curl, check compares LocalDNS with HTTPDNS and
 reports hijacking, proxy is a local HTTP proxy for programs that know
 nothing of HTTPDNS.
 .
 httpdns serve is an HTTPDNS server (zones, views by client network,
 origin health checks, DNS secondary with TSIG, failure reports), and
 httpdns stub a local DNS resolver for the whole host. Their systemd units
 are installed but neither enabled nor started.
CONTROL
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control"

deb="$out/httpdns_${version}_$architecture.deb"
dpkg-deb --root-owner-group -Z"${DEB_COMPRESSION:-xz}" --build "$root" "$deb" >&2
# lintian: errors fail the build; warnings are overridden only with a reason
# (contrib/debian/lintian-overrides, installed where lintian reads it). Its note that root should
# not run it is left out.

report=$(lintian --fail-on error --tag-display-limit 0 "$deb" 2>&1) || { echo "$report" >&2; exit 1; }
report=$(grep -v '^running with root privileges is not recommended!$' <<<"$report" || true)
[[ -z $report ]] || echo "$report" >&2
echo "$deb"
