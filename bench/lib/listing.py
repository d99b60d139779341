#!/usr/bin/python3
"""bench/device_listing's client: times "every device and its latest reading" per system,
round-robin, and checks that every system names the same devices with the same latest values.

usage: listing.py REQUESTS ROUNDS END_S SYSTEM=HOST:PORT...
  SYSTEM is readingsd (GET /v1/devices, every page), victoriametrics (instant query of
  last_over_time over the day before END_S, temperature and humidity) or influxdb
  (SELECT last(temperature), last(humidity) ... GROUP BY device).
Each system keeps one connection; a request's clock covers sending it, reading the whole answer
(readingsd: every page, following nextCursor) and decoding its JSON, and the number of devices is
checked; the latest values themselves are compared once per round, outside it. Per round every system answers REQUESTS
requests after one untimed warm-up; the order of the systems is reversed each round. Prints one
line per system:  SYSTEM p50_us=… p99_us=… devices=… bytes=…
and exits 1 when any system's {device: (temperature, humidity)} differs from readingsd's.
"""
import json
import sys
import urllib.parse

from rounds import Http, report, timed_rounds


def readingsd(target, end_s):
    conn = Http(target)

    def ask(check):
        devices, size = conn.pages("/v1/devices", {"limit": "10000"}, "devices")
        if not check:
            return len(devices), size
        return {d["deviceId"]: (float(d["latest"]["temperature"]), float(d["latest"]["humidity"])) for d in devices}, size
    return ask


def victoriametrics(target, end_s):
    conn = Http(target)
    q = 'last_over_time({__name__=~"temperature|humidity"}[1d])'
    path = "/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": end_s, "nocache": "1"})

    def ask(check):
        body = conn.get(path)
        result = json.loads(body)["data"]["result"]
        if not check:
            return len({s["metric"]["device"] for s in result}), len(body)
        latest = {}
        for series in result:
            d = latest.setdefault(series["metric"]["device"], [None, None])
            d[0 if series["metric"]["__name__"] == "temperature" else 1] = float(series["value"][1])
        return {k: tuple(v) for k, v in latest.items()}, len(body)
    return ask


def influxdb(target, end_s):
    conn = Http(target)
    q = "SELECT last(temperature), last(humidity) FROM readings GROUP BY device"

    def ask(check):
        doc, size = conn.influxql(q)
        if not check:
            return len(doc["series"]), size
        return {s["tags"]["device"]: (float(s["values"][0][1]), float(s["values"][0][2])) for s in doc["series"]}, size
    return ask


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    requests, rounds, end_s = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    makers = {"readingsd": readingsd, "victoriametrics": victoriametrics, "influxdb": influxdb}
    systems = []
    for arg in sys.argv[4:]:
        name, _, target = arg.partition("=")
        systems.append((name, makers[name](target, end_s)))
    latencies, answers = timed_rounds(systems, requests, rounds)

    def difference(latest, want):
        diff = sorted(k for k in set(latest) | set(want) if latest.get(k) != want.get(k))
        return f"on {len(diff)} devices, e.g. {[(k, latest.get(k), want.get(k)) for k in diff[:3]]}"
    report(systems, latencies, answers, "devices", difference)


if __name__ == "__main__":
    main()
