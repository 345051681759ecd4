// Harness of the end-to-end suite: one fresh comb-relay per test file (its own Postgres database,
// data folder and port), a raw WebSocket client that keeps every frame, and signing helpers.
// Every wait is bounded; every loop is bounded in count or time.
import { spawn, execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import net from 'node:net'
import http from 'node:http'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { before, after, it } from 'node:test'
import assert from 'node:assert/strict'
import WebSocket from 'ws'
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay'
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'

useWebSocketImplementation(WebSocket)
export { Relay, WebSocket, finalizeEvent, generateSecretKey, getPublicKey }

const here = path.dirname(fileURLToPath(import.meta.url))
const relayBin = process.env.COMB_RELAY_BIN || path.resolve(here, '../../build/bin/comb-relay')

export const now = () => Math.floor(Date.now() / 1000)

/** Resolves after `ms`, or earlier when `promise` settles; true if the promise settled first. */
export async function settlesWithin(promise, ms) {
  let timer
  const expired = new Promise((resolve) => { timer = setTimeout(() => resolve(false), ms) })
  try {
    return await Promise.race([promise.then(() => true, () => true), expired])
  } finally {
    clearTimeout(timer)
  }
}

/** The promise's value, or an error naming `what` after `ms`. */
export async function within(promise, ms, what) {
  let timer
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)
  })
  try {
    return await Promise.race([promise, expired])
  } finally {
    clearTimeout(timer)
  }
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A signed event; `sk` from generateSecretKey(). */
export function sign(sk, { kind = 1, content = '', tags = [], created_at = now() } = {}) {
  return finalizeEvent({ kind, content, tags, created_at }, sk)
}

/** A fresh key pair as { sk, pk }. */
/**
 * Polls `relay`'s `metric` until it passes `floor`, at most `ms`; its last value. For a counter
 * bumped after the client already saw the effect (a close Beast sends before the read that
 * counts it completes).
 */
export async function metricAbove(relay, metric, floor, ms = 3000) {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await relay.metric(metric)
    if (value > floor || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export function keys() { const sk = generateSecretKey(); return { sk, pk: getPublicKey(sk) } }

function databaseUrl(database) {
  let url = process.env.COMB_TEST_DATABASE_URL
  if (!url) throw new Error('COMB_TEST_DATABASE_URL is not set (source tools/services.sh env)')
  if (database) {
    const u = new URL(url)
    u.pathname = `/${database}`
    url = u.toString()
  }
  return url
}

function psql(sql, database) {
  const url = databaseUrl(database)
  return new Promise((resolve, reject) => {
    execFile('psql', [url, '-v', 'ON_ERROR_STOP=1', '-qAtc', sql], { timeout: 20000 },
      (error, stdout, stderr) => (error ? reject(new Error(`psql ${sql}: ${stderr || error}`)) : resolve(stdout)))
  })
}

/**
 * Runs `statements` in a transaction left open by a psql session of its own (to hold a lock);
 * resolves once they ran, to { release() }, which rolls back and ends the session.
 */
export function holdTransaction(database, statements) {
  const session = spawn('psql', [databaseUrl(database), '-v', 'ON_ERROR_STOP=1', '-qAt'], { stdio: ['pipe', 'pipe', 'inherit'] })
  const ended = new Promise((resolve) => session.once('exit', resolve))
  return new Promise((resolve, reject) => {
    session.stdout.once('data', () => resolve({
      release: async () => { session.stdin.end('ROLLBACK;\n'); await ended },
    }))
    session.once('exit', (code) => reject(new Error(`psql ended (${code}) before holding ${statements}`)))
    session.stdin.write(`BEGIN; ${statements}; SELECT 'held';\n`)
  })
}

/** A fresh, empty database for relays to share; its name. */
export async function createDatabase() {
  const database = `e2e_${randomBytes(6).toString('hex')}`
  await psql(`CREATE DATABASE ${database}`)
  return database
}

export async function dropDatabase(database) {
  await psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {})
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** One HTTP request; resolves to { status, headers, body }. `localAddress` picks the client's
 * loopback address (127.0.0.x), so a test can be several clients as the relay counts them. */
export function httpGet(port, target, headers = {}, ms = 5000, localAddress = undefined) {
  return within(new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, headers, agent: false, localAddress }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  }), ms, `GET ${target}`)
}

/**
 * Starts comb-relay on a fresh database, data folder and port; `env` adds COMB_* overrides.
 * Returns { port, host, url, pubkey, npub, stderr(), metric(name), stop() }.
 */
export async function startRelay(env = {}, { database: shared } = {}) {
  const database = shared ?? await createDatabase()
  const dbUrl = new URL(process.env.COMB_TEST_DATABASE_URL)
  dbUrl.pathname = `/${database}`
  const dataDir = await mkdtemp(path.join(tmpdir(), 'comb-e2e-'))
  // Port 0 unless the test names one: the relay binds, then prints the ports it got
  // (waitUntilReady reads them), so no other process can take a port picked in advance.
  // /metrics has a listener of its own (never the community's host).
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COMB_')))
  const proc = spawn(relayBin, [], {
    env: { ...inherited, COMB_DATABASE_URL: dbUrl.toString(), COMB_DATA_DIR: dataDir,
           COMB_LISTEN: '127.0.0.1:0', COMB_METRICS_LISTEN: '127.0.0.1:0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (d) => { stdout += d })
  proc.stderr.on('data', (d) => { stderr += d })
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })))
  let stopped = null
  const relay = {
    database,
    /** Runs SQL in this relay's database. */
    sql: (text) => psql(text, database),
    port: 0, // these four are set from the relay's output once it listens
    metricsPort: 0,
    host: '',
    url: '',
    /** The cluster port the relay printed ("cluster links on"), 0 without one. */
    clusterPort: 0,
    proc,
    exited,
    stderr: () => stderr.slice(-4000),
    /** Everything the relay logged so far. */
    log: () => stderr,
    async metric(name) {
      const { body } = await httpGet(relay.metricsPort, '/metrics')
      const line = body.split('\n').find((l) => l.startsWith(`${name} `))
      if (!line) throw new Error(`metric ${name} missing from /metrics`)
      return Number(line.split(' ')[1])
    },
    /** SIGTERM; resolves to { code, signal, ms }. Idempotent. Drops the database afterwards. */
    stop(ms = 10000) {
      stopped ??= (async () => {
        const started = Date.now()
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
        const clean = await settlesWithin(exited, ms)
        if (!clean) proc.kill('SIGKILL')
        const result = { ...(await exited), ms: Date.now() - started, timedOut: !clean }
        if (!shared) await dropDatabase(database)
        await rm(dataDir, { recursive: true, force: true })
        return result
      })()
      return stopped
    },
  }
  try {
    await waitUntilReady(relay, () => stdout)
  } catch (error) {
    await relay.stop()
    throw new Error(`${error.message}\nstdout: ${stdout}\nstderr: ${relay.stderr()}`)
  }
  const m = stdout.match(/signing key of \S+: ([0-9a-f]{64}) \((npub1[0-9a-z]+)\)/)
  relay.pubkey = m[1] // the configured community's signing key, its NIP-11 self
  relay.npub = m[2]
  relay.relayKey = stdout.match(/relay key: ([0-9a-f]{64})/)[1]
  return relay
}

/** The port of the first `prefix host:port` line the relay printed (IPv6 in brackets), or 0. */
function printedPort(stdout, prefix) {
  const line = stdout.split('\n').find((l) => l.startsWith(prefix))
  return Number(line?.slice(prefix.length).match(/^\S*:(\d+)/)?.[1] ?? 0)
}

/** Takes the ports the relay printed (comb-relay listening on, metrics on, cluster links on). */
function learnPorts(relay, stdout) {
  relay.port = printedPort(stdout, 'comb-relay listening on ')
  relay.metricsPort = printedPort(stdout, 'metrics on http://')
  relay.clusterPort = printedPort(stdout, 'cluster links on ')
  relay.host = `127.0.0.1:${relay.port}`
  relay.url = `ws://127.0.0.1:${relay.port}`
}

async function waitUntilReady(relay, stdout) {
  for (let attempt = 0; attempt < 200; attempt++) { // 200 x 100 ms at most
    if (relay.proc.exitCode !== null) throw new Error(`comb-relay exited with ${relay.proc.exitCode}`)
    const printed = /signing key of \S+: [0-9a-f]{64}/.test(stdout())
    if (printed) learnPorts(relay, stdout())
    const health = printed ? await httpGet(relay.port, '/healthz', {}, 1000).catch(() => null) : null
    if (health?.status === 200) return
    await pause(100)
  }
  throw new Error('comb-relay did not answer /healthz within 20 s')
}

/** Stops the relay and checks it exited 0 on SIGTERM within a few seconds. */
export async function stopRelayCleanly(relay) {
  const result = await relay.stop()
  assert.equal(result.timedOut, false, `relay did not exit within 10 s of SIGTERM\n${relay.stderr()}`)
  assert.deepEqual([result.code, result.signal], [0, null], `relay exit status\n${relay.stderr()}`)
}

/**
 * In a describe(): a relay started before its tests (`ctx.relay`), and a last test that stops it
 * and checks its exit. The after hook only cleans up when a test failed first.
 */
// Environment that lifts the per-connection and per-address event and frame buckets, for tests
// that push many frames from one client on purpose (the bounds under test are elsewhere).
export const UNBOUNDED_CLIENT_RATES = {
  COMB_EVENT_RATE: '100000',
  COMB_EVENT_BURST: '100000',
  COMB_FRAME_RATE: '100000',
  COMB_FRAME_BURST: '100000',
  COMB_IP_FRAME_RATE: '100000',
  COMB_IP_FRAME_BURST: '100000',
}

export function withRelay(env = {}) {
  const ctx = { relay: null }
  before(async () => { ctx.relay = await startRelay(env) })
  after(async () => { await ctx.relay?.stop() })
  return ctx
}

/** The last test of a describe() using withRelay. */
export function itStopsCleanly(ctx) {
  it('exits 0 within 10 s of SIGTERM', () => stopRelayCleanly(ctx.relay))
}

/** A nostr-tools Relay connected to `relay`. */
export const toolsRelay = (relay) => within(Relay.connect(relay.url), 5000, 'nostr-tools connect')

/** What nostr-tools' publish settles to: { ok, message }. */
export async function publishWith(tools, event) {
  try {
    return { ok: true, message: await tools.publish(event) }
  } catch (error) {
    return { ok: false, message: error.message }
  }
}

/** A WebSocket client that keeps every frame it receives, to be taken in order or by predicate. */
export class RawClient {
  static open(relay, { headers = {}, url = relay.url, localAddress = undefined } = {}) {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false, localAddress })
    return within(new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new RawClient(ws)))
      ws.once('unexpected-response', (_req, res) => reject(Object.assign(
        new Error(`HTTP ${res.statusCode} instead of an upgrade`), { status: res.statusCode })))
      ws.once('error', reject)
    }), 5000, `WebSocket open ${url}`)
  }

  constructor(ws) {
    this.ws = ws
    this.inbox = []
    this.received = 0
    this.closeInfo = null
    this.arrival = null
    this.wake = () => {}
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => {
      this.closeInfo = { code, reason: reason.toString() }
      this.wake()
      resolve(this.closeInfo)
    }))
    ws.on('error', () => {}) // surfaced through `closed`
    ws.on('message', (data) => {
      this.received++
      this.inbox.push(JSON.parse(data.toString()))
      this.wake()
    })
    this.renew()
  }

  renew() { this.arrival = new Promise((resolve) => { this.wake = resolve }) }

  send(message) { this.ws.send(typeof message === 'string' ? message : JSON.stringify(message)) }

  /** Removes and returns the first unconsumed frame matching `pred`, waiting up to `ms`. */
  async take(pred, what, ms = 5000) {
    const deadline = Date.now() + ms
    for (;;) {
      const i = this.inbox.findIndex(pred)
      if (i >= 0) return this.inbox.splice(i, 1)[0]
      const left = deadline - Date.now()
      if (left <= 0 || this.closeInfo) {
        const state = this.closeInfo ? `closed ${JSON.stringify(this.closeInfo)}` : 'open'
        throw new Error(`no ${what} within ${ms} ms (socket ${state}); unconsumed: ${
          JSON.stringify(this.inbox).slice(0, 600)}`)
      }
      const arrival = this.arrival
      await settlesWithin(arrival, left)
      if (this.arrival === arrival) this.renew()
    }
  }

  /** Unconsumed frames matching `pred`, removed from the inbox. */
  drain(pred) {
    const out = this.inbox.filter(pred)
    this.inbox = this.inbox.filter((f) => !pred(f))
    return out
  }

  challenge() { return this.take((f) => f[0] === 'AUTH', 'AUTH challenge').then((f) => f[1]) }

  /** ["OK", id, accepted, message] for event `id`, as { ok, message }. */
  async ok(id, ms = 5000) {
    const f = await this.take((x) => x[0] === 'OK' && x[1] === id, `OK for ${id}`, ms)
    return { ok: f[2], message: f[3] }
  }

  publish(event) { this.send(['EVENT', event]); return this.ok(event.id) }

  auth(event) { this.send(['AUTH', event]); return this.ok(event.id) }

  /**
   * Frames of subscription `sub` up to its EOSE or CLOSED: { events, end } where `end` is the
   * final frame. At most `max` events.
   */
  async history(sub, ms = 5000, max = 10000) {
    const events = []
    for (let n = 0; n <= max; n++) {
      const f = await this.take((x) => ['EVENT', 'EOSE', 'CLOSED'].includes(x[0]) && x[1] === sub,
        `EOSE of ${sub}`, ms)
      if (f[0] !== 'EVENT') return { events, end: f }
      events.push(f[2])
    }
    throw new Error(`more than ${max} events before EOSE of ${sub}`)
  }

  req(sub, ...filters) { this.send(['REQ', sub, ...filters]); return this.history(sub) }

  /** The next live event of `sub` (any event frame), waiting up to `ms`. */
  live(sub, ms = 5000) {
    return this.take((x) => x[0] === 'EVENT' && x[1] === sub, `live event on ${sub}`, ms).then((f) => f[2])
  }

  close() { this.ws.close(); return settlesWithin(this.closed, 2000) }
}

export const idsOf = (events) => events.map((e) => e.id)

/** Events sorted as NIP-01 orders a REQ's history: newest first, then lowest id. */
export function newestFirst(events) {
  return [...events].sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? -1 : 1))
}
