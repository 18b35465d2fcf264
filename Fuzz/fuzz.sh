#!/usr/bin/env bash
# Builds the libFuzzer binaries and runs every fuzz target (or FUZZ_TARGETS) for FUZZ_TIME seconds.
#
#   Fuzz/fuzz.sh                                 every target, 60 s each
#   FUZZ_TIME=10 FUZZ_TARGETS="dns-codec json" Fuzz/fuzz.sh
#   FUZZ_BUILD_ONLY=1 Fuzz/fuzz.sh               build, print the binaries, run nothing
#
# The modules are built by SwiftPM with coverage and AddressSanitizer instrumentation into their
# own scratch path (.build-fuzz); the harness is linked by swiftc, because SwiftPM's Linux link of
# an executable defines `main`, which clashes with libFuzzer's. Inputs found are added to a working
# corpus under .build-fuzz/corpus (seeded from Fuzz/Corpus/<target>); a failing input is written to
# .build-fuzz/crashes/<target>/ and the script fails. Copy new interesting inputs into Fuzz/Corpus
# (small ones) so that `make test` replays them.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_TIME=${FUZZ_TIME:-60}
SCRATCH=.build-fuzz
SWIFT=${SWIFT:-swift}
# The modules the fuzz targets link, in dependency order.
MODULES="DNSWire HTTPDNSCore DNSZoneTransfer DNSStubCore HTTPDNSTransport DNSSockets HTTPDNS HTTPServing HTTPDNSOperations HTTPDNSFleet HTTPDNSServer HTTPDNSDirect HTTPDNSLoopbackProxy HTTPDNSNetworking HTTPDNSFuzzTargets"

"$SWIFT" build --target HTTPDNSFuzzTargets --scratch-path "$SCRATCH" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -warnings-as-errors
# A C target only other C targets depend on (CSockets, under CH2O) gives its headers to the build
# above but is compiled only for a link, which `--target` does not do: built here for its objects.
"$SWIFT" build --target CSockets --scratch-path "$SCRATCH" -Xswiftc -sanitize=fuzzer,address -Xswiftc -warnings-as-errors
# `package` declarations are visible to the harness only under the package's own name, which
# SwiftPM derives from the checkout's directory: read it from the build description.
package_name=$(grep -A1 -m1 '"-package-name"' "$SCRATCH/debug/description.json" | tail -1 | tr -d ' ",')
# The objects each module's build names now (not every *.o: a renamed source leaves its old one).
objects=()
for module in $MODULES; do
    while IFS= read -r object; do
        objects+=("$object")
    done < <(grep -o '"object": *"[^"]*"' "$SCRATCH/debug/$module.build/output-file-map.json" | sed 's/.*"\([^"]*\)"$/\1/')
done
# The C targets (CSockets and CH2O under the HTTP shell and the stub, CHTTPDNSProxy under the proxy, CQUIC under the
# DoQ target): their objects, their generated module maps and the libraries Package.swift links them with (swiftc does
# not read it).
C_TARGETS="CSockets CH2O CHTTPDNSProxy CQUIC"
module_maps=()
for target in $C_TARGETS; do
    for object in "$SCRATCH/debug/$target.build"/*.o; do
        objects+=("$object")
    done
    module_maps+=(-Xcc "-fmodule-map-file=$SCRATCH/debug/$target.build/module.modulemap")
done
mkdir -p "$SCRATCH/bin"
binary="$SCRATCH/bin/httpdns-fuzz"
swiftc -package-name "$package_name" -sanitize=fuzzer,address -parse-as-library -g -use-ld=lld \
    -I "$SCRATCH/debug/Modules" \
    -Xcc -fmodule-map-file=Sources/CCurl/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CCrypto/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CNetlink/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CMaxMindDB/module.modulemap \
    -Xcc -fmodule-map-file=Sources/CHiredis/module.modulemap \
    "${module_maps[@]}" \
    Fuzz/Harness/Harness.swift "${objects[@]}" -lh2o-evloop -lssl -lcrypto -lmaxminddb -lhiredis \
    -lngtcp2 -lngtcp2_crypto_gnutls -lgnutls -o "$binary"

targets=${FUZZ_TARGETS:-$(ls Fuzz/Corpus)}
for target in $targets; do
    [ -d "Fuzz/Corpus/$target" ] || { echo "fuzz: no target named $target (see Fuzz/Corpus)" >&2; exit 64; }
    ln -f "$binary" "$SCRATCH/bin/httpdns-fuzz-$target"
done
if [ -n "${FUZZ_BUILD_ONLY:-}" ]; then
    ls "$SCRATCH"/bin/httpdns-fuzz-*
    exit 0
fi

# One target: its corpus and crashes, its log; exit status 1 when the property failed.
run_target() {
    local target=$1
    local work="$SCRATCH/corpus/$target"
    local crashes="$SCRATCH/crashes/$target"
    mkdir -p "$work" "$crashes"
    # The Swift backtracer is off: libFuzzer and ASan print the stack, and the backtracer would
    # make every crash slow.
    if ! SWIFT_BACKTRACE=enable=no "$SCRATCH/bin/httpdns-fuzz-$target" "$work" "Fuzz/Corpus/$target" \
        -max_total_time="$FUZZ_TIME" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$crashes/" -print_final_stats=1 >"$SCRATCH/$target.log" 2>&1; then
        {
            echo "== $target: FAILED"
            grep -a -m1 "Fatal error" "$SCRATCH/$target.log" || true
            grep -a -E "^(artifact_prefix|Base64|==[0-9]+==ERROR)" "$SCRATCH/$target.log" || tail -40 "$SCRATCH/$target.log"
        } >&2
        return 1
    fi
    echo "== $target: ${FUZZ_TIME}s $(grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$SCRATCH/$target.log" | tr '\n' ' ')"
}

# FUZZ_JOBS targets at once (each fuzzer is one process on one core).
FUZZ_JOBS=${FUZZ_JOBS:-1}
failed=()
declare -A running=()
wait_one() {
    local pid status=0
    wait -n -p pid || status=$?
    ((status == 0)) || failed+=("${running[$pid]}")
    unset "running[$pid]"
}
for target in $targets; do
    while ((${#running[@]} >= FUZZ_JOBS)); do wait_one; done
    run_target "$target" &
    running[$!]=$target
done
while ((${#running[@]} > 0)); do wait_one; done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failed: ${failed[*]} (inputs in $SCRATCH/crashes/)" >&2
    exit 1
fi
echo "fuzz: every target held its property for ${FUZZ_TIME}s"
