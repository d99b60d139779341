#!/usr/bin/python3
"""Request paths for bench_query http (which checks the answers: bench_gen --expect).

  paths.py SYSTEM KIND WORKLOAD [N]    print one request path per workload line

SYSTEM: readingsd | readingsd-fields | readingsd-columns | victoriametrics | influxdb; KIND: between | latest.
readingsd-fields asks readingsd for the two attributes VictoriaMetrics holds (attributes=);
readingsd-columns for every attribute, the page transposed (format=columns).
WORKLOAD lines are bench_gen's "<device> <from_iso> <to_iso> <from_ms> <to_ms>" (inclusive).
"""
import sys
import urllib.parse

q = urllib.parse.quote


FIELDS = ["temperature", "humidity"]  # what VictoriaMetrics stores of a reading


def path(system, kind, line, n):
    device, from_iso, to_iso, from_ms, to_ms = line.split()
    if system == "readingsd-fields":
        return path("readingsd", kind, line, n) + "&attributes=" + ",".join(FIELDS)
    if system == "readingsd-columns":
        return path("readingsd", kind, line, n) + "&format=columns"
    if system == "readingsd":
        if kind == "latest":
            return f"/v1/devices/{device}/latest?n={n}"
        return f"/v1/devices/{device}/readings?from={q(from_iso)}&to={q(to_iso)}&limit=10000"
    if system == "victoriametrics":
        # No "newest n" in VictoriaMetrics: latest is the export of the time range that holds the
        # device's last n readings (known from the generator).
        match = q('{device="%s"}' % device)
        return f"/api/v1/export?match[]={match}&start={int(from_ms) / 1000:.3f}&end={int(to_ms) / 1000:.3f}"
    if system == "influxdb":
        if kind == "latest":
            sql = f"SELECT * FROM readings WHERE device = '{device}' ORDER BY time DESC LIMIT {n}"
        else:
            sql = f"SELECT * FROM readings WHERE device = '{device}' AND time >= {from_ms}ms AND time <= {to_ms}ms"
        return f"/query?db=bench&epoch=ms&q={q(sql)}"
    raise SystemExit(f"paths.py: unknown system {system}")


def main(argv):
    system, kind, workload = argv[1:4]
    n = int(argv[4]) if len(argv) > 4 else 10
    for line in open(workload).read().splitlines():
        if line.strip():
            print(path(system, kind, line, n))


if __name__ == "__main__":
    main(sys.argv)
