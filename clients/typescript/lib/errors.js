'use strict';
// McpdError: the one error class of the package.

const grpc = require('@grpc/grpc-js');
const { METADATA, reasonOf } = require('./status');

const codeNames = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));

/**
 * McpdError is every failure of a call: a gRPC status from mcpd (code),
 * a JSON-RPC error answered by the child (mcp), or a tool's error result
 * (toolResult).
 */
class McpdError extends Error {
  constructor(message, { code = grpc.status.UNKNOWN, reason, metadata, mcp, toolResult, socketPath, server, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.name = 'McpdError';
    /** gRPC status code (0, OK, for a child's JSON-RPC error or a tool's error result). */
    this.code = code;
    /** gRPC status name, e.g. "NOT_FOUND". */
    this.codeName = codeNames[code] || String(code);
    /**
     * The class of mcpd's failure, e.g. "UNKNOWN_SERVER", "TIMED_OUT",
     * "TOOL_WITHHELD" (an ErrorReason of mcpd.proto without its prefix);
     * undefined for a failure without one.
     */
    this.reason = reason;
    /** What comes with the class: server, tool, bound, after, ... */
    this.metadata = metadata || {};
    /** The child's JSON-RPC error: { code, message, data }. */
    this.mcp = mcp;
    /** The tool's result when it reported isError: true. */
    this.toolResult = toolResult;
    this.socketPath = socketPath;
    this.server = server;
  }

  /** The JSON-RPC error code of a child's error, else undefined. */
  get rpcCode() { return this.mcp ? this.mcp.code : undefined; }
}

/** fromMcpError turns a McpError message into an McpdError. */
function fromMcpError(err, server, what) {
  let data;
  if (err.dataJson) {
    try { data = JSON.parse(err.dataJson); } catch { data = err.dataJson; }
  }
  const code = Number(err.code);
  return new McpdError(`${server}: ${what}: MCP error ${code}: ${err.message}`, {
    code: grpc.status.OK,
    mcp: { code, message: err.message, data },
    server,
  });
}

/**
 * mcpdMade reports whether an error is mcpd's own (an UNAVAILABLE naming a
 * server that is down, stopped or crash-looping), not a connection to mcpd
 * that failed: mcpd marks its errors with the mcpd-daemon trailer. mcpd
 * shutting down is said as the socket going away.
 */
function mcpdMade(err, cls) {
  if (cls && cls.reason === 'SHUTTING_DOWN') return false;
  return Boolean(err.metadata && typeof err.metadata.get === 'function' && err.metadata.get(METADATA.daemon).length > 0);
}

/** fromStatus turns a grpc-js call error into an McpdError. */
function fromStatus(err, socketPath, what) {
  if (err instanceof McpdError) return err;
  const code = typeof err.code === 'number' ? err.code : grpc.status.UNKNOWN;
  const cls = reasonOf(err);
  if (code === grpc.status.UNAVAILABLE && !mcpdMade(err, cls)) {
    return new McpdError(`${what}: mcpd is not reachable at ${socketPath} (is mcpd running? ` +
      `set MCPD_SOCKET to use another socket): ${err.details || err.message}`,
    { code, ...cls, socketPath, cause: err });
  }
  return new McpdError(`${what}: ${err.details || err.message}`, { code, ...cls, socketPath, cause: err });
}

module.exports = { McpdError, fromMcpError, fromStatus };
