'use strict';
// McpdClient: typed, promise-based calls to mcpd over its Unix socket.

const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const { McpdError, fromMcpError, fromStatus } = require('./errors');
const { METADATA } = require('./status');
const { defaultSocketPath } = require('./socket');
const convert = require('./convert');
const { Subscription } = require('./subscription');
const { Host } = require('./host');

const PROTO_PATH = path.join(__dirname, '..', 'proto', 'mcpd.proto');
const VERSION = require('../package.json').version;

let service; // the loaded mcpd.v1.Mcpd client constructor, shared by clients

function loadService() {
  if (!service) {
    const def = protoLoader.loadSync(PROTO_PATH, { longs: Number, enums: String, defaults: true, oneofs: true });
    service = grpc.loadPackageDefinition(def).mcpd.v1.Mcpd;
  }
  return service;
}

let progressTokens = 0; // makes progress tokens unique in the process

class McpdClient {
  /**
   * @param {object} [opts]
   * @param {string} [opts.socketPath] the socket; default as mcpdctl finds it.
   * @param {string} [opts.clientName] the app's name, shown by `mcpdctl status`.
   * @param {string} [opts.clientVersion] the app's version.
   */
  constructor({ socketPath, clientName = 'mcpd-client-js', clientVersion = VERSION } = {}) {
    this.socketPath = socketPath ? path.resolve(socketPath) : defaultSocketPath();
    this.clientName = clientName;
    this.clientVersion = clientVersion;
    this._calls = new Set(); // calls in flight (close ends them)
    this._streams = new Set(); // open subscriptions and hosts (close closes them)
    this._closed = false;
    const Service = loadService();
    this._stub = new Service(`unix:${this.socketPath}`, grpc.credentials.createInsecure(), {
      // Long-lived Subscribe and Host streams stay alive through idle hours.
      'grpc.keepalive_time_ms': 30000,
      'grpc.keepalive_permit_without_calls': 1,
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
      // A local daemon comes back within seconds; gRPC's default backoff
      // grows to two minutes.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 5000,
    });
  }

  _metadata() {
    const md = new grpc.Metadata();
    md.set(METADATA.clientName, this.clientName);
    if (this.clientVersion) md.set(METADATA.clientVersion, this.clientVersion);
    return md;
  }

  _options(timeoutMs) {
    return { timeoutMs: timeoutMs || 0, client: { name: this.clientName, version: this.clientVersion || '' } };
  }

  /**
   * _callOptions are grpc-js call options: with timeoutMs a deadline, a
   * second after mcpd's own timeout for the request (whose error says
   * more), so that a call to an mcpd that does not answer ends too.
   */
  _callOptions(timeoutMs) {
    return timeoutMs > 0 ? { deadline: Date.now() + timeoutMs + deadlineGraceMs } : {};
  }

  /** _track keeps call until it ends, so that close() can end it. */
  _track(call) {
    this._calls.add(call);
    const untrack = () => this._calls.delete(call);
    call.on('status', untrack);
    call.on('error', untrack);
    return call;
  }

  /** _failure is the McpdError of a call that failed with err. */
  _failure(err, what, signal) {
    if (signal && signal.aborted) return abortError(signal, what);
    if (this._closed) return closedError(what);
    return fromStatus(err, this.socketPath, what);
  }

  /** _unary calls a unary RPC, honouring an AbortSignal and timeoutMs. */
  _unary(method, request, { signal, timeoutMs } = {}) {
    return new Promise((resolve, reject) => {
      if (signal && signal.aborted) {
        reject(abortError(signal, method));
        return;
      }
      if (this._closed) {
        reject(closedError(method));
        return;
      }
      let onAbort;
      const call = this._track(this._stub[method](request, this._metadata(), this._callOptions(timeoutMs), (err, resp) => {
        if (signal) signal.removeEventListener('abort', onAbort);
        if (err) reject(this._failure(err, method, signal));
        else resolve(resp);
      }));
      if (signal) {
        onAbort = () => call.cancel();
        signal.addEventListener('abort', onAbort, { once: true });
      }
    });
  }

  /** _stream runs a server-streaming MCP RPC (CallTool, SendRequest) to its response. */
  _stream(method, request, what, { signal, timeoutMs, onProgress, onMessage } = {}) {
    return new Promise((resolve, reject) => {
      if (signal && signal.aborted) {
        reject(abortError(signal, what));
        return;
      }
      if (this._closed) {
        reject(closedError(what));
        return;
      }
      const call = this._track(this._stub[method](request, this._metadata(), this._callOptions(timeoutMs)));
      let response;
      const onAbort = () => call.cancel();
      if (signal) signal.addEventListener('abort', onAbort, { once: true });
      const done = () => { if (signal) signal.removeEventListener('abort', onAbort); };
      call.on('data', (ev) => {
        try {
          if (ev.progressJson && onProgress) onProgress(JSON.parse(ev.progressJson));
          else if (ev.messageJson && onMessage) onMessage(JSON.parse(ev.messageJson));
          else if (ev.response) response = ev.response;
        } catch (err) {
          call.cancel();
          reject(err);
        }
      });
      call.on('error', (err) => {
        done();
        reject(this._failure(err, what, signal));
      });
      call.on('end', () => {
        done();
        if (!response) reject(new McpdError(`${what}: mcpd ended the call without a response`));
        else resolve(response);
      });
    });
  }

  /** _result parses an McpResponse, throwing McpdError for a JSON-RPC error. */
  _result(resp, what) {
    if (resp.error) throw fromMcpError(resp.error, resp.server, what);
    return convert.parseJSON(resp.resultJson, 'result_json') || {};
  }

  /** status returns mcpd's status: daemon, servers, apps, subscriptions. */
  async status(opts) { return convert.status(await this._unary('GetStatus', {}, opts)); }

  /** servers lists the configured servers with their state. */
  async servers(opts) {
    const resp = await this._unary('ListServers', {}, opts);
    return (resp.servers || []).map(convert.serverStatus);
  }

  /** startServer starts a server (clearing a crash loop or an explicit stop). */
  async startServer(name, opts) { return convert.serverStatus((await this._unary('StartServer', { name }, opts)).server); }
  /** stopServer stops a server until it is started again. */
  async stopServer(name, opts) { return convert.serverStatus((await this._unary('StopServer', { name }, opts)).server); }
  /** restartServer stops a server if running and starts it again. */
  async restartServer(name, opts) { return convert.serverStatus((await this._unary('RestartServer', { name }, opts)).server); }
  /** logs returns a server's recent stderr lines, oldest first. */
  async logs(name, { lines = 0, ...opts } = {}) {
    return (await this._unary('GetLogs', { name, lines }, opts)).lines || [];
  }

  async _list(method, server, opts = {}) {
    const resp = await this._unary(method, { server: server || '', options: this._options(opts.timeoutMs) }, opts);
    return (resp.servers || []).map(convert.serverList);
  }

  /** listTools lists the tools of one server, or of every server: one entry per server. */
  listTools(server, opts) { return this._list('ListTools', server, opts); }
  /** listPrompts lists prompts, one entry per server. */
  listPrompts(server, opts) { return this._list('ListPrompts', server, opts); }
  /** listResources lists resources, one entry per server. */
  listResources(server, opts) { return this._list('ListResources', server, opts); }
  /** listResourceTemplates lists resource templates, one entry per server. */
  listResourceTemplates(server, opts) { return this._list('ListResourceTemplates', server, opts); }

  /**
   * callTool calls a tool and returns its CallToolResult. A result with
   * isError: true rejects with an McpdError carrying it as toolResult
   * (unless opts.allowToolError).
   */
  async callTool(server, tool, args = {}, opts = {}) {
    const meta = { ...(opts.meta || {}) };
    if (opts.onProgress && meta.progressToken === undefined) meta.progressToken = `mcpd-js-${process.pid}-${++progressTokens}`;
    const req = {
      server, tool,
      argumentsJson: JSON.stringify(args || {}),
      metaJson: Object.keys(meta).length ? JSON.stringify(meta) : '',
      options: this._options(opts.timeoutMs),
    };
    const what = `tools/call ${tool}`;
    const result = this._result(await this._stream('CallTool', req, what, opts), what);
    if (result.isError && !opts.allowToolError) {
      const text = (result.content || []).filter((c) => c.type === 'text').map((c) => c.text).join(' ');
      throw new McpdError(`${server}: tool ${tool} failed: ${text || 'isError result'}`,
        { code: grpc.status.OK, toolResult: result, server });
    }
    return result;
  }

  /** getPrompt gets a prompt with its string arguments. */
  async getPrompt(server, name, args = {}, opts = {}) {
    const req = { server, name, argumentsJson: JSON.stringify(args || {}), options: this._options(opts.timeoutMs) };
    return this._result(await this._unary('GetPrompt', req, opts), `prompts/get ${name}`);
  }

  /** readResource reads a resource by URI. */
  async readResource(server, uri, opts = {}) {
    const req = { server, uri, options: this._options(opts.timeoutMs) };
    return this._result(await this._unary('ReadResource', req, opts), `resources/read ${uri}`);
  }

  /** complete asks for completions; params are completion/complete's (ref, argument, context). */
  async complete(server, params, opts = {}) {
    const req = { server, paramsJson: JSON.stringify(params || {}), options: this._options(opts.timeoutMs) };
    return this._result(await this._unary('Complete', req, opts), 'completion/complete');
  }

  /** request sends any MCP request (e.g. "ping") and returns its result. */
  async request(server, method, params = {}, opts = {}) {
    const req = { server, method, paramsJson: JSON.stringify(params || {}), options: this._options(opts.timeoutMs) };
    return this._result(await this._stream('SendRequest', req, method, opts), method);
  }

  /**
   * subscribe opens a Subscribe stream: an async iterator of events with
   * close(), ack (a promise of the first event's ack) and update(). With
   * reconnect, losing mcpd yields a 'disconnected' event and the stream is
   * opened again once mcpd is back (a new 'ack' event: resync then).
   */
  subscribe(what = {}) {
    const req = {
      servers: what.servers || [],
      toolsListChanged: !!what.toolsListChanged,
      promptsListChanged: !!what.promptsListChanged,
      resourcesListChanged: !!what.resourcesListChanged,
      resourceUris: what.resourceUris || [],
      serverState: !!what.serverState,
      logMessages: !!what.logMessages,
      client: { name: this.clientName, version: this.clientVersion || '' },
    };
    if (this._closed) throw closedError('subscribe');
    return this._keep(new Subscription(this, req, { reconnect: !!what.reconnect }));
  }

  /** _keep keeps an open subscription or host until it is closed. */
  _keep(s) {
    this._streams.add(s);
    s.onClose = () => this._streams.delete(s);
    return s;
  }

  /**
   * host registers handlers answering legacy children's requests:
   * { roots, sampling, elicitation } callbacks (params, ctx) => result.
   */
  host(handlers, { servers = [] } = {}) {
    if (this._closed) throw closedError('host');
    const call = this._stub.Host(this._metadata());
    const h = this._keep(new Host(this, call, handlers));
    call.write({
      register: {
        servers,
        roots: typeof handlers.roots === 'function',
        sampling: typeof handlers.sampling === 'function',
        elicitation: typeof handlers.elicitation === 'function',
        client: { name: this.clientName, version: this.clientVersion || '' },
      },
    });
    return h;
  }

  /**
   * close closes the connection: calls in flight fail with CANCELLED,
   * subscriptions end and hosts are unregistered, so that nothing keeps
   * the process alive; later calls fail with CANCELLED.
   */
  close() {
    if (this._closed) return;
    this._closed = true;
    for (const s of [...this._streams]) s.close();
    for (const call of [...this._calls]) call.cancel();
    this._stub.close();
  }
}

// deadlineGraceMs is how much longer than timeoutMs a call's own deadline
// is: mcpd's timeout error, which names the server, comes first.
const deadlineGraceMs = 1000;

function closedError(what) {
  return new McpdError(`${what}: the client was closed`, { code: grpc.status.CANCELLED });
}

function abortError(signal, what) {
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason || 'aborted');
  return new McpdError(`${what}: aborted: ${reason}`, { code: grpc.status.CANCELLED });
}

module.exports = { McpdClient };
