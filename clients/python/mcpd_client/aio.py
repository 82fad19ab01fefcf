"""AsyncClient: the asyncio mcpd client (grpc.aio). Cancelling the task of
a call cancels it; mcpd then sends the child notifications/cancelled."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from typing import Callable, Optional

import grpc
from grpc import aio

from mcpd_client import _common as c
from mcpd_client._common import McpdError
from mcpd_client.v1 import mcpd_pb2 as pb
from mcpd_client.v1 import mcpd_pb2_grpc as pb_grpc


class AsyncClient:
    """An asyncio connection to mcpd; the same calls as Client, as coroutines."""

    def __init__(self, socket_path: Optional[str] = None, client_name: str = "mcpd-client-py",
                 client_version: str = c.VERSION):
        self.socket_path = os.path.abspath(socket_path) if socket_path else c.default_socket_path()
        self._req = c.Requests(client_name, client_version)
        self._channel = aio.insecure_channel("unix:" + self.socket_path, options=c.channel_options())
        self._stub = pb_grpc.McpdStub(self._channel)
        self._closed = False
        self._open: set = set()  # the subscriptions and hosts to end with the client
        self._calls: set = set()  # the calls in flight, cancelled by close()

    async def close(self) -> None:
        """Closes the connection: calls in flight fail with CANCELLED,
        subscriptions end and hosts are unregistered; later calls fail with
        CANCELLED."""
        if self._closed:
            return
        self._closed = True
        streams, self._open = list(self._open), set()
        for st in streams:
            if isinstance(st, AsyncHost):
                await st.close()
            else:
                st.close()
        for call in list(self._calls):
            call.cancel()
        await self._channel.close()

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise c.closed_error(what)

    def _cancelled(self, what: str) -> Optional[McpdError]:
        """Turns the cancellation of a call by close() into CANCELLED; a
        cancelled task stays cancelled (the caller re-raises)."""
        task = asyncio.current_task()
        if self._closed and not (task is not None and getattr(task, "cancelling", lambda: 0)()):
            return c.closed_error(what)
        return None

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def _unary(self, method: str, request, timeout=None):
        self._check_open(method)
        call = getattr(self._stub, method)(request, metadata=self._req.metadata, timeout=timeout)
        self._calls.add(call)
        try:
            return await call
        except asyncio.CancelledError:
            call.cancel()
            closed = self._cancelled(method)
            if closed is not None:
                raise closed from None
            raise
        except grpc.RpcError as err:
            if self._closed:
                raise c.closed_error(method) from None
            raise c.from_rpc_error(err, self.socket_path, method) from None
        finally:
            self._calls.discard(call)

    async def _stream(self, method, request, what, on_progress, on_message, timeout=None):
        self._check_open(what)
        call = getattr(self._stub, method)(request, metadata=self._req.metadata, timeout=timeout)
        self._calls.add(call)
        response = None
        try:
            async for ev in call:
                kind = ev.WhichOneof("event")
                if kind == "progress_json" and on_progress:
                    on_progress(json.loads(ev.progress_json))
                elif kind == "message_json" and on_message:
                    on_message(json.loads(ev.message_json))
                elif kind == "response":
                    response = ev.response
        except asyncio.CancelledError:
            call.cancel()
            closed = self._cancelled(what)
            if closed is not None:
                raise closed from None
            raise
        except grpc.RpcError as err:
            if self._closed:
                raise c.closed_error(what) from None
            raise c.from_rpc_error(err, self.socket_path, what) from None
        finally:
            self._calls.discard(call)
        if response is None:
            if self._closed:
                raise c.closed_error(what)
            raise McpdError(f"{what}: mcpd ended the call without a response")
        return response

    async def status(self) -> pb.GetStatusResponse:
        return await self._unary("GetStatus", pb.GetStatusRequest())

    async def servers(self) -> list:
        return list((await self._unary("ListServers", pb.ListServersRequest())).servers)

    async def start_server(self, name: str) -> pb.ServerStatus:
        return (await self._unary("StartServer", pb.StartServerRequest(name=name))).server

    async def stop_server(self, name: str) -> pb.ServerStatus:
        return (await self._unary("StopServer", pb.StopServerRequest(name=name))).server

    async def restart_server(self, name: str) -> pb.ServerStatus:
        return (await self._unary("RestartServer", pb.RestartServerRequest(name=name))).server

    async def logs(self, name: str, lines: int = 0) -> list:
        return list((await self._unary("GetLogs", pb.GetLogsRequest(name=name, lines=lines))).lines)

    async def _list(self, method, request_type, server, timeout_ms):
        req = request_type(server=server or "", options=self._req.options(timeout_ms))
        return c.server_lists(await self._unary(method, req, c.deadline(timeout_ms)))

    async def list_tools(self, server: Optional[str] = None, *, timeout_ms=None) -> list:
        return await self._list("ListTools", pb.ListToolsRequest, server, timeout_ms)

    async def list_prompts(self, server: Optional[str] = None, *, timeout_ms=None) -> list:
        return await self._list("ListPrompts", pb.ListPromptsRequest, server, timeout_ms)

    async def list_resources(self, server: Optional[str] = None, *, timeout_ms=None) -> list:
        return await self._list("ListResources", pb.ListResourcesRequest, server, timeout_ms)

    async def list_resource_templates(self, server: Optional[str] = None, *, timeout_ms=None) -> list:
        return await self._list("ListResourceTemplates", pb.ListResourceTemplatesRequest, server, timeout_ms)

    async def call_tool(self, server: str, tool: str, args: Optional[dict] = None, *,
                        timeout_ms: Optional[int] = None, on_progress: Optional[Callable[[dict], None]] = None,
                        on_message: Optional[Callable[[dict], None]] = None, meta: Optional[dict] = None,
                        allow_tool_error: bool = False) -> dict:
        req = self._req.call_tool(server, tool, args, timeout_ms, meta, on_progress is not None)
        what = f"tools/call {tool}"
        resp = await self._stream("CallTool", req, what, on_progress, on_message, c.deadline(timeout_ms))
        return c.tool_result(server, tool, c.result(resp, what), allow_tool_error)

    async def get_prompt(self, server: str, name: str, args: Optional[dict] = None, *, timeout_ms=None) -> dict:
        req = pb.GetPromptRequest(server=server, name=name, arguments_json=json.dumps(args or {}),
                                  options=self._req.options(timeout_ms))
        return c.result(await self._unary("GetPrompt", req, c.deadline(timeout_ms)), f"prompts/get {name}")

    async def read_resource(self, server: str, uri: str, *, timeout_ms=None) -> dict:
        req = pb.ReadResourceRequest(server=server, uri=uri, options=self._req.options(timeout_ms))
        return c.result(await self._unary("ReadResource", req, c.deadline(timeout_ms)), f"resources/read {uri}")

    async def complete(self, server: str, params: dict, *, timeout_ms=None) -> dict:
        req = pb.CompleteRequest(server=server, params_json=json.dumps(params or {}),
                                 options=self._req.options(timeout_ms))
        return c.result(await self._unary("Complete", req, c.deadline(timeout_ms)), "completion/complete")

    async def request(self, server: str, method: str, params: Optional[dict] = None, *, timeout_ms=None,
                      on_progress=None) -> dict:
        req = pb.SendRequestRequest(server=server, method=method, params_json=json.dumps(params or {}),
                                    options=self._req.options(timeout_ms))
        return c.result(await self._stream("SendRequest", req, method, on_progress, None, c.deadline(timeout_ms)), method)

    def subscribe(self, reconnect: bool = False, **what) -> "AsyncSubscription":
        """Opens a Subscribe stream as an async iterator of SubscriptionEvent;
        reconnect as in Client.subscribe."""
        self._check_open("subscribe")
        sub = AsyncSubscription(self, self._req.subscribe(**what), reconnect)
        self._open.add(sub)
        return sub

    async def host(self, handlers: dict, servers=()) -> "AsyncHost":
        """Registers handlers (callables or coroutine functions (params, ctx));
        returns once mcpd acknowledged the registration."""
        self._check_open("host")
        h = AsyncHost(self, handlers)
        self._open.add(h)
        try:
            await h._start(servers)
        except BaseException:
            self._open.discard(h)
            raise
        return h


class AsyncSubscription:
    """A Subscribe stream as an async iterator; close() ends it."""

    def __init__(self, client: AsyncClient, request: pb.SubscribeRequest, reconnect: bool = False):
        self._client = client
        self._request = request
        self._reconnect = reconnect
        self._closed = False
        self._reported = False  # a disconnected event was yielded and no ack since
        self._call = self._open()
        self.id: Optional[int] = None

    def _open(self):
        return self._client._stub.Subscribe(self._request, metadata=self._client._req.metadata)

    def __aiter__(self):
        return self

    async def __anext__(self) -> c.SubscriptionEvent:
        retry = c.RETRY_FIRST
        while True:
            if self._closed:
                raise StopAsyncIteration
            try:
                msg = await self._call.read()
                break
            except asyncio.CancelledError:
                if self._closed:
                    raise StopAsyncIteration from None
                raise
            except grpc.RpcError as err:
                if self._closed:
                    raise StopAsyncIteration from None
                e = c.from_rpc_error(err, self._client.socket_path, "subscribe")
                if not (self._reconnect and e.code == grpc.StatusCode.UNAVAILABLE):
                    raise e from None
                report = not self._reported
                self._reported = True
                if not report:
                    await asyncio.sleep(retry)  # backoff before resubscribing
                    retry = min(retry * 2, c.RETRY_MAX)
                self._call = self._open()
                if report:
                    return c.disconnected_event(e)
        if msg is aio.EOF:
            raise StopAsyncIteration
        ev = c.subscription_event(msg)
        if ev.kind == "ack":
            self._reported = False
            self.id = ev.ack.subscription_id
        return ev

    async def update(self, add=(), remove=()) -> list:
        req = pb.UpdateSubscriptionRequest(subscription_id=self.id or 0, add_resource_uris=list(add),
                                           remove_resource_uris=list(remove))
        out = list((await self._client._unary("UpdateSubscription", req)).servers)
        c.updated_uris(self._request, add, remove)
        return out

    def close(self) -> None:
        self._closed = True
        self._call.cancel()
        self._client._open.discard(self)


class AsyncHost:
    """A Host registration on the event loop; close() ends it."""

    def __init__(self, client: AsyncClient, handlers: dict):
        self._client = client
        self._handlers = handlers
        self._tasks: dict = {}  # call_id → task answering it
        self.id: Optional[int] = None

    async def _start(self, servers):
        self._call = self._client._stub.Host(metadata=self._client._req.metadata)
        try:
            await self._call.write(self._client._req.register(self._handlers, servers))
            first = await self._call.read()
        except grpc.RpcError as err:
            raise c.from_rpc_error(err, self._client.socket_path, "host") from None
        if first is aio.EOF or first.WhichOneof("msg") != "registered":
            raise McpdError("host: the stream ended before registration", grpc.StatusCode.CANCELLED)
        self.id = first.registered.host_id
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self):
        try:
            while True:
                msg = await self._call.read()
                if msg is aio.EOF:
                    return
                kind = msg.WhichOneof("msg")
                if kind == "call":
                    self._tasks[msg.call.call_id] = asyncio.ensure_future(self._answer(msg.call))
                elif kind == "cancel":
                    task = self._tasks.pop(msg.cancel.call_id, None)
                    if task is not None:
                        task.cancel()
        except (grpc.RpcError, asyncio.CancelledError):
            pass  # closed, or mcpd went away: pending answers are moot
        finally:
            for task in list(self._tasks.values()):
                task.cancel()

    async def _answer(self, call: pb.HostCall):
        answer = pb.HostAnswer(call_id=call.call_id)
        fn = self._handlers.get(c.HANDLER_OF.get(call.method, ""))
        try:
            if not callable(fn):
                answer.error.CopyFrom(pb.McpError(code=c.METHOD_NOT_FOUND,
                                                  message=f"this host does not answer {call.method}"))
            else:
                ctx = {"server": call.server, "method": call.method, "call_id": call.call_id}
                out = fn(json.loads(call.params_json or "{}"), ctx)
                if inspect.isawaitable(out):
                    out = await out
                answer.result_json = json.dumps({} if out is None else out)
        except asyncio.CancelledError:
            return  # cancelled by the child: no answer is expected
        except Exception as err:  # the handler's failure is the child's JSON-RPC error
            answer.error.CopyFrom(c.host_error(err))
        finally:
            self._tasks.pop(call.call_id, None)
        try:
            await self._call.write(pb.HostRequest(answer=answer))
        except (grpc.RpcError, asyncio.InvalidStateError):
            pass  # the stream ended meanwhile

    async def close(self) -> None:
        self._client._open.discard(self)
        if getattr(self, "_call", None) is None:
            return
        self._call.cancel()
        if getattr(self, "_reader", None) is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
