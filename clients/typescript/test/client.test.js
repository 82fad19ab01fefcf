'use strict';
// The client against a real mcpd with real children: the Go demo server
// (modern and legacy) and the reference server-everything (legacy).

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const { McpdClient, McpdError, defaultSocketPath } = require('..');
const { Daemon, tempDir, waitFor } = require('./harness');

let daemon;
let client;

before(async () => {
  daemon = await new Daemon(tempDir()).start();
  client = new McpdClient({ socketPath: daemon.socketPath, clientName: 'mcpd-js-test', clientVersion: '1.2.3' });
});

after(async () => {
  if (client) client.close();
  if (daemon) await daemon.stop();
});

function text(result) {
  return (result.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
}

async function rejectsWith(promise, check) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof McpdError, `want McpdError, got ${err && err.stack}`);
    check(err);
    return err;
  }
  assert.fail('call succeeded, want an error');
}

test('socket discovery follows mcpdctl', () => {
  assert.equal(defaultSocketPath({ MCPD_SOCKET: '/x/y.sock', XDG_RUNTIME_DIR: '/run/user/1' }), '/x/y.sock');
  assert.equal(defaultSocketPath({ MCPD_SOCKET: 'rel.sock' }), path.resolve('rel.sock'));
  assert.equal(defaultSocketPath({ XDG_RUNTIME_DIR: '/run/user/1' }), '/run/user/1/mcpd/mcpd.sock');
  const uid = process.geteuid();
  assert.equal(defaultSocketPath({ XDG_RUNTIME_DIR: 'relative' }), `/tmp/mcpd-${uid}/mcpd.sock`);
  assert.equal(defaultSocketPath({}), `/tmp/mcpd-${uid}/mcpd.sock`);
});

test('status names the app; servers lists the config', async () => {
  const st = await client.status();
  assert.equal(st.socketPath, daemon.socketPath);
  const app = st.apps.find((a) => a.name === 'mcpd-js-test');
  assert.ok(app, `apps = ${JSON.stringify(st.apps)}`);
  assert.equal(app.version, '1.2.3');
  assert.equal(app.pid, process.pid);
  const names = (await client.servers()).map((s) => s.name).sort();
  assert.deepEqual(names, ['demo', 'everything', 'legacy']);
  const demo = await waitFor('demo ready', async () => (await client.servers()).find((s) => s.name === 'demo' && s.state === 'ready'));
  assert.equal(demo.serverInfo.name, 'demo');
  assert.ok(demo.pid > 0);
});

test('lists, prompts, resources and completions', async () => {
  const [tools] = await client.listTools('demo');
  assert.equal(tools.server, 'demo');
  assert.ok(tools.items.some((t) => t.name === 'echo'), JSON.stringify(tools));
  const all = await client.listTools();
  assert.deepEqual(all.map((l) => l.server).sort(), ['demo', 'everything', 'legacy']);
  assert.ok(all.find((l) => l.server === 'everything').items.some((t) => t.name === 'echo'));

  const [prompts] = await client.listPrompts('demo');
  assert.ok(prompts.items.some((p) => p.name === 'review'));
  const prompt = await client.getPrompt('demo', 'review', { code: 'x := 1' });
  assert.match(JSON.stringify(prompt.messages), /x := 1/);

  const [resources] = await client.listResources('demo');
  assert.ok(resources.items.some((r) => r.uri === 'demo://readme'));
  const [templates] = await client.listResourceTemplates('demo');
  assert.ok(templates.items.some((r) => r.uriTemplate === 'demo://echo/{text}'));
  const read = await client.readResource('demo', 'demo://readme');
  assert.match(read.contents[0].text, /demo MCP server/);

  const done = await client.complete('everything', {
    ref: { type: 'ref/prompt', name: 'completable-prompt' },
    argument: { name: 'department', value: 'E' },
  });
  assert.deepEqual(done.completion.values, ['Engineering']);

  assert.deepEqual(await client.request('legacy', 'ping'), {});
});

test('callTool returns the result, reports progress and honours timeoutMs', async () => {
  const r = await client.callTool('demo', 'echo', { message: 'hi there' });
  assert.equal(text(r), 'hi there');
  const legacy = await client.callTool('legacy', 'add', { a: 2, b: 3 });
  assert.match(text(legacy), /5/);

  const progress = [];
  const counted = await client.callTool('demo', 'slow_count', { n: 3, delay_ms: 1 }, { onProgress: (p) => progress.push(p) });
  assert.equal(text(counted), 'counted to 3');
  assert.deepEqual(progress.map((p) => p.progress), [1, 2, 3]);
  assert.ok(progress.every((p) => p.total === 3 && typeof p.progressToken === 'string'));

  await rejectsWith(client.callTool('demo', 'slow_count', { n: 100, delay_ms: 60000 }, { timeoutMs: 100 }),
    (err) => {
      assert.equal(err.code, grpc.status.DEADLINE_EXCEEDED, err.message);
      assert.equal(err.reason, 'TIMED_OUT', err.message);
      assert.ok(err.metadata.bound && err.metadata.after, JSON.stringify(err.metadata));
    });
});

test('an AbortSignal cancels the call and the child sees notifications/cancelled', async () => {
  const ac = new AbortController();
  const call = client.callTool('demo', 'slow_count', { n: 1000, delay_ms: 50 }, {
    signal: ac.signal,
    onProgress: () => ac.abort(new Error('user gave up')),
  });
  await rejectsWith(call, (err) => {
    assert.equal(err.code, grpc.status.CANCELLED);
    assert.match(err.message, /user gave up/);
  });
  await waitFor('the child logging the cancel', async () =>
    (await client.logs('demo')).some((l) => /slow_count cancelled at \d+ of 1000/.test(l.text)));
  // An already aborted signal sends nothing.
  await rejectsWith(client.callTool('demo', 'echo', { message: 'x' }, { signal: AbortSignal.abort() }),
    (err) => assert.equal(err.code, grpc.status.CANCELLED));
});

test('errors: unknown server, unknown tool, a tool error', async () => {
  await rejectsWith(client.callTool('nosuch', 'echo', {}), (err) => {
    assert.equal(err.code, grpc.status.NOT_FOUND);
    assert.equal(err.reason, 'UNKNOWN_SERVER');
    assert.match(err.message, /nosuch/);
  });
  await rejectsWith(client.listTools('nosuch'), (err) => {
    assert.equal(err.code, grpc.status.NOT_FOUND);
    assert.equal(err.reason, 'UNKNOWN_SERVER');
  });
  await rejectsWith(client.callTool('demo', 'nosuch_tool', {}), (err) => {
    assert.equal(err.code, grpc.status.OK);
    assert.equal(err.reason, undefined);
    assert.ok(err.mcp && Number.isInteger(err.mcp.code) && err.mcp.code < 0, JSON.stringify(err.mcp));
    assert.equal(err.rpcCode, err.mcp.code);
    assert.match(err.mcp.message, /nosuch_tool/);
  });
  await rejectsWith(client.callTool('demo', 'slow_count', { n: -1 }), (err) => {
    assert.equal(err.toolResult.isError, true);
    assert.match(err.message, /n must be between/);
  });
  const r = await client.callTool('demo', 'slow_count', { n: -1 }, { allowToolError: true });
  assert.equal(r.isError, true);
});

test('a subscription receives a list change and a restart', async () => {
  const sub = client.subscribe({ servers: ['demo'], toolsListChanged: true, serverState: true });
  try {
    const ack = await sub.ack;
    assert.ok(ack.subscriptionId > 0);
    const first = await sub.next();
    assert.equal(first.value.kind, 'ack');
    assert.equal(ack.servers[0].server, 'demo');
    await client.callTool('demo', 'toggle_tool', {});
    const changed = await nextOf(sub, (e) => e.kind === 'tools_list_changed');
    assert.equal(changed.server, 'demo');
    await client.restartServer('demo');
    const restarted = await nextOf(sub, (e) => e.kind === 'restarted');
    assert.equal(restarted.server, 'demo');
  } finally {
    sub.close();
  }
  assert.deepEqual(await sub.next(), { value: undefined, done: true });
});

test('for await ends when the loop breaks', async () => {
  const sub = client.subscribe({ serverState: true });
  let kinds = [];
  for await (const ev of sub) {
    kinds.push(ev.kind);
    break;
  }
  assert.deepEqual(kinds, ['ack']);
  assert.deepEqual(await sub.next(), { value: undefined, done: true });
});

test('a host handler answers a legacy child\'s sampling/createMessage', async () => {
  const seen = [];
  const host = client.host({
    sampling: async (params, ctx) => {
      seen.push({ params, ctx });
      return { role: 'assistant', model: 'js-test-model', content: { type: 'text', text: 'sampled by js' } };
    },
  }, { servers: ['everything'] });
  try {
    assert.ok((await host.ready) > 0);
    const r = await client.callTool('everything', 'trigger-sampling-request', { prompt: 'hello', maxTokens: 5 });
    assert.match(text(r), /js-test-model/);
    assert.match(text(r), /sampled by js/);
    assert.equal(seen.length, 1);
    assert.equal(seen[0].ctx.server, 'everything');
    assert.equal(seen[0].ctx.method, 'sampling/createMessage');
    assert.match(JSON.stringify(seen[0].params.messages), /hello/);
  } finally {
    host.close();
  }
  assert.equal(await host.closed, undefined);
});

test('a host handler answers elicitation; a failing handler is the child\'s JSON-RPC error', async () => {
  const host = client.host({
    elicitation: (params) => ({ action: 'accept', content: { name: `Ada (${params.requestedSchema.type})` } }),
    sampling: () => { const e = new Error('no model here'); e.code = -32001; throw e; },
  }, { servers: ['everything'] });
  try {
    await host.ready;
    const r = await client.callTool('everything', 'trigger-elicitation-request', {});
    assert.match(text(r), /Ada \(object\)/);
    // The child's sampling request fails with the handler's error.
    const err = await client.callTool('everything', 'trigger-sampling-request', { prompt: 'x' }, { allowToolError: true })
      .then((res) => JSON.stringify(res), (e) => `${e.message} ${JSON.stringify(e.mcp)}`);
    assert.match(err, /no model here/);
  } finally {
    host.close();
  }
});

test('a stopped server\'s UNAVAILABLE is mcpd\'s reason, not that mcpd is unreachable', async () => {
  await client.stopServer('legacy');
  try {
    await rejectsWith(client.callTool('legacy', 'echo', { message: 'x' }), (err) => {
      assert.equal(err.code, grpc.status.UNAVAILABLE);
      assert.match(err.message, /server "legacy" is stopped/);
      assert.doesNotMatch(err.message, /not reachable/);
    });
  } finally {
    await client.startServer('legacy');
  }
});

test('a server that cannot start is mcpd\'s UNAVAILABLE, whatever its message says', async () => {
  const dir = tempDir();
  require('node:fs').writeFileSync(path.join(dir, 'config.json'), JSON.stringify({
    mcpServers: { broken: { command: '/bin/sh', args: ['-c', 'exit 3'], restart: 'never' } },
  }));
  const d = await new Daemon(dir).start();
  const c = new McpdClient({ socketPath: d.socketPath });
  try {
    await rejectsWith(c.callTool('broken', 'echo', { message: 'x' }), (err) => {
      assert.equal(err.code, grpc.status.UNAVAILABLE, err.message);
      assert.match(err.message, /broken/);
      assert.doesNotMatch(err.message, /not reachable/);
    });
  } finally {
    c.close();
    await d.stop();
  }
});

test('close ends calls in flight, subscriptions and hosts; later calls fail', async () => {
  const c = new McpdClient({ socketPath: daemon.socketPath, clientName: 'close-test' });
  const sub = c.subscribe({ serverState: true });
  await sub.ack;
  const host = c.host({ sampling: () => ({}) }, { servers: ['everything'] });
  await host.ready;
  const call = c.callTool('demo', 'slow_count', { n: 1000, delay_ms: 50 });
  const status = c.status({ timeoutMs: 30000 });
  await status;
  c.close();
  await rejectsWith(call, (err) => {
    assert.equal(err.code, grpc.status.CANCELLED, err.message);
    assert.match(err.message, /the client was closed/);
  });
  assert.deepEqual(await sub.next(), { value: undefined, done: true });
  assert.equal(await host.closed, undefined);
  await rejectsWith(c.status(), (err) => assert.equal(err.code, grpc.status.CANCELLED, err.message));
  assert.throws(() => c.subscribe({}), (err) => err instanceof McpdError && err.code === grpc.status.CANCELLED);
});

test('a closed client leaves nothing that keeps the process alive', async () => {
  const script = `
    const { McpdClient } = require(${JSON.stringify(path.join(__dirname, '..'))});
    (async () => {
      const c = new McpdClient({ socketPath: ${JSON.stringify(daemon.socketPath)} });
      const sub = c.subscribe({ serverState: true });
      await sub.ack;
      const host = c.host({ roots: () => ({ roots: [] }) });
      await host.ready;
      c.callTool('demo', 'slow_count', { n: 1000, delay_ms: 50 }).catch(() => {});
      c.close();
    })();`;
  const { spawnSync } = require('node:child_process');
  const r = spawnSync(process.execPath, ['-e', script], { timeout: 20000, encoding: 'utf8' });
  assert.equal(r.signal, null, `the process was still running after 20 s (stderr: ${r.stderr})`);
  assert.equal(r.status, 0, r.stderr);
});

test('mcpd not running: a clear error naming the socket', async () => {
  const socketPath = path.join(tempDir(), 'mcpd.sock');
  const c = new McpdClient({ socketPath });
  try {
    await rejectsWith(c.status(), (err) => {
      assert.equal(err.code, grpc.status.UNAVAILABLE);
      assert.ok(err.message.includes(socketPath), err.message);
      assert.match(err.message, /mcpd is not reachable/);
      assert.equal(err.socketPath, socketPath);
    });
  } finally {
    c.close();
  }
});

test('mcpd restarting under a live subscription', async () => {
  const d = await new Daemon(tempDir()).start();
  const c = new McpdClient({ socketPath: d.socketPath, clientName: 'restart-test' });
  try {
    const sub = c.subscribe({ serverState: true });
    await sub.ack;
    const kept = c.subscribe({ serverState: true, reconnect: true });
    assert.equal((await kept.next()).value.kind, 'ack');
    const firstId = kept.id;
    await d.stop();
    const err = await rejectsWith(drain(sub), (e) => assert.equal(e.code, grpc.status.UNAVAILABLE, e.message));
    assert.ok(err.message.includes(d.socketPath), err.message);
    await d.start();
    // The same client reconnects; a new subscription is acknowledged.
    const again = await waitFor('resubscribed', async () => {
      const s = c.subscribe({ serverState: true });
      try {
        await s.ack;
        return s;
      } catch (e) {
        s.close();
        throw e;
      }
    });
    const st = await c.status();
    assert.ok(st.subscriptions.some((s) => s.appName === 'restart-test'));
    again.close();
    // The reconnecting subscription said it lost mcpd, then came back.
    // mcpd says it is shutting down (an error event), then goes away.
    const lost = await nextOf(kept, (e) => e.kind === 'disconnected');
    assert.ok(lost.error.includes(d.socketPath), lost.error);
    const back = await nextOf(kept, (e) => e.kind === 'ack');
    assert.ok(back.ack.subscriptionId > 0);
    assert.equal(kept.id, back.ack.subscriptionId);
    assert.ok(firstId > 0);
    kept.close();
  } finally {
    c.close();
    await d.stop();
  }
});

/** drain reads sub to its end. */
async function drain(sub) {
  for (;;) {
    const { done } = await sub.next();
    if (done) return;
  }
}

/** nextOf returns the next event of sub matching pred. */
async function nextOf(sub, pred) {
  for (;;) {
    const { value, done } = await sub.next();
    if (done) assert.fail('subscription ended');
    if (pred(value)) return value;
  }
}
