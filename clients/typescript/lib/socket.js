'use strict';
// Socket discovery, the same way mcpd and mcpdctl resolve it.

const path = require('node:path');

const SOCKET_NAME = 'mcpd.sock';

/**
 * defaultSocketPath returns $MCPD_SOCKET, else
 * $XDG_RUNTIME_DIR/mcpd/mcpd.sock (when XDG_RUNTIME_DIR is absolute), else
 * /tmp/mcpd-<euid>/mcpd.sock. A relative $MCPD_SOCKET is made absolute.
 */
function defaultSocketPath(env = process.env) {
  if (env.MCPD_SOCKET) return path.resolve(env.MCPD_SOCKET);
  const rt = env.XDG_RUNTIME_DIR;
  if (rt && path.isAbsolute(rt)) return path.join(rt, 'mcpd', SOCKET_NAME);
  const uid = typeof process.geteuid === 'function' ? process.geteuid() : 0;
  return path.join('/tmp', `mcpd-${uid}`, SOCKET_NAME);
}

module.exports = { defaultSocketPath };
