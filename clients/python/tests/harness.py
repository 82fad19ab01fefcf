"""A real mcpd with real children on a temporary socket, for the tests.
py_test.go provides the binaries: MCPD_TEST_MCPD, MCPD_TEST_DEMO_SERVER,
MCPD_TEST_EVERYTHING_JS and MCPD_TEST_MCPD_ARGS."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import mcpd_client

WAIT_TIMEOUT = 60.0  # a safety net against hangs, not a speed expectation


def need(name):
    v = os.environ.get(name)
    if not v:
        raise RuntimeError(f"{name} is not set: run these tests through go test ./clients/python")
    return v


def config():
    demo = need("MCPD_TEST_DEMO_SERVER")
    node = shutil.which("node") or "node"
    return {"mcpServers": {
        "demo": {"command": demo, "args": ["--name", "demo"], "autostart": True},
        "legacy": {"command": demo, "args": ["--name", "legacy"], "protocol": "legacy"},
        "everything": {"command": node, "args": [need("MCPD_TEST_EVERYTHING_JS"), "stdio"], "protocol": "legacy"},
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
    """One mcpd process on dir/mcpd.sock."""

    def __init__(self, directory=None):
        self.dir = directory or tempfile.mkdtemp(prefix="mcpd-py-")
        self.socket_path = os.path.join(self.dir, "mcpd.sock")
        self.config_path = os.path.join(self.dir, "config.json")
        if not os.path.exists(self.config_path):
            with open(self.config_path, "w") as f:
                json.dump(config(), f)
        self.proc = None
        self.log = open(os.path.join(self.dir, "mcpd.log"), "ab")

    def start(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCPD_") or k.startswith("MCPD_TEST_")}
        extra = os.environ.get("MCPD_TEST_MCPD_ARGS", "").split()
        # Pins, audit log and OAuth credentials stay in the test's directory.
        state = os.path.join(self.dir, "state")
        self.proc = subprocess.Popen(
            [need("MCPD_TEST_MCPD"), "--socket", self.socket_path, "--config", self.config_path,
             "--state-dir", state, *extra],
            env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        probe = mcpd_client.Client(self.socket_path, client_name="harness")
        try:
            def serving():
                if self.proc.poll() is not None:
                    raise AssertionError(f"mcpd exited: {self.output()}")
                return probe.status()
            wait_for("mcpd serving", serving)
        finally:
            probe.close()
        return self

    def output(self):
        with open(os.path.join(self.dir, "mcpd.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(WAIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            print(self.output(), file=sys.stderr)

    def cleanup(self):
        self.stop()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def text(result):
    return "".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")
