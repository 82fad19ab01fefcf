'use strict';
// Host: the app answers roots/list, sampling/createMessage and
// elicitation/create for legacy children over a Host stream.

const grpc = require('@grpc/grpc-js');
const { McpdError, fromStatus } = require('./errors');
const { parseJSON } = require('./convert');

const handlerOf = {
  'roots/list': 'roots',
  'sampling/createMessage': 'sampling',
  'elicitation/create': 'elicitation',
};

// JSON-RPC codes of answers the host makes itself.
const methodNotFound = -32601;
const internalError = -32603;

class Host {
  constructor(client, call, handlers) {
    this._client = client;
    this._call = call;
    this._handlers = handlers;
    this._pending = new Map(); // callId → AbortController of a call being answered
    this._closed = false;
    this.id = undefined;
    this.ready = new Promise((resolve, reject) => { this._readyWaiter = { resolve, reject }; });
    this.ready.catch(() => {});
    this.closed = new Promise((resolve) => { this._closedResolve = resolve; });
    call.on('data', (msg) => this._onMessage(msg));
    call.on('error', (err) => this._end(this._closed && err.code === grpc.status.CANCELLED
      ? undefined : fromStatus(err, client.socketPath, 'host')));
    call.on('end', () => this._end(undefined));
  }

  _onMessage(msg) {
    if (msg.registered) {
      this.id = msg.registered.hostId;
      this._readyWaiter.resolve(this.id);
    } else if (msg.call) {
      this._answer(msg.call);
    } else if (msg.cancel) {
      const ac = this._pending.get(msg.cancel.callId);
      if (ac) ac.abort(new McpdError(`host call cancelled: ${msg.cancel.reason}`, { code: grpc.status.CANCELLED }));
    }
  }

  async _answer(c) {
    const ac = new AbortController();
    this._pending.set(c.callId, ac);
    const answer = { callId: c.callId };
    try {
      const fn = this._handlers[handlerOf[c.method]];
      if (typeof fn !== 'function') {
        answer.error = { code: methodNotFound, message: `this host does not answer ${c.method}` };
      } else {
        const params = parseJSON(c.paramsJson, 'params_json') || {};
        const result = await fn(params, { server: c.server, method: c.method, callId: c.callId, signal: ac.signal });
        answer.resultJson = JSON.stringify(result === undefined ? {} : result);
      }
    } catch (err) {
      const code = Number.isInteger(err && err.code) && err.code < 0 ? err.code : internalError;
      answer.error = { code, message: String((err && err.message) || err) };
      if (err && err.data !== undefined) answer.error.dataJson = JSON.stringify(err.data);
    } finally {
      this._pending.delete(c.callId);
    }
    if (ac.signal.aborted || this._closed) return; // no answer is expected
    this._call.write({ answer });
  }

  _end(err) {
    if (this._ended) return;
    this._ended = true;
    for (const ac of this._pending.values()) ac.abort(err || new McpdError('host stream closed', { code: grpc.status.CANCELLED }));
    this._readyWaiter.reject(err || new McpdError('host: the stream ended before registration', { code: grpc.status.CANCELLED }));
    this._closedResolve(err);
  }

  /** close ends the registration; mcpd answers the host's open calls with an error. */
  close() {
    if (this._closed) return;
    this._closed = true;
    this._call.cancel();
    this._end(undefined);
    if (this.onClose) this.onClose();
  }
}

module.exports = { Host };
