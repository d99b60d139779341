#!/usr/bin/python3
"""Bulk loaders for the peers of bench/storage_ingest (Debian's python3, stdlib + psycopg2).

  load.py http URL FILE [FLUSH]  POST each chunk of FILE (chunks are separated by an empty line,
                                 as bench_gen writes them) to URL over one keep-alive connection,
                                 then GET FLUSH (a path on the same server), if given
  load.py pg DSN FILE            COPY each chunk of FILE (CSV) into table readings, one
                                 transaction per chunk, over one connection

The whole file is read and split before the clock starts, and the connection is open: the clock
covers sending the chunks, each answer (a write is acknowledged) and the flush, nothing else.
Prints "seconds=S chunks=C bytes=B".
"""
import http.client
import sys
import time
import urllib.parse


def chunks(path):
    with open(path, "rb") as f:
        data = f.read()
    return [c.strip(b"\n") + b"\n" for c in data.split(b"\n\n") if c.strip()]


def load_http(url, path, flush=None):
    parts = chunks(path)
    u = urllib.parse.urlsplit(url)
    target = u.path + ("?" + u.query if u.query else "")
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    conn.connect()

    def send(method, target, body=None):
        conn.request(method, target, body=body, headers={"Content-Type": "text/plain"})
        resp = conn.getresponse()
        answer = resp.read()
        if resp.status // 100 != 2:
            sys.exit(f"load.py: {method} {target}: HTTP {resp.status}: {answer[:300]!r}")

    t0 = time.perf_counter()
    for body in parts:
        send("POST", target, body)
    if flush:
        send("GET", flush)
    seconds = time.perf_counter() - t0
    print(f"seconds={seconds:.3f} chunks={len(parts)} bytes={sum(map(len, parts))}")


def load_pg(dsn, path):
    import io
    import psycopg2

    parts = chunks(path)
    conn = psycopg2.connect(dsn)
    cur = conn.cursor()
    t0 = time.perf_counter()
    for body in parts:
        cur.copy_expert("COPY readings (device_id, ts, temperature, humidity, pad) FROM STDIN (FORMAT csv)",
                        io.BytesIO(body))
        conn.commit()
    seconds = time.perf_counter() - t0
    print(f"seconds={seconds:.3f} chunks={len(parts)} bytes={sum(map(len, parts))}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"] and len(sys.argv) in (4, 5):
        load_http(*sys.argv[2:])
    elif sys.argv[1:2] == ["pg"] and len(sys.argv) == 4:
        load_pg(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
