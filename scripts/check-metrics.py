#!/usr/bin/env python3
"""Checks `httpdns serve`'s /metrics text with the reference parser (prometheus_client).

Optional, outside `make test` (the suite has its own strict parser in HTTPDNSServerMetricsTests):
    pip install prometheus_client
    scripts/check-metrics.py http://127.0.0.1:8053/metrics     # or a file, or - for stdin
Exits 0 when the text parses and every httpdns family is present, 1 otherwise.
"""
import sys
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit("check-metrics: needs prometheus_client (pip install prometheus_client)")

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


def read(source):
    if source == "-":
        return sys.stdin.read()
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source, timeout=10) as response:
            return response.read().decode("utf-8")
    with open(source, encoding="utf-8") as handle:
        return handle.read()


def main():
    text = read(sys.argv[1] if len(sys.argv) > 1 else "-")
    families = {family.name: family for family in text_string_to_metric_families(text)}
    problems = []
    for name, kind in EXPECTED.items():
        family = families.get(name)
        if family is None:
            problems.append(f"{name}: missing")
        elif family.type != kind:
            problems.append(f"{name}: type {family.type}, expected {kind}")
    histogram = families.get("httpdns_request_duration_seconds")
    if histogram is not None:
        buckets = [s for s in histogram.samples if s.name.endswith("_bucket")]
        counts = [s.value for s in buckets]
        if counts != sorted(counts) or buckets[-1].labels.get("le") != "+Inf":
            problems.append("httpdns_request_duration_seconds: buckets not cumulative or no +Inf")
    for problem in problems:
        print("check-metrics:", problem, file=sys.stderr)
    samples = sum(len(f.samples) for f in families.values())
    print(f"check-metrics: {len(families)} families, {samples} samples" + (", OK" if not problems else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
