// Type definitions for @mcpd-dev/client.

/** MCP objects are passed through as parsed JSON. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: any };

export interface ClientOptions {
  /** The socket; default $MCPD_SOCKET, $XDG_RUNTIME_DIR/mcpd/mcpd.sock or /tmp/mcpd-<uid>/mcpd.sock. */
  socketPath?: string;
  /** The app's name, sent as mcpd-client-name and shown by `mcpdctl status`. */
  clientName?: string;
  /** The app's version, sent as mcpd-client-version. */
  clientVersion?: string;
}

export interface CallOptions {
  /** Cancels the call; for MCP calls mcpd sends the child notifications/cancelled. */
  signal?: AbortSignal;
  /**
   * Overrides the server's request timeout, in milliseconds (capped by
   * mcpd); the call itself gets a deadline one second later, so that it
   * ends even when mcpd does not answer.
   */
  timeoutMs?: number;
}

export interface CallToolOptions extends CallOptions {
  /** Called with each notifications/progress params of the call. */
  onProgress?: (progress: { progressToken: string | number; progress: number; total?: number; message?: string }) => void;
  /** Called with each notifications/message params tied to the call. */
  onMessage?: (message: JsonObject) => void;
  /** Extra _meta of the request. */
  meta?: JsonObject;
  /** Return an isError result instead of rejecting with it. */
  allowToolError?: boolean;
}

export type ServerState = 'stopped' | 'starting' | 'ready' | 'backoff' | 'crashloop' | 'stopping' | 'failed';
export type CacheStatus = 'unspecified' | 'fetched' | 'hit' | 'coalesced';

export interface McpErrorInfo { code: number; message: string; data?: Json }

export interface ServerStatus {
  name: string;
  state: ServerState;
  pid: number;
  startedAtUnixMs: number;
  uptimeMs: number;
  restarts: number;
  era: '' | 'modern' | 'legacy';
  protocolVersion: string;
  serverInfoJson: string;
  /** serverInfoJson parsed; undefined before the first handshake. */
  serverInfo?: JsonObject;
  capabilitiesJson: string;
  /** capabilitiesJson parsed. */
  capabilities?: JsonObject;
  lastError: string;
  lastExit: string;
  lastStderrLine: string;
  autostart: boolean;
  disabled: boolean;
  explicitlyStopped: boolean;
  nextRestartInMs: number;
  callsInFlight: number;
  callsTotal: number;
  callsFailed: number;
  instructions: string;
  configError: string;
  command: string;
  [field: string]: any;
}

export interface AppStatus { name: string; version: string; pid: number; connectedAtUnixMs: number }

export interface Status {
  version: string;
  pid: number;
  uptimeMs: number;
  configPath: string;
  configError: string;
  socketPath: string;
  servers: ServerStatus[];
  apps: AppStatus[];
  subscriptions: Array<{ subscriptionId: number; appName: string; appVersion: string; appPid: number; servers: string[]; [field: string]: any }>;
}

/** One server's part of a list: its items, or why it has none. */
export interface ServerList<T = JsonObject> {
  server: string;
  items: T[];
  /** The server's JSON-RPC error answer. */
  error?: McpErrorInfo;
  /** Why the server gave no usable answer (not running, timed out). */
  unavailable?: string;
  cache: CacheStatus;
}

export interface LogLine { timeUnixMs: number; text: string; truncated: boolean; pid: number }

export interface SubscribeOptions {
  /** Servers to watch; empty watches every enabled server. */
  servers?: string[];
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  /** Resources to watch (notifications/resources/updated); needs servers. */
  resourceUris?: string[];
  /** Lifecycle events: started, ready, exited, restarting, crashloop, stopped, failed. */
  serverState?: boolean;
  /** notifications/message not tied to a request. */
  logMessages?: boolean;
  /**
   * Survive mcpd restarts: losing mcpd yields a 'disconnected' event, and
   * once mcpd is back the stream is opened again and a new 'ack' event
   * follows (events in between are lost: resync on it).
   */
  reconnect?: boolean;
}

export type SubscriptionEventKind = 'ack' | 'tools_list_changed' | 'prompts_list_changed' | 'resources_list_changed'
  | 'resource_updated' | 'server_state' | 'log_message' | 'restarted' | 'lagged' | 'error' | 'logs_lagged' | 'task_status'
  /** The client lost mcpd (subscribe with reconnect); error says why. */
  | 'disconnected';

export interface SubscriptionAck {
  subscriptionId: number;
  servers: Array<{ server: string; era: string; toolsListChanged: boolean; promptsListChanged: boolean;
    resourcesListChanged: boolean; resourceUris: string[]; logMessages: boolean; serverState: boolean; error: string }>;
}

export interface SubscriptionEvent {
  kind: SubscriptionEventKind;
  server: string;
  timeUnixMs: number;
  uri?: string;
  /** The notification's params as the child sent them. */
  params?: JsonObject;
  state?: string;
  pid?: number;
  exit?: string;
  error?: string;
  synthetic?: boolean;
  droppedLogMessages?: number;
  /** A log message sent while calls were in flight at the server, none of which mcpd could give it to. */
  duringCalls?: boolean;
  ack?: SubscriptionAck;
}

/** A Subscribe stream. It ends after close(), a lagged or error event, or rejects with McpdError when mcpd goes away. */
export declare class Subscription implements AsyncIterableIterator<SubscriptionEvent> {
  /** The subscription id, once acknowledged. */
  id: number | undefined;
  /** The first event's acknowledgement. */
  readonly ack: Promise<SubscriptionAck>;
  next(): Promise<IteratorResult<SubscriptionEvent>>;
  return(): Promise<IteratorResult<SubscriptionEvent>>;
  [Symbol.asyncIterator](): Subscription;
  /** Adds or removes watched resource URIs without reopening the stream. */
  update(change: { add?: string[]; remove?: string[] }): Promise<SubscriptionAck['servers']>;
  close(): void;
}

export interface HostCallContext {
  server: string;
  method: 'roots/list' | 'sampling/createMessage' | 'elicitation/create';
  callId: number;
  /** Aborted when the child cancels the request or the host closes. */
  signal: AbortSignal;
}

/** Callbacks answering a legacy child's requests; a thrown error with a negative integer code is sent as that JSON-RPC error. */
export interface HostHandlers {
  roots?: (params: JsonObject, ctx: HostCallContext) => JsonObject | Promise<JsonObject>;
  sampling?: (params: JsonObject, ctx: HostCallContext) => JsonObject | Promise<JsonObject>;
  elicitation?: (params: JsonObject, ctx: HostCallContext) => JsonObject | Promise<JsonObject>;
}

export declare class Host {
  /** The registration's id, once registered. */
  id: number | undefined;
  /** Resolves with the host id when mcpd acknowledged the registration. */
  readonly ready: Promise<number>;
  /** Resolves when the stream ended: undefined after close(), else the McpdError. */
  readonly closed: Promise<McpdError | undefined>;
  close(): void;
}

export declare class McpdError extends Error {
  name: 'McpdError';
  /** gRPC status code; 0 (OK) for a child's JSON-RPC error or a tool's error result. */
  code: number;
  /** gRPC status name, e.g. "NOT_FOUND". */
  codeName: string;
  /**
   * The class of mcpd's failure: an ErrorReason of mcpd.proto without its
   * prefix, e.g. "UNKNOWN_SERVER", "TIMED_OUT", "TOOL_WITHHELD"; undefined
   * for a failure without one.
   */
  reason?: string;
  /** What comes with the class (server, tool, change, bound, after). */
  metadata: Record<string, string>;
  /** The child's JSON-RPC error. */
  mcp?: McpErrorInfo;
  /** The JSON-RPC error code, when mcp is set. */
  readonly rpcCode: number | undefined;
  /** A tool's isError result. */
  toolResult?: JsonObject;
  socketPath?: string;
  server?: string;
}

export declare class McpdClient {
  constructor(opts?: ClientOptions);
  readonly socketPath: string;
  readonly clientName: string;
  readonly clientVersion: string;
  status(opts?: CallOptions): Promise<Status>;
  servers(opts?: CallOptions): Promise<ServerStatus[]>;
  startServer(name: string, opts?: CallOptions): Promise<ServerStatus>;
  stopServer(name: string, opts?: CallOptions): Promise<ServerStatus>;
  restartServer(name: string, opts?: CallOptions): Promise<ServerStatus>;
  logs(name: string, opts?: CallOptions & { lines?: number }): Promise<LogLine[]>;
  listTools(server?: string, opts?: CallOptions): Promise<ServerList[]>;
  listPrompts(server?: string, opts?: CallOptions): Promise<ServerList[]>;
  listResources(server?: string, opts?: CallOptions): Promise<ServerList[]>;
  listResourceTemplates(server?: string, opts?: CallOptions): Promise<ServerList[]>;
  callTool(server: string, tool: string, args?: JsonObject, opts?: CallToolOptions): Promise<JsonObject>;
  getPrompt(server: string, name: string, args?: Record<string, string>, opts?: CallOptions): Promise<JsonObject>;
  readResource(server: string, uri: string, opts?: CallOptions): Promise<JsonObject>;
  complete(server: string, params: JsonObject, opts?: CallOptions): Promise<JsonObject>;
  request(server: string, method: string, params?: JsonObject, opts?: CallToolOptions): Promise<JsonObject>;
  subscribe(what?: SubscribeOptions): Subscription;
  host(handlers: HostHandlers, opts?: { servers?: string[] }): Host;
  /** Ends calls in flight (CANCELLED), closes subscriptions and hosts, and closes the connection. */
  close(): void;
}

export declare function defaultSocketPath(env?: Record<string, string | undefined>): string;
