#!/usr/bin/env python3
"""Checks that moving the README's reference elsewhere lost no text (issue 33).

The README became a front page; its reference moved word for word into the DocC articles, the man
pages and CONTRIBUTING.md. This script reads the old README from git and reports every paragraph,
list item, table row and code line of it that is not found verbatim in any of the new files, with
whitespace normalised (a paragraph may be wrapped differently, a code line indented differently).
Headings are not checked: they adapt to where the text now sits. A few rewordings are deliberate:
they are listed below with their reasons, applied to the old text before it is looked for, and
printed with every run.

    scripts/check-moved-text.py                        # against b5edd0c's README
    scripts/check-moved-text.py --ignore 571-1359      # before the man pages exist

Exit status 0 when nothing is missing, 1 otherwise.
"""

import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The new places the text may be in.
NEW_FILES = ["README.md", "CONTRIBUTING.md", "Documentation/*/*.md", "man/*.md"]

# (old text, new text, reason): the old README's words that were changed on purpose. Each is a pointer
# to another part of the README ("above", "below"), which now sits in another file.
REWORDINGS = [
    ("loaded from (below)", "loaded from (<doc:DirectClient>)",
     "the persisted cache is in the DirectClient article, not below the configuration tables"),
    ("(the failure reports, above)", "(<doc:Failover>)",
     "the failure reports are in the Failover article, not above the configuration tables"),
    ("`httpdns proxy` (below)", "`httpdns proxy` (httpdns-proxy(1))",
     "the command's section became the man page httpdns-proxy(1)"),
    ("one prefix table (above)", "one prefix table (httpdns-serve(8))",
     "the views' prefix table is described in the man page httpdns-serve(8)"),
    ("(see `httpdns serve` above:", "(see httpdns-serve(8):",
     "the serve section became the man page httpdns-serve(8)"),
]

# (first line, last line, reason): old README text replaced on purpose rather than moved; not checked.
REPLACED = [
    (340, 353, "concurrent-200's paragraph (now in ProxyRoute.md) holds the second round to the first's bound: "
               "a CI run under ThreadSanitizer lost 76 tasks of a second round to the same libcurl defect"),
    (790, 800, "the report paragraph's 120-character body example is a code block in httpdns-serve(8): "
               "as inline code it made groff and lintian warn"),
    (1029, 1058, "the fleet's printed unit (flags in ExecStart, one port per instance) is the shipped "
                 "contrib/systemd/httpdns-serve@.service (one configuration file per instance), included "
                 "in httpdns-serve(8) with the equivalent /etc/httpdns/8053.json"),
]


def normalise(text):
    return " ".join(text.split())


def units(readme, ignored):
    """The old README's text as (first line number, kind, text) units."""
    lines = readme.split("\n")
    result = []
    paragraph = []
    fence = None

    def flush():
        if paragraph:
            result.append((paragraph[0][0], "paragraph", " ".join(text for _, text in paragraph)))
            paragraph.clear()

    for index, line in enumerate(lines, start=1):
        if any(low <= index <= high for low, high in ignored):
            flush()
            # A fence opened or closed inside an ignored range must still be tracked.
            if line.startswith("```"):
                fence = None if fence else line
            continue
        if fence is not None:
            if line.startswith("```"):
                fence = None
            elif line.strip():
                result.append((index, "code line", line))
            continue
        if line.startswith("```"):
            flush()
            fence = line
        elif not line.strip():
            flush()
        elif line.startswith("#"):
            flush()
        elif line.startswith("|"):
            flush()
            if not re.fullmatch(r"\|[\s|:-]*\|", line.strip()):
                result.append((index, "table row", line))
        elif line.startswith("- "):
            flush()
            paragraph.append((index, line))
        else:
            paragraph.append((index, line))
    flush()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="b5edd0c",
                        help="the git revision whose README.md is the old text (default b5edd0c)")
    parser.add_argument("--ignore", action="append", default=[], metavar="FIRST-LAST",
                        help="old README lines not to check (repeatable), e.g. 571-1359")
    arguments = parser.parse_args()

    ignored = [(first, last) for first, last, _ in REPLACED]
    for span in arguments.ignore:
        first, _, last = span.partition("-")
        ignored.append((int(first), int(last or first)))

    old = subprocess.run(["git", "show", f"{arguments.old}:README.md"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    new_texts = {}
    for pattern in NEW_FILES:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            with open(path, encoding="utf-8") as file:
                new_texts[os.path.relpath(path, ROOT)] = normalise(file.read())

    print("Deliberate rewordings (old → new: why):")
    for before, after, reason in REWORDINGS:
        print(f"  {before!r} → {after!r}: {reason}")
    print("Replaced on purpose, not checked (old README lines: why):")
    for first, last, reason in REPLACED:
        print(f"  {first}-{last}: {reason}")
    print(f"Looking in {len(new_texts)} files: {', '.join(sorted(new_texts))}")

    checked = 0
    missing = []
    for number, kind, text in units(old, ignored):
        wanted = normalise(text)
        for before, after, _ in REWORDINGS:
            wanted = wanted.replace(before, after)
        checked += 1
        if not any(wanted in body for body in new_texts.values()):
            missing.append((number, kind, text))

    for number, kind, text in missing:
        shown = text if len(text) <= 160 else text[:157] + "..."
        print(f"README.md:{number}: {kind} not found: {shown}")
    ignoring = f" (ignoring lines {', '.join(arguments.ignore)})" if arguments.ignore else ""
    print(f"{checked} units of the old README checked{ignoring}: {len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
