// tshttp drives mcpd's HTTP face with the TypeScript SDK client
// (@modelcontextprotocol/sdk from npm, StreamableHTTPClientTransport).
// Usage:
//   node tshttp.mjs URL PLAN
// PLAN is JSON naming the operations to run (every member optional):
//   {"echo": CALL, "progress": CALL, "read": URI, "prompt": {"name", "arguments"},
//    "subscribe": {"uri", "trigger": CALL}, "sample": CALL, "sleep": CALL}
// where CALL is {"name", "arguments"}. With "sleep" it prints
// {"phase":"sleeping"} once that call is sent, waits for a line on stdin and
// aborts the call. It prints the results as one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ProgressNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import readline from "node:readline";

const [url, planJSON] = process.argv.slice(2);
const plan = JSON.parse(planJSON);
const transport = new StreamableHTTPClientTransport(new URL(url));
const client = new Client({ name: "ts-http-host", version: "1.0.0" }, { capabilities: { sampling: {} } });
let sampled = 0;
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  sampled++;
  return { role: "assistant", model: "ts-model", content: { type: "text", text: "sampled by ts: " + req.params.messages.length } };
});
const progress = [];
client.setNotificationHandler(ProgressNotificationSchema, (n) => {
  progress.push({ token: n.params.progressToken, progress: n.params.progress });
});
let updated = null;
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated = n.params.uri; });
await client.connect(transport);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const textOf = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
const attempt = async (f) => { try { return await f(); } catch (e) { return "error: " + e.message; } };

const out = { server: client.getServerVersion(), protocol: transport.protocolVersion, sessionId: transport.sessionId };
out.tools = (await client.listTools()).tools.map((t) => t.name);
out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
out.resources = (await client.listResources()).resources.map((r) => r.uri);
if (plan.echo) out.echo = await attempt(async () => textOf(await client.callTool(plan.echo)));
if (plan.progress) {
  out.progressResult = await attempt(async () =>
    textOf(await client.callTool({ ...plan.progress, _meta: { progressToken: "ts-token" } })));
  // Handlers run asynchronously: give the notifications of the same read a turn.
  for (let i = 0; i < 100 && progress.length === 0; i++) await sleep(20);
  out.progress = progress;
}
if (plan.read) out.read = await attempt(async () => (await client.readResource({ uri: plan.read })).contents[0].text);
if (plan.prompt) out.prompt = await attempt(async () => (await client.getPrompt(plan.prompt)).messages[0].content.text);
if (plan.sample) {
  out.sample = await attempt(async () => textOf(await client.callTool(plan.sample, undefined, { timeout: 60000 })));
  out.sampled = sampled;
}
if (plan.subscribe) {
  await client.subscribeResource({ uri: plan.subscribe.uri });
  const trigger = plan.subscribe.trigger;
  // The subscription upstream is set up asynchronously: trigger until heard
  // (trigger.once: the tool starts periodic updates, call it once).
  for (let i = 0; i < 300 && !updated; i++) {
    if (i === 0 || !trigger.once) await client.callTool({ name: trigger.name, arguments: trigger.arguments });
    await sleep(100); // retry interval
  }
  out.updated = updated;
}
if (plan.sleep) {
  const ac = new AbortController();
  const call = client
    .callTool(plan.sleep, undefined, { signal: ac.signal, timeout: 600000 })
    .then(() => "completed", (e) => "aborted: " + e.message);
  console.log(JSON.stringify({ phase: "sleeping" }));
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise((resolve) => rl.once("line", resolve));
  rl.close();
  ac.abort("test cancels");
  out.cancel = await call;
}
await transport.terminateSession().catch(() => {});
await client.close();
console.log(JSON.stringify(out));
