'use strict';
// The example plugin (examples/vscode-mcpd) against a real mcpd: its
// script lists servers and tools and calls one.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const path = require('node:path');
const { McpdClient } = require('..');
const { Daemon, tempDir } = require('./harness');

const exampleDir = path.join(__dirname, '..', '..', '..', 'examples', 'vscode-mcpd');
let daemon;

before(async () => { daemon = await new Daemon(tempDir()).start(); });
after(async () => { if (daemon) await daemon.stop(); });

function run(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(exampleDir, 'run.js'), ...args],
      { env: { ...process.env, MCPD_SOCKET: daemon.socketPath }, timeout: 60000 },
      (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
  });
}

test('the example lists servers and tools', async () => {
  const { code, stdout, stderr } = await run([]);
  assert.equal(code, 0, stderr);
  assert.match(stdout, /^demo \(ready\): .*\becho\b/m);
  assert.match(stdout, /^everything \(\w+\): /m);
});

test('the example calls a tool with progress', async () => {
  const { code, stdout, stderr } = await run(['demo', 'slow_count', '{"n":2,"delay_ms":1}']);
  assert.equal(code, 0, stderr);
  assert.equal(stdout.trim(), 'counted to 2');
  assert.match(stderr, /progress 2\/2/);
});

test('the example reports an unknown server', async () => {
  const { code, stderr } = await run(['nosuch', 'echo']);
  assert.equal(code, 1);
  assert.match(stderr, /error: .*nosuch/);
});

test('the example names itself to mcpd', async () => {
  const view = require(path.join(exampleDir, 'mcpd-view.js'));
  const c = view.connect(daemon.socketPath);
  try {
    const st = await c.status();
    assert.ok(st.apps.some((a) => a.name === 'vscode-mcpd-example'));
    assert.ok(c instanceof McpdClient);
  } finally {
    c.close();
  }
});
