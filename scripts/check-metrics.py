#!/usr/bin/python3
"""Checks `httpdns serve`'s /metrics text with the reference parser (prometheus_client).

Part of `make test` (ServeMetricsCheckTests runs it against a live `httpdns serve`), so the text is
read by a parser that is not the suite's own. Debian's python3-prometheus-client provides the
parser (scripts/ensure-deps.sh installs it), hence Debian's /usr/bin/python3 above.

    scripts/check-metrics.py http://127.0.0.1:8053/metrics     # or a file, or - for stdin
    scripts/check-metrics.py URL --require health,views,reports --expect 'httpdns_view_queries_total{view="a"}=1'

Beyond parsing: every httpdns family is declared (TYPE and HELP), the always-present families are
there with their types (and those of --require's groups), no series is repeated, values are finite
and counters not negative, histograms are cumulative and end at +Inf with _count equal to it, and
each --expect sample has its value. Exits 0 when all hold, 1 otherwise.
"""
import argparse
import math
import re
import sys
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit("check-metrics: needs prometheus_client (Debian: apt-get install python3-prometheus-client)")

EXPECTED = {
    "httpdns_queries": "counter",
    "httpdns_queries_by_format": "counter",
    "httpdns_responses": "counter",
    "httpdns_dns_responses": "counter",
    "httpdns_cache": "counter",
    "httpdns_upstream": "counter",
    "httpdns_request_duration_seconds": "histogram",
    "httpdns_open_connections": "gauge",
    "httpdns_connections": "counter",
    "httpdns_shed": "counter",
    "httpdns_access_log_dropped": "counter",
    "httpdns_zone_names": "gauge",
    "httpdns_zone_loads": "counter",
}

# Families that appear only with a feature in service: a zone with checks, a views file, report tokens.
GROUPS = {
    "health": {
        "httpdns_origin_up": "gauge",
        "httpdns_health_probes": "counter",
        "httpdns_health_fail_open": "counter",
    },
    "views": {
        "httpdns_view_queries": "counter",
    },
    "reports": {
        "httpdns_reports": "counter",
        "httpdns_report_items": "counter",
        "httpdns_report_probes": "counter",
        "httpdns_report_decisions": "counter",
        "httpdns_report_evictions": "counter",
        "httpdns_report_tracked_addresses": "gauge",
        "httpdns_report_tracked_networks": "gauge",
        "httpdns_report_decisions_in_force": "gauge",
    },
    "redis": {
        "httpdns_redis_up": "gauge",
        "httpdns_redis_errors": "counter",
        "httpdns_redis_dropped": "counter",
    },
}

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?=(.+)$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def read(source):
    if source == "-":
        return sys.stdin.read()
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source, timeout=10) as response:
            return response.read().decode("utf-8")
    with open(source, encoding="utf-8") as handle:
        return handle.read()


def parse_expectation(text):
    """`name{a="x",b="y"}=value` -> (name, labels, value)."""
    match = SAMPLE.match(text)
    if not match:
        raise ValueError(f"--expect {text!r}: not NAME{{LABELS}}=VALUE")
    name, labels_text, value = match.group(1), match.group(2) or "", float(match.group(3))
    labels = {key: value.replace('\\"', '"').replace("\\\\", "\\") for key, value in LABEL.findall(labels_text)}
    return name, labels, value


def check(text, required, expectations):
    problems = []
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as error:  # the reference parser refused the text
        return [f"the parser refused the text: {error}"], {}
    by_name = {}
    for family in families:
        if family.name in by_name:
            problems.append(f"{family.name}: declared twice")
        by_name[family.name] = family
    wanted = dict(EXPECTED)
    for group in required:
        wanted.update(GROUPS[group])
    for name, kind in wanted.items():
        family = by_name.get(name)
        if family is None:
            problems.append(f"{name}: missing")
        elif family.type != kind:
            problems.append(f"{name}: type {family.type}, expected {kind}")
    seen = set()
    for family in families:
        if family.name.startswith("httpdns_"):
            if family.type in ("unknown", "untyped"):
                problems.append(f"{family.name}: no TYPE line")
            if not family.documentation:
                problems.append(f"{family.name}: no HELP line")
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            if key in seen:
                problems.append(f"{sample.name}{sample.labels}: repeated")
            seen.add(key)
            if math.isnan(sample.value) or (math.isinf(sample.value) and sample.name.endswith(("_total", "_count"))):
                problems.append(f"{sample.name}{sample.labels}: value {sample.value}")
            if family.type == "counter" and sample.value < 0:
                problems.append(f"{sample.name}{sample.labels}: negative counter {sample.value}")
        if family.type == "histogram":
            buckets = [s for s in family.samples if s.name.endswith("_bucket")]
            counts = [s.value for s in buckets]
            count = [s.value for s in family.samples if s.name.endswith("_count")]
            if not buckets or counts != sorted(counts) or buckets[-1].labels.get("le") != "+Inf":
                problems.append(f"{family.name}: buckets not cumulative or no +Inf")
            elif count != [counts[-1]]:
                problems.append(f"{family.name}: _count {count} is not the +Inf bucket {counts[-1]}")
            if not any(s.name.endswith("_sum") for s in family.samples):
                problems.append(f"{family.name}: no _sum")
    values = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}
    for name, labels, value in expectations:
        actual = values.get((name, tuple(sorted(labels.items()))))
        if actual != value:
            problems.append(f"{name}{labels}: {actual}, expected {value}")
    return problems, by_name


def main():
    parser = argparse.ArgumentParser(description="Check httpdns /metrics with prometheus_client's parser.")
    parser.add_argument("source", nargs="?", default="-", help="URL, file, or - for stdin (default)")
    parser.add_argument("--require", default="", help="comma-separated groups that must be present: " + ", ".join(GROUPS))
    parser.add_argument("--expect", action="append", default=[], metavar="SAMPLE=VALUE",
                        help='a sample and its value, e.g. httpdns_view_queries_total{view="a"}=1 (repeatable)')
    arguments = parser.parse_args()
    required = [group for group in arguments.require.split(",") if group]
    unknown = [group for group in required if group not in GROUPS]
    if unknown:
        parser.error(f"unknown group(s): {', '.join(unknown)}")
    expectations = [parse_expectation(text) for text in arguments.expect]
    problems, families = check(read(arguments.source), required, expectations)
    for problem in problems:
        print("check-metrics:", problem, file=sys.stderr)
    samples = sum(len(f.samples) for f in families.values())
    print(f"check-metrics: {len(families)} families, {samples} samples" + (", OK" if not problems else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
