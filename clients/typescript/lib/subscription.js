'use strict';
// Subscription: a Subscribe stream as an async iterator of typed events.

const grpc = require('@grpc/grpc-js');
const { McpdError, fromStatus } = require('./errors');
const { subscriptionEvent } = require('./convert');

// highWater is how many unread events make the stream pause (gRPC flow
// control then holds the rest in mcpd, which coalesces or reports lag).
const highWater = 256;

// Reconnect backoff while mcpd is away, in milliseconds.
const retryFirstMs = 100;
const retryMaxMs = 5000;

class Subscription {
  constructor(client, request, { reconnect = false } = {}) {
    this._client = client;
    this._request = request;
    this._reconnect = reconnect;
    this._queue = []; // events not yet read
    this._waiters = []; // pending next() resolvers: {resolve, reject}
    this._done = false;
    this._error = undefined;
    this._closed = false;
    this._retryMs = retryFirstMs;
    this._timer = undefined; // pending reconnect
    this.id = undefined;
    this.ack = new Promise((resolve, reject) => { this._ackWaiter = { resolve, reject }; });
    this.ack.catch(() => {}); // a caller need not await ack
    this._open(false);
  }

  /** _open starts a Subscribe call; retrying says it replaces a lost one. */
  _open(retrying) {
    const call = this._client._stub.Subscribe(this._request, this._client._metadata());
    this._call = call;
    let acked = false;
    let failed = false; // an error was handled: a later 'end' of this call means nothing
    call.on('data', (msg) => {
      if (call !== this._call || failed) return;
      const ev = subscriptionEvent(msg);
      if (ev.kind === 'ack') {
        acked = true;
        this._retryMs = retryFirstMs;
        this.id = ev.ack && ev.ack.subscriptionId;
        this._ackWaiter.resolve(ev.ack);
      }
      this._push(ev);
    });
    call.on('error', (err) => {
      if (call !== this._call || this._closed) return;
      failed = true;
      const e = fromStatus(err, this._client.socketPath, 'subscribe');
      if (this._reconnect && e.code === grpc.status.UNAVAILABLE) {
        if (acked || !retrying) this._push({ kind: 'disconnected', server: '', timeUnixMs: Date.now(), error: e.message });
        this._retry();
        return;
      }
      this._finish(e);
    });
    call.on('end', () => { if (call === this._call && !failed) this._finish(undefined); });
  }

  _retry() {
    const wait = this._retryMs;
    this._retryMs = Math.min(this._retryMs * 2, retryMaxMs);
    this._timer = setTimeout(() => {
      this._timer = undefined;
      if (this._closed) return;
      try {
        this._open(true);
      } catch (err) { // the client was closed
        this._finish(new McpdError(`subscribe: ${err.message}`, { code: grpc.status.CANCELLED, cause: err }));
      }
    }, wait);
  }

  _push(ev) {
    const w = this._waiters.shift();
    if (w) { w.resolve({ value: ev, done: false }); return; }
    this._queue.push(ev);
    if (this._queue.length >= highWater) this._call.pause();
  }

  _finish(err) {
    if (this._done) return;
    this._done = true;
    this._error = err;
    this._ackWaiter.reject(err || new McpdError('subscribe: the stream ended before its acknowledgement'));
    for (const w of this._waiters.splice(0)) {
      if (err) w.reject(err); else w.resolve({ value: undefined, done: true });
    }
  }

  /** next returns the next event; it rejects with McpdError if the stream failed. */
  next() {
    if (this._queue.length > 0) {
      const value = this._queue.shift();
      if (this._queue.length < highWater / 2) this._call.resume();
      return Promise.resolve({ value, done: false });
    }
    if (this._done) {
      if (this._error) { const e = this._error; this._error = undefined; return Promise.reject(e); }
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => this._waiters.push({ resolve, reject }));
  }

  /** return ends the iteration (break in for await) and closes the stream. */
  return() { this.close(); return Promise.resolve({ value: undefined, done: true }); }

  [Symbol.asyncIterator]() { return this; }

  /** update adds or removes watched resource URIs without reopening the stream. */
  async update({ add = [], remove = [] } = {}) {
    await this.ack;
    const resp = await this._client._unary('UpdateSubscription', {
      subscriptionId: this.id, addResourceUris: add, removeResourceUris: remove,
    });
    // A reconnect resubscribes with the URIs as they are now.
    const uris = new Set(this._request.resourceUris);
    for (const u of add) uris.add(u);
    for (const u of remove) uris.delete(u);
    this._request = { ...this._request, resourceUris: [...uris] };
    return resp.servers || [];
  }

  /** close cancels the stream; pending and later next() calls end the iteration. */
  close() {
    if (this._closed) return;
    this._closed = true;
    if (this._timer) clearTimeout(this._timer);
    this._call.cancel();
    this._finish(undefined);
    this._queue.length = 0;
    if (this.onClose) this.onClose();
  }
}

module.exports = { Subscription };
