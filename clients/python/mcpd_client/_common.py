"""Shared by the sync and asyncio clients: socket discovery, errors and
conversions between mcpd's messages and plain Python values."""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import grpc

from mcpd_client import _status
from mcpd_client.v1 import mcpd_pb2 as pb

__all__ = ["McpdError", "ServerList", "SubscriptionEvent", "default_socket_path", "state_name"]

SOCKET_NAME = "mcpd.sock"
VERSION = "0.1.0"


def default_socket_path(env: Optional[dict] = None) -> str:
    """The socket as mcpd and mcpdctl find it: $MCPD_SOCKET, else
    $XDG_RUNTIME_DIR/mcpd/mcpd.sock (when absolute), else
    /tmp/mcpd-<euid>/mcpd.sock."""
    env = os.environ if env is None else env
    if env.get("MCPD_SOCKET"):
        return os.path.abspath(env["MCPD_SOCKET"])
    rt = env.get("XDG_RUNTIME_DIR", "")
    if rt and os.path.isabs(rt):
        return os.path.join(rt, "mcpd", SOCKET_NAME)
    return os.path.join("/tmp", f"mcpd-{os.geteuid()}", SOCKET_NAME)


class McpdError(Exception):
    """Every failure of a call. code is the gRPC status (grpc.StatusCode.OK
    for a child's JSON-RPC error or a tool's error result); mcp is the
    child's JSON-RPC error {code, message, data}; tool_result is a tool's
    isError result. reason is the class of mcpd's failure, an ErrorReason of
    mcpd.proto without its prefix ("UNKNOWN_SERVER", "TIMED_OUT",
    "TOOL_WITHHELD", ...; None for a failure without one), and metadata what
    comes with it (server, tool, change, bound, after)."""

    def __init__(self, message: str, code: grpc.StatusCode = grpc.StatusCode.UNKNOWN, *,
                 mcp: Optional[dict] = None, tool_result: Optional[dict] = None,
                 socket_path: Optional[str] = None, server: Optional[str] = None,
                 reason: Optional[str] = None, metadata: Optional[dict] = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.metadata = metadata or {}
        self.mcp = mcp
        self.tool_result = tool_result
        self.socket_path = socket_path
        self.server = server

    @property
    def rpc_code(self) -> Optional[int]:
        """The JSON-RPC error code of a child's error, else None."""
        return self.mcp["code"] if self.mcp else None


def mcpd_made(trailer, reason: Optional[str]) -> bool:
    """Whether an error is mcpd's own (an UNAVAILABLE naming a server that is
    down, stopped or crash-looping), not a connection to mcpd that failed:
    mcpd marks its errors with the mcpd-daemon trailer. mcpd shutting down is
    said as the socket going away."""
    if reason == "SHUTTING_DOWN":
        return False
    return any(k == _status.DAEMON for k, _ in trailer)


def from_rpc_error(err: grpc.RpcError, socket_path: str, what: str) -> McpdError:
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    details = (err.details() if hasattr(err, "details") else str(err)) or ""
    try:
        trailer = err.trailing_metadata() or ()
    except Exception:  # not a call's error
        trailer = ()
    reason, metadata = _status.reason_of(trailer)
    if code == grpc.StatusCode.UNAVAILABLE and not mcpd_made(trailer, reason):
        return McpdError(f"{what}: mcpd is not reachable at {socket_path} (is mcpd running? "
                         f"set MCPD_SOCKET to use another socket): {details}", code, socket_path=socket_path,
                         reason=reason, metadata=metadata)
    return McpdError(f"{what}: {details}", code, socket_path=socket_path, reason=reason, metadata=metadata)


def closed_error(what: str) -> McpdError:
    """The error of a call in flight when the client was closed, or after."""
    return McpdError(f"{what}: the client was closed", grpc.StatusCode.CANCELLED)


# How much later than timeout_ms a call's own gRPC deadline is: mcpd's
# timeout error, which names the server, comes first.
DEADLINE_GRACE = 1.0


def deadline(timeout_ms: Optional[int]) -> Optional[float]:
    """The gRPC timeout (seconds) of a call with timeout_ms, so that a call
    to an mcpd that does not answer ends too; None without timeout_ms."""
    return timeout_ms / 1000 + DEADLINE_GRACE if timeout_ms else None


def state_name(state: int) -> str:
    """A ServerStatus.state as a word: "ready", "stopped", "crash_loop", ..."""
    return enum_name(state, pb.ServerState, "SERVER_STATE_")


def mcp_error(e: pb.McpError) -> dict:
    data = None
    if e.data_json:
        try:
            data = json.loads(e.data_json)
        except ValueError:
            data = e.data_json
    return {"code": e.code, "message": e.message, "data": data}


def parse_json(text: str, what: str) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError as err:
        raise McpdError(f"mcpd sent invalid JSON in {what}: {err}") from err


def result(resp: pb.McpResponse, what: str) -> dict:
    """The parsed result of an McpResponse; McpdError for a JSON-RPC error."""
    if resp.HasField("error"):
        e = mcp_error(resp.error)
        raise McpdError(f"{resp.server}: {what}: MCP error {e['code']}: {e['message']}",
                        grpc.StatusCode.OK, mcp=e, server=resp.server)
    return parse_json(resp.result_json, "result_json") or {}


def tool_result(server: str, tool: str, r: dict, allow_tool_error: bool) -> dict:
    if r.get("isError") and not allow_tool_error:
        text = " ".join(c.get("text", "") for c in r.get("content", []) if c.get("type") == "text")
        raise McpdError(f"{server}: tool {tool} failed: {text or 'isError result'}",
                        grpc.StatusCode.OK, tool_result=r, server=server)
    return r


def enum_name(value: int, enum, prefix: str) -> str:
    return enum.Name(value)[len(prefix):].lower()


@dataclass
class ServerList:
    """One server's part of a list: its items, or why it has none."""
    server: str
    items: list
    error: Optional[dict] = None
    unavailable: Optional[str] = None
    cache: str = "unspecified"


def server_lists(resp) -> list:
    out = []
    for s in resp.servers:
        out.append(ServerList(
            server=s.server,
            items=parse_json(s.items_json, "items_json") or [],
            error=mcp_error(s.error) if s.HasField("error") else None,
            unavailable=s.unavailable or None,
            cache=enum_name(s.cache, pb.CacheStatus, "CACHE_STATUS_"),
        ))
    return out


@dataclass
class SubscriptionEvent:
    """One event of a subscription; kind is "ack", "tools_list_changed",
    "resource_updated", "server_state", "restarted", "lagged", ..."""
    kind: str
    server: str
    time_unix_ms: int
    uri: str = ""
    params: Optional[dict] = None
    state: str = ""
    pid: int = 0
    exit: str = ""
    error: str = ""
    synthetic: bool = False
    dropped_log_messages: int = 0
    # a log message sent while calls were in flight, none of which mcpd could give it to
    during_calls: bool = False
    ack: Optional[pb.SubscriptionAck] = field(default=None, repr=False)


def subscription_event(e: pb.SubscriptionEvent) -> SubscriptionEvent:
    return SubscriptionEvent(
        kind=enum_name(e.kind, pb.SubscriptionEventKind, "SUBSCRIPTION_EVENT_KIND_"),
        server=e.server, time_unix_ms=e.time_unix_ms, uri=e.uri,
        params=parse_json(e.params_json, "params_json"), state=e.state, pid=e.pid, exit=e.exit,
        error=e.error, synthetic=e.synthetic, dropped_log_messages=e.dropped_log_messages,
        during_calls=e.during_calls,
        ack=e.ack if e.HasField("ack") else None,
    )


_tokens = itertools.count(1)


class Requests:
    """Builds request messages; both clients use it."""

    def __init__(self, client_name: str, client_version: str):
        self.client = pb.ClientInfo(name=client_name, version=client_version)
        self.metadata = ((_status.CLIENT_NAME, client_name), (_status.CLIENT_VERSION, client_version))

    def options(self, timeout_ms: Optional[int]) -> pb.CallOptions:
        return pb.CallOptions(timeout_ms=timeout_ms or 0, client=self.client)

    def call_tool(self, server, tool, args, timeout_ms, meta, progress) -> pb.CallToolRequest:
        meta = dict(meta or {})
        if progress and "progressToken" not in meta:
            meta["progressToken"] = f"mcpd-py-{os.getpid()}-{next(_tokens)}"
        return pb.CallToolRequest(server=server, tool=tool, arguments_json=json.dumps(args or {}),
                                  meta_json=json.dumps(meta) if meta else "", options=self.options(timeout_ms))

    def subscribe(self, servers=(), tools_list_changed=False, prompts_list_changed=False,
                  resources_list_changed=False, resource_uris=(), server_state=False,
                  log_messages=False) -> pb.SubscribeRequest:
        return pb.SubscribeRequest(
            servers=list(servers), tools_list_changed=tools_list_changed,
            prompts_list_changed=prompts_list_changed, resources_list_changed=resources_list_changed,
            resource_uris=list(resource_uris), server_state=server_state, log_messages=log_messages,
            client=self.client)

    def register(self, handlers: dict, servers) -> pb.HostRequest:
        return pb.HostRequest(register=pb.HostRegistration(
            servers=list(servers or []), roots=callable(handlers.get("roots")),
            sampling=callable(handlers.get("sampling")), elicitation=callable(handlers.get("elicitation")),
            client=self.client))


HANDLER_OF = {"roots/list": "roots", "sampling/createMessage": "sampling", "elicitation/create": "elicitation"}
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603


def host_error(err: BaseException) -> pb.McpError:
    code = getattr(err, "code", None)
    if not (isinstance(code, int) and code < 0):
        code = INTERNAL_ERROR
    e = pb.McpError(code=code, message=str(err) or type(err).__name__)
    data = getattr(err, "data", None)
    if data is not None:
        e.data_json = json.dumps(data)
    return e


def channel_options():
    # A local daemon comes back within seconds; gRPC's default reconnect
    # backoff grows to two minutes.
    return [("grpc.keepalive_time_ms", 30000), ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.max_receive_message_length", 64 * 1024 * 1024),
            ("grpc.initial_reconnect_backoff_ms", 100), ("grpc.max_reconnect_backoff_ms", 5000)]


# Resubscribe backoff while mcpd is away, in seconds.
RETRY_FIRST = 0.1
RETRY_MAX = 5.0


def disconnected_event(err: McpdError) -> SubscriptionEvent:
    import time
    return SubscriptionEvent(kind="disconnected", server="", time_unix_ms=int(time.time() * 1000), error=str(err))


def updated_uris(request: pb.SubscribeRequest, add, remove) -> None:
    """Applies an update to request, so that a resubscribe asks for the URIs as they are now."""
    uris = [u for u in request.resource_uris if u not in set(remove)]
    uris += [u for u in add if u not in uris]
    del request.resource_uris[:]
    request.resource_uris.extend(uris)
