'use strict';
// The extension's logic, free of the vscode module so that it runs (and is
// tested) as a plain Node script too.

function loadClient() {
  try {
    return require('@mcpd-dev/client');
  } catch {
    return require('../../clients/typescript'); // inside the mcpd repository, without npm install
  }
}

const { McpdClient, McpdError } = loadClient();

/** connect returns a client named as this extension, for `mcpdctl status`. */
function connect(socketPath) {
  return new McpdClient({ socketPath, clientName: 'vscode-mcpd-example', clientVersion: '0.1.0' });
}

/** overview lists every server with its state and tool names. */
async function overview(client) {
  const [servers, lists] = await Promise.all([client.servers(), client.listTools()]);
  const toolsOf = new Map(lists.map((l) => [l.server, l]));
  return servers.map((s) => {
    const l = toolsOf.get(s.name);
    return {
      name: s.name,
      state: s.state,
      tools: l ? l.items.map((t) => t.name) : [],
      problem: l && (l.unavailable || (l.error && l.error.message)),
    };
  });
}

/** format renders an overview as text lines. */
function format(rows) {
  return rows.map((r) => `${r.name} (${r.state}): ${r.tools.join(', ') || '-'}${r.problem ? ` [${r.problem}]` : ''}`);
}

/** call calls a tool and returns its text content, with progress reported to onProgress. */
async function call(client, server, tool, args, { signal, onProgress } = {}) {
  const result = await client.callTool(server, tool, args, { signal, onProgress });
  return (result.content || []).map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');
}

module.exports = { connect, overview, format, call, McpdError };
