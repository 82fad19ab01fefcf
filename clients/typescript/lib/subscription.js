'use strict';
// Subscription: a Subscribe stream as an async iterator of typed events.

const grpc = require('@grpc/grpc-js');
const { McpdError, fromStatus } = require('./errors');
const { subscriptionEvent } = require('./convert');

// highWater is how many unread events make the stream pause (gRPC flow
// control then holds the rest in mcpd, which coalesces or reports lag).
const highWater = 256;

class Subscription {
  constructor(client, call) {
    this._client = client;
    this._call = call;
    this._queue = []; // events not yet read
    this._waiters = []; // pending next() resolvers: {resolve, reject}
    this._done = false;
    this._error = undefined;
    this._closed = false;
    this.id = undefined;
    this.ack = new Promise((resolve, reject) => { this._ackWaiter = { resolve, reject }; });
    this.ack.catch(() => {}); // a caller need not await ack
    call.on('data', (msg) => this._push(subscriptionEvent(msg)));
    call.on('error', (err) => this._finish(this._closed && err.code === grpc.status.CANCELLED
      ? undefined : fromStatus(err, client.socketPath, 'subscribe')));
    call.on('end', () => this._finish(undefined));
  }

  _push(ev) {
    if (ev.kind === 'ack' && this.id === undefined) {
      this.id = ev.ack && ev.ack.subscriptionId;
      this._ackWaiter.resolve(ev.ack);
    }
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
    const ack = await this.ack;
    const resp = await this._client._unary('UpdateSubscription', {
      subscriptionId: ack.subscriptionId, addResourceUris: add, removeResourceUris: remove,
    });
    return resp.servers || [];
  }

  /** close cancels the stream; pending and later next() calls end the iteration. */
  close() {
    if (this._closed) return;
    this._closed = true;
    this._call.cancel();
    this._finish(undefined);
    this._queue.length = 0;
  }
}

module.exports = { Subscription };
