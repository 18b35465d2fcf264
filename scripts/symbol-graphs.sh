#!/usr/bin/env bash
# Builds the library products in their own scratch directory (the normal build stays warm) with
# symbol graphs of their public API, and prints the directory holding the product modules' graphs.
# Used by `make docs` and `make api` / `make api-check`.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build-docs
graphs="$scratch/symbol-graphs"
all="$scratch/all-symbol-graphs"
# The graphs are written when a module compiles; an up-to-date module keeps the ones it wrote.
rm -rf "$graphs"
mkdir -p "$graphs" "$all"
# A module's graph also holds what it re-exports (`@_exported import`), but it is written only when
# that module itself compiles: a doc comment changed in HTTPDNSDirect would stay stale in the
# umbrella's graph. The modules that re-export are small; their objects go, so they compile again.
for module in HTTPDNSNetworking HTTPDNSURLSession HTTPDNSLoopbackProxy HTTPDNSDirect; do
  rm -f "$scratch"/debug/"$module".build/*.o
done
for target in HTTPDNSNetworking HTTPDNSURLSession HTTPDNSServer; do
  swift build --scratch-path "$scratch" --target "$target" -Xswiftc -warnings-as-errors \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$all" >&2
done
# The modules a user imports (HTTPDNSCore's types reach users through `import HTTPDNS`).
for module in HTTPDNSCore HTTPDNS HTTPDNSDirect HTTPDNSLoopbackProxy HTTPDNSURLSession HTTPDNSNetworking HTTPDNSServer; do
  cp "$all/$module".symbols.json "$graphs/"
  for extension in "$all/$module"@*.symbols.json; do
    [[ -e "$extension" ]] && cp "$extension" "$graphs/"
  done
done
echo "$graphs"
