#!/usr/bin/env bash
# Makes sure the Python modules the tests need from PyPI are installed: aioquic (QUIC for Python),
# which the DNS-over-QUIC test server (scripts/doq-test-server.py) runs on, since no Debian package
# serves DoQ or carries aioquic. They go into a venv of their own, /opt/httpdns-test-python (over
# Debian's python3, with its site packages, dnspython among them), never into the system's Python.
# scripts/ensure-deps.sh runs this last; it fails with the reason when pip cannot install them.
set -euo pipefail

venv=${HTTPDNS_TEST_PYTHON_DIR:-/opt/httpdns-test-python}
modules=('aioquic==1.7.2')

if [[ -x "$venv/bin/python3" ]] && "$venv/bin/python3" -c 'import aioquic' 2>/dev/null; then
  exit 0
fi

if [[ $(id -u) -ne 0 && ! -w "$(dirname "$venv")" ]]; then
  echo "error: the Python modules of the DoQ tests are missing; as root, run: $0" >&2
  echo "  (it makes the venv $venv and installs ${modules[*]} from PyPI into it)" >&2
  exit 1
fi

echo "Installing Python modules from PyPI into $venv: ${modules[*]}"
if [[ ! -x "$venv/bin/python3" ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
if ! "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "${modules[@]}"; then
  echo "error: pip could not install ${modules[*]} into $venv (is PyPI reachable?); the DoQ tests need it" >&2
  exit 1
fi
"$venv/bin/python3" -c 'import aioquic; print("aioquic", aioquic.__version__, "in '"$venv"'")'
