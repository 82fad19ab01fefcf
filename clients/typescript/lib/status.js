'use strict';
// The class of one of mcpd's failures, read from its status details.
//
// A failure of mcpd's with a class carries a google.rpc.Status in the
// grpc-status-details-bin trailer, whose details hold a google.rpc.ErrorInfo
// of domain "mcpd.dev" (see ErrorReason in mcpd.proto). The package reads
// only those three messages' few fields, so it decodes them here rather
// than loading googleapis' protos.

/** Metadata keys of mcpd's calls and of its replies. */
const METADATA = Object.freeze({
  clientName: 'mcpd-client-name', // the app's name
  clientVersion: 'mcpd-client-version', // the app's version
  daemon: 'mcpd-daemon', // trailer: the status is mcpd's own
  statusDetails: 'grpc-status-details-bin', // trailer: google.rpc.Status
});

const ERROR_DOMAIN = 'mcpd.dev';
const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';

/** fields decodes one protobuf message into [field number, value] pairs:
 * a Buffer for length-delimited fields, a number for varints. */
function fields(buf) {
  const out = [];
  let i = 0;
  const varint = () => {
    let v = 0;
    for (let shift = 0; ; shift += 7) {
      if (i >= buf.length || shift > 63) throw new Error('truncated varint');
      const b = buf[i++];
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
  };
  while (i < buf.length) {
    const key = varint();
    const num = Math.floor(key / 8);
    switch (key & 7) {
      case 0: out.push([num, varint()]); break;
      case 1: i += 8; break;
      case 2: {
        const n = varint();
        if (i + n > buf.length) throw new Error('truncated field');
        out.push([num, buf.subarray(i, i + n)]);
        i += n;
        break;
      }
      case 5: i += 4; break;
      default: throw new Error(`wire type ${key & 7}`);
    }
  }
  return out;
}

/** errorInfo decodes a google.rpc.ErrorInfo. */
function errorInfo(buf) {
  const info = { reason: '', domain: '', metadata: {} };
  for (const [num, v] of fields(buf)) {
    if (num === 1) info.reason = v.toString('utf8');
    else if (num === 2) info.domain = v.toString('utf8');
    else if (num === 3) {
      let key = '';
      let value = '';
      for (const [n, s] of fields(v)) {
        if (n === 1) key = s.toString('utf8');
        else if (n === 2) value = s.toString('utf8');
      }
      info.metadata[key] = value;
    }
  }
  return info;
}

/**
 * reasonOf is the class of a grpc-js call error from mcpd: { reason,
 * metadata } with reason the ErrorReason's name without its prefix
 * ("UNKNOWN_SERVER", "TIMED_OUT", ...), or undefined for a failure
 * without a class.
 */
function reasonOf(err) {
  if (!err || !err.metadata || typeof err.metadata.get !== 'function') return undefined;
  for (const raw of err.metadata.get(METADATA.statusDetails)) {
    try {
      for (const [num, any] of fields(Buffer.from(raw))) {
        if (num !== 3) continue; // Status.details
        let type = '';
        let value;
        for (const [n, v] of fields(any)) {
          if (n === 1) type = v.toString('utf8');
          else if (n === 2) value = v;
        }
        if (type !== ERROR_INFO_TYPE || !value) continue;
        const info = errorInfo(value);
        if (info.domain !== ERROR_DOMAIN) continue;
        return { reason: info.reason.replace(/^ERROR_REASON_/, ''), metadata: info.metadata };
      }
    } catch {
      return undefined; // not a Status: no class
    }
  }
  return undefined;
}

module.exports = { METADATA, reasonOf };
