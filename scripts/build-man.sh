#!/usr/bin/env bash
# Builds the man pages: man/*.md (pandoc markdown) into roff in MAN_OUT (default .build/man), then
# checks each with `mandoc -T lint`, which must find nothing.
#
# The pages' generated parts come from the built binary, so that OPTIONS, CONFIGURATION KEYS,
# defaults and exit statuses are the option table's, as `--help` prints them; a marker line is
# replaced by the output of:
#   <!-- OPTIONS: SUB -->            httpdns help --man-options SUB (every option, its argument, its help)
#   <!-- CONFIG-KEYS: SUB -->        httpdns help --man-config-keys SUB (serve, stub)
#   <!-- HELP: SUB TITLE -->         httpdns help --man-section SUB TITLE (OVERVIEW, EXIT STATUS, …)
#   <!-- FILE: PATH -->              the file, as a code block (the shipped units), its
#                                    /usr/local/bin/httpdns read as BINDIR/httpdns
#
# Environment: HTTPDNS, the binary to ask (default: `swift build --product httpdns` here, then its
# path); BINDIR (default /usr/local/bin), where the units' ExecStart finds httpdns.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${MAN_OUT:-.build/man}
bindir=${BINDIR:-/usr/local/bin}
httpdns=${HTTPDNS:-}
for tool in pandoc mandoc; do
    command -v "$tool" >/dev/null || { echo "build-man: $tool is missing (scripts/ensure-deps.sh installs it)" >&2; exit 1; }
done
if [[ -z $httpdns ]]; then
    swift build --product httpdns -Xswiftc -warnings-as-errors >&2
    httpdns="$(swift build --show-bin-path)/httpdns"
fi

# One page's markdown with its markers replaced.
expand() {
    local line
    while IFS= read -r line || [[ -n $line ]]; do
        if [[ $line =~ ^'<!-- OPTIONS: '([a-z]+)' -->'$ ]]; then
            "$httpdns" help --man-options "${BASH_REMATCH[1]}"
        elif [[ $line =~ ^'<!-- CONFIG-KEYS: '([a-z]+)' -->'$ ]]; then
            "$httpdns" help --man-config-keys "${BASH_REMATCH[1]}"
        elif [[ $line =~ ^'<!-- HELP: '([a-z]+)' '(.+)' -->'$ ]]; then
            "$httpdns" help --man-section "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
        elif [[ $line =~ ^'<!-- FILE: '(.+)' -->'$ ]]; then
            printf '```\n'
            sed "s|/usr/local/bin/httpdns|$bindir/httpdns|g" "${BASH_REMATCH[1]}"
            printf '```\n'
        elif [[ $line == '<!--'* ]]; then
            echo "build-man: $1: unknown marker: $line" >&2
            return 1
        else
            printf '%s\n' "$line"
        fi
    done <"$1"
}

mkdir -p "$out"
# The pages' date: the last commit's, so that a rebuild of the same tree writes the same pages.
date=$(git log -1 --format=%cs 2>/dev/null || true)
status=0
for source in man/*.md; do
    page="$out/$(basename "$source" .md)"
    expand "$source" >"$page.md"
    # Two quirks of Debian's pandoc (2.17) that mandoc flags: its monospace fonts (\f[V] inline,
    # \f[C] in code blocks) are groff 1.23's, which mandoc and older groffs do not know (\f[CR] is
    # the portable name), it starts every section with a .PP that the .SH/.SS already implies, and
    # it leaves text lines longer than 80 bytes where a code span holds spaces (scripts/man-fold.awk).
    # Pages are set ragged-right without hyphenation (.ad l, .nh): URLs, metric names and options
    # stay whole, and groff finds no line it cannot justify (pandoc asks for hyphenation: .hy).
    pandoc --standalone --from markdown-smart --to man --metadata date="$date" "$page.md" |
        sed -e 's/\\f\[[VC]\]/\\f[CR]/g' -e '/^\.TH /a .nh\n.ad l' -e '/^\.hy$/d' |
        awk '/^\.PP$/ && previous ~ /^\.S[HS] / { previous = $0; next } { print; previous = $0 }' |
        awk -f scripts/man-fold.awk >"$page"
    rm "$page.md"
    lint=$(mandoc -T lint "$page" 2>&1 || true)
    if [[ -n $lint ]]; then
        echo "$lint" >&2
        status=1
    fi
done
exit "$status"
