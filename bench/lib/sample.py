#!/usr/bin/python3
"""Samples a running readingsd for bench/soak until it ingested N readings.

  sample.py HTTP_PORT READINGSD_PID BROKER_PID PUBLISHER_PID N INTERVAL OUT.tsv

Every INTERVAL seconds one TSV row: time since start, readingsd_readings_ingested_total, the rate
over the interval, VmRSS of readingsd and the broker, RocksDB figures from /metrics, whether
the publisher was still running at the end of the interval, and the block cache's usage and
capacity. Exits 0 once
N readings are in, 1 if readingsd dies or the publisher fails before that.
"""
import os
import sys
import time
import urllib.request

port, rd_pid, broker_pid, pub_pid, n_total, interval, out = sys.argv[1:8]
rd_pid, broker_pid, pub_pid, n_total, interval = int(rd_pid), int(broker_pid), int(pub_pid), int(n_total), float(interval)


def metrics():
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def alive(pid):
    try:
        os.kill(pid, 0)
        return not open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    except OSError:
        return False


t0 = time.monotonic()
prev_t, prev_n = 0.0, 0
with open(out, "w") as f:
    f.write("t_s\tingested\trate_per_s\treadingsd_rss_mb\tbroker_rss_mb\tsst_mb\tmemtable_mb\tpending_compaction_mb\tstall_ms\tpublishing\t"
            "block_cache_mb\tblock_cache_capacity_mb\n")
    next_at = t0 + interval
    while True:
        time.sleep(max(0.0, next_at - time.monotonic()))
        next_at += interval
        if not alive(rd_pid):
            sys.exit("sample.py: readingsd exited")
        m = metrics()
        t = time.monotonic() - t0
        n = int(m.get("readingsd_readings_ingested_total", 0))
        mb = lambda k: m.get(k, 0) / 1048576
        f.write(f"{t:.2f}\t{n}\t{(n - prev_n) / (t - prev_t):.0f}\t{rss_mb(rd_pid):.1f}\t{rss_mb(broker_pid):.1f}\t"
                f"{mb('readingsd_rocksdb_sst_bytes'):.1f}\t{mb('readingsd_rocksdb_memtable_bytes'):.1f}\t"
                f"{mb('readingsd_rocksdb_pending_compaction_bytes'):.1f}\t{m.get('readingsd_rocksdb_stall_micros', 0) / 1000:.0f}\t{int(alive(pub_pid))}\t"
                f"{mb('readingsd_rocksdb_block_cache_bytes'):.1f}\t{mb('readingsd_rocksdb_block_cache_capacity_bytes'):.1f}\n")
        f.flush()
        prev_t, prev_n = t, n
        if n >= n_total:
            break
print(f"{time.monotonic() - t0:.2f}")
