'use strict';
// Test harness: a real mcpd with real children on a temporary socket.
//
// The suites find what they need themselves, so that `npm test` works on a
// fresh clone (after `npm ci` here and in the repository root):
//   mcpd:        $MCPD_BIN, else <repo>/bin/mcpd, else go build ./cmd/mcpd
//   demo server: $MCPD_TEST_DEMO_SERVER, else <repo>/bin/demo-server,
//                else go build ./examples/demo-server
//   server-everything: $MCPD_TEST_EVERYTHING_JS, else the repository root's
//                node_modules/@modelcontextprotocol/server-everything
//   extra mcpd flags: $MCPD_TEST_MCPD_ARGS (space separated), else
//                --http-listen off when the mcpd has that flag
// (go test ./clients/typescript builds the binaries and sets the variables.)
// Binaries it builds go to a temporary directory removed at exit. Each mcpd
// runs in its own process group, killed when the daemon is stopped, when it
// fails to start, and when this process exits or is signalled.

const { spawn, execFile } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { McpdClient } = require('..');

const waitTimeoutMs = 60000; // a safety net against hangs, not a speed expectation

const repoRoot = path.resolve(__dirname, '..', '..', '..');

/** Directories removed when the process exits (builds, daemons' directories). */
const tempDirs = [];
/** Process groups of the mcpd processes started and not yet stopped. */
const liveGroups = new Set();

function killGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch (err) {
    if (err.code !== 'ESRCH') throw err;
  }
}

function killAll() {
  for (const pid of liveGroups) killGroup(pid, 'SIGKILL');
  liveGroups.clear();
}

function cleanup() {
  killAll();
  for (const d of tempDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

process.on('exit', cleanup);

let signalsHandled = false;
/** onSignals kills the daemons on SIGINT, SIGTERM and SIGHUP, then dies of the signal. */
function onSignals() {
  if (signalsHandled) return;
  signalsHandled = true;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(sig, () => {
      cleanup();
      process.kill(process.pid, sig); // the default action now
    });
  }
}

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function run(file, args, opts = {}) {
  return new Promise((resolve, reject) => {
    execFile(file, args, { maxBuffer: 16 << 20, ...opts }, (err, stdout, stderr) => {
      if (err && err.code === 'ENOENT') {
        reject(new Error(`${file} not found: install Go, or set MCPD_BIN and MCPD_TEST_DEMO_SERVER (or run make build)`));
      } else if (err) {
        reject(new Error(`${file} ${args.join(' ')}: ${err.message}\n${stdout}${stderr}`));
      } else {
        resolve(stdout + stderr);
      }
    });
  });
}

let buildDir;
/** binary returns $env, else <repo>/prebuilt, else builds pkg into a temporary directory. */
async function binary(env, prebuilt, pkg) {
  if (process.env[env]) return process.env[env];
  const p = path.join(repoRoot, prebuilt);
  if (isExecutable(p)) return p;
  if (!buildDir) {
    buildDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-js-bin-'));
    tempDirs.push(buildDir);
  }
  const out = path.join(buildDir, path.basename(prebuilt));
  await run('go', ['build', '-o', out, pkg], { cwd: repoRoot });
  return out;
}

async function findBinaries() {
  const [mcpd, demo] = await Promise.all([
    binary('MCPD_BIN', 'bin/mcpd', './cmd/mcpd'),
    binary('MCPD_TEST_DEMO_SERVER', 'bin/demo-server', './examples/demo-server'),
  ]);
  const everything = process.env.MCPD_TEST_EVERYTHING_JS ||
    path.join(repoRoot, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
  if (!fs.existsSync(everything)) {
    throw new Error(`server-everything is missing (${everything}): run npm ci in the repository root`);
  }
  let args;
  if (process.env.MCPD_TEST_MCPD_ARGS !== undefined) {
    args = process.env.MCPD_TEST_MCPD_ARGS.split(' ').filter(Boolean);
  } else {
    // mcpd --help exits 0 or 2 depending on the flag package; its text is what counts.
    const help = await run(mcpd, ['--help']).catch((err) => err.message);
    args = help.includes('-http-listen') ? ['--http-listen', 'off'] : [];
  }
  return { mcpd, demo, everything, args };
}

let binaries; // one lookup (and build) per process
function getBinaries() {
  if (!binaries) binaries = findBinaries();
  return binaries;
}

function config(bin) {
  return {
    mcpServers: {
      demo: { command: bin.demo, args: ['--name', 'demo'], autostart: true },
      legacy: { command: bin.demo, args: ['--name', 'legacy'], protocol: 'legacy' },
      everything: { command: process.execPath, args: [bin.everything, 'stdio'], protocol: 'legacy' },
    },
  };
}

/** tempDir makes a short directory (socket paths are limited to 104 bytes), removed at exit. */
function tempDir() {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpd-js-'));
  tempDirs.push(d);
  return d;
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

/** Daemon is one mcpd process on dir/mcpd.sock, in its own process group. */
class Daemon {
  constructor(dir) {
    this.dir = dir;
    this.socketPath = path.join(dir, 'mcpd.sock');
    this.configPath = path.join(dir, 'config.json');
    this.output = '';
  }

  async start() {
    const bin = await getBinaries();
    if (!fs.existsSync(this.configPath)) fs.writeFileSync(this.configPath, JSON.stringify(config(bin)));
    const env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('MCPD_') && !k.startsWith('MCPD_TEST_')) delete env[k];
    // Pins, audit log and OAuth credentials stay in the test's directory.
    const state = path.join(this.dir, 'state');
    onSignals();
    // detached: mcpd leads a new process group (and session), so that stop
    // can kill it with whatever it started.
    const proc = spawn(bin.mcpd,
      ['--socket', this.socketPath, '--config', this.configPath, '--state-dir', state, ...bin.args],
      { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.proc = proc;
    if (proc.pid !== undefined) liveGroups.add(proc.pid);
    proc.stdout.on('data', (b) => { this.output += b; });
    proc.stderr.on('data', (b) => { this.output += b; });
    // A running mcpd does not keep this process alive: a test that fails
    // before stop still ends, and the exit hook kills the group. (start and
    // stop wait on timers, which do.)
    proc.unref();
    proc.stdout.unref();
    proc.stderr.unref();
    let spawnError;
    this.exited = new Promise((resolve) => {
      proc.on('exit', (code, signal) => resolve({ code, signal }));
      proc.on('error', (err) => { spawnError = err; resolve({ error: err }); });
    });
    const probe = new McpdClient({ socketPath: this.socketPath, clientName: 'harness' });
    let ended = null;
    this.exited.then((r) => { ended = r; });
    try {
      await waitFor('mcpd serving', async () => ended || probe.status({ signal: AbortSignal.timeout(2000) }));
      if (spawnError) throw new Error(`mcpd (${bin.mcpd}) did not start: ${spawnError.message}`);
      if (ended) throw new Error(`mcpd exited (${ended.signal || `status ${ended.code}`}): ${this.output}`);
    } catch (err) {
      this.kill();
      await this.exited;
      throw err;
    } finally {
      probe.close();
    }
    return this;
  }

  /** kill SIGKILLs the daemon's process group at once. */
  kill() {
    if (!this.proc || !liveGroups.has(this.proc.pid)) return;
    liveGroups.delete(this.proc.pid);
    killGroup(this.proc.pid, 'SIGKILL');
  }

  /**
   * stop sends SIGTERM, waits for the exit (SIGKILL after the deadline),
   * then kills what is left of its process group.
   */
  async stop() {
    if (!this.proc || !liveGroups.has(this.proc.pid)) return;
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGTERM');
      const timer = setTimeout(() => this.kill(), waitTimeoutMs);
      await this.exited;
      clearTimeout(timer);
    }
    this.kill();
  }
}

module.exports = { Daemon, tempDir, waitFor };
