// tsclient drives `mcpdctl bridge` with the TypeScript SDK client
// (@modelcontextprotocol/sdk from npm) over stdio. Usage:
//   node tsclient.mjs COMMAND ARGS...
// It prints {"phase":"sleeping"} once a long call is in flight, waits for a
// line on stdin, cancels that call, and prints the results as one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ProgressNotificationSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import readline from "node:readline";

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "ts-host", version: "1.0.0" }, { capabilities: {} });
await client.connect(transport);

const out = { server: client.getServerVersion(), protocol: transport._protocolVersion };
out.tools = (await client.listTools()).tools.map((t) => t.name);
out.echo = (await client.callTool({ name: "echo", arguments: { message: "hi ts" } })).content[0].text;
out.read = (await client.readResource({ uri: "test://a" })).contents[0].text;
out.prompt = (await client.getPrompt({ name: "greet", arguments: { name: "Ada" } })).messages[0].content.text;

// The SDK's own onprogress option loses notifications that arrive in the
// same read as the response (it handles notifications asynchronously and
// the response first), so the host counts them with its own handler.
let progress = 0;
client.setNotificationHandler(ProgressNotificationSchema, (n) => {
  if (n.params.progressToken === "ts-token") progress++;
});
await client.callTool({ name: "progress", arguments: { steps: 3 }, _meta: { progressToken: "ts-token" } });
for (let i = 0; i < 100 && progress < 3; i++) await new Promise((r) => setTimeout(r, 20)); // handlers run async
out.progress = progress;

let updated = null;
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated = n.params.uri; });
await client.subscribeResource({ uri: "test://a" });
for (let i = 0; i < 300 && !updated; i++) {
  await client.callTool({ name: "touch", arguments: { uri: "test://a" } });
  await new Promise((r) => setTimeout(r, 100)); // retry interval
}
out.updated = updated;

const ac = new AbortController();
const call = client
  .callTool({ name: "sleep", arguments: { ms: 600123 } }, undefined, { signal: ac.signal, timeout: 600000 })
  .then(() => "completed", (e) => "aborted: " + e.message);
console.log(JSON.stringify({ phase: "sleeping" }));
const rl = readline.createInterface({ input: process.stdin });
await new Promise((resolve) => rl.once("line", resolve));
rl.close();
ac.abort("test cancels");
out.cancel = await call;

await client.close();
console.log(JSON.stringify(out));
