"""The synchronous client against a real mcpd with real children."""

import os
import re
import tempfile
import threading
import unittest

import grpc

import mcpd_client
from mcpd_client import CancelToken, Client, McpdError
from tests.harness import Daemon, text, wait_for


class SocketDiscoveryTest(unittest.TestCase):
    def test_like_mcpdctl(self):
        f = mcpd_client.default_socket_path
        self.assertEqual(f({"MCPD_SOCKET": "/x/y.sock", "XDG_RUNTIME_DIR": "/run/user/1"}), "/x/y.sock")
        self.assertEqual(f({"MCPD_SOCKET": "rel.sock"}), os.path.abspath("rel.sock"))
        self.assertEqual(f({"XDG_RUNTIME_DIR": "/run/user/1"}), "/run/user/1/mcpd/mcpd.sock")
        self.assertEqual(f({"XDG_RUNTIME_DIR": "relative"}), f"/tmp/mcpd-{os.geteuid()}/mcpd.sock")
        self.assertEqual(f({}), f"/tmp/mcpd-{os.geteuid()}/mcpd.sock")


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon().start()
        cls.client = Client(cls.daemon.socket_path, client_name="mcpd-py-test", client_version="4.5.6")

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.daemon.cleanup()

    def assertMcpdError(self, fn, code):
        with self.assertRaises(McpdError) as cm:
            fn()
        self.assertEqual(cm.exception.code, code, str(cm.exception))
        return cm.exception

    def test_status_names_the_app(self):
        st = self.client.status()
        self.assertEqual(st.socket_path, self.daemon.socket_path)
        apps = [a for a in st.apps if a.name == "mcpd-py-test"]
        self.assertTrue(apps, st.apps)
        self.assertEqual(apps[0].version, "4.5.6")
        self.assertEqual(apps[0].pid, os.getpid())
        self.assertEqual(sorted(s.name for s in self.client.servers()), ["demo", "everything", "legacy"])

    def test_lists_prompts_resources_completions(self):
        [tools] = self.client.list_tools("demo")
        self.assertEqual(tools.server, "demo")
        self.assertIn("echo", [t["name"] for t in tools.items])
        self.assertEqual(sorted(l.server for l in self.client.list_tools()), ["demo", "everything", "legacy"])
        [prompts] = self.client.list_prompts("demo")
        self.assertIn("review", [p["name"] for p in prompts.items])
        self.assertIn("x := 1", str(self.client.get_prompt("demo", "review", {"code": "x := 1"})["messages"]))
        [resources] = self.client.list_resources("demo")
        self.assertIn("demo://readme", [r["uri"] for r in resources.items])
        [templates] = self.client.list_resource_templates("demo")
        self.assertIn("demo://echo/{text}", [r["uriTemplate"] for r in templates.items])
        self.assertIn("demo MCP server", self.client.read_resource("demo", "demo://readme")["contents"][0]["text"])
        done = self.client.complete("everything", {"ref": {"type": "ref/prompt", "name": "completable-prompt"},
                                                   "argument": {"name": "department", "value": "E"}})
        self.assertEqual(done["completion"]["values"], ["Engineering"])
        self.assertEqual(self.client.request("legacy", "ping"), {})

    def test_call_tool_progress_timeout(self):
        self.assertEqual(text(self.client.call_tool("demo", "echo", {"message": "hi there"})), "hi there")
        self.assertIn("5", text(self.client.call_tool("legacy", "add", {"a": 2, "b": 3})))
        progress = []
        r = self.client.call_tool("demo", "slow_count", {"n": 3, "delay_ms": 1}, on_progress=progress.append)
        self.assertEqual(text(r), "counted to 3")
        self.assertEqual([p["progress"] for p in progress], [1, 2, 3])
        self.assertTrue(all(isinstance(p["progressToken"], str) for p in progress))
        e = self.assertMcpdError(lambda: self.client.call_tool("demo", "slow_count", {"n": 100, "delay_ms": 60000},
                                                               timeout_ms=100), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertEqual(e.reason, "TIMED_OUT", str(e))
        self.assertTrue(e.metadata.get("bound") and e.metadata.get("after"), e.metadata)

    def test_cancel_reaches_the_child(self):
        token = CancelToken()
        self.assertMcpdError(lambda: self.client.call_tool("demo", "slow_count", {"n": 1000, "delay_ms": 50},
                                                           cancel=token, on_progress=lambda p: token.cancel()),
                             grpc.StatusCode.CANCELLED)
        wait_for("the child logging the cancel", lambda: any(
            re.search(r"slow_count cancelled at \d+ of 1000", l.text) for l in self.client.logs("demo")))
        self.assertMcpdError(lambda: self.client.call_tool("demo", "echo", {"message": "x"}, cancel=token),
                             grpc.StatusCode.CANCELLED)

    def test_errors(self):
        e = self.assertMcpdError(lambda: self.client.call_tool("nosuch", "echo"), grpc.StatusCode.NOT_FOUND)
        self.assertIn("nosuch", str(e))
        self.assertEqual(e.reason, "UNKNOWN_SERVER")
        e = self.assertMcpdError(lambda: self.client.list_tools("nosuch"), grpc.StatusCode.NOT_FOUND)
        self.assertEqual(e.reason, "UNKNOWN_SERVER")
        e = self.assertMcpdError(lambda: self.client.call_tool("demo", "nosuch_tool"), grpc.StatusCode.OK)
        self.assertIsNone(e.reason)
        self.assertLess(e.rpc_code, 0)
        self.assertIn("nosuch_tool", e.mcp["message"])
        e = self.assertMcpdError(lambda: self.client.call_tool("demo", "slow_count", {"n": -1}), grpc.StatusCode.OK)
        self.assertTrue(e.tool_result["isError"])
        self.assertIn("n must be between", str(e))
        self.assertTrue(self.client.call_tool("demo", "slow_count", {"n": -1}, allow_tool_error=True)["isError"])

    def test_subscription_list_change_and_restart(self):
        with self.client.subscribe(servers=["demo"], tools_list_changed=True, server_state=True) as sub:
            first = next(sub)
            self.assertEqual(first.kind, "ack")
            self.assertGreater(sub.id, 0)
            self.client.call_tool("demo", "toggle_tool")
            self.assertEqual(next_of(sub, "tools_list_changed").server, "demo")
            self.client.restart_server("demo")
            self.assertEqual(next_of(sub, "restarted").server, "demo")
        self.assertEqual(list(sub), [])

    def test_host_answers_sampling(self):
        seen = []

        def sampling(params, ctx):
            seen.append((params, ctx))
            return {"role": "assistant", "model": "py-test-model", "content": {"type": "text", "text": "sampled by py"}}

        with self.client.host({"sampling": sampling}, servers=["everything"]) as host:
            self.assertGreater(host.ready(60), 0)
            r = self.client.call_tool("everything", "trigger-sampling-request", {"prompt": "hello", "maxTokens": 5})
            self.assertIn("py-test-model", text(r))
            self.assertIn("sampled by py", text(r))
        self.assertEqual(len(seen), 1)
        self.assertEqual(seen[0][1]["server"], "everything")
        self.assertEqual(seen[0][1]["method"], "sampling/createMessage")
        self.assertIn("hello", str(seen[0][0]["messages"]))


class HostErrorsTest(unittest.TestCase):
    def test_elicitation_and_a_failing_handler(self):
        d = Daemon().start()
        self.addCleanup(d.cleanup)
        c = Client(d.socket_path)
        self.addCleanup(c.close)

        class NoModel(Exception):
            code = -32001

        def sampling(params, ctx):
            raise NoModel("no model here")

        def elicitation(params, ctx):
            return {"action": "accept", "content": {"name": "Ada (%s)" % params["requestedSchema"]["type"]}}

        with c.host({"sampling": sampling, "elicitation": elicitation}, servers=["everything"]) as host:
            host.ready(60)
            self.assertIn("Ada (object)", text(c.call_tool("everything", "trigger-elicitation-request")))
            try:
                got = str(c.call_tool("everything", "trigger-sampling-request", {"prompt": "x"}, allow_tool_error=True))
            except McpdError as err:
                got = f"{err} {err.mcp}"
            self.assertIn("no model here", got)


class NotRunningTest(unittest.TestCase):
    def test_clear_error_naming_the_socket(self):
        with tempfile.TemporaryDirectory(prefix="mcpd-py-") as d:
            path = os.path.join(d, "mcpd.sock")
            with Client(path) as c:
                with self.assertRaises(McpdError) as cm:
                    c.status()
            self.assertEqual(cm.exception.code, grpc.StatusCode.UNAVAILABLE)
            self.assertIn(path, str(cm.exception))
            self.assertIn("mcpd is not reachable", str(cm.exception))
            self.assertEqual(cm.exception.socket_path, path)


class CloseTest(unittest.TestCase):
    def test_close_ends_calls_subscriptions_and_hosts(self):
        d = Daemon().start()
        self.addCleanup(d.cleanup)
        c = Client(d.socket_path)
        self.addCleanup(c.close)
        # The demo server starts by itself: once it is ready, no server_state
        # event is due, and the subscription must end with none.
        wait_for("demo ready", lambda: any(
            s.name == "demo" and mcpd_client.state_name(s.state) == "ready" for s in c.servers()))
        sub = c.subscribe(server_state=True)
        self.assertEqual(next(sub).kind, "ack")
        host = c.host({"roots": lambda params, ctx: {"roots": []}})
        host.ready(60)
        started = threading.Event()
        outcome = {}

        def slow():
            try:
                c.call_tool("demo", "slow_count", {"n": 1000, "delay_ms": 50}, on_progress=lambda p: started.set())
            except McpdError as err:
                outcome["call"] = err

        def drain():
            outcome["events"] = list(sub)
        threads = [threading.Thread(target=slow), threading.Thread(target=drain)]
        for t in threads:
            t.start()
        self.assertTrue(started.wait(60))
        c.close()
        for t in threads:
            t.join(60)
            self.assertFalse(t.is_alive())
        self.assertEqual(outcome["call"].code, grpc.StatusCode.CANCELLED, str(outcome["call"]))
        self.assertIn("the client was closed", str(outcome["call"]))
        self.assertEqual(outcome["events"], [])
        for later in (c.status, lambda: c.call_tool("demo", "echo", {"message": "x"}), lambda: c.subscribe()):
            with self.assertRaises(McpdError) as cm:
                later()
            self.assertEqual(cm.exception.code, grpc.StatusCode.CANCELLED, str(cm.exception))


class DaemonErrorsTest(unittest.TestCase):
    def test_unavailable_server_is_not_a_lost_daemon(self):
        dirname = tempfile.mkdtemp(prefix="mcpd-py-")
        with open(os.path.join(dirname, "config.json"), "w") as f:
            f.write('{"mcpServers": {"broken": {"command": "/bin/sh", "args": ["-c", "exit 3"], "restart": "never"}}}')
        d = Daemon(dirname).start()
        self.addCleanup(d.cleanup)
        with Client(d.socket_path) as c:
            with self.assertRaises(McpdError) as cm:
                c.call_tool("broken", "echo", {"message": "x"})
        self.assertEqual(cm.exception.code, grpc.StatusCode.UNAVAILABLE, str(cm.exception))
        self.assertIn("broken", str(cm.exception))
        self.assertNotIn("mcpd is not reachable", str(cm.exception))

    def test_timeout_ms_also_bounds_a_daemon_that_does_not_answer(self):
        import socket
        import time
        with tempfile.TemporaryDirectory(prefix="mcpd-py-") as d:
            path = os.path.join(d, "mcpd.sock")
            ln = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            ln.bind(path)
            ln.listen(8)  # accepted by the kernel, never answered
            try:
                with Client(path) as c:
                    start = time.monotonic()
                    with self.assertRaises(McpdError) as cm:
                        c.call_tool("demo", "echo", {"message": "x"}, timeout_ms=300)
                    self.assertEqual(cm.exception.code, grpc.StatusCode.DEADLINE_EXCEEDED, str(cm.exception))
                    self.assertLess(time.monotonic() - start, 15)
            finally:
                ln.close()


class RestartTest(unittest.TestCase):
    def test_mcpd_restarting_under_a_live_subscription(self):
        d = Daemon().start()
        self.addCleanup(d.cleanup)
        c = Client(d.socket_path, client_name="py-restart-test")
        self.addCleanup(c.close)
        sub = c.subscribe(server_state=True)
        self.assertEqual(next(sub).kind, "ack")
        kept = c.subscribe(server_state=True, reconnect=True)
        self.addCleanup(kept.close)
        self.assertEqual(next(kept).kind, "ack")
        d.stop()
        with self.assertRaises(McpdError) as cm:
            for _ in sub:
                pass
        self.assertEqual(cm.exception.code, grpc.StatusCode.UNAVAILABLE, str(cm.exception))
        self.assertIn(d.socket_path, str(cm.exception))
        d.start()

        def resubscribe():
            s = c.subscribe(server_state=True)
            try:
                self.assertEqual(next(s).kind, "ack")
                return s
            except McpdError:
                s.close()
                raise
        again = wait_for("resubscribed", resubscribe)
        self.assertTrue(any(s.app_name == "py-restart-test" for s in c.status().subscriptions))
        again.close()
        # The reconnecting subscription said it lost mcpd (after mcpd's own
        # "shutting down" error event), then came back with a new ack.
        lost = next_of(kept, "disconnected")
        self.assertIn(d.socket_path, lost.error)
        back = next_of(kept, "ack")
        self.assertEqual(kept.id, back.ack.subscription_id)


def next_of(sub, kind):
    for ev in sub:
        if ev.kind == kind:
            return ev
    raise AssertionError(f"subscription ended before a {kind} event")


if __name__ == "__main__":
    unittest.main()
