#!/usr/bin/env python3
"""The public API of the library products, from their symbol graphs (scripts/symbol-graphs.sh).

  scripts/public-api.py GRAPHS            print the API, one declaration a line, and the counts
  scripts/public-api.py GRAPHS --write    also write api/public-api.txt (after a deliberate change)
  scripts/public-api.py GRAPHS --check    fail when the API differs from api/public-api.txt
  … --record FILE                          another record than api/public-api.txt (the script's own test)

Each line is `PRODUCT  MODULE  PATH  DECLARATION`: the product a user depends on and imports to get
the symbol (HTTPDNSCore's value types come with `HTTPDNS`), the module that declares it, and its
declaration. `public` and `open` declarations are both recorded: an `open` class removed fails the
check like a `public` one.

Growth is a decision: a change to the public API shows up as a diff of api/public-api.txt in review.
The count of `public` declarations in the library sources is printed next to the figure issue 10
started from (796), so the boundary's size stays visible.
"""
import json, os, re, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
record = os.path.join(root, "api", "public-api.txt")
library_modules = [
    "DNSWire", "HTTPDNSCore", "HTTPDNSTransport", "DNSSockets", "HTTPDNS", "HTTPDNSDirect", "HTTPDNSLoopbackProxy",
    "HTTPDNSURLSession", "HTTPDNSNetworking", "HTTPDNSServer",
]


# Dependency order: a symbol re-exported by a later module (`@_exported import`) is listed once,
# under the module that declares it.
module_order = ["HTTPDNSCore", "HTTPDNS", "HTTPDNSDirect", "HTTPDNSLoopbackProxy", "HTTPDNSURLSession", "HTTPDNSNetworking", "HTTPDNSServer"]

# The product that brings each module's symbols to a user (HTTPDNSCore is not a product: `HTTPDNS`
# re-exports it). `HTTPDNSNetworking` re-exports HTTPDNSDirect and HTTPDNSLoopbackProxy as well.
product_of = {"HTTPDNSCore": "HTTPDNS"}


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
            if symbol.get("accessLevel") not in ("public", "open"):
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
            if symbol.get("accessLevel") == "open":
                fragments = "open " + fragments  # the graph's fragments leave the keyword out
            lines.add(f"{product_of.get(module, module)}  {module}  {path}  {fragments}")
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
    global record
    arguments = sys.argv[1:]
    if "--record" in arguments:
        index = arguments.index("--record")
        record = os.path.abspath(arguments[index + 1])
        del arguments[index:index + 2]
    api = declarations(arguments[0])
    mode = arguments[1] if len(arguments) > 1 else ""
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
