'use strict';
// Test harness: a real mcpd with real children on a temporary socket.
// The binaries come from the environment (ts_test.go builds them):
// MCPD_TEST_MCPD, MCPD_TEST_DEMO_SERVER, MCPD_TEST_EVERYTHING_JS, and
// MCPD_TEST_MCPD_ARGS (extra mcpd flags, space separated).

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { McpdClient } = require('..');

const waitTimeoutMs = 60000; // a safety net against hangs, not a speed expectation

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests through go test ./clients/typescript`);
  return v;
}

function config() {
  const demo = need('MCPD_TEST_DEMO_SERVER');
  return {
    mcpServers: {
      demo: { command: demo, args: ['--name', 'demo'], autostart: true },
      legacy: { command: demo, args: ['--name', 'legacy'], protocol: 'legacy' },
      everything: { command: process.execPath, args: [need('MCPD_TEST_EVERYTHING_JS'), 'stdio'], protocol: 'legacy' },
    },
  };
}

/** tempDir makes a short directory (socket paths are limited to 104 bytes). */
function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-js-'));
}

/** waitFor polls cond (async) until it returns a truthy value or the deadline passes. */
async function waitFor(what, cond, timeoutMs = waitTimeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 25)); // poll interval, not a synchronisation sleep
  }
}

/** Daemon is one mcpd process on dir/mcpd.sock. */
class Daemon {
  constructor(dir) {
    this.dir = dir;
    this.socketPath = path.join(dir, 'mcpd.sock');
    this.configPath = path.join(dir, 'config.json');
    if (!fs.existsSync(this.configPath)) fs.writeFileSync(this.configPath, JSON.stringify(config()));
    this.output = '';
  }

  async start() {
    const extra = (process.env.MCPD_TEST_MCPD_ARGS || '').split(' ').filter(Boolean);
    const env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('MCPD_') && !k.startsWith('MCPD_TEST_')) delete env[k];
    // Pins, audit log and OAuth credentials stay in the test's directory.
    const state = path.join(this.dir, 'state');
    this.proc = spawn(need('MCPD_TEST_MCPD'),
      ['--socket', this.socketPath, '--config', this.configPath, '--state-dir', state, ...extra],
      { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout.on('data', (b) => { this.output += b; });
    this.proc.stderr.on('data', (b) => { this.output += b; });
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })));
    const probe = new McpdClient({ socketPath: this.socketPath, clientName: 'harness' });
    try {
      await waitFor('mcpd serving', async () => {
        if (this.proc.exitCode !== null) throw new Error(`mcpd exited: ${this.output}`);
        return probe.status({ signal: AbortSignal.timeout(2000) });
      });
    } finally {
      probe.close();
    }
    return this;
  }

  /** stop sends SIGTERM and waits for the exit (SIGKILL after the deadline). */
  async stop() {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), waitTimeoutMs);
    await this.exited;
    clearTimeout(timer);
  }
}

module.exports = { Daemon, tempDir, waitFor };
