#!/usr/bin/env python3
"""Runs every command of README.md as a user would type it, so an example cannot rot.

Usage: readme_test.py SOURCE_DIR BUILD_DIR

Every line of every ```sh block is a command. Each is either run here, in README order, or
named below with the script that runs it or the reason it cannot run in a test; a command in
neither fails the test, as does a command that fails or prints other than what README promises.
So does a command written inline in the prose (`like this`) that no ```sh block runs and that is
not named below, and a fenced block in a language this test does not know, so no command can
hide from it. The ```toml block that declares an [[index]] is the config of a second daemon (its
own data dir and port): the commands that name that index run against it.

The commands use the defaults README describes (the broker on 127.0.0.1:1883, HTTP on :8080,
./data, /srv/backup), so they run in namespaces of their own: a network namespace with only a
loopback (nothing else holds those ports, and nothing leaves the machine), a mount namespace
with tmpfs over /srv and /etc/mosquitto/conf.d, and a PID namespace whose processes all end
with the test. That takes root; elsewhere the test skips, saying so.
"""
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request

SKIP = 77  # ctest's SKIP_RETURN_CODE for this test

# Commands another check runs: a command line of the file (not a comment) must run it.
RUN_ELSEWHERE = {
    "./scripts/setup": ".ci/run",
    "./scripts/test": ".ci/run",
    "./scripts/test --sanitize": ".ci/run",
    "cmake --install build": "scripts/check-install",
}
# Commands no test can run, and why: lines of ```sh blocks and commands inline in the prose.
NO_SYSTEMD = "needs systemd as PID 1 running the installed unit; scripts/check-unit verifies the unit"
NOT_RUN = {
    "systemctl daemon-reload && systemctl enable --now readingsd": NO_SYSTEMD,
    "journalctl -u readingsd": NO_SYSTEMD,
    "systemctl edit readingsd": "opens an editor on a drop-in of the installed unit; " + NO_SYSTEMD,
    "su -c ./scripts/setup": "./scripts/setup (which .ci/run runs) through su: asks for the root password",
    "systemd-analyze verify": "names the check that scripts/check-unit makes (on the unit with installed paths)",
    "readingsd repair": "needs a damaged store; tests/daemon/damaged_store_test.cc runs it",
    "nats-server -c nats.conf": "a cluster member on the fixed ports 4222, 6222 and 1883, routed to other "
                                "machines; tests/daemon/cluster_test.cc starts three nats-server in this config's "
                                "shape on free ports",
}
# Fenced block languages that hold no commands, and what they hold. ```sh blocks are run,
# ```toml blocks parsed (the [[index]] one configures the index daemon); any other fails.
NOT_COMMANDS = {
    "json": "an example of output or of a payload",
    "conf": "a nats-server configuration file",
}
# Commands that run until stopped: started, sent `probe` (a command), and stopped once they
# print what matches the regex (within 15 s).
UNTIL_STOPPED = {
    "mosquitto_sub -v -t 'sensors/#'": ("mosquitto_pub -q 1 -t sensors/readme-probe -m hello",
                                        r"^sensors/readme-probe hello$"),
}
# Readings the index daemon gets through its write API before the first command on its index:
# one in the README's window above 45, one outside the window, one not above 45.
INDEX_READINGS = [
    {"deviceId": "a1b2", "readingTs": "2026-06-23T08:30:00Z", "temperature": 46.5},
    {"deviceId": "c3", "readingTs": "2026-06-23T02:59:00Z", "temperature": 50},
    {"deviceId": "c3", "readingTs": "2026-06-23T08:40:00Z", "temperature": 44},
]
# What a command's output must show (a regex), waited for up to 15 s: ingest is asynchronous.
EXPECT = [
    (r"/v1/indexes/hot_by_hour/readings\?", r'^(?=.*"count":1\b)(?=.*"temperature":46\.5\b)'),
    (r"query --index hot_by_hour ", r"^(?!.*\b44\b)(?=.*a1b2)(?=.*46\.5)"),
    (r"^aws dynamodb query .*--index-name hot_by_hour ", r'^(?=.*"Count": 1\b)(?=.*"46\.5")'),
    (r"/v1/devices/a1b2/readings\?from=2026-06-23&before=2026-06-24&format=columns'$",
     r'"columns":\{.*"temperature":\[21\.5,21\.7,22\]'),
    (r"^curl -s http://127\.0\.0\.1:8080/readyz$", r"broker connected and subscribed"),
    (r"^ss -ltnp \| grep 8080$", r'"readingsd"'),
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
    (r"^aws dynamodb query .*BETWEEN", r'"Count": 3\b'),
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


FENCE = re.compile(r"^\s*(?:```|~~~)\s*(\S*)")


def fences(readme):
    """The fenced blocks as (language, lines), and the prose outside them."""
    blocks, prose, language, body = [], [], None, []
    for raw in readme.splitlines():
        m = FENCE.match(raw)
        if language is None and m:
            language, body = m.group(1), []
        elif language is not None and m and not m.group(1):
            blocks.append((language, body))
            language = None
        elif language is not None:
            body.append(raw)
        else:
            prose.append(raw)
    if language is not None:  # unterminated: it runs to the end, as Markdown reads it
        blocks.append((language, body))
    return blocks, "\n".join(prose)


def commands(blocks):
    """The logical command lines of the ```sh blocks: continuations joined, comments kept."""
    out = []
    for language, body in blocks:
        if language != "sh":
            continue
        line = ""
        for raw in body:
            if raw.endswith("\\"):
                line += raw[:-1]
                continue
            line = (line + raw).strip()
            if line:
                out.append(line)
            line = ""
    return out


def inline_commands(prose):
    """The `code spans` of the prose that are commands: a program (./…, readingsd, or a
    lower-case name on PATH or in /usr/sbin) and at least one argument."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    out = []
    for span in re.findall(r"`([^`]+)`", prose):
        words = span.split()
        if len(words) < 2:
            continue
        program = words[0]
        if program.startswith("./") or program == "readingsd" or (
                program == program.lower() and shutil.which(program, path=path)):
            out.append(" ".join(words))
    return out


def runs_inline(span, lines):
    """Whether a README command runs the inline `span`: its program, then its words in order."""
    want = span.split()
    for command in lines:
        words = [re.sub(r"^\./build/readingsd$", "readingsd", w) for w in bare(command).split()]
        if not words or words[0] != want[0]:
            continue
        rest = iter(words[1:])
        if all(w in rest for w in want[1:]):
            return True
    return False


def runs_command(script, command):
    """Whether a command line of `script` (not a comment, nor an argument of another command)
    runs `command`: its words after nothing but variable assignments or the script's own
    functions, followed by nothing but redirections or the end of a pipeline or list."""
    functions = set(re.findall(r"^\s*([\w-]+)\s*\(\)\s*\{", script, re.M))
    want = shlex.split(command)
    for line in script.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        for i in range(len(words) - len(want) + 1):
            if words[i:i + len(want)] != want:
                continue
            before, after = words[:i], words[i + len(want):]
            if all(re.fullmatch(r"[A-Za-z_]\w*=.*", w) or w in functions for w in before) and (
                    not after or after[0] in ("|", "||", "&&", ";", "&") or re.match(r"\d*>", after[0])):
                return True
    return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def against(command, port):
    """`command` sent to the daemon on `port` instead of README's 8080; None when it names none."""
    moved = command.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    moved = re.sub(r"^\./build/readingsd ", f"./build/readingsd --http.listen=127.0.0.1:{port} ", moved)
    return moved if moved != command else None


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


def check_readme(blocks, lines, inline, failures):
    """What can be checked before running anything: the blocks' languages, the TOML blocks, the
    inline commands. Returns the [[index]] block's text and its index names."""
    declaration, names = None, []
    for language, body in blocks:
        if language == "toml":
            try:
                parsed = tomllib.loads("\n".join(body))
            except tomllib.TOMLDecodeError as e:
                failures.append(f"a ```toml block does not parse: {e}")
                continue
            if "index" in parsed:
                declaration, names = "\n".join(body) + "\n", [i["name"] for i in parsed["index"]]
        elif language != "sh" and language not in NOT_COMMANDS:
            failures.append(f"a fenced block in {language or 'no language'!r}: this test neither runs it nor "
                            f"knows it holds no commands (make it ```sh, or add it to NOT_COMMANDS)")
    for span in inline:
        if span not in NOT_RUN and span not in RUN_ELSEWHERE and not runs_inline(span, lines):
            failures.append(f"`{span}` is a command in README's prose that no ```sh block runs: move it into "
                            "one, or name it in NOT_RUN with the reason it cannot run")
    return declaration, names


def start_index_daemon(scratch, declaration, log, env, failures):
    """A second daemon configured with README's [[index]] block, on a data dir and port of its
    own, given INDEX_READINGS; returns (process, port)."""
    port = free_port()
    with open(os.path.join(scratch, "index.toml"), "w") as f:
        f.write(f'[storage]\ndata_dir = "index-data"\n\n[mqtt]\nclient_id = "readingsd-readme-index"\n\n'
                f'[http]\nlisten = "127.0.0.1:{port}"\n\n{declaration}')
    p = subprocess.Popen(["./build/readingsd", "--config", "index.toml"], cwd=scratch, env=env, stdout=log,
                         stderr=subprocess.STDOUT)
    if not wait_http(port, "/readyz"):
        failures.append(f"the daemon with README's [[index]] block never became ready on {port}")
        return p, port
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/readings", data=json.dumps(INDEX_READINGS).encode(),
                                     method="POST")
    with urllib.request.urlopen(request, timeout=10) as r:
        if r.status != 204:
            failures.append(f"the index daemon's write API answered {r.status}: {r.read()!r}")
    return p, port


def run_until_stopped(command, scratch, env, failures):
    probe, want = UNTIL_STOPPED[command]
    with tempfile.TemporaryFile("w+") as out:
        p = subprocess.Popen(["bash", "-c", "exec " + command], cwd=scratch, env=env, stdout=out,
                             stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        seen = False
        while not seen and p.poll() is None and time.time() < deadline:
            subprocess.run(["bash", "-c", probe], cwd=scratch, env=env, capture_output=True)
            time.sleep(0.5)
            out.seek(0)
            seen = re.search(want, out.read(), re.M) is not None
        running = p.poll() is None
        p.terminate()
        p.wait(timeout=30)
        out.seek(0)
        if not seen:
            failures.append(f"{command!r}: " + ("" if running else f"exited ({p.returncode}); ") +
                            f"after {probe!r}, its output lacks /{want}/: {out.read()[-600:]!r}")


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
    index_log = open(os.path.join(scratch, "readingsd-index.log"), "w+")
    index_daemon, index_port = None, None
    env = dict(os.environ)
    try:
        with open(os.path.join(source, "README.md")) as f:
            blocks, prose = fences(f.read())
        lines = commands(blocks)
        inline = inline_commands(prose)
        declaration, index_names = check_readme(blocks, lines, inline, failures)
        for command in lines:
            plain = bare(command)
            if plain in RUN_ELSEWHERE:
                with open(os.path.join(source, RUN_ELSEWHERE[plain])) as f:
                    if not runs_command(f.read(), plain):
                        failures.append(f"{plain!r}: no command line of {RUN_ELSEWHERE[plain]} runs it")
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
            if plain in UNTIL_STOPPED:
                run_until_stopped(plain, scratch, env, failures)
                continue
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
            run = plain
            if any(re.search(rf"\b{re.escape(name)}\b", plain) for name in index_names):
                if index_daemon is None:
                    index_daemon, index_port = start_index_daemon(scratch, declaration, index_log, env, failures)
                run = against(plain, index_port)
                if run is None:
                    failures.append(f"{plain!r}: names index {index_names} but no daemon address to point at it")
                    continue
                print(f"  (against the daemon with README's [[index]] block: {run})", flush=True)
            want = next((w for pattern, w in EXPECT if re.search(pattern, plain)), None)
            deadline = time.time() + 15
            while True:
                r = subprocess.run(["bash", "-c", run], cwd=scratch, env=env, capture_output=True, text=True)
                ok = r.returncode == 0 and (want is None or re.search(want, r.stdout, re.S))
                if ok or time.time() > deadline:
                    break
                time.sleep(0.2)
            if "mosquitto -c" in plain and not wait_port(1883):
                failures.append(f"{plain!r}: the broker does not listen on 1883")
            if not ok:
                failures.append(f"{plain!r}: exit {r.returncode}" +
                                (f", output lacks /{want}/" if want else "") +
                                f"\n  stdout: {r.stdout[-600:]}\n  stderr: {r.stderr[-600:]}")
        if index_names and index_daemon is None:
            failures.append(f"README declares index {index_names} but no command asks it")
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
        covered = {bare(c) for c in lines} | set(inline)
        for name in list(RUN_ELSEWHERE) + list(NOT_RUN) + list(UNTIL_STOPPED):
            if name not in covered:
                failures.append(f"{name!r} is listed here but no longer in README: drop it from the list")
        for pattern, _ in EXPECT:
            if not any(re.search(pattern, bare(c)) for c in lines):
                failures.append(f"EXPECT pattern /{pattern}/ matches no README command: drop or fix it")
    finally:
        if index_daemon is not None:
            index_daemon.terminate()
            if index_daemon.wait(timeout=30) != 0:
                failures.append(f"the index daemon exited {index_daemon.returncode} after SIGTERM")
            index_log.seek(0)
            if failures:
                print("the index daemon's log:\n" + index_log.read()[-2000:])
        shutil.rmtree(scratch, ignore_errors=True)
    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(lines)} README commands, {len(inline)} inline; {len(failures)} failures")
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
