'use strict';
// Conversions between mcpd's wire messages and the package's plain objects.

function parseJSON(text, what) {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`mcpd sent invalid JSON in ${what}: ${err.message}`);
  }
}

/** enumName turns "SERVER_STATE_READY" into "ready" given the prefix. */
function enumName(value, prefix) {
  if (typeof value !== 'string') return value;
  return value.startsWith(prefix) ? value.slice(prefix.length).toLowerCase() : value.toLowerCase();
}

function serverStatus(s) {
  return {
    ...s,
    state: enumName(s.state, 'SERVER_STATE_'),
    serverInfo: parseJSON(s.serverInfoJson, 'server_info_json'),
    capabilities: parseJSON(s.capabilitiesJson, 'capabilities_json'),
  };
}

function status(r) {
  return { ...r, servers: (r.servers || []).map(serverStatus) };
}

function mcpError(e) {
  if (!e) return undefined;
  let data;
  if (e.dataJson) {
    try { data = JSON.parse(e.dataJson); } catch { data = e.dataJson; }
  }
  return { code: Number(e.code), message: e.message, data };
}

/** serverList turns one ServerList into { server, items, error, unavailable, cache }. */
function serverList(l) {
  return {
    server: l.server,
    items: l.itemsJson ? parseJSON(l.itemsJson, 'items_json') : [],
    error: mcpError(l.error),
    unavailable: l.unavailable || undefined,
    cache: enumName(l.cache, 'CACHE_STATUS_'),
  };
}

function subscriptionEvent(e) {
  const out = {
    kind: enumName(e.kind, 'SUBSCRIPTION_EVENT_KIND_'),
    server: e.server,
    timeUnixMs: e.timeUnixMs,
  };
  if (e.uri) out.uri = e.uri;
  if (e.paramsJson) out.params = parseJSON(e.paramsJson, 'params_json');
  if (e.state) out.state = e.state;
  if (e.pid) out.pid = e.pid;
  if (e.exit) out.exit = e.exit;
  if (e.error) out.error = e.error;
  if (e.synthetic) out.synthetic = true;
  if (e.droppedLogMessages) out.droppedLogMessages = e.droppedLogMessages;
  if (e.duringCalls) out.duringCalls = true;
  if (e.ack) out.ack = e.ack;
  return out;
}

module.exports = { parseJSON, enumName, status, serverStatus, serverList, subscriptionEvent, mcpError };
