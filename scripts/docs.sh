#!/usr/bin/env bash
# `make docs`: the DocC archives of the library products, from their symbol graphs, with DocC's
# warnings (missing or broken symbol links, undocumented parameters) as errors — `make test` runs it.
#   .build-docs/HTTPDNSNetworking.doccarchive   the direct client and the proxy (engine and value types re-exported)
#   .build-docs/HTTPDNSURLSession.doccarchive   the URL protocol route (opt-in)
#   .build-docs/HTTPDNSServer.doccarchive       the self-hosted server
# One archive per product: each product's graph already holds what it re-exports, so one combined
# archive would document the engine twice.
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=$(scripts/symbol-graphs.sh)
for module in HTTPDNSNetworking HTTPDNSURLSession HTTPDNSServer; do
  only=".build-docs/graphs-$module"
  rm -rf "$only"
  mkdir -p "$only"
  cp "$graphs/$module".symbols.json "$only/"
  for extension in "$graphs/$module"@*.symbols.json; do
    [[ -e "$extension" ]] && cp "$extension" "$only/"
  done
  docc convert "Documentation/$module.docc" --additional-symbol-graph-dir "$only" \
    --output-path ".build-docs/$module.doccarchive" --fallback-display-name "$module" \
    --fallback-bundle-identifier "org.swift-httpdns.$module" --warnings-as-errors
done
echo "docs: .build-docs/HTTPDNSNetworking.doccarchive, .build-docs/HTTPDNSURLSession.doccarchive, .build-docs/HTTPDNSServer.doccarchive"
