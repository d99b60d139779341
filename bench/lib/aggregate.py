#!/usr/bin/python3
"""bench/aggregate_query's client: times one 5-minute avg/min/max query per system, round-robin,
and checks that every system answers the same buckets.

usage: aggregate.py REQUESTS ROUNDS FROM_S TO_S SYSTEM=HOST:PORT...
  SYSTEM is readingsd (rows), readingsd-columns (format=columns), victoriametrics, influxdb or
  prometheus (readingsd through remote read).
Each request goes over one persistent connection per system; its clock covers sending it and
reading the whole response. Per round every system answers REQUESTS requests after one untimed
warm-up; the order of the systems is reversed each round. Prints one line per system:
  SYSTEM p50_us=… p99_us=… buckets=… bytes=…
and exits 1 when any answer differs from readingsd's first (same bucket starts; avg, min and
max within 1e-9 relative).
"""
import calendar
import json
import sys
import time
import urllib.parse

from rounds import Http

DEVICE = "dev00001"
STEP = 300


def path_of(system, from_s, to_s):
    iso = lambda s: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s))
    if system.startswith("readingsd"):
        return (f"/v1/devices/{DEVICE}/aggregate?from={iso(from_s)}&to={iso(to_s - 1)}"
                "&step=5m&fn=avg,min,max&attributes=temperature"
                + ("&format=columns" if system == "readingsd-columns" else ""))
    if system == "influxdb":
        q = (f"SELECT mean(temperature), min(temperature), max(temperature) FROM readings "
             f"WHERE device='{DEVICE}' AND time >= {from_s}s AND time < {to_s}s GROUP BY time(5m)")
        return "/query?" + urllib.parse.urlencode({"db": "bench", "epoch": "s", "q": q})
    # PromQL (Prometheus) and MetricsQL (VictoriaMetrics): the value at t is over (t-5m, t] /
    # [t-5m, t]; no reading lies on a boundary (they start 5 s past it), so t = bucket end.
    sel = f'temperature{{device="{DEVICE}"}}[5m]'
    q = " or ".join(f'label_replace({fn}_over_time({sel}), "fn", "{fn}", "", "")' for fn in ("avg", "min", "max"))
    params = {"query": q, "start": from_s + STEP, "end": to_s, "step": STEP}
    if system == "victoriametrics":
        params["nocache"] = "1"  # no answer from its rollup cache: each request computes
    return "/api/v1/query_range?" + urllib.parse.urlencode(params)


def buckets_of(system, body):
    """{bucket start (s): (avg, min, max)}"""
    doc = json.loads(body)
    out = {}
    start_of = lambda text: calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    if system == "readingsd":
        for b in doc["buckets"]:
            t = b["temperature"]
            out[start_of(b["start"])] = (t["avg"], t["min"], t["max"])
    elif system == "readingsd-columns":
        t = doc["columns"]["temperature"]
        for i, start in enumerate(doc["start"]):
            out[start_of(start)] = (t["avg"][i], t["min"][i], t["max"][i])
    elif system == "influxdb":
        for row in doc["results"][0]["series"][0]["values"]:
            if row[1] is not None:
                out[row[0]] = tuple(row[1:4])
    else:
        by_fn = {}
        for series in doc["data"]["result"]:
            by_fn[series["metric"]["fn"]] = {int(float(t)) - STEP: float(v) for t, v in series["values"]}
        for start in by_fn.get("avg", {}):
            out[start] = tuple(by_fn[fn][start] for fn in ("avg", "min", "max"))
    return out


def same(a, b):
    if a.keys() != b.keys():
        return False
    return all(abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1) for k in a for x, y in zip(a[k], b[k]))


def main():
    requests, rounds, from_s, to_s = (int(x) for x in sys.argv[1:5])
    systems = [s.split("=", 1) for s in sys.argv[5:]]
    conns = {s: Http(hp) for s, hp in systems}
    paths = {s: path_of(s, from_s, to_s) for s, _ in systems}
    lat = {s: [] for s, _ in systems}
    size = {}
    want = None
    failed = False

    def get(s):
        nonlocal want, failed
        body = conns[s].get(paths[s])
        size[s] = len(body)
        return body

    order = [s for s, _ in systems]
    for _ in range(rounds):
        for s in order:
            got = buckets_of(s, get(s))  # warm-up, checked
            if want is None:
                want = got
            if not same(got, want) or len(got) != (to_s - from_s) // STEP:
                print(f"{s}: answer differs from the first ({len(got)} buckets, {len(want)} expected)", file=sys.stderr)
                failed = True
            bodies = []  # every timed answer, checked after the timed requests
            for _ in range(requests):
                t0 = time.perf_counter()
                bodies.append(get(s))
                lat[s].append(time.perf_counter() - t0)
            wrong = sum(1 for body in bodies if buckets_of(s, body) != got)
            if wrong:
                print(f"{s}: {wrong} of {requests} timed answers differ from its checked first answer", file=sys.stderr)
                failed = True
        order.reverse()
    for s, _ in systems:
        xs = sorted(lat[s])
        p = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))] * 1e6
        print(f"{s} p50_us={p(0.5):.0f} p99_us={p(0.99):.0f} buckets={len(want)} bytes={size[s]}")
    sys.exit(1 if failed else 0)


main()
