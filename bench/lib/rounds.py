"""What the query clients of bench/ share (threshold.py, listing.py, aggregate.py): one keep-alive HTTP
connection per system, and the timed rounds.

A system is (name, ask): ask(check) answers one request; with check=False it returns
(count, bytes) and is what the clock covers, with check=True it returns (answer, bytes) where
answer is what is compared across systems (len(answer) == count), built outside the clock.
"""
import http.client
import json
import sys
import time
import urllib.parse


class Http:
    def __init__(self, target):
        host, port = target.rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=120)

    def get(self, path):
        try:
            self.conn.request("GET", path)
            resp = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # A server closes a kept-alive connection idle for long (readingsd after
            # http.request_timeout) while the other systems answer: open a new one, as a browser
            # would. Only a round's first, untimed, request can meet this.
            self.conn.close()
            self.conn.request("GET", path)
            resp = self.conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            sys.exit(f"GET {path}: HTTP {resp.status}: {body[:300]!r}")
        return body

    def influxql(self, q):
        """InfluxDB 1.x: query `q` on database bench, ms timestamps: (its first result, bytes)."""
        body = self.get("/query?" + urllib.parse.urlencode({"db": "bench", "epoch": "ms", "q": q}))
        result = json.loads(body)["results"][0]
        if "error" in result:
            sys.exit(f"InfluxDB: {result['error']}")
        return result, len(body)

    def documents(self, path, params):
        """Every page of a readingsd listing, following nextCursor: (the pages decoded, bytes)."""
        docs, size, cursor = [], 0, None
        while True:
            body = self.get(path + "?" + urllib.parse.urlencode(params | ({"cursor": cursor} if cursor else {})))
            size += len(body)
            docs.append(json.loads(body))
            cursor = docs[-1].get("nextCursor")
            if not cursor:
                return docs, size

    def pages(self, path, params, key):
        """Every page of a readingsd listing, following nextCursor: (the `key` arrays joined, bytes)."""
        docs, size = self.documents(path, params)
        return [item for doc in docs for item in doc[key]], size


def timed_rounds(systems, requests, rounds):
    """Per round, each system answers one checked warm-up request and then `requests` timed ones;
    the order of the systems is reversed each round. Exits when a count changes between
    requests. Returns ({name: [seconds]}, {name: (answer, bytes)})."""
    latencies = {name: [] for name, _ in systems}
    answers = {}
    for r in range(rounds):
        for name, ask in (systems if r % 2 == 0 else list(reversed(systems))):
            answers[name] = ask(True)
            for _ in range(requests):
                t0 = time.perf_counter()
                n, _ = ask(False)
                latencies[name].append(time.perf_counter() - t0)
                if n != len(answers[name][0]):
                    sys.exit(f"{name} answered {len(answers[name][0])} items, then {n}")
    return latencies, answers


def p50_p99_us(seconds):
    xs = sorted(seconds)
    p = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))] * 1e6
    return p(0.5), p(0.99)


def report(systems, latencies, answers, unit, difference):
    """Prints "SYSTEM p50_us=… p99_us=… UNIT=… bytes=…" per system and exits: 1 when a system's
    answer is not readingsd's (difference(answer, readingsd's) says how, on stderr), else 0."""
    want = answers["readingsd"][0]
    ok = True
    for name, _ in systems:
        answer, size = answers[name]
        if answer != want:
            ok = False
            print(f"{name} differs from readingsd: {difference(answer, want)}", file=sys.stderr)
        p50, p99 = p50_p99_us(latencies[name])
        print(f"{name} p50_us={p50:.0f} p99_us={p99:.0f} {unit}={len(answer)} bytes={size}")
    sys.exit(0 if ok else 1)
