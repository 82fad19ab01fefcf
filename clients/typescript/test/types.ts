// Compiled with tsc --noEmit by ts_test.go: the hand-written typings of
// lib/index.d.ts describe the API as the examples in README.md use it.
import { McpdClient, McpdError, defaultSocketPath, Subscription, Host, ServerList, SubscriptionEvent } from '..';

async function usage(): Promise<void> {
  const path: string = defaultSocketPath({ MCPD_SOCKET: '/tmp/x.sock' });
  const mcpd = new McpdClient({ socketPath: path, clientName: 'types', clientVersion: '1' });
  const st = await mcpd.status();
  const names: string[] = st.servers.map((s) => s.name + s.state + st.apps.length);
  const lists: ServerList[] = await mcpd.listTools('demo', { timeoutMs: 100 });
  const toolNames: string[] = lists.flatMap((l) => l.items.map((t) => String(t.name)));
  const ac = new AbortController();
  const result = await mcpd.callTool('demo', 'slow_count', { n: 2 }, {
    signal: ac.signal,
    timeoutMs: 1000,
    onProgress: (p) => { const n: number = p.progress; void n; },
  });
  void result.content;
  await mcpd.getPrompt('demo', 'review', { code: 'x' });
  await mcpd.readResource('demo', 'demo://readme');
  await mcpd.complete('demo', { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: '' } });
  const sub: Subscription = mcpd.subscribe({ servers: ['demo'], toolsListChanged: true, reconnect: true });
  const ack = await sub.ack;
  void ack.subscriptionId;
  for await (const ev of sub) {
    const e: SubscriptionEvent = ev;
    if (e.kind === 'disconnected' || e.kind === 'restarted') break;
  }
  const host: Host = mcpd.host({
    sampling: async (params, ctx) => ({ role: 'assistant', model: 'm', content: { type: 'text', text: ctx.server } }),
    roots: () => ({ roots: [] }),
  }, { servers: ['everything'] });
  const id: number = await host.ready;
  void id;
  host.close();
  try {
    await mcpd.callTool('nosuch', 'x');
  } catch (err) {
    if (err instanceof McpdError) {
      const code: number = err.code;
      const rpc: number | undefined = err.rpcCode;
      void [code, rpc, err.mcp?.message, err.toolResult, err.codeName];
    }
  }
  void [names, toolNames];
  mcpd.close();
}

void usage;
