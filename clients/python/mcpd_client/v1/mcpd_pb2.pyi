from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

CACHE_STATUS_COALESCED: CacheStatus
CACHE_STATUS_FETCHED: CacheStatus
CACHE_STATUS_HIT: CacheStatus
CACHE_STATUS_UNSPECIFIED: CacheStatus
DESCRIPTOR: _descriptor.FileDescriptor
ERROR_REASON_INSTANCE_LIMIT: ErrorReason
ERROR_REASON_INVALID_REQUEST: ErrorReason
ERROR_REASON_LOGIN_REQUIRED: ErrorReason
ERROR_REASON_NOT_IN_PROFILE: ErrorReason
ERROR_REASON_NOT_REMOTE: ErrorReason
ERROR_REASON_RESPONSE_TOO_LARGE: ErrorReason
ERROR_REASON_SERVER_UNAVAILABLE: ErrorReason
ERROR_REASON_SHUTTING_DOWN: ErrorReason
ERROR_REASON_TIMED_OUT: ErrorReason
ERROR_REASON_TOOL_WITHHELD: ErrorReason
ERROR_REASON_UNKNOWN_PROFILE: ErrorReason
ERROR_REASON_UNKNOWN_SERVER: ErrorReason
ERROR_REASON_UNSPECIFIED: ErrorReason
SERVER_STATE_BACKOFF: ServerState
SERVER_STATE_CRASHLOOP: ServerState
SERVER_STATE_FAILED: ServerState
SERVER_STATE_LOGIN_REQUIRED: ServerState
SERVER_STATE_READY: ServerState
SERVER_STATE_STARTING: ServerState
SERVER_STATE_STOPPED: ServerState
SERVER_STATE_STOPPING: ServerState
SERVER_STATE_UNSPECIFIED: ServerState
SUBSCRIPTION_EVENT_KIND_ACK: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_ERROR: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_LAGGED: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_LOGS_LAGGED: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_LOG_MESSAGE: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_PROMPTS_LIST_CHANGED: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_RESOURCES_LIST_CHANGED: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_RESTARTED: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_SERVER_STATE: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_TASK_STATUS: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED: SubscriptionEventKind
SUBSCRIPTION_EVENT_KIND_UNSPECIFIED: SubscriptionEventKind

class AppStatus(_message.Message):
    __slots__ = ["connected_at_unix_ms", "name", "pid", "profile", "transport", "version"]
    CONNECTED_AT_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    connected_at_unix_ms: int
    name: str
    pid: int
    profile: str
    transport: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., pid: _Optional[int] = ..., connected_at_unix_ms: _Optional[int] = ..., transport: _Optional[str] = ..., profile: _Optional[str] = ...) -> None: ...

class ApproveToolsRequest(_message.Message):
    __slots__ = ["options", "server", "tools"]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    options: CallOptions
    server: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, server: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ...) -> None: ...

class ApproveToolsResponse(_message.Message):
    __slots__ = ["approved"]
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    approved: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, approved: _Optional[_Iterable[str]] = ...) -> None: ...

class CacheStats(_message.Message):
    __slots__ = ["bytes", "coalesced", "entries", "evictions", "hits", "invalidations", "misses", "policy"]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    COALESCED_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    EVICTIONS_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    INVALIDATIONS_FIELD_NUMBER: _ClassVar[int]
    MISSES_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    bytes: int
    coalesced: int
    entries: int
    evictions: int
    hits: int
    invalidations: int
    misses: int
    policy: str
    def __init__(self, hits: _Optional[int] = ..., misses: _Optional[int] = ..., coalesced: _Optional[int] = ..., entries: _Optional[int] = ..., bytes: _Optional[int] = ..., invalidations: _Optional[int] = ..., evictions: _Optional[int] = ..., policy: _Optional[str] = ...) -> None: ...

class CallOptions(_message.Message):
    __slots__ = ["client", "client_capabilities_json", "timeout_ms"]
    CLIENT_CAPABILITIES_JSON_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    client: ClientInfo
    client_capabilities_json: str
    timeout_ms: int
    def __init__(self, timeout_ms: _Optional[int] = ..., client: _Optional[_Union[ClientInfo, _Mapping]] = ..., client_capabilities_json: _Optional[str] = ...) -> None: ...

class CallToolEvent(_message.Message):
    __slots__ = ["message_json", "progress_json", "response"]
    MESSAGE_JSON_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_JSON_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    message_json: str
    progress_json: str
    response: McpResponse
    def __init__(self, progress_json: _Optional[str] = ..., message_json: _Optional[str] = ..., response: _Optional[_Union[McpResponse, _Mapping]] = ...) -> None: ...

class CallToolRequest(_message.Message):
    __slots__ = ["arguments_json", "input_responses_json", "meta_json", "options", "request_state", "server", "tool"]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    INPUT_RESPONSES_JSON_FIELD_NUMBER: _ClassVar[int]
    META_JSON_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_STATE_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    arguments_json: str
    input_responses_json: str
    meta_json: str
    options: CallOptions
    request_state: str
    server: str
    tool: str
    def __init__(self, server: _Optional[str] = ..., tool: _Optional[str] = ..., arguments_json: _Optional[str] = ..., meta_json: _Optional[str] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ..., input_responses_json: _Optional[str] = ..., request_state: _Optional[str] = ...) -> None: ...

class CheckConfigRequest(_message.Message):
    __slots__ = ["content", "path"]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    content: bytes
    path: str
    def __init__(self, path: _Optional[str] = ..., content: _Optional[bytes] = ...) -> None: ...

class CheckConfigResponse(_message.Message):
    __slots__ = ["config_path", "diff", "error", "problems", "valid"]
    CONFIG_PATH_FIELD_NUMBER: _ClassVar[int]
    DIFF_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    VALID_FIELD_NUMBER: _ClassVar[int]
    config_path: str
    diff: ConfigDiff
    error: str
    problems: _containers.RepeatedCompositeFieldContainer[ConfigProblem]
    valid: bool
    def __init__(self, config_path: _Optional[str] = ..., valid: bool = ..., error: _Optional[str] = ..., problems: _Optional[_Iterable[_Union[ConfigProblem, _Mapping]]] = ..., diff: _Optional[_Union[ConfigDiff, _Mapping]] = ...) -> None: ...

class ClearCacheRequest(_message.Message):
    __slots__ = ["server"]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    server: str
    def __init__(self, server: _Optional[str] = ...) -> None: ...

class ClearCacheResponse(_message.Message):
    __slots__ = ["cleared"]
    CLEARED_FIELD_NUMBER: _ClassVar[int]
    cleared: int
    def __init__(self, cleared: _Optional[int] = ...) -> None: ...

class ClientInfo(_message.Message):
    __slots__ = ["name", "version"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class CompleteRequest(_message.Message):
    __slots__ = ["options", "params_json", "server"]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    options: CallOptions
    params_json: str
    server: str
    def __init__(self, server: _Optional[str] = ..., params_json: _Optional[str] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ...) -> None: ...

class ConfigDiff(_message.Message):
    __slots__ = ["added", "profiles_added", "profiles_changed", "profiles_removed", "removed", "restarted", "unchanged", "updated"]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    PROFILES_ADDED_FIELD_NUMBER: _ClassVar[int]
    PROFILES_CHANGED_FIELD_NUMBER: _ClassVar[int]
    PROFILES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    RESTARTED_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    added: _containers.RepeatedScalarFieldContainer[str]
    profiles_added: _containers.RepeatedScalarFieldContainer[str]
    profiles_changed: _containers.RepeatedScalarFieldContainer[str]
    profiles_removed: _containers.RepeatedScalarFieldContainer[str]
    removed: _containers.RepeatedScalarFieldContainer[str]
    restarted: _containers.RepeatedScalarFieldContainer[str]
    unchanged: _containers.RepeatedScalarFieldContainer[str]
    updated: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, added: _Optional[_Iterable[str]] = ..., removed: _Optional[_Iterable[str]] = ..., restarted: _Optional[_Iterable[str]] = ..., updated: _Optional[_Iterable[str]] = ..., unchanged: _Optional[_Iterable[str]] = ..., profiles_added: _Optional[_Iterable[str]] = ..., profiles_removed: _Optional[_Iterable[str]] = ..., profiles_changed: _Optional[_Iterable[str]] = ...) -> None: ...

class ConfigProblem(_message.Message):
    __slots__ = ["column", "key", "line", "message", "path", "server"]
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    column: int
    key: str
    line: int
    message: str
    path: str
    server: str
    def __init__(self, path: _Optional[str] = ..., line: _Optional[int] = ..., column: _Optional[int] = ..., server: _Optional[str] = ..., key: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class FollowLogsRequest(_message.Message):
    __slots__ = ["lines", "name"]
    LINES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    lines: int
    name: str
    def __init__(self, name: _Optional[str] = ..., lines: _Optional[int] = ...) -> None: ...

class FollowLogsResponse(_message.Message):
    __slots__ = ["dropped", "line"]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    dropped: int
    line: LogLine
    def __init__(self, line: _Optional[_Union[LogLine, _Mapping]] = ..., dropped: _Optional[int] = ...) -> None: ...

class GetLogsRequest(_message.Message):
    __slots__ = ["lines", "name"]
    LINES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    lines: int
    name: str
    def __init__(self, name: _Optional[str] = ..., lines: _Optional[int] = ...) -> None: ...

class GetLogsResponse(_message.Message):
    __slots__ = ["lines"]
    LINES_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedCompositeFieldContainer[LogLine]
    def __init__(self, lines: _Optional[_Iterable[_Union[LogLine, _Mapping]]] = ...) -> None: ...

class GetPromptRequest(_message.Message):
    __slots__ = ["arguments_json", "input_responses_json", "name", "options", "request_state", "server"]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    INPUT_RESPONSES_JSON_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_STATE_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    arguments_json: str
    input_responses_json: str
    name: str
    options: CallOptions
    request_state: str
    server: str
    def __init__(self, server: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ..., input_responses_json: _Optional[str] = ..., request_state: _Optional[str] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ["apps", "audit_path", "config_error", "config_path", "http", "oauth_tokens", "pid", "profiles", "secrets", "servers", "sharing", "socket_path", "subscriptions", "uptime_ms", "version"]
    APPS_FIELD_NUMBER: _ClassVar[int]
    AUDIT_PATH_FIELD_NUMBER: _ClassVar[int]
    CONFIG_ERROR_FIELD_NUMBER: _ClassVar[int]
    CONFIG_PATH_FIELD_NUMBER: _ClassVar[int]
    HTTP_FIELD_NUMBER: _ClassVar[int]
    OAUTH_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    SOCKET_PATH_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    UPTIME_MS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    apps: _containers.RepeatedCompositeFieldContainer[AppStatus]
    audit_path: str
    config_error: str
    config_path: str
    http: HttpStatus
    oauth_tokens: str
    pid: int
    profiles: _containers.RepeatedCompositeFieldContainer[ProfileInfo]
    secrets: str
    servers: _containers.RepeatedCompositeFieldContainer[ServerStatus]
    sharing: SharingStatus
    socket_path: str
    subscriptions: _containers.RepeatedCompositeFieldContainer[SubscriptionStatus]
    uptime_ms: int
    version: str
    def __init__(self, version: _Optional[str] = ..., pid: _Optional[int] = ..., uptime_ms: _Optional[int] = ..., config_path: _Optional[str] = ..., config_error: _Optional[str] = ..., socket_path: _Optional[str] = ..., servers: _Optional[_Iterable[_Union[ServerStatus, _Mapping]]] = ..., apps: _Optional[_Iterable[_Union[AppStatus, _Mapping]]] = ..., subscriptions: _Optional[_Iterable[_Union[SubscriptionStatus, _Mapping]]] = ..., http: _Optional[_Union[HttpStatus, _Mapping]] = ..., profiles: _Optional[_Iterable[_Union[ProfileInfo, _Mapping]]] = ..., audit_path: _Optional[str] = ..., sharing: _Optional[_Union[SharingStatus, _Mapping]] = ..., secrets: _Optional[str] = ..., oauth_tokens: _Optional[str] = ...) -> None: ...

class GetToolChangesRequest(_message.Message):
    __slots__ = ["options", "server"]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    options: CallOptions
    server: str
    def __init__(self, server: _Optional[str] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ...) -> None: ...

class GetToolChangesResponse(_message.Message):
    __slots__ = ["changes", "pin_mode", "pins_dir", "server"]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    PINS_DIR_FIELD_NUMBER: _ClassVar[int]
    PIN_MODE_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[ToolChange]
    pin_mode: str
    pins_dir: str
    server: str
    def __init__(self, server: _Optional[str] = ..., pin_mode: _Optional[str] = ..., changes: _Optional[_Iterable[_Union[ToolChange, _Mapping]]] = ..., pins_dir: _Optional[str] = ...) -> None: ...

class HostAnswer(_message.Message):
    __slots__ = ["call_id", "error", "result_json"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    call_id: int
    error: McpError
    result_json: str
    def __init__(self, call_id: _Optional[int] = ..., result_json: _Optional[str] = ..., error: _Optional[_Union[McpError, _Mapping]] = ...) -> None: ...

class HostCall(_message.Message):
    __slots__ = ["call_id", "method", "params_json", "server"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    call_id: int
    method: str
    params_json: str
    server: str
    def __init__(self, call_id: _Optional[int] = ..., server: _Optional[str] = ..., method: _Optional[str] = ..., params_json: _Optional[str] = ...) -> None: ...

class HostCancel(_message.Message):
    __slots__ = ["call_id", "reason"]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    call_id: int
    reason: str
    def __init__(self, call_id: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class HostNotification(_message.Message):
    __slots__ = ["method", "params_json", "server"]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    method: str
    params_json: str
    server: str
    def __init__(self, server: _Optional[str] = ..., method: _Optional[str] = ..., params_json: _Optional[str] = ...) -> None: ...

class HostRegistered(_message.Message):
    __slots__ = ["host_id"]
    HOST_ID_FIELD_NUMBER: _ClassVar[int]
    host_id: int
    def __init__(self, host_id: _Optional[int] = ...) -> None: ...

class HostRegistration(_message.Message):
    __slots__ = ["client", "elicitation", "elicitation_url", "roots", "sampling", "servers"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    ELICITATION_FIELD_NUMBER: _ClassVar[int]
    ELICITATION_URL_FIELD_NUMBER: _ClassVar[int]
    ROOTS_FIELD_NUMBER: _ClassVar[int]
    SAMPLING_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    client: ClientInfo
    elicitation: bool
    elicitation_url: bool
    roots: bool
    sampling: bool
    servers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, servers: _Optional[_Iterable[str]] = ..., roots: bool = ..., sampling: bool = ..., elicitation: bool = ..., client: _Optional[_Union[ClientInfo, _Mapping]] = ..., elicitation_url: bool = ...) -> None: ...

class HostRequest(_message.Message):
    __slots__ = ["answer", "register"]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    REGISTER_FIELD_NUMBER: _ClassVar[int]
    answer: HostAnswer
    register: HostRegistration
    def __init__(self, register: _Optional[_Union[HostRegistration, _Mapping]] = ..., answer: _Optional[_Union[HostAnswer, _Mapping]] = ...) -> None: ...

class HostResponse(_message.Message):
    __slots__ = ["call", "cancel", "notification", "registered"]
    CALL_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    NOTIFICATION_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_FIELD_NUMBER: _ClassVar[int]
    call: HostCall
    cancel: HostCancel
    notification: HostNotification
    registered: HostRegistered
    def __init__(self, registered: _Optional[_Union[HostRegistered, _Mapping]] = ..., call: _Optional[_Union[HostCall, _Mapping]] = ..., cancel: _Optional[_Union[HostCancel, _Mapping]] = ..., notification: _Optional[_Union[HostNotification, _Mapping]] = ...) -> None: ...

class HttpStatus(_message.Message):
    __slots__ = ["listen", "off_reason", "urls"]
    LISTEN_FIELD_NUMBER: _ClassVar[int]
    OFF_REASON_FIELD_NUMBER: _ClassVar[int]
    URLS_FIELD_NUMBER: _ClassVar[int]
    listen: str
    off_reason: str
    urls: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, listen: _Optional[str] = ..., urls: _Optional[_Iterable[str]] = ..., off_reason: _Optional[str] = ...) -> None: ...

class ListPromptsRequest(_message.Message):
    __slots__ = ["options", "server"]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    options: CallOptions
    server: str
    def __init__(self, server: _Optional[str] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ...) -> None: ...

class ListPromptsResponse(_message.Message):
    __slots__ = ["servers"]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[ServerList]
    def __init__(self, servers: _Optional[_Iterable[_Union[ServerList, _Mapping]]] = ...) -> None: ...

class ListResourceTemplatesRequest(_message.Message):
    __slots__ = ["options", "server"]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    options: CallOptions
    server: str
    def __init__(self, server: _Optional[str] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ...) -> None: ...

class ListResourceTemplatesResponse(_message.Message):
    __slots__ = ["servers"]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[ServerList]
    def __init__(self, servers: _Optional[_Iterable[_Union[ServerList, _Mapping]]] = ...) -> None: ...

class ListResourcesRequest(_message.Message):
    __slots__ = ["options", "server"]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    options: CallOptions
    server: str
    def __init__(self, server: _Optional[str] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ...) -> None: ...

class ListResourcesResponse(_message.Message):
    __slots__ = ["servers"]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[ServerList]
    def __init__(self, servers: _Optional[_Iterable[_Union[ServerList, _Mapping]]] = ...) -> None: ...

class ListServersRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListServersResponse(_message.Message):
    __slots__ = ["profile", "servers"]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    profile: ProfileInfo
    servers: _containers.RepeatedCompositeFieldContainer[ServerStatus]
    def __init__(self, servers: _Optional[_Iterable[_Union[ServerStatus, _Mapping]]] = ..., profile: _Optional[_Union[ProfileInfo, _Mapping]] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ["options", "server"]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    options: CallOptions
    server: str
    def __init__(self, server: _Optional[str] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ["servers"]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[ServerList]
    def __init__(self, servers: _Optional[_Iterable[_Union[ServerList, _Mapping]]] = ...) -> None: ...

class LogLine(_message.Message):
    __slots__ = ["pid", "text", "time_unix_ms", "truncated"]
    PID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TIME_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    pid: int
    text: str
    time_unix_ms: int
    truncated: bool
    def __init__(self, time_unix_ms: _Optional[int] = ..., text: _Optional[str] = ..., truncated: bool = ..., pid: _Optional[int] = ...) -> None: ...

class LoginEvent(_message.Message):
    __slots__ = ["authorization_url", "done"]
    AUTHORIZATION_URL_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    authorization_url: str
    done: OAuthStatus
    def __init__(self, authorization_url: _Optional[str] = ..., done: _Optional[_Union[OAuthStatus, _Mapping]] = ...) -> None: ...

class LoginRequest(_message.Message):
    __slots__ = ["name", "scopes"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    name: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ...) -> None: ...

class LogoutRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class LogoutResponse(_message.Message):
    __slots__ = ["was_logged_in"]
    WAS_LOGGED_IN_FIELD_NUMBER: _ClassVar[int]
    was_logged_in: bool
    def __init__(self, was_logged_in: bool = ...) -> None: ...

class McpError(_message.Message):
    __slots__ = ["code", "data_json", "message"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    DATA_JSON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    data_json: str
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., data_json: _Optional[str] = ...) -> None: ...

class McpResponse(_message.Message):
    __slots__ = ["cache", "duration_us", "error", "result_json", "server"]
    CACHE_FIELD_NUMBER: _ClassVar[int]
    DURATION_US_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    cache: CacheStatus
    duration_us: int
    error: McpError
    result_json: str
    server: str
    def __init__(self, server: _Optional[str] = ..., result_json: _Optional[str] = ..., error: _Optional[_Union[McpError, _Mapping]] = ..., cache: _Optional[_Union[CacheStatus, str]] = ..., duration_us: _Optional[int] = ...) -> None: ...

class OAuthStatus(_message.Message):
    __slots__ = ["client_id", "expires_at_unix_ms", "has_refresh_token", "issuer", "logged_in", "login_in_progress", "login_required", "reason", "resource", "scopes"]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    HAS_REFRESH_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    LOGGED_IN_FIELD_NUMBER: _ClassVar[int]
    LOGIN_IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    LOGIN_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    expires_at_unix_ms: int
    has_refresh_token: bool
    issuer: str
    logged_in: bool
    login_in_progress: bool
    login_required: bool
    reason: str
    resource: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, logged_in: bool = ..., login_required: bool = ..., reason: _Optional[str] = ..., login_in_progress: bool = ..., issuer: _Optional[str] = ..., resource: _Optional[str] = ..., client_id: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., expires_at_unix_ms: _Optional[int] = ..., has_refresh_token: bool = ...) -> None: ...

class ProfileInfo(_message.Message):
    __slots__ = ["name", "prefix", "servers"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    prefix: str
    servers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., prefix: _Optional[str] = ..., servers: _Optional[_Iterable[str]] = ...) -> None: ...

class ReadResourceRequest(_message.Message):
    __slots__ = ["input_responses_json", "options", "request_state", "server", "uri"]
    INPUT_RESPONSES_JSON_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_STATE_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    input_responses_json: str
    options: CallOptions
    request_state: str
    server: str
    uri: str
    def __init__(self, server: _Optional[str] = ..., uri: _Optional[str] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ..., input_responses_json: _Optional[str] = ..., request_state: _Optional[str] = ...) -> None: ...

class ReloadConfigRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ReloadConfigResponse(_message.Message):
    __slots__ = ["applied", "config_path", "diff", "error", "problems"]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    CONFIG_PATH_FIELD_NUMBER: _ClassVar[int]
    DIFF_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    config_path: str
    diff: ConfigDiff
    error: str
    problems: _containers.RepeatedCompositeFieldContainer[ConfigProblem]
    def __init__(self, config_path: _Optional[str] = ..., applied: bool = ..., error: _Optional[str] = ..., problems: _Optional[_Iterable[_Union[ConfigProblem, _Mapping]]] = ..., diff: _Optional[_Union[ConfigDiff, _Mapping]] = ...) -> None: ...

class RestartServerRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RestartServerResponse(_message.Message):
    __slots__ = ["server"]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    server: ServerStatus
    def __init__(self, server: _Optional[_Union[ServerStatus, _Mapping]] = ...) -> None: ...

class SendRequestRequest(_message.Message):
    __slots__ = ["method", "options", "params_json", "server"]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    method: str
    options: CallOptions
    params_json: str
    server: str
    def __init__(self, server: _Optional[str] = ..., method: _Optional[str] = ..., params_json: _Optional[str] = ..., options: _Optional[_Union[CallOptions, _Mapping]] = ...) -> None: ...

class ServerList(_message.Message):
    __slots__ = ["cache", "error", "items_json", "server", "unavailable"]
    CACHE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ITEMS_JSON_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_FIELD_NUMBER: _ClassVar[int]
    cache: CacheStatus
    error: McpError
    items_json: str
    server: str
    unavailable: str
    def __init__(self, server: _Optional[str] = ..., items_json: _Optional[str] = ..., error: _Optional[_Union[McpError, _Mapping]] = ..., unavailable: _Optional[str] = ..., cache: _Optional[_Union[CacheStatus, str]] = ...) -> None: ...

class ServerStatus(_message.Message):
    __slots__ = ["autostart", "cache", "calls_failed", "calls_in_flight", "calls_total", "capabilities_json", "command", "config_error", "disabled", "era", "explicitly_stopped", "instance", "instances", "instructions", "last_error", "last_exit", "last_stderr_line", "lines_oversize", "lines_skipped", "max_instances", "messages_invalid", "name", "next_restart_in_ms", "oauth", "pid", "protocol_version", "responses_dropped", "restarts", "root", "sandbox", "server_info_json", "share", "started_at_unix_ms", "state", "tool_changes_pending", "uptime_ms"]
    AUTOSTART_FIELD_NUMBER: _ClassVar[int]
    CACHE_FIELD_NUMBER: _ClassVar[int]
    CALLS_FAILED_FIELD_NUMBER: _ClassVar[int]
    CALLS_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    CALLS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_JSON_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CONFIG_ERROR_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    ERA_FIELD_NUMBER: _ClassVar[int]
    EXPLICITLY_STOPPED_FIELD_NUMBER: _ClassVar[int]
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTIONS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_EXIT_FIELD_NUMBER: _ClassVar[int]
    LAST_STDERR_LINE_FIELD_NUMBER: _ClassVar[int]
    LINES_OVERSIZE_FIELD_NUMBER: _ClassVar[int]
    LINES_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    MAX_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_INVALID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_RESTART_IN_MS_FIELD_NUMBER: _ClassVar[int]
    OAUTH_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    RESPONSES_DROPPED_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    SERVER_INFO_JSON_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHANGES_PENDING_FIELD_NUMBER: _ClassVar[int]
    UPTIME_MS_FIELD_NUMBER: _ClassVar[int]
    autostart: bool
    cache: CacheStats
    calls_failed: int
    calls_in_flight: int
    calls_total: int
    capabilities_json: str
    command: str
    config_error: str
    disabled: bool
    era: str
    explicitly_stopped: bool
    instance: str
    instances: _containers.RepeatedCompositeFieldContainer[ServerStatus]
    instructions: str
    last_error: str
    last_exit: str
    last_stderr_line: str
    lines_oversize: int
    lines_skipped: int
    max_instances: int
    messages_invalid: int
    name: str
    next_restart_in_ms: int
    oauth: OAuthStatus
    pid: int
    protocol_version: str
    responses_dropped: int
    restarts: int
    root: str
    sandbox: str
    server_info_json: str
    share: str
    started_at_unix_ms: int
    state: ServerState
    tool_changes_pending: int
    uptime_ms: int
    def __init__(self, name: _Optional[str] = ..., state: _Optional[_Union[ServerState, str]] = ..., pid: _Optional[int] = ..., started_at_unix_ms: _Optional[int] = ..., uptime_ms: _Optional[int] = ..., restarts: _Optional[int] = ..., era: _Optional[str] = ..., protocol_version: _Optional[str] = ..., server_info_json: _Optional[str] = ..., last_error: _Optional[str] = ..., last_exit: _Optional[str] = ..., last_stderr_line: _Optional[str] = ..., autostart: bool = ..., disabled: bool = ..., explicitly_stopped: bool = ..., next_restart_in_ms: _Optional[int] = ..., calls_in_flight: _Optional[int] = ..., calls_total: _Optional[int] = ..., calls_failed: _Optional[int] = ..., lines_skipped: _Optional[int] = ..., lines_oversize: _Optional[int] = ..., responses_dropped: _Optional[int] = ..., capabilities_json: _Optional[str] = ..., command: _Optional[str] = ..., cache: _Optional[_Union[CacheStats, _Mapping]] = ..., instructions: _Optional[str] = ..., messages_invalid: _Optional[int] = ..., config_error: _Optional[str] = ..., sandbox: _Optional[str] = ..., tool_changes_pending: _Optional[int] = ..., oauth: _Optional[_Union[OAuthStatus, _Mapping]] = ..., share: _Optional[str] = ..., max_instances: _Optional[int] = ..., instance: _Optional[str] = ..., root: _Optional[str] = ..., instances: _Optional[_Iterable[_Union[ServerStatus, _Mapping]]] = ...) -> None: ...

class SharingStatus(_message.Message):
    __slots__ = ["apps", "hosts", "processes", "processes_without_mcpd", "pss_bytes", "pss_bytes_without_mcpd", "remote_servers", "rss_bytes", "rss_bytes_without_mcpd"]
    APPS_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_WITHOUT_MCPD_FIELD_NUMBER: _ClassVar[int]
    PSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    PSS_BYTES_WITHOUT_MCPD_FIELD_NUMBER: _ClassVar[int]
    REMOTE_SERVERS_FIELD_NUMBER: _ClassVar[int]
    RSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    RSS_BYTES_WITHOUT_MCPD_FIELD_NUMBER: _ClassVar[int]
    apps: int
    hosts: int
    processes: int
    processes_without_mcpd: int
    pss_bytes: int
    pss_bytes_without_mcpd: int
    remote_servers: int
    rss_bytes: int
    rss_bytes_without_mcpd: int
    def __init__(self, apps: _Optional[int] = ..., hosts: _Optional[int] = ..., processes: _Optional[int] = ..., remote_servers: _Optional[int] = ..., rss_bytes: _Optional[int] = ..., pss_bytes: _Optional[int] = ..., processes_without_mcpd: _Optional[int] = ..., rss_bytes_without_mcpd: _Optional[int] = ..., pss_bytes_without_mcpd: _Optional[int] = ...) -> None: ...

class StartServerRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class StartServerResponse(_message.Message):
    __slots__ = ["server"]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    server: ServerStatus
    def __init__(self, server: _Optional[_Union[ServerStatus, _Mapping]] = ...) -> None: ...

class StopServerRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class StopServerResponse(_message.Message):
    __slots__ = ["server"]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    server: ServerStatus
    def __init__(self, server: _Optional[_Union[ServerStatus, _Mapping]] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ["client", "log_messages", "prompts_list_changed", "resource_uris", "resources_list_changed", "server_state", "servers", "task_status", "tools_list_changed"]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    LOG_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PROMPTS_LIST_CHANGED_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_LIST_CHANGED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_URIS_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    SERVER_STATE_FIELD_NUMBER: _ClassVar[int]
    TASK_STATUS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_LIST_CHANGED_FIELD_NUMBER: _ClassVar[int]
    client: ClientInfo
    log_messages: bool
    prompts_list_changed: bool
    resource_uris: _containers.RepeatedScalarFieldContainer[str]
    resources_list_changed: bool
    server_state: bool
    servers: _containers.RepeatedScalarFieldContainer[str]
    task_status: bool
    tools_list_changed: bool
    def __init__(self, servers: _Optional[_Iterable[str]] = ..., tools_list_changed: bool = ..., prompts_list_changed: bool = ..., resources_list_changed: bool = ..., resource_uris: _Optional[_Iterable[str]] = ..., server_state: bool = ..., log_messages: bool = ..., client: _Optional[_Union[ClientInfo, _Mapping]] = ..., task_status: bool = ...) -> None: ...

class SubscriptionAck(_message.Message):
    __slots__ = ["servers", "subscription_id"]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_ID_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[SubscriptionServerAck]
    subscription_id: int
    def __init__(self, subscription_id: _Optional[int] = ..., servers: _Optional[_Iterable[_Union[SubscriptionServerAck, _Mapping]]] = ...) -> None: ...

class SubscriptionEvent(_message.Message):
    __slots__ = ["ack", "dropped_log_messages", "during_calls", "error", "exit", "kind", "params_json", "pid", "server", "state", "synthetic", "time_unix_ms", "uri"]
    ACK_FIELD_NUMBER: _ClassVar[int]
    DROPPED_LOG_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    DURING_CALLS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXIT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SYNTHETIC_FIELD_NUMBER: _ClassVar[int]
    TIME_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    URI_FIELD_NUMBER: _ClassVar[int]
    ack: SubscriptionAck
    dropped_log_messages: int
    during_calls: bool
    error: str
    exit: str
    kind: SubscriptionEventKind
    params_json: str
    pid: int
    server: str
    state: str
    synthetic: bool
    time_unix_ms: int
    uri: str
    def __init__(self, kind: _Optional[_Union[SubscriptionEventKind, str]] = ..., server: _Optional[str] = ..., uri: _Optional[str] = ..., params_json: _Optional[str] = ..., state: _Optional[str] = ..., pid: _Optional[int] = ..., exit: _Optional[str] = ..., error: _Optional[str] = ..., synthetic: bool = ..., time_unix_ms: _Optional[int] = ..., ack: _Optional[_Union[SubscriptionAck, _Mapping]] = ..., dropped_log_messages: _Optional[int] = ..., during_calls: bool = ...) -> None: ...

class SubscriptionServerAck(_message.Message):
    __slots__ = ["era", "error", "log_messages", "prompts_list_changed", "resource_uris", "resources_list_changed", "server", "server_state", "tools_list_changed"]
    ERA_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LOG_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PROMPTS_LIST_CHANGED_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_LIST_CHANGED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_URIS_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    SERVER_STATE_FIELD_NUMBER: _ClassVar[int]
    TOOLS_LIST_CHANGED_FIELD_NUMBER: _ClassVar[int]
    era: str
    error: str
    log_messages: bool
    prompts_list_changed: bool
    resource_uris: _containers.RepeatedScalarFieldContainer[str]
    resources_list_changed: bool
    server: str
    server_state: bool
    tools_list_changed: bool
    def __init__(self, server: _Optional[str] = ..., era: _Optional[str] = ..., tools_list_changed: bool = ..., prompts_list_changed: bool = ..., resources_list_changed: bool = ..., resource_uris: _Optional[_Iterable[str]] = ..., log_messages: bool = ..., server_state: bool = ..., error: _Optional[str] = ...) -> None: ...

class SubscriptionStatus(_message.Message):
    __slots__ = ["app_name", "app_pid", "app_version", "coalesced", "created_unix_ms", "delivered", "dropped", "dropped_log_messages", "lagged", "queued", "queued_bytes", "resource_uris", "servers", "subscription_id"]
    APP_NAME_FIELD_NUMBER: _ClassVar[int]
    APP_PID_FIELD_NUMBER: _ClassVar[int]
    APP_VERSION_FIELD_NUMBER: _ClassVar[int]
    COALESCED_FIELD_NUMBER: _ClassVar[int]
    CREATED_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_LOG_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    LAGGED_FIELD_NUMBER: _ClassVar[int]
    QUEUED_BYTES_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_URIS_FIELD_NUMBER: _ClassVar[int]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_ID_FIELD_NUMBER: _ClassVar[int]
    app_name: str
    app_pid: int
    app_version: str
    coalesced: int
    created_unix_ms: int
    delivered: int
    dropped: int
    dropped_log_messages: int
    lagged: bool
    queued: int
    queued_bytes: int
    resource_uris: int
    servers: _containers.RepeatedScalarFieldContainer[str]
    subscription_id: int
    def __init__(self, subscription_id: _Optional[int] = ..., app_name: _Optional[str] = ..., app_version: _Optional[str] = ..., app_pid: _Optional[int] = ..., servers: _Optional[_Iterable[str]] = ..., resource_uris: _Optional[int] = ..., created_unix_ms: _Optional[int] = ..., queued: _Optional[int] = ..., queued_bytes: _Optional[int] = ..., delivered: _Optional[int] = ..., coalesced: _Optional[int] = ..., dropped: _Optional[int] = ..., lagged: bool = ..., dropped_log_messages: _Optional[int] = ...) -> None: ...

class ToolChange(_message.Message):
    __slots__ = ["capabilities_json", "current_digest", "current_json", "kind", "members", "pinned_digest", "pinned_json", "tool", "variant"]
    CAPABILITIES_JSON_FIELD_NUMBER: _ClassVar[int]
    CURRENT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CURRENT_JSON_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    PINNED_DIGEST_FIELD_NUMBER: _ClassVar[int]
    PINNED_JSON_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    capabilities_json: str
    current_digest: str
    current_json: str
    kind: str
    members: _containers.RepeatedScalarFieldContainer[str]
    pinned_digest: str
    pinned_json: str
    tool: str
    variant: str
    def __init__(self, tool: _Optional[str] = ..., kind: _Optional[str] = ..., members: _Optional[_Iterable[str]] = ..., pinned_json: _Optional[str] = ..., current_json: _Optional[str] = ..., pinned_digest: _Optional[str] = ..., current_digest: _Optional[str] = ..., variant: _Optional[str] = ..., capabilities_json: _Optional[str] = ...) -> None: ...

class UpdateSubscriptionRequest(_message.Message):
    __slots__ = ["add_resource_uris", "remove_resource_uris", "subscription_id"]
    ADD_RESOURCE_URIS_FIELD_NUMBER: _ClassVar[int]
    REMOVE_RESOURCE_URIS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_ID_FIELD_NUMBER: _ClassVar[int]
    add_resource_uris: _containers.RepeatedScalarFieldContainer[str]
    remove_resource_uris: _containers.RepeatedScalarFieldContainer[str]
    subscription_id: int
    def __init__(self, subscription_id: _Optional[int] = ..., add_resource_uris: _Optional[_Iterable[str]] = ..., remove_resource_uris: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdateSubscriptionResponse(_message.Message):
    __slots__ = ["servers"]
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[SubscriptionServerAck]
    def __init__(self, servers: _Optional[_Iterable[_Union[SubscriptionServerAck, _Mapping]]] = ...) -> None: ...

class ErrorReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class CacheStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ServerState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SubscriptionEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
