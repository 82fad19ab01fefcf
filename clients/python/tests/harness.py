"""A real mcpd with real children on a temporary socket, for the tests.

The tests find what they need themselves, so that `python3 -m unittest
discover` works on a fresh clone (after `npm ci` in the repository root):

- mcpd: $MCPD_BIN, else <repo>/bin/mcpd, else `go build ./cmd/mcpd`;
- the demo server: $MCPD_TEST_DEMO_SERVER, else <repo>/bin/demo-server,
  else `go build ./examples/demo-server`;
- server-everything: $MCPD_TEST_EVERYTHING_JS, else the repository root's
  node_modules/@modelcontextprotocol/server-everything;
- extra mcpd flags: $MCPD_TEST_MCPD_ARGS (space separated), else
  `--http-listen off` when the mcpd has that flag.

(go test ./clients/python builds the binaries and sets the variables.)
Binaries it builds go to a temporary directory removed at exit. Each mcpd
runs in its own process group (a new session), killed when the daemon is
stopped, when it fails to start, and when the interpreter exits or gets
SIGTERM or SIGHUP."""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import mcpd_client

WAIT_TIMEOUT = 60.0  # a safety net against hangs, not a speed expectation

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

_lock = threading.Lock()
_live_groups = set()  # process groups of the mcpd processes started and not yet stopped
_temp_dirs = []  # the daemons' own directories, removed at exit
_binaries = None
_build_dir = None


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _kill_all():
    for pgid in list(_live_groups):
        _live_groups.discard(pgid)
        _kill_group(pgid)


def _at_exit():
    _kill_all()
    for d in [_build_dir, *_temp_dirs]:
        if d:
            shutil.rmtree(d, ignore_errors=True)


atexit.register(_at_exit)


def _die_of(signum, _frame):
    """Kills the daemons, then dies of the signal (atexit does not run then)."""
    _at_exit()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


if threading.current_thread() is threading.main_thread():
    for _sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(_sig) == signal.SIG_DFL:
            signal.signal(_sig, _die_of)


def _executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _find_binaries():
    global _build_dir
    found = {}
    builds = []
    for key, env, prebuilt, pkg in (("mcpd", "MCPD_BIN", "bin/mcpd", "./cmd/mcpd"),
                                    ("demo", "MCPD_TEST_DEMO_SERVER", "bin/demo-server", "./examples/demo-server")):
        if os.environ.get(env):
            found[key] = os.environ[env]
            continue
        path = os.path.join(REPO_ROOT, prebuilt)
        if _executable(path):
            found[key] = path
            continue
        if _build_dir is None:
            _build_dir = tempfile.mkdtemp(prefix="mcpd-py-bin-")
        out = os.path.join(_build_dir, os.path.basename(prebuilt))
        try:
            proc = subprocess.Popen(["go", "build", "-o", out, pkg], cwd=REPO_ROOT,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except FileNotFoundError:
            raise RuntimeError("go not found: install Go, or set MCPD_BIN and MCPD_TEST_DEMO_SERVER "
                               "(or run make build)") from None
        builds.append((key, out, pkg, proc))
    for key, out, pkg, proc in builds:  # the builds run in parallel
        output = proc.communicate()[0].decode(errors="replace")
        if proc.returncode != 0:
            raise RuntimeError(f"go build -o {out} {pkg}: exit status {proc.returncode}\n{output}")
        found[key] = out
    found["everything"] = os.environ.get("MCPD_TEST_EVERYTHING_JS") or os.path.join(
        REPO_ROOT, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
    if not os.path.exists(found["everything"]):
        raise RuntimeError(f"server-everything is missing ({found['everything']}): "
                           "run npm ci in the repository root")
    if "MCPD_TEST_MCPD_ARGS" in os.environ:
        found["args"] = os.environ["MCPD_TEST_MCPD_ARGS"].split()
    else:
        # mcpd --help exits 0 or 2 depending on the flag package; its text is what counts.
        r = subprocess.run([found["mcpd"], "--help"], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=WAIT_TIMEOUT)
        found["args"] = ["--http-listen", "off"] if b"-http-listen" in r.stdout else []
    return found


def binaries():
    """The binaries and flags the daemons run with: found (or built) once."""
    global _binaries
    with _lock:
        if _binaries is None:
            _binaries = _find_binaries()
        return _binaries


def config():
    b = binaries()
    node = shutil.which("node") or "node"
    return {"mcpServers": {
        "demo": {"command": b["demo"], "args": ["--name", "demo"], "autostart": True},
        "legacy": {"command": b["demo"], "args": ["--name", "legacy"], "protocol": "legacy"},
        "everything": {"command": node, "args": [b["everything"], "stdio"], "protocol": "legacy"},
    }}


def wait_for(what, cond, timeout=WAIT_TIMEOUT):
    """Polls cond until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = cond()
            if v:
                return v
        except Exception as err:  # keep polling; report the last failure
            last = err
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {last}")
        time.sleep(0.025)  # poll interval, not a synchronisation sleep


class Daemon:
    """One mcpd process on dir/mcpd.sock, in its own process group."""

    def __init__(self, directory=None):
        if directory is None:
            directory = tempfile.mkdtemp(prefix="mcpd-py-")
            _temp_dirs.append(directory)
        self.dir = directory
        self.socket_path = os.path.join(self.dir, "mcpd.sock")
        self.config_path = os.path.join(self.dir, "config.json")
        if not os.path.exists(self.config_path):
            with open(self.config_path, "w") as f:
                json.dump(config(), f)
        self.proc = None
        self.log = open(os.path.join(self.dir, "mcpd.log"), "ab")

    def start(self):
        b = binaries()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCPD_") or k.startswith("MCPD_TEST_")}
        # Pins, audit log and OAuth credentials stay in the test's directory.
        state = os.path.join(self.dir, "state")
        # start_new_session: mcpd leads a new process group, so that stop can
        # kill it with whatever it started.
        self.proc = subprocess.Popen(
            [b["mcpd"], "--socket", self.socket_path, "--config", self.config_path,
             "--state-dir", state, *b["args"]],
            env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, start_new_session=True)
        _live_groups.add(self.proc.pid)
        probe = mcpd_client.Client(self.socket_path, client_name="harness")
        try:
            wait_for("mcpd serving", lambda: self.proc.poll() is not None or probe.status())
            if self.proc.poll() is not None:
                raise AssertionError(f"mcpd exited (status {self.proc.returncode}): {self.output()}")
        except BaseException:
            self.cleanup()  # the error carries mcpd's output
            raise
        finally:
            probe.close()
        return self

    def output(self):
        with open(os.path.join(self.dir, "mcpd.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def kill(self):
        """SIGKILLs the daemon's process group at once."""
        if self.proc is None or self.proc.pid not in _live_groups:
            return
        _live_groups.discard(self.proc.pid)
        _kill_group(self.proc.pid)
        self.proc.wait()

    def stop(self):
        """SIGTERM, wait for the exit (SIGKILL after the deadline), then kill
        what is left of the process group."""
        if self.proc is None or self.proc.pid not in _live_groups:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(WAIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                print(self.output(), file=sys.stderr)
        self.kill()

    def cleanup(self):
        self.stop()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def text(result):
    return "".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")
