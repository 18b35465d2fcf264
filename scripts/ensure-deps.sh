#!/usr/bin/env bash
# Makes sure the Debian packages the build, the tests and the demo need are installed.
# As root it installs what is missing; otherwise it prints the exact apt-get line and fails.
# `make bench` calls it with `--bench`; what the benchmarks need (dnsdist, dnsperf) is in the list too.
set -euo pipefail

packages=(
  libcurl4-openssl-dev   # the transport (libcurl, multi interface)
  libssl-dev             # libcrypto: MD5, HMAC-SHA256, AES, DES for provider signatures; libssl: the stub's DoT upstreams
  libh2o-evloop-dev      # the HTTP/1.1 + HTTP/2 event loop of `httpdns serve` and of test servers
  libmaxminddb-dev       # MaxMind DB files: `httpdns serve --views` matching clients by country and ASN
  libhiredis-dev         # hiredis: `httpdns serve --redis` shares report state across a fleet
  libngtcp2-dev          # QUIC (ngtcp2) for DNS over QUIC: `httpdns serve --listen quic://`, the stub's doq= upstreams
  libngtcp2-crypto-gnutls-dev  # ngtcp2's GnuTLS crypto back end (the one Debian builds) and GnuTLS itself
  redis-server           # the real Redis of the report-sharing tests
  pkg-config             # SwiftPM finds the C libraries through it
  openssl                # tests and the demo make a private CA and certificates on the fly
  nginx-light            # the real HTTPS origin in tests and the demo
  dnsmasq-base           # a real (and lying) DNS server in tests and the demo
  systemd                # systemd-socket-activate and systemd-analyze: the stub's socket activation and unit file tests
  curl                   # interoperability tests: curl --doh-url against httpdns serve
  dnsutils               # dig, for captured fixtures and interoperability (dig +https against serve); nsupdate, the changes to bind9's zone in tests
  knot-dnsutils          # kdig +https and +tls against httpdns serve (interoperability)
  knot                   # knotd, a real primary: zone transfers (AXFR, IXFR, TSIG) in tests
  bind9                  # named, the other real primary: transfers, NOTIFY and a fleet of secondaries in tests
  haproxy                # the balancer in front of a fleet of serve instances (the rolling-restart test)
  dnsperf                # dnsperf -m doh against httpdns serve (interoperability)
  nghttp2-client         # h2load, the HTTP/1.1 and HTTP/2 load of `make bench` and of the drain and fleet tests
  iproute2               # ip netns / veth: tests build their own networks (network changes, NAT64, blackholed addresses)
  nftables               # nft: the drop rule that blackholes a test namespace's addresses
  unbound                # the DNS64 resolver of the NAT64 tests (its dns64 module); forwards over TLS to serve's DoT listener
  stubby                 # a DNS-over-TLS stub forwarding to serve's DoT listener (interoperability)
  dnsdist                # a DoT client of serve (a TLS backend) and the DoT server behind the stub's dot= upstream in tests; rows 8 and 12's baseline in `make bench`
  python3                # proxy tests: Python's urllib through `httpdns proxy`
  python3-dnspython      # the stub's namespace test and serve's DoT and DoQ tests: dnspython among the clients
  python3-venv           # the venv that holds aioquic from PyPI (scripts/ensure-python.sh)
  python3-prometheus-client  # scripts/check-metrics.py: the reference parser reads serve's /metrics in `make test`
  chromium               # proxy tests: a real browser (headless) through `httpdns proxy`; the console test loads /status
  libnss3-tools          # certutil: the headless browser's trust store holds the test CA
  tinyproxy              # `make bench`: the proxy rows' baseline
  pandoc                 # `make man`: the man pages' markdown (man/*.md) into roff
  mandoc                 # `make man` and the man page test: mandoc -T lint finds nothing in them
  man-db                 # the man page test: man -l renders each page
  dpkg-dev               # `make deb`: dpkg-shlibdeps computes the package's Depends from the binary
  binutils               # objdump, which dpkg-shlibdeps reads the binary's libraries with
  lintian                # `make deb` and the package test: lintian reports no error in the .deb
)

if ! command -v swift >/dev/null 2>&1; then
  echo "error: the Swift toolchain (6.2 or newer) is not on PATH; see https://www.swift.org/install/linux/" >&2
  exit 1
fi

missing=()
for package in "${packages[@]}"; do
  name=${package%% *}
  if ! dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$name")
  fi
done

if ((${#missing[@]} == 0)); then
  exec "$(dirname "$0")/ensure-python.sh"
fi

if [[ $(id -u) -eq 0 ]]; then
  echo "Installing missing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # nginx-light's package scripts may start a system nginx on port 80; the project never uses it.
  # Likewise unbound's may start a system resolver on port 53; the tests start their own in namespaces.
  # knot's and bind9's start a system knotd and named on port 53 (named also on 953 for rndc); the
  # tests start their own on free loopback ports.
  if command -v systemctl >/dev/null 2>&1; then
    systemctl stop nginx >/dev/null 2>&1 || true
    systemctl stop unbound >/dev/null 2>&1 || true
    systemctl stop knot >/dev/null 2>&1 || true
    systemctl stop named >/dev/null 2>&1 || true
    systemctl stop dnsdist >/dev/null 2>&1 || true
    systemctl stop stubby >/dev/null 2>&1 || true
    systemctl stop haproxy >/dev/null 2>&1 || true
  fi
else
  echo "Missing Debian packages. Install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

# PyPI modules no Debian package carries (aioquic: the DNS-over-QUIC test server and the DoQ client of
# dnspython in serve's tests).
exec "$(dirname "$0")/ensure-python.sh"
