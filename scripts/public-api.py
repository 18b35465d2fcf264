#!/usr/bin/env python3
"""The public API of the library products, from their symbol graphs (scripts/symbol-graphs.sh).

  scripts/public-api.py GRAPHS            print the API, one declaration a line, and the counts
  scripts/public-api.py GRAPHS --write    also write api/public-api.txt (after a deliberate change)
  scripts/public-api.py GRAPHS --check    fail when the API differs from api/public-api.txt

Growth is a decision: a change to the public API shows up as a diff of api/public-api.txt in review.
The count of `public` declarations in the library sources is printed next to the figure issue 10
started from (796), so the boundary's size stays visible.
"""
import json, os, re, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
record = os.path.join(root, "api", "public-api.txt")
library_modules = ["DNSWire", "HTTPDNSCore", "HTTPDNSTransport", "DNSSockets", "HTTPDNS", "HTTPDNSNetworking", "HTTPDNSServer"]


# Dependency order: a symbol re-exported by a later module (`@_exported import`) is listed once,
# under the module that declares it.
module_order = ["HTTPDNSCore", "HTTPDNS", "HTTPDNSNetworking", "HTTPDNSServer"]


def declarations(graph_dir):
    lines = set()
    seen = set()
    names = [name for name in os.listdir(graph_dir) if name.endswith(".symbols.json")]
    rank = lambda name: (module_order.index(name.split(".")[0].split("@")[0]) if name.split(".")[0].split("@")[0] in module_order else 99, name)
    for name in sorted(names, key=rank):
        module = name.split(".")[0].split("@")[0]
        with open(os.path.join(graph_dir, name)) as handle:
            graph = json.load(handle)
        for symbol in graph.get("symbols", []):
            if symbol.get("accessLevel") != "public":
                continue
            precise = symbol["identifier"]["precise"]
            if "::SYNTHESIZED::" in precise:
                continue  # members a protocol extension provides (==, hash(into:) defaults, …)
            if precise in seen:
                continue
            seen.add(precise)
            path = ".".join(symbol["pathComponents"])
            fragments = "".join(f["spelling"] for f in symbol.get("declarationFragments", []))
            fragments = re.sub(r"\s+", " ", fragments).strip()
            lines.add(f"{module}  {path}  {fragments}")
    return sorted(lines)


def public_keyword_count():
    count = 0
    pattern = re.compile(r"^\s*(@\w+(\([^)]*\))?\s+)*public\s")
    for module in library_modules:
        for directory, _, files in os.walk(os.path.join(root, "Sources", module)):
            for name in files:
                if name.endswith(".swift"):
                    with open(os.path.join(directory, name)) as handle:
                        count += sum(1 for line in handle if pattern.match(line))
    return count


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 64
    api = declarations(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else ""
    if mode == "--write":
        os.makedirs(os.path.dirname(record), exist_ok=True)
        with open(record, "w") as handle:
            handle.write("\n".join(api) + "\n")
    elif mode == "--check":
        with open(record) as handle:
            recorded = handle.read().splitlines()
        added = sorted(set(api) - set(recorded))
        removed = sorted(set(recorded) - set(api))
        if added or removed:
            for line in removed:
                print("- " + line)
            for line in added:
                print("+ " + line)
            print(f"error: the public API differs from {os.path.relpath(record, root)} "
                  f"({len(added)} added, {len(removed)} removed); if deliberate, run `make api` and commit it")
            return 1
    else:
        print("\n".join(api))
    keyword = public_keyword_count()
    print(f"public API: {len(api)} declarations in the products' symbol graphs; "
          f"{keyword} `public` declarations in the library sources (796 when issue 10 was filed)", file=sys.stderr)
    return 0


sys.exit(main())
