// mcpd dashboard: plain JS, no build step. Every piece of server data is
// put in the page as text (textContent), never as HTML.
"use strict";

const token = document.querySelector('meta[name="mcpd-token"]').content;
const api = "/dashboard/api";
let snap = null;          // the last snapshot
let snapAt = 0;           // when it arrived (performance.now())
let selected = null;      // the server whose panel is open
let tab = "tools";
let follow = null;        // the log tail's EventSource
const live = {};          // server -> state from an event newer than the snapshot

// h builds an element: h("td", {class: "x"}, "text", child...).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === undefined || kid === null || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

async function getJSON(path) {
  const r = await fetch(api + path, {credentials: "same-origin"});
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

async function post(path, body) {
  const r = await fetch(api + path, {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-Mcpd-Token": token},
    body: JSON.stringify(body || {}),
  });
  const out = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(out.error || r.statusText);
  return out;
}

function bytes(n) {
  if (!n) return "–";
  const u = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + " " + u[i];
}

function dur(ms) {
  if (!ms || ms < 0) return "–";
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
  if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor(s % 3600 / 60) + "m";
  return Math.floor(s / 86400) + "d " + Math.floor(s % 86400 / 3600) + "h";
}

const since = () => performance.now() - snapAt;

// label is what the state pill says: a backoff counts down.
function stateOf(s) {
  const ev = live[s.name];
  if (ev) return {state: ev.state, text: ev.state};
  if (s.state === "backoff") {
    const left = Math.max(0, s.nextRestartInMs - since());
    return {state: "restarting", text: "restarting in " + (left / 1000).toFixed(1) + "s"};
  }
  if (s.state === "crashloop" && s.nextRestartInMs) {
    return {state: "crashloop", text: "crash loop · " + dur(Math.max(0, s.nextRestartInMs - since()))};
  }
  return {state: s.state, text: s.state};
}

function renderSummary() {
  const sh = snap.sharing;
  const card = (big, label, title) => h("div", {class: "card", title}, h("div", {class: "big"}, big), h("div", {class: "label"}, label));
  const ready = snap.servers.filter(s => s.state === "ready").length;
  const mem = sh.pssBytes ? "PSS " + bytes(sh.pssBytes) : "RSS " + bytes(sh.rssBytes);
  const memWithout = sh.pssBytes ? "PSS " + bytes(sh.pssBytesWithoutMcpd) : "RSS " + bytes(sh.rssBytesWithoutMcpd);
  document.getElementById("summary").replaceChildren(
    card(ready + " / " + snap.servers.length, "servers ready"),
    card(sh.apps + " · " + sh.hosts, "apps · of them hosts"),
    card(sh.processes + " → " + sh.processesWithoutMcpd, "processes with mcpd → without", "each app would run its own process of every stdio server it used"),
    card(mem, "memory of the servers with mcpd"),
    card(memWithout, "estimated without mcpd"),
    card(snap.auditOn ? "on" : "off", "audit log"),
  );
  document.getElementById("daemon").textContent =
    "v" + snap.version + " · pid " + snap.pid + " · up " + dur(snap.uptimeMs + since()) +
    (snap.configError ? " · config error: " + snap.configError : "");
}

// Rows are kept, not rebuilt: each server's row (and its buttons) lives
// as long as the server is listed, and an update changes only the text
// and attributes that differ, so a click or the keyboard focus on a row
// survives the updates streaming in.
const rows = new Map();   // server name -> its row's nodes (serverRow)

// setText changes a node's text only when it differs.
function setText(node, text) {
  text = String(text);
  if (node.textContent !== text) node.textContent = text;
}

function setAttr(el, k, v) { if (el.getAttribute(k) !== v) el.setAttribute(k, v); }

function setData(el, k, v) { if (el.dataset[k] !== v) el.dataset[k] = v; }

// place puts el in parent (before ref) when on, and takes it out when not.
function place(parent, el, on, ref) {
  if (on && el.parentNode !== parent) parent.insertBefore(el, ref || null);
  else if (!on && el.parentNode) el.remove();
}

// serverRow builds the row of server name, and keeps the nodes that
// updateRow changes.
function serverRow(name) {
  const text = () => document.createTextNode("");
  const sub = cls => h("div", {class: "sub" + (cls ? " " + cls : "")});
  const r = {
    tr: h("tr", {dataset: {server: name}, onclick: () => select(name)}),
    command: sub(), pill: h("span", {class: "pill"}), reason: sub("reason"),
    era: text(), protocol: sub(), pid: text(), inst: sub(), up: text(), restarts: sub(),
    mem: text(), calls: text(), callsSub: sub(), hits: text(), cacheSub: sub(),
    login: h("button", {class: "primary login", onclick: e => { e.stopPropagation(); login(name); }}, "Log in"),
    open: h("button", {onclick: e => { e.stopPropagation(); select(name); }}, "Open"),
  };
  r.stateTd = h("td", {}, r.pill);
  r.eraTd = h("td", {}, r.era);
  r.pidTd = h("td", {class: "pid"}, r.pid);
  r.buttons = h("div", {class: "buttons"}, r.open);
  r.tr.append(
    h("td", {}, h("div", {class: "name"}, name), r.command),
    r.stateTd, r.eraTd, r.pidTd,
    h("td", {}, r.up, r.restarts),
    h("td", {}, r.mem),
    h("td", {}, r.calls, r.callsSub),
    h("td", {}, r.hits, r.cacheSub),
    h("td", {}, r.buttons));
  return r;
}

// updateRow brings row r up to server s.
function updateRow(r, s) {
  const st = stateOf(s);
  const inst = s.instances && s.instances.length ? s.instances.length + " instances (" + s.share + ")" : (s.share && s.share !== "global" ? s.share : "");
  const mem = s.memory ? bytes(s.memory.pssBytes || s.memory.rssBytes) + (s.memory.procs > 1 ? " · " + s.memory.procs + " procs" : "") : "–";
  r.tr.classList.toggle("selected", s.name === selected);
  setData(r.tr, "state", st.state);
  setData(r.tr, "pid", String(s.pid || 0));
  setText(r.command, s.command ?? "");
  setAttr(r.pill, "class", "pill " + st.state.replace(" ", "-"));
  setText(r.pill, st.text);
  setText(r.reason, s.reason || "");
  place(r.stateTd, r.reason, !!s.reason);
  setText(r.era, (s.era || "–") + " · " + s.transport);
  setText(r.protocol, s.protocolVersion || "");
  place(r.eraTd, r.protocol, !!s.protocolVersion);
  setText(r.pid, s.pid || "–");
  setText(r.inst, inst);
  place(r.pidTd, r.inst, !!inst);
  setText(r.up, s.pid && s.uptimeMs ? dur(s.uptimeMs + since()) : "–");
  setText(r.restarts, s.restarts + " restarts");
  setText(r.mem, mem);
  setText(r.calls, String(s.callsTotal));
  setText(r.callsSub, s.callsFailed + " failed · " + s.callsInFlight + " in flight");
  setText(r.hits, String(s.cacheHits));
  setText(r.cacheSub, s.cachePolicy || "");
  place(r.buttons, r.login, !!s.loginRequired, r.open);
}

// renderServers updates the rows in place, in the snapshot's order,
// adding the rows of new servers and dropping those of removed ones.
function renderServers() {
  const tbody = document.querySelector("#servers tbody");
  const listed = new Set();
  let at = tbody.firstChild;
  for (const s of snap.servers) {
    let r = rows.get(s.name);
    if (!r) rows.set(s.name, r = serverRow(s.name));
    listed.add(s.name);
    updateRow(r, s);
    if (r.tr === at) at = at.nextSibling;
    else tbody.insertBefore(r.tr, at);
  }
  for (const [name, r] of rows) {
    if (!listed.has(name)) { r.tr.remove(); rows.delete(name); }
  }
}

function renderApps() {
  const rows = snap.apps.map(a => h("tr", {},
    h("td", {}, h("span", {class: "name"}, a.name || "(unnamed)"), a.version ? " " + a.version : "", a.self ? h("div", {class: "sub"}, "this page") : null),
    h("td", {}, a.door, a.host ? h("div", {class: "sub"}, "MCP host") : null),
    h("td", {}, a.pid || "–"),
    h("td", {}, a.profile || "–"),
    h("td", {}, a.used.length ? a.used.join(", ") : "–"),
    h("td", {}, dur(snap.timeUnixMs - a.connectedAtUnixMs) + " ago"),
  ));
  if (!rows.length) rows.push(h("tr", {}, h("td", {colspan: 6, class: "muted"}, "No app connected.")));
  document.querySelector("#apps tbody").replaceChildren(...rows);
}

function activity(text, cls, ...more) {
  const ol = document.getElementById("activity");
  ol.prepend(h("li", {class: cls}, new Date().toLocaleTimeString() + "  " + text, ...more));
  while (ol.children.length > 200) ol.lastChild.remove();
}

function render() {
  if (!snap) return;
  renderSummary();
  renderServers();
  renderApps();
  renderDetailHead();
}

// ---- the server panel ----

function server(name) { return snap && snap.servers.find(s => s.name === name); }

function select(name) {
  if (selected !== name) {
    selected = name;
    tab = server(name) && server(name).state === "withheld" ? "pins" : "tools";
  }
  document.getElementById("detail").hidden = false;
  render();
  loadTab();
  document.getElementById("detail").scrollIntoView({behavior: "smooth", block: "nearest"});
}

async function act(action, name) {
  try {
    await post("/servers/" + encodeURIComponent(name) + "/" + action);
    activity(action + " " + name + ": done");
  } catch (e) {
    activity(action + " " + name + ": " + e.message, "error");
  }
}

// login begins a remote server's OAuth login in mcpd and opens its
// authorization URL in a new window. The window is opened blank at the
// click (popup blockers allow a window only then), cut from this page
// (no opener), and sent to the URL once mcpd answers. The authorization
// server redirects to mcpd itself, which keeps the token: the server
// turns ready here through the live updates.
async function login(name) {
  const win = window.open("", "_blank");
  if (win) win.opener = null;
  try {
    const out = await post("/servers/" + enc(name) + "/login");
    const u = new URL(out.authorizationUrl);
    if (u.protocol !== "https:" && u.protocol !== "http:") throw new Error("not an http(s) authorization URL");
    if (win) {
      win.location.href = u.href;
      activity("login " + name + ": continue in the new window");
    } else {
      activity("login " + name + ": the browser blocked the new window; ", "",
        h("a", {href: u.href, target: "_blank", rel: "noopener noreferrer"}, "open the authorization page"));
    }
  } catch (e) {
    if (win) win.close();
    activity("login " + name + ": " + e.message, "error");
  }
}

// The panel's head and tabs are built once for the selected server and
// updated in place, as the rows are: its buttons outlive the updates.
let head = null;          // the head's nodes (detailHead), for head.name
const tabs = ["tools", "logs", "audit", "pins", "config"];

function renderDetailHead() {
  const s = selected && server(selected);
  const panel = document.getElementById("detail");
  if (!s) { panel.hidden = true; return; }
  if (!head || head.name !== s.name) {
    const next = detailHead(s.name);
    if (!head) panel.replaceChildren(next.head, next.tabBar, h("div", {class: "body"}));
    else { head.head.replaceWith(next.head); head.tabBar.replaceWith(next.tabBar); }
    head = next;
  }
  const st = stateOf(s);
  setAttr(head.pill, "class", "pill " + st.state.replace(" ", "-"));
  setText(head.pill, st.state);
  place(head.head, head.login.box, !!s.canLogin);
  if (s.canLogin) updateLoginBox(head.login, s);
  for (const b of head.tabBar.children) {
    const t = b.dataset.tab;
    setAttr(b, "class", t === tab ? "active" : "");
    setText(b, t === "pins" && s.toolChangesPending ? "pins (" + s.toolChangesPending + ")" : t);
  }
}

// detailHead builds the panel's head and tab bar for server name.
function detailHead(name) {
  const d = {name, pill: h("span", {class: "pill"}), login: loginBox(name)};
  d.head = h("div", {class: "head"},
    h("h2", {}, name), d.pill,
    h("div", {class: "buttons"},
      h("button", {class: "start", onclick: () => act("start", name)}, "Start"),
      h("button", {class: "stop", onclick: () => act("stop", name)}, "Stop"),
      h("button", {class: "restart", onclick: () => act("restart", name)}, "Restart")));
  d.tabBar = h("div", {class: "tabs"}, tabs.map(t => h("button", {dataset: {tab: t},
    onclick: () => { tab = t; renderDetailHead(); loadTab(); }}, t)));
  return d;
}

// loginBox is a remote server's OAuth login: the button (log in, or again),
// where it stands, and the command that does the same.
function loginBox(name) {
  const l = {
    button: h("button", {class: "login", onclick: () => login(name)}),
    state: h("span", {}),
  };
  l.box = h("div", {class: "oauth"}, l.button, l.state, h("span", {class: "sub"}, "or: ", h("code", {}, "mcpdctl login " + name)));
  return l;
}

function updateLoginBox(l, s) {
  setAttr(l.button, "class", "login" + (s.loginRequired ? " primary" : ""));
  setText(l.button, s.loginRequired ? "Log in" : "Log in again");
  let cls = "muted", text = "";
  if (s.loginInProgress) text = "waiting for the authorization server…";
  else if (s.loginError) { cls = "error"; text = "last login failed: " + s.loginError; }
  else if (s.loggedIn) text = "logged in" + (s.oauthIssuer ? " at " + s.oauthIssuer : "");
  setAttr(l.state, "class", cls);
  setText(l.state, text);
  place(l.box, l.state, !!text, l.box.lastChild);
}

function body() { return document.querySelector("#detail .body"); }

function stopFollow() { if (follow) { follow.close(); follow = null; } }

async function loadTab() {
  stopFollow();
  const name = selected;
  const b = body();
  if (!b) return;
  b.replaceChildren(h("p", {class: "muted"}, "Loading…"));
  try {
    const node = await ({tools: toolsTab, logs: logsTab, audit: auditTab, pins: pinsTab, config: configTab})[tab](name);
    if (name === selected) body().replaceChildren(node);
  } catch (e) {
    if (name === selected) body().replaceChildren(h("p", {class: "error"}, e.message));
  }
}

const enc = encodeURIComponent;

async function toolsTab(name) {
  const res = await getJSON("/servers/" + enc(name) + "/tools");
  const wrap = h("div", {class: "tools"});
  if (res.unavailable) wrap.append(h("p", {class: "error"}, res.unavailable));
  if (res.error) wrap.append(h("p", {class: "error"}, res.error));
  if (!res.tools.length) wrap.append(h("p", {class: "muted"}, "No tools listed."));
  for (const t of res.tools) wrap.append(toolForm(name, t));
  return wrap;
}

// toolForm is a tool's schema and a form to call it: the simple
// properties of its inputSchema as fields, else a JSON textarea.
function toolForm(server, tool) {
  const schema = tool.inputSchema || {};
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const simple = Object.keys(props).length > 0 && Object.entries(props).every(([, p]) => ["string", "number", "integer", "boolean"].includes(p.type));
  const fields = [];
  const form = h("form", {class: "call", dataset: {tool: tool.name}});
  const result = h("pre", {class: "result", dataset: {tool: tool.name}, hidden: true});
  const jsonArea = h("textarea", {name: "__json", class: "full", placeholder: "{}", hidden: simple});
  jsonArea.value = simple ? "" : JSON.stringify(Object.fromEntries(Object.keys(props).map(k => [k, null])), null, 2);
  if (!simple) form.append(h("label", {class: "full"}, "arguments (JSON)"));
  if (simple) {
    for (const [k, p] of Object.entries(props)) {
      let input;
      if (p.enum) input = h("select", {name: k}, (required.has(k) ? [] : [h("option", {value: ""}, "")]).concat(p.enum.map(v => h("option", {value: String(v)}, String(v)))));
      else if (p.type === "boolean") input = h("input", {type: "checkbox", name: k});
      else input = h("input", {type: p.type === "string" ? "text" : "number", name: k, step: p.type === "integer" ? "1" : "any",
        placeholder: p.description || "", required: required.has(k)});
      fields.push([k, p]);
      form.append(h("label", {for: k, title: p.description || ""}, k + (required.has(k) ? " *" : "")), input);
    }
  }
  const toggle = h("button", {type: "button", onclick: () => { jsonArea.hidden = !jsonArea.hidden; }}, "JSON");
  form.append(jsonArea, h("div", {class: "full buttons"}, h("button", {type: "submit", class: "primary"}, "Call " + tool.name), simple ? toggle : null));
  form.addEventListener("submit", async e => {
    e.preventDefault();
    let args = {};
    try {
      if (!jsonArea.hidden && jsonArea.value.trim()) args = JSON.parse(jsonArea.value);
      else for (const [k, p] of fields) {
        const el = form.elements[k];
        if (p.type === "boolean") { if (el.checked) args[k] = true; continue; }
        if (el.value === "") continue;
        args[k] = p.type === "string" ? el.value : Number(el.value);
      }
    } catch (err) {
      result.hidden = false; result.className = "result error"; result.textContent = "Invalid JSON: " + err.message;
      return;
    }
    result.hidden = false; result.className = "result"; result.textContent = "Calling…";
    try {
      const out = await post("/servers/" + enc(server) + "/call", {tool: tool.name, arguments: args});
      if (out.error) { result.className = "result error"; result.textContent = "Error " + out.error.code + ": " + out.error.message; }
      else {
        result.className = "result" + (out.result && out.result.isError ? " error" : "");
        result.textContent = resultText(out.result) + "\n\n(" + (out.durationUs / 1000).toFixed(1) + " ms)";
      }
    } catch (err) {
      result.className = "result error"; result.textContent = err.message;
    }
  });
  return h("details", {class: "tool"},
    h("summary", {}, h("strong", {}, tool.name), h("span", {class: "desc"}, tool.description || "")),
    form, result,
    h("details", {}, h("summary", {class: "muted"}, "schema"), h("pre", {}, JSON.stringify(tool, null, 2))));
}

// resultText shows a tool result's text content plainly, the rest as JSON.
function resultText(r) {
  if (r && Array.isArray(r.content) && r.content.every(c => c.type === "text")) {
    const text = r.content.map(c => c.text).join("\n");
    return r.structuredContent ? text + "\n\n" + JSON.stringify(r.structuredContent, null, 2) : text;
  }
  return JSON.stringify(r, null, 2);
}

async function logsTab(name) {
  const res = await getJSON("/servers/" + enc(name) + "/logs?n=300");
  const pre = h("pre", {class: "logs"});
  const add = l => {
    pre.append(new Date(l.timeUnixMs).toLocaleTimeString() + (l.pid ? " [" + l.pid + "] " : " ") + l.text + "\n");
    while (pre.childNodes.length > 2000) pre.firstChild.remove();
    pre.scrollTop = pre.scrollHeight;
  };
  res.lines.forEach(add);
  if (!res.lines.length) pre.append("(nothing on stderr yet)\n");
  follow = new EventSource(api + "/servers/" + enc(name) + "/logs/follow");
  follow.addEventListener("line", e => add(JSON.parse(e.data)));
  setTimeout(() => { pre.scrollTop = pre.scrollHeight; });
  return h("div", {}, h("p", {class: "muted"}, "stderr, live"), pre);
}

async function auditTab(name) {
  const res = await getJSON("/servers/" + enc(name) + "/audit");
  if (!res.on) return h("p", {class: "muted"}, 'The audit log is off ("audit" in the config).');
  if (!res.records.length) return h("p", {class: "muted"}, "No audit records for this server yet.");
  return h("table", {},
    h("thead", {}, h("tr", {}, ["Time", "App", "Door", "Method", "Name", "Outcome", "Duration", "Cache"].map(t => h("th", {}, t)))),
    h("tbody", {}, res.records.map(r => h("tr", {},
      h("td", {}, new Date(r.timeUnixMs).toLocaleString()), h("td", {}, r.app || "–"), h("td", {}, r.front),
      h("td", {}, r.method), h("td", {}, r.name || ""), h("td", {class: r.outcome === "ok" ? "" : "error"}, r.outcome, r.error ? h("div", {class: "sub"}, r.error) : null),
      h("td", {}, (r.durationUs / 1000).toFixed(1) + " ms"), h("td", {}, r.cache || "")))));
}

// lineDiff is a line diff of a and b (longest common subsequence).
function lineDiff(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  const n = x.length, m = y.length;
  const L = Array.from({length: n + 1}, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
    L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push(["", x[i]]); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) out.push(["del", x[i++]]);
    else out.push(["add", y[j++]]);
  }
  while (i < n) out.push(["del", x[i++]]);
  while (j < m) out.push(["add", y[j++]]);
  return out;
}

async function pinsTab(name) {
  const res = await getJSON("/servers/" + enc(name) + "/pins");
  const wrap = h("div", {class: "pins"}, h("p", {}, "Pin mode: ", h("strong", {}, res.mode),
    res.mode === "enforce" ? " (changed tools are withheld until approved)" : res.mode === "warn" ? " (changes are served and reported)" : ""));
  if (!res.changes.length) {
    wrap.append(h("p", {class: "muted"}, "Every tool matches its approved definition."));
    return wrap;
  }
  for (const c of res.changes) {
    const pinned = c.pinned ? JSON.stringify(c.pinned, null, 2) : "";
    const current = c.current ? JSON.stringify(c.current, null, 2) : "";
    wrap.append(h("h3", {}, c.tool + " — " + c.kind + (c.members && c.members.length ? " (" + c.members.join(", ") + ")" : "")),
      h("pre", {class: "diff"}, lineDiff(pinned, current).map(([k, t]) => h("span", {class: k || null}, (k === "add" ? "+ " : k === "del" ? "- " : "  ") + t + "\n"))));
  }
  const btn = h("button", {class: "primary approve", onclick: async () => {
    btn.disabled = true;
    try {
      const out = await post("/servers/" + enc(name) + "/approve", {tools: res.changes.map(c => c.tool)});
      activity("approved " + name + ": " + (out.approved || []).join(", "));
      loadTab();
    } catch (e) { activity("approve " + name + ": " + e.message, "error"); btn.disabled = false; }
  }}, "Approve " + res.changes.length + " change" + (res.changes.length > 1 ? "s" : ""));
  wrap.append(h("div", {class: "buttons"}, btn), h("p", {class: "muted"}, "The same as: mcpdctl tools approve " + name));
  return wrap;
}

async function configTab(name) {
  const s = server(name);
  const row = (k, v) => v === undefined || v === "" || v === null ? [] : [h("dt", {}, k), h("dd", {}, v)];
  let info = "";
  if (s.serverInfo) info = (s.serverInfo.name || "") + " " + (s.serverInfo.version || "");
  return h("dl", {class: "kv"},
    row(s.transport === "remote" ? "URL" : "command", s.command),
    row("working directory", s.cwd),
    row("environment", s.envKeys && s.envKeys.length ? s.envKeys.join(", ") + " (values not shown)" : ""),
    row("headers", s.headerNames && s.headerNames.length ? s.headerNames.join(", ") + " (values not shown)" : ""),
    row("server", info.trim()),
    row("protocol", s.protocolVersion), row("share", s.share), row("autostart", s.autostart ? "yes" : "no"),
    row("pin", s.pinMode), row("cache", s.cachePolicy), row("sandbox", s.sandbox),
    row("last exit", s.lastExit), row("last error", s.lastError));
}

// ---- live updates ----

function connect() {
  const es = new EventSource(api + "/events");
  const liveEl = document.getElementById("live");
  es.addEventListener("open", () => { liveEl.className = "live on"; liveEl.textContent = "live"; });
  es.addEventListener("error", () => { liveEl.className = "live off"; liveEl.textContent = "reconnecting…"; });
  es.addEventListener("snapshot", e => {
    const prev = snap && selected && server(selected);
    snap = JSON.parse(e.data);
    snapAt = performance.now();
    for (const k of Object.keys(live)) delete live[k];
    render();
    const cur = selected && server(selected);
    if (prev && cur && (prev.toolChangesPending !== cur.toolChangesPending || (prev.state !== cur.state && tab === "pins"))) {
      if (tab === "pins" || tab === "tools") loadTab();
    }
  });
  es.addEventListener("state", e => {
    const ev = JSON.parse(e.data);
    if (ev.state === "added" || ev.state === "removed") {
      activity(ev.server + " " + ev.state);
      return;
    }
    activity(ev.server + " " + ev.state + (ev.pid ? " (pid " + ev.pid + ")" : "") + (ev.exit ? ": " + ev.exit : "") + (ev.error ? ": " + ev.error : ""),
      ["exited", "crashloop", "failed"].includes(ev.state) ? "error" : "");
    if (ev.state !== "ready") live[ev.server] = ev;
    else delete live[ev.server];
    if (snap) renderServers();
  });
  es.addEventListener("problem", e => activity(JSON.parse(e.data).error, "error"));
}

// Countdowns and uptimes tick here, without asking mcpd.
setInterval(() => { if (snap) { renderSummary(); renderServers(); } }, 1000);
connect();
