#!/usr/bin/python3
"""bench/index_query's client: times "every reading above THRESHOLD in one hour, across the
fleet" per system, round-robin, and checks that every system answers the same readings.

usage: threshold.py REQUESTS ROUNDS HOUR THRESHOLD SYSTEM=TARGET...
  HOUR is "2026-06-23T01"; SYSTEM is readingsd (TARGET host:port, the hot_by_hour index through
  GET /v1/indexes/hot_by_hour/readings?…&format=columns, every page), readingsd-rows (the same
  in the default rows format), influxdb (host:port, database bench) or postgresql (a libpq DSN,
  table readings).
Each system keeps one connection; a request's clock covers sending the query, reading the whole
answer (readingsd: every page, following nextCursor) and decoding it (JSON; psycopg2's rows),
and its count is checked; the readings themselves are compared once per round, outside it. Per round every system answers
REQUESTS requests after one untimed warm-up; the order of the systems is reversed each round.
Prints one line per system:  SYSTEM p50_us=… p99_us=… readings=… bytes=…
and exits 1 when any system's readings (device, time, temperature) differ from readingsd's.
"""
import calendar
import sys
import time

from rounds import Http, report, timed_rounds


def parse_iso_ms(text):
    head, _, frac = text.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(head, "%Y-%m-%dT%H:%M:%S")) * 1000 + int((frac or "0")[:3].ljust(3, "0"))


INDEX_PATH = "/v1/indexes/hot_by_hour/readings"


def readingsd_query(hour, threshold):
    return {"from": f"{hour}:00:00Z", "to": f"{hour}:59:59.999Z", "gt": threshold, "limit": "10000"}


def readingsd(target, hour, threshold):
    """format=columns: per page one array of device ids, one of times, one per attribute."""
    conn = Http(target)
    query = readingsd_query(hour, threshold) | {"format": "columns"}

    def ask(check):
        pages, size = conn.documents(INDEX_PATH, query)
        if not check:
            return sum(len(p["readingTs"]) for p in pages), size
        return {(d, parse_iso_ms(ts), float(t)) for p in pages
                for d, ts, t in zip(p["deviceId"], p["readingTs"], p["columns"].get("temperature", []), strict=True)}, size
    return ask


def readingsd_rows(target, hour, threshold):
    conn = Http(target)
    query = readingsd_query(hour, threshold)

    def ask(check):
        rows, size = conn.pages(INDEX_PATH, query, "items")
        if not check:
            return len(rows), size
        return {(i["deviceId"], parse_iso_ms(i["readingTs"]), float(i["temperature"])) for i in rows}, size
    return ask


def influxdb(target, hour, threshold):
    conn = Http(target)
    start = calendar.timegm(time.strptime(hour, "%Y-%m-%dT%H"))
    q = (f"SELECT device, temperature FROM readings WHERE temperature > {threshold} "
         f"AND time >= {start}s AND time < {start + 3600}s")

    def ask(check):
        doc, size = conn.influxql(q)
        values = [r for s in doc.get("series", []) for r in s["values"]]
        if not check:
            return len(values), size
        return {(r[1], r[0], float(r[2])) for r in values}, size
    return ask


def postgresql(dsn, hour, threshold):
    import psycopg2
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    cur = conn.cursor()
    q = ("SELECT device_id, ts, temperature, humidity, pad FROM readings "
         "WHERE ts >= %s::timestamptz AND ts < %s::timestamptz + interval '1 hour' AND temperature > %s")
    args = (f"{hour}:00:00Z", f"{hour}:00:00Z", threshold)

    def ask(check):
        cur.execute(q, args)
        fetched = cur.fetchall()
        if not check:
            return len(fetched), 0
        rows = {(d, int(ts.timestamp() * 1000), float(t)) for d, ts, t, _, _ in fetched}
        return rows, sum(len(str(r)) for r in fetched)  # no wire size from libpq: the rows' text
    return ask


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    requests, rounds, hour, threshold = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    makers = {"readingsd": readingsd, "readingsd-rows": readingsd_rows, "influxdb": influxdb, "postgresql": postgresql}
    systems = []
    for arg in sys.argv[5:]:
        name, _, target = arg.partition("=")
        systems.append((name, makers[name](target, hour, threshold)))
    latencies, answers = timed_rounds(systems, requests, rounds)
    report(systems, latencies, answers, "readings",
           lambda rows, want: f"{len(rows - want)} readings only there, {len(want - rows)} only in readingsd, "
                              f"e.g. {sorted(rows ^ want)[:3]}")


if __name__ == "__main__":
    main()
