"""Client: the synchronous mcpd client (grpcio)."""

from __future__ import annotations

import json
import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

import grpc

from mcpd_client import _common as c
from mcpd_client._common import McpdError
from mcpd_client.v1 import mcpd_pb2 as pb
from mcpd_client.v1 import mcpd_pb2_grpc as pb_grpc


class CancelToken:
    """Cancels the calls it is passed to, from any thread: mcpd then sends
    the child notifications/cancelled."""

    def __init__(self):
        self._lock = threading.Lock()  # guards _cancelled, _callbacks
        self._cancelled = False
        self._callbacks: list = []

    @property
    def cancelled(self) -> bool:
        with self._lock:
            return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb()

    def _add(self, cb) -> bool:
        with self._lock:
            if self._cancelled:
                return False
            self._callbacks.append(cb)
            return True

    def _remove(self, cb) -> None:
        with self._lock:
            if cb in self._callbacks:
                self._callbacks.remove(cb)


class Client:
    """A connection to mcpd. socket_path defaults to where mcpdctl looks;
    client_name is shown by `mcpdctl status`."""

    def __init__(self, socket_path: Optional[str] = None, client_name: str = "mcpd-client-py",
                 client_version: str = c.VERSION):
        self.socket_path = os.path.abspath(socket_path) if socket_path else c.default_socket_path()
        self._req = c.Requests(client_name, client_version)
        self._channel = grpc.insecure_channel("unix:" + self.socket_path, options=c.channel_options())
        self._stub = pb_grpc.McpdStub(self._channel)
        self._lock = threading.Lock()  # guards _closed, _open
        self._closed = False
        self._open: set = set()  # the Subscriptions and Hosts to end with the client

    def close(self) -> None:
        """Closes the connection: calls in flight fail with CANCELLED,
        subscriptions end and hosts are unregistered; later calls fail with
        CANCELLED."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            streams, self._open = list(self._open), set()
        for st in streams:
            st.close()
        self._channel.close()

    def _keep(self, st) -> None:
        """Tracks a Subscription or Host until it closes (_drop)."""
        with self._lock:
            if self._closed:
                raise c.closed_error("subscribe" if isinstance(st, Subscription) else "host")
            self._open.add(st)

    def _drop(self, st) -> None:
        with self._lock:
            self._open.discard(st)

    def _check_open(self, what: str) -> None:
        with self._lock:
            if self._closed:
                raise c.closed_error(what)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _unary(self, method: str, request, timeout: Optional[float] = None, cancel: Optional[CancelToken] = None):
        self._check_open(method)
        if cancel is not None and cancel.cancelled:
            raise McpdError(f"{method}: cancelled", grpc.StatusCode.CANCELLED)
        try:
            fut = getattr(self._stub, method).future(request, metadata=self._req.metadata, timeout=timeout)
        except ValueError:  # the channel was closed meanwhile
            raise c.closed_error(method) from None
        if cancel is not None:
            cancel._add(fut.cancel)
        try:
            return fut.result()
        except grpc.FutureCancelledError:
            if self._closed:
                raise c.closed_error(method) from None
            raise McpdError(f"{method}: cancelled", grpc.StatusCode.CANCELLED) from None
        except grpc.RpcError as err:
            if self._closed:
                raise c.closed_error(method) from None
            raise c.from_rpc_error(err, self.socket_path, method) from None
        finally:
            if cancel is not None:
                cancel._remove(fut.cancel)

    def _stream(self, method: str, request, what: str, on_progress, on_message, cancel, timeout=None):
        self._check_open(what)
        if cancel is not None and cancel.cancelled:
            raise McpdError(f"{what}: cancelled", grpc.StatusCode.CANCELLED)
        try:
            call = getattr(self._stub, method)(request, metadata=self._req.metadata, timeout=timeout)
        except ValueError:  # the channel was closed meanwhile
            raise c.closed_error(what) from None
        if cancel is not None:
            cancel._add(call.cancel)
        response = None
        try:
            for ev in call:
                kind = ev.WhichOneof("event")
                if kind == "progress_json" and on_progress:
                    on_progress(json.loads(ev.progress_json))
                elif kind == "message_json" and on_message:
                    on_message(json.loads(ev.message_json))
                elif kind == "response":
                    response = ev.response
        except grpc.RpcError as err:
            if cancel is not None and cancel.cancelled:
                raise McpdError(f"{what}: cancelled", grpc.StatusCode.CANCELLED) from None
            if self._closed:
                raise c.closed_error(what) from None
            raise c.from_rpc_error(err, self.socket_path, what) from None
        finally:
            if cancel is not None:
                cancel._remove(call.cancel)
        if response is None:
            raise McpdError(f"{what}: mcpd ended the call without a response")
        return response

    # Operator verbs.

    def status(self) -> pb.GetStatusResponse:
        """The daemon, its servers, connected apps and subscriptions."""
        return self._unary("GetStatus", pb.GetStatusRequest())

    def servers(self) -> list:
        """The configured servers (ServerStatus messages)."""
        return list(self._unary("ListServers", pb.ListServersRequest()).servers)

    def start_server(self, name: str) -> pb.ServerStatus:
        return self._unary("StartServer", pb.StartServerRequest(name=name)).server

    def stop_server(self, name: str) -> pb.ServerStatus:
        return self._unary("StopServer", pb.StopServerRequest(name=name)).server

    def restart_server(self, name: str) -> pb.ServerStatus:
        return self._unary("RestartServer", pb.RestartServerRequest(name=name)).server

    def logs(self, name: str, lines: int = 0) -> list:
        """A server's recent stderr lines (LogLine messages), oldest first."""
        return list(self._unary("GetLogs", pb.GetLogsRequest(name=name, lines=lines)).lines)

    # MCP calls.

    def _list(self, method, request_type, server, timeout_ms, cancel):
        req = request_type(server=server or "", options=self._req.options(timeout_ms))
        return c.server_lists(self._unary(method, req, c.deadline(timeout_ms), cancel))

    def list_tools(self, server: Optional[str] = None, *, timeout_ms=None, cancel=None) -> list:
        """One ServerList of tools per server (every server when server is None)."""
        return self._list("ListTools", pb.ListToolsRequest, server, timeout_ms, cancel)

    def list_prompts(self, server: Optional[str] = None, *, timeout_ms=None, cancel=None) -> list:
        return self._list("ListPrompts", pb.ListPromptsRequest, server, timeout_ms, cancel)

    def list_resources(self, server: Optional[str] = None, *, timeout_ms=None, cancel=None) -> list:
        return self._list("ListResources", pb.ListResourcesRequest, server, timeout_ms, cancel)

    def list_resource_templates(self, server: Optional[str] = None, *, timeout_ms=None, cancel=None) -> list:
        return self._list("ListResourceTemplates", pb.ListResourceTemplatesRequest, server, timeout_ms, cancel)

    def call_tool(self, server: str, tool: str, args: Optional[dict] = None, *, timeout_ms: Optional[int] = None,
                  on_progress: Optional[Callable[[dict], None]] = None,
                  on_message: Optional[Callable[[dict], None]] = None, meta: Optional[dict] = None,
                  cancel: Optional[CancelToken] = None, allow_tool_error: bool = False) -> dict:
        """Calls a tool and returns its CallToolResult; an isError result
        raises McpdError with tool_result unless allow_tool_error."""
        req = self._req.call_tool(server, tool, args, timeout_ms, meta, on_progress is not None)
        what = f"tools/call {tool}"
        resp = self._stream("CallTool", req, what, on_progress, on_message, cancel, c.deadline(timeout_ms))
        return c.tool_result(server, tool, c.result(resp, what), allow_tool_error)

    def get_prompt(self, server: str, name: str, args: Optional[dict] = None, *, timeout_ms=None, cancel=None) -> dict:
        req = pb.GetPromptRequest(server=server, name=name, arguments_json=json.dumps(args or {}),
                                  options=self._req.options(timeout_ms))
        return c.result(self._unary("GetPrompt", req, c.deadline(timeout_ms), cancel), f"prompts/get {name}")

    def read_resource(self, server: str, uri: str, *, timeout_ms=None, cancel=None) -> dict:
        req = pb.ReadResourceRequest(server=server, uri=uri, options=self._req.options(timeout_ms))
        return c.result(self._unary("ReadResource", req, c.deadline(timeout_ms), cancel), f"resources/read {uri}")

    def complete(self, server: str, params: dict, *, timeout_ms=None, cancel=None) -> dict:
        req = pb.CompleteRequest(server=server, params_json=json.dumps(params or {}),
                                 options=self._req.options(timeout_ms))
        return c.result(self._unary("Complete", req, c.deadline(timeout_ms), cancel), "completion/complete")

    def request(self, server: str, method: str, params: Optional[dict] = None, *, timeout_ms=None,
                on_progress=None, cancel=None) -> dict:
        """Sends any MCP request (e.g. "ping") and returns its result."""
        req = pb.SendRequestRequest(server=server, method=method, params_json=json.dumps(params or {}),
                                    options=self._req.options(timeout_ms))
        return c.result(self._stream("SendRequest", req, method, on_progress, None, cancel, c.deadline(timeout_ms)), method)

    def subscribe(self, reconnect: bool = False, **what) -> "Subscription":
        """Opens a Subscribe stream (keywords: servers, tools_list_changed,
        prompts_list_changed, resources_list_changed, resource_uris,
        server_state, log_messages): an iterator of SubscriptionEvent. With
        reconnect, losing mcpd yields a "disconnected" event and the stream
        is opened again once mcpd is back (a new "ack" event: resync then)."""
        return Subscription(self, self._req.subscribe(**what), reconnect)

    def host(self, handlers: dict, servers=()) -> "Host":
        """Registers handlers {"roots", "sampling", "elicitation"}: callables
        (params, ctx) -> result, answering legacy children's requests."""
        return Host(self, handlers, servers)


class Subscription:
    """A Subscribe stream: iterate for events; close() ends it. If mcpd goes
    away the iteration raises McpdError (UNAVAILABLE), unless reconnect."""

    def __init__(self, client: Client, request: pb.SubscribeRequest, reconnect: bool = False):
        self._client = client
        self._request = request
        self._reconnect = reconnect
        self._closed = threading.Event()
        self._lock = threading.Lock()  # guards _call
        client._keep(self)
        self._call = self._open()
        self._reported = False  # a disconnected event was yielded and no ack since
        self.id: Optional[int] = None

    def _open(self):
        return self._client._stub.Subscribe(self._request, metadata=self._client._req.metadata)

    def __iter__(self):
        return self

    def __next__(self) -> c.SubscriptionEvent:
        retry = c.RETRY_FIRST
        while True:
            with self._lock:
                call = self._call
            try:
                ev = c.subscription_event(next(call))
                break
            except StopIteration:
                raise
            except grpc.RpcError as err:
                if self._closed.is_set():
                    raise StopIteration from None
                e = c.from_rpc_error(err, self._client.socket_path, "subscribe")
                if not (self._reconnect and e.code == grpc.StatusCode.UNAVAILABLE):
                    raise e from None
                report = not self._reported
                self._reported = True
                # Report the loss once; then wait before each resubscribe
                # (close() ends the wait).
                if not report and self._closed.wait(retry):
                    raise StopIteration from None
                retry = min(retry * 2, c.RETRY_MAX)
                with self._lock:
                    if self._closed.is_set():
                        raise StopIteration from None
                    self._call = self._open()
                if report:
                    return c.disconnected_event(e)
        if ev.kind == "ack":
            self._reported = False
            self.id = ev.ack.subscription_id
        return ev

    def update(self, add=(), remove=()) -> list:
        """Adds or removes watched resource URIs (after the ack was read)."""
        req = pb.UpdateSubscriptionRequest(subscription_id=self.id or 0, add_resource_uris=list(add),
                                           remove_resource_uris=list(remove))
        out = list(self._client._unary("UpdateSubscription", req).servers)
        c.updated_uris(self._request, add, remove)
        return out

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            self._call.cancel()
        self._client._drop(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Host:
    """A Host registration; ready() waits for mcpd's acknowledgement and
    returns the host id; close() ends it."""

    def __init__(self, client: Client, handlers: dict, servers):
        client._keep(self)
        self._client = client
        self._handlers = handlers
        self._out: queue.Queue = queue.Queue()  # HostRequests to send; None ends the stream
        self._out.put(client._req.register(handlers, servers))
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mcpd-host")
        self._registered = threading.Event()
        self._lock = threading.Lock()  # guards _pending, _error
        self._pending: dict = {}  # call_id → threading.Event set on HostCancel
        self._error: Optional[McpdError] = None
        self.id: Optional[int] = None
        self._call = client._stub.Host(self._requests(), metadata=client._req.metadata)
        self._reader = threading.Thread(target=self._read, name="mcpd-host-reader", daemon=True)
        self._reader.start()

    def _requests(self):
        while True:
            msg = self._out.get()
            if msg is None:
                return
            yield msg

    def _read(self):
        try:
            for msg in self._call:
                kind = msg.WhichOneof("msg")
                if kind == "registered":
                    self.id = msg.registered.host_id
                    self._registered.set()
                elif kind == "call":
                    cancelled = threading.Event()
                    with self._lock:
                        self._pending[msg.call.call_id] = cancelled
                    self._pool.submit(self._answer, msg.call, cancelled)
                elif kind == "cancel":
                    with self._lock:
                        ev = self._pending.get(msg.cancel.call_id)
                    if ev is not None:
                        ev.set()
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.CANCELLED:
                with self._lock:
                    self._error = c.from_rpc_error(err, self._client.socket_path, "host")
        finally:
            self._registered.set()
            with self._lock:
                for ev in self._pending.values():
                    ev.set()

    def _answer(self, call: pb.HostCall, cancelled: threading.Event):
        answer = pb.HostAnswer(call_id=call.call_id)
        fn = self._handlers.get(c.HANDLER_OF.get(call.method, ""))
        try:
            if not callable(fn):
                answer.error.CopyFrom(pb.McpError(code=c.METHOD_NOT_FOUND,
                                                  message=f"this host does not answer {call.method}"))
            else:
                ctx = {"server": call.server, "method": call.method, "call_id": call.call_id, "cancelled": cancelled}
                out = fn(json.loads(call.params_json or "{}"), ctx)
                answer.result_json = json.dumps({} if out is None else out)
        except Exception as err:  # the handler's failure is the child's JSON-RPC error
            answer.error.CopyFrom(c.host_error(err))
        finally:
            with self._lock:
                self._pending.pop(call.call_id, None)
        if not cancelled.is_set():
            self._out.put(pb.HostRequest(answer=answer))

    def ready(self, timeout: Optional[float] = None) -> int:
        """Waits for the registration; raises McpdError if the stream failed."""
        if not self._registered.wait(timeout):
            raise McpdError("host: not registered in time", grpc.StatusCode.DEADLINE_EXCEEDED)
        with self._lock:
            if self._error is not None:
                raise self._error
        if self.id is None:
            raise McpdError("host: the stream ended before registration", grpc.StatusCode.CANCELLED)
        return self.id

    def close(self) -> None:
        self._out.put(None)
        self._call.cancel()
        self._reader.join()
        self._pool.shutdown(wait=True)
        self._client._drop(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
