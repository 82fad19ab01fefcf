"""The asyncio client against a real mcpd with real children."""

import asyncio
import os
import re
import tempfile
import unittest

import grpc

from mcpd_client import AsyncClient, McpdError
from tests.harness import WAIT_TIMEOUT, Daemon, text


async def wait_for(what, cond, timeout=WAIT_TIMEOUT):
    """Polls the coroutine function cond until it returns a truthy value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last = None
    while True:
        try:
            v = await cond()
            if v:
                return v
        except Exception as err:  # keep polling; report the last failure
            last = err
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {last}")
        await asyncio.sleep(0.025)  # poll interval, not a synchronisation sleep


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon().start()

    @classmethod
    def tearDownClass(cls):
        cls.daemon.cleanup()

    async def asyncSetUp(self):
        # unittest runs the loop in debug mode; grpc.aio's first call on a
        # channel can take longer than its 0.1 s slow-callback report.
        asyncio.get_running_loop().slow_callback_duration = 5
        self.client = AsyncClient(self.daemon.socket_path, client_name="mcpd-py-aio-test", client_version="7.8")

    async def asyncTearDown(self):
        await self.client.close()

    async def assertMcpdError(self, aw, code):
        with self.assertRaises(McpdError) as cm:
            await aw
        self.assertEqual(cm.exception.code, code, str(cm.exception))
        return cm.exception

    async def test_status_and_lists(self):
        st = await self.client.status()
        self.assertTrue(any(a.name == "mcpd-py-aio-test" and a.version == "7.8" for a in st.apps), st.apps)
        self.assertEqual(sorted(s.name for s in await self.client.servers()), ["demo", "everything", "legacy"])
        [tools] = await self.client.list_tools("demo")
        self.assertIn("echo", [t["name"] for t in tools.items])
        [prompts] = await self.client.list_prompts("demo")
        self.assertIn("review", [p["name"] for p in prompts.items])
        self.assertIn("x := 1", str((await self.client.get_prompt("demo", "review", {"code": "x := 1"}))["messages"]))
        [resources] = await self.client.list_resources("demo")
        self.assertIn("demo://readme", [r["uri"] for r in resources.items])
        [templates] = await self.client.list_resource_templates("demo")
        self.assertIn("demo://echo/{text}", [r["uriTemplate"] for r in templates.items])
        read = await self.client.read_resource("demo", "demo://readme")
        self.assertIn("demo MCP server", read["contents"][0]["text"])
        done = await self.client.complete("everything", {"ref": {"type": "ref/prompt", "name": "completable-prompt"},
                                                         "argument": {"name": "department", "value": "S"}})
        self.assertEqual(sorted(done["completion"]["values"]), ["Sales", "Support"])
        self.assertEqual(await self.client.request("legacy", "ping"), {})

    async def test_call_tool_progress_timeout(self):
        self.assertEqual(text(await self.client.call_tool("demo", "echo", {"message": "hi"})), "hi")
        progress = []
        r = await self.client.call_tool("demo", "slow_count", {"n": 3, "delay_ms": 1}, on_progress=progress.append)
        self.assertEqual(text(r), "counted to 3")
        self.assertEqual([p["progress"] for p in progress], [1, 2, 3])
        await self.assertMcpdError(self.client.call_tool("demo", "slow_count", {"n": 100, "delay_ms": 60000},
                                                         timeout_ms=100), grpc.StatusCode.DEADLINE_EXCEEDED)

    async def test_task_cancel_reaches_the_child(self):
        started = asyncio.Event()
        task = asyncio.ensure_future(self.client.call_tool(
            "demo", "slow_count", {"n": 1000, "delay_ms": 50}, on_progress=lambda p: started.set()))
        await started.wait()
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task

        async def logged():
            return any(re.search(r"slow_count cancelled at \d+ of 1000", l.text) for l in await self.client.logs("demo"))
        await wait_for("the child logging the cancel", logged)

    async def test_errors(self):
        await self.assertMcpdError(self.client.call_tool("nosuch", "echo"), grpc.StatusCode.NOT_FOUND)
        e = await self.assertMcpdError(self.client.call_tool("demo", "nosuch_tool"), grpc.StatusCode.OK)
        self.assertLess(e.rpc_code, 0)
        e = await self.assertMcpdError(self.client.call_tool("demo", "slow_count", {"n": -1}), grpc.StatusCode.OK)
        self.assertTrue(e.tool_result["isError"])

    async def test_subscription_list_change_and_restart(self):
        sub = self.client.subscribe(servers=["legacy"], tools_list_changed=True, server_state=True)
        try:
            self.assertEqual((await sub.__anext__()).kind, "ack")
            await self.client.call_tool("legacy", "toggle_tool")
            self.assertEqual((await next_of(sub, "tools_list_changed")).server, "legacy")
            await self.client.restart_server("legacy")
            self.assertEqual((await next_of(sub, "restarted")).server, "legacy")
        finally:
            sub.close()
        self.assertEqual([e async for e in sub], [])

    async def test_host_answers_sampling(self):
        async def sampling(params, ctx):
            return {"role": "assistant", "model": "aio-model", "content": {"type": "text", "text": ctx["method"]}}
        host = await self.client.host({"sampling": sampling}, servers=["everything"])
        try:
            self.assertGreater(host.id, 0)
            r = await self.client.call_tool("everything", "trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
            self.assertIn("aio-model", text(r))
            self.assertIn("sampling/createMessage", text(r))
        finally:
            await host.close()

    async def test_not_running(self):
        with tempfile.TemporaryDirectory(prefix="mcpd-py-") as d:
            path = os.path.join(d, "mcpd.sock")
            async with AsyncClient(path) as c:
                e = await self.assertMcpdError(c.status(), grpc.StatusCode.UNAVAILABLE)
            self.assertIn(path, str(e))

    async def test_close_ends_calls_subscriptions_and_hosts(self):
        c = AsyncClient(self.daemon.socket_path, client_name="aio-close")
        sub = c.subscribe(server_state=True)
        self.assertEqual((await sub.__anext__()).kind, "ack")
        host = await c.host({"roots": lambda params, ctx: {"roots": []}})
        started = asyncio.Event()
        call = asyncio.ensure_future(c.call_tool("demo", "slow_count", {"n": 1000, "delay_ms": 50},
                                                 on_progress=lambda p: started.set()))

        async def drain():
            return [ev async for ev in sub]
        events = asyncio.ensure_future(drain())
        await asyncio.wait_for(started.wait(), WAIT_TIMEOUT)
        await c.close()
        e = await self.assertMcpdError(asyncio.wait_for(call, WAIT_TIMEOUT), grpc.StatusCode.CANCELLED)
        self.assertIn("the client was closed", str(e))
        self.assertEqual(await asyncio.wait_for(events, WAIT_TIMEOUT), [])
        await host.close()  # already closed: a no-op
        await self.assertMcpdError(c.status(), grpc.StatusCode.CANCELLED)
        with self.assertRaises(McpdError):
            c.subscribe()

    async def test_mcpd_restarting_under_a_live_subscription(self):
        d = Daemon().start()
        self.addCleanup(d.cleanup)
        async with AsyncClient(d.socket_path, client_name="aio-restart") as c:
            sub = c.subscribe(server_state=True)
            self.assertEqual((await sub.__anext__()).kind, "ack")
            kept = c.subscribe(server_state=True, reconnect=True)
            self.assertEqual((await kept.__anext__()).kind, "ack")
            await asyncio.get_running_loop().run_in_executor(None, d.stop)
            with self.assertRaises(McpdError) as cm:
                async for _ in sub:
                    pass
            self.assertEqual(cm.exception.code, grpc.StatusCode.UNAVAILABLE, str(cm.exception))
            await asyncio.get_running_loop().run_in_executor(None, d.start)

            async def resubscribe():
                s = c.subscribe(server_state=True)
                try:
                    self.assertEqual((await s.__anext__()).kind, "ack")
                    return s
                except McpdError:
                    s.close()
                    raise
            again = await wait_for("resubscribed", resubscribe)
            again.close()
            try:
                lost = await next_of(kept, "disconnected")
                self.assertIn(d.socket_path, lost.error)
                back = await next_of(kept, "ack")
                self.assertEqual(kept.id, back.ack.subscription_id)
            finally:
                kept.close()


async def next_of(sub, kind):
    async for ev in sub:
        if ev.kind == kind:
            return ev
    raise AssertionError(f"subscription ended before a {kind} event")


if __name__ == "__main__":
    unittest.main()
