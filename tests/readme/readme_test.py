#!/usr/bin/env python3
"""Runs every command of README.md as a user would type it, so an example cannot rot.

Usage: readme_test.py SOURCE_DIR BUILD_DIR

Every line of every ```sh block is a command. Each is either run here, in README order, or
named below with the script that runs it or the reason it cannot run in a test; a command in
neither fails the test, as does a command that fails or prints other than what README promises.

The commands use the defaults README describes (the broker on 127.0.0.1:1883, HTTP on :8080,
./data, /srv/backup), so they run in namespaces of their own: a network namespace with only a
loopback (nothing else holds those ports, and nothing leaves the machine), a mount namespace
with tmpfs over /srv and /etc/mosquitto/conf.d, and a PID namespace whose processes all end
with the test. That takes root; elsewhere the test skips, saying so.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77  # ctest's SKIP_RETURN_CODE for this test

# Commands another check runs: the file must hold the command verbatim.
RUN_ELSEWHERE = {
    "./scripts/setup": ".ci/run",
    "./scripts/test": ".ci/run",
    "./scripts/test --sanitize": ".ci/run",
    "cmake --install build": "scripts/check-install",
}
# Commands no test can run, and why.
INDEX_DAEMON = "needs a daemon started with the [[index]] declaration above; tests/api/index_api_test.cc runs it"
NOT_RUN = {
    "curl -s 'http://127.0.0.1:8080/v1/indexes/hot_by_hour/readings?from=2026-06-23T03:00Z&to=2026-06-23T09:00Z&gt=45'":
        INDEX_DAEMON,
    "./build/readingsd query --index hot_by_hour --from 2026-06-23T03:00Z --to 2026-06-23T09:00Z --gt 45 --all":
        INDEX_DAEMON,
    """aws dynamodb query --endpoint-url http://127.0.0.1:8080 --table-name readings --index-name hot_by_hour --key-condition-expression "readingHour = :h AND temperature > :t" --expression-attribute-values '{":h":{"S":"2026-06-23T08"},":t":{"N":"45"}}'""":
        INDEX_DAEMON,
    "systemctl daemon-reload && systemctl enable --now readingsd":
        "needs systemd as PID 1; scripts/check-unit verifies the unit",
}
# What a command's output must show (a regex), waited for up to 15 s: ingest is asynchronous.
EXPECT = [
    (r"readings\?begins_with=2026-06-23'$", r'"count":3\b'),
    (r"query --device a1b2 --latest 2$", r"2026-06-23T08:02:00"),
    (r"/v1/devices/c3/latest\?n=1'$", r'"readingTs":"2026-06-23T08:00:00\.123000000Z"'),
    (r"grep 'rejected_total", r'reason="missing_timestamp"\} 1\b'),
    (r"from=2026-06-23T08:00:00Z&to=2026-06-23T09:00:00Z&limit=100'$", r'"count":3\b'),
    (r"latest\?n=10&attributes=temperature'$", r'"temperature":22\b'),
    (r"filter=temperature>21.6'$", r'"count":2\b'),
    (r"/aggregate\?", r'"buckets":\[\{"start":"2026-06-23T08:00:00Z","count":3'),
    (r"query --device a1b2 --from 2026-06-23T08:00:00Z", r"08:01:00"),
    (r"--latest 100 --before", r"21\.5"),
    (r"--aggregate ", r"temperature\.avg"),
    (r"/v1/devices\?prefix=a1&limit=100'$", r'"deviceId":"a1b2","firstReadingTs":"2026-06-23T08:00:00.000000000Z","lastReadingTs":"2026-06-23T08:02:00.000000000Z","readings":3'),
    (r"^\./build/readingsd devices$", r"a1b2\s+3\s+2026-06-23T08:00:00"),
    (r"/v1/readings -d '\[", r'"written":1,"rejected":\[\{"index":1,"reason":"invalid_timestamp"'),
    (r"^\./build/readingsd import a1b2\.csv$", r"imported 3 readings from 1 file"),
    (r"^\./build/readingsd delete --device b7 ", r"^deleted 1 reading of device b7$"),
    (r"^aws dynamodb query", r'"Count": 3\b'),
    (r"9090/api/v1/query --data-urlencode", r'"value":\[1782201900,"22"\]'),
    (r"--print-config --storage.retention=30d", r'retention = "30d"'),
    (r"8081/v1/devices/a1b2/latest", r'"readingTs":"2026-06-23T08:02:00'),
]
# Files the commands write, and what each must hold.
FILE_EXPECT = {
    "a1b2.csv": "deviceId,readingTs,door,temperature\r\n"
                "a1b2,2026-06-23T08:00:00.000000000Z,false,21.5\r\n"
                "a1b2,2026-06-23T08:01:00.000000000Z,,21.7\r\n"
                "a1b2,2026-06-23T08:02:00.000000000Z,,22\r\n",
}
# What the daemon's log must show once every command ran.
LOG_EXPECT = [
    "ingest: rejected (missing_timestamp) on sensors/a1b2/readings, device a1b2: no readingTs",
]


def commands(readme):
    """The logical command lines of the ```sh blocks: continuations joined, comments kept."""
    out = []
    for block in re.findall(r"^```sh\n(.*?)^```", readme, re.S | re.M):
        line = ""
        for raw in block.splitlines():
            if raw.endswith("\\"):
                line += raw[:-1]
                continue
            line = (line + raw).strip()
            if line:
                out.append(line)
            line = ""
    return out


def bare(command):
    """The command without a trailing comment."""
    return re.sub(r"\s+#\s.*$", "", command)


def wait_http(port, path, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def wait_port(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def inside(source, build):
    for args in (["ip", "link", "set", "lo", "up"],
                 ["mount", "-t", "tmpfs", "tmpfs", "/srv"],
                 ["mount", "-t", "tmpfs", "tmpfs", "/etc/mosquitto/conf.d"]):
        subprocess.run(args, check=True)
    failures = []
    scratch = tempfile.mkdtemp(prefix="readingsd-readme-")
    os.chmod(scratch, 0o777)  # mosquitto, started as root, writes mosquitto.db as user mosquitto
    for name in ("systemd", "config", "scripts"):
        os.symlink(os.path.join(source, name), os.path.join(scratch, name))
    os.symlink(build, os.path.join(scratch, "build"))
    daemon_log = open(os.path.join(scratch, "readingsd.log"), "w+")
    env = dict(os.environ)
    try:
        with open(os.path.join(source, "README.md")) as f:
            lines = commands(f.read())
        for command in lines:
            plain = bare(command)
            if plain in RUN_ELSEWHERE:
                with open(os.path.join(source, RUN_ELSEWHERE[plain])) as f:
                    if plain not in f.read():
                        failures.append(f"{plain!r}: not in {RUN_ELSEWHERE[plain]}, which should run it")
                continue
            if plain in NOT_RUN:
                print(f"not run: {plain}: {NOT_RUN[plain]}")
                continue
            if plain.startswith("export "):
                for assignment in plain.split()[1:]:
                    key, value = assignment.split("=", 1)
                    env[key] = value
                continue
            print(f"$ {command}", flush=True)
            if plain == "./build/readingsd":  # the foreground start: up, answering, then stopped
                p = subprocess.Popen(["bash", "-c", "exec " + plain], cwd=scratch, env=env, stdout=daemon_log,
                                     stderr=subprocess.STDOUT)
                if not wait_http(8080, "/healthz"):
                    failures.append(f"{plain!r}: HTTP never answered on 8080")
                p.terminate()
                if p.wait(timeout=30) != 0:
                    failures.append(f"{plain!r}: exit {p.returncode} after SIGTERM")
                continue
            if plain.endswith("&"):
                subprocess.Popen(["bash", "-c", plain[:-1]], cwd=scratch, env=env, stdout=daemon_log,
                                 stderr=subprocess.STDOUT)
                port = int(m.group(1)) if (m := re.search(r"--http.listen=127.0.0.1:(\d+)", plain)) else 8080
                if not wait_http(port, "/readyz"):
                    failures.append(f"{plain!r}: /readyz on {port} never answered 200")
                continue
            want = next((w for pattern, w in EXPECT if re.search(pattern, plain)), None)
            deadline = time.time() + 15
            while True:
                r = subprocess.run(["bash", "-c", plain], cwd=scratch, env=env, capture_output=True, text=True)
                ok = r.returncode == 0 and (want is None or re.search(want, r.stdout))
                if ok or time.time() > deadline:
                    break
                time.sleep(0.2)
            if "mosquitto -c" in plain and not wait_port(1883):
                failures.append(f"{plain!r}: the broker does not listen on 1883")
            if not ok:
                failures.append(f"{plain!r}: exit {r.returncode}" +
                                (f", output lacks /{want}/" if want else "") +
                                f"\n  stdout: {r.stdout[-600:]}\n  stderr: {r.stderr[-600:]}")
        for name, want in FILE_EXPECT.items():
            path = os.path.join(scratch, name)
            got = open(path, newline="").read() if os.path.exists(path) else None
            if got != want:
                failures.append(f"{name}: expected {want!r}, got {got!r}")
        daemon_log.seek(0)
        log = daemon_log.read()
        for line in LOG_EXPECT:
            if line not in log:
                failures.append(f"the daemon's log lacks {line!r}:\n{log[-2000:]}")
        covered = {bare(c) for c in lines}
        for name in list(RUN_ELSEWHERE) + list(NOT_RUN):
            if name not in covered:
                failures.append(f"{name!r} is listed here but no longer in README: drop it from the list")
        for pattern, _ in EXPECT:
            if not any(re.search(pattern, bare(c)) for c in lines):
                failures.append(f"EXPECT pattern /{pattern}/ matches no README command: drop or fix it")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(lines)} README commands; {len(failures)} failures")
    return 1 if failures else 0


def main():
    source, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if len(sys.argv) > 3 and sys.argv[3] == "--inside":
        return inside(source, build)
    if os.geteuid() != 0:
        print("skipped: needs root, to run README's commands on its default ports in namespaces of their own")
        return SKIP
    return subprocess.run(["unshare", "--net", "--mount", "--pid", "--fork", "--mount-proc",
                           sys.executable, os.path.abspath(__file__), source, build, "--inside"]).returncode


if __name__ == "__main__":
    sys.exit(main())
