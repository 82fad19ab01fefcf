#!/usr/bin/env node
'use strict';
// The extension's commands as a plain Node script:
//
//   node run.js                          list servers and tools
//   node run.js SERVER TOOL '{"a":1}'    call a tool
//
// The socket is found as mcpdctl finds it ($MCPD_SOCKET, ...).

const view = require('./mcpd-view');

async function main(argv) {
  const client = view.connect();
  try {
    if (argv.length === 0) {
      for (const line of view.format(await view.overview(client))) console.log(line);
      return 0;
    }
    const [server, tool, json = '{}'] = argv;
    const ac = new AbortController();
    process.once('SIGINT', () => ac.abort(new Error('interrupted')));
    console.log(await view.call(client, server, tool, JSON.parse(json), {
      signal: ac.signal,
      onProgress: (p) => console.error(`progress ${p.progress}${p.total ? `/${p.total}` : ''}`),
    }));
    return 0;
  } catch (err) {
    console.error(`error: ${err.message}`);
    return 1;
  } finally {
    client.close();
  }
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; });
