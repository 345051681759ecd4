// Helpers for multi-pod tests: a private Redis server that can be stopped and restarted, and a
// group of relays on one database that serve the same community (same public URL).
import { execFile, spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createHmac, randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import path from 'node:path'
import net from 'node:net'
import assert from 'node:assert/strict'
import { RawClient, createDatabase, dropDatabase, finalizeEvent, httpGet, now, sign, startRelay } from '../e2e/harness.mjs'
import { stablePort } from '../e2e/stable_port.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** The cluster secret every test pod shares (made as the docs say: head -c 32 /dev/urandom | xxd -p -c 64). */
export const clusterSecret = randomBytes(32).toString('hex')

/**
 * An envelope as a pod that holds the cluster secret makes it (storage/bridge_envelope.cpp
 * encode_envelope): the hex HMAC-SHA256 of the JSON body after it, the community's state version
 * the origin held (`access`), the send time in Unix ms.
 */
export function envelope(event, sent, { origin = 'pod-x', community = 1, access = 0 } = {}) {
  const body = JSON.stringify({ origin, community, access, sent, event })
  return createHmac('sha256', clusterSecret).update('16:comb-envelope-v2;' + body).digest('hex') + body
}

/** Polls `probe` (async, truthy when done) every 50 ms for at most `ms`. */
export async function eventually(probe, what, ms = 10000) {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await probe()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what}`)
    await pause(50)
  }
}

function portOpen(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}

/**
 * A redis-server of the test's own on a fixed port (restarts keep it): start(), stop(), url. With
 * `password`, the server requires it (requirepass) and `url` carries it
 * (redis://:password@host:port). The port is picked free outside the ephemeral range (no outgoing
 * connection takes it while the server is down: ../e2e/stable_port.mjs), and picked again (3
 * times at most) when another process took it before the first start bound it: redis-server
 * then exits at once.
 */
export async function privateRedis({ password = '' } = {}) {
  const dir = await mkdtemp(path.join(tmpdir(), 'comb-redis-'))
  let proc = null
  const redis = {
    port: 0,
    url: '',
    async start() {
      const exited = { code: null }
      proc = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(redis.port), '--save', '',
        '--appendonly', 'no', '--dir', dir, ...(password ? ['--requirepass', password] : [])],
        { stdio: 'ignore' })
      proc.once('exit', (code) => { exited.code = code ?? -1 })
      await eventually(async () => {
        if (exited.code !== null) throw new Error(`redis-server on port ${redis.port} exited with ${exited.code}`)
        return portOpen(redis.port)
      }, 'redis-server listening', 5000)
      // Another process on the port would answer the probe too: ours must still be running.
      await pause(100)
      if (exited.code !== null) throw new Error(`redis-server on port ${redis.port} exited with ${exited.code}`)
    },
    async stop() {
      if (!proc) return
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((resolve) => proc.once('exit', resolve))
        proc.kill('SIGKILL')
        await exited
      }
      proc = null
    },
    async dispose() { await redis.stop(); await rm(dir, { recursive: true, force: true }) },
  }
  for (let attempt = 1; ; attempt++) {
    redis.port = await stablePort()
    redis.url = password ? `redis://:${encodeURIComponent(password)}@127.0.0.1:${redis.port}`
      : `redis://127.0.0.1:${redis.port}`
    try {
      await redis.start()
      return redis
    } catch (error) {
      await redis.stop()
      if (attempt === 3) { await rm(dir, { recursive: true, force: true }); throw error }
    }
  }
}

/**
 * `count` relays on one fresh database, serving one community (public URL ws://hive.test);
 * `envFor(i, clusterPorts)` adds settings per pod. Each relay binds port 0 for clients and
 * metrics and reports what it got. Cluster links need every port before the first pod starts
 * (each pod names the others'), so with `clusterLinks` the group picks `count` free ports outside
 * the ephemeral range (a pod restarted on its cluster port finds it free:
 * ../e2e/stable_port.mjs), and when another process took one before a pod bound it, starts the
 * group again on fresh ones.
 * Returns { pods, database, keyFile, clusterPorts, stop() }.
 */
export async function startPods(count, envFor = () => ({}), { clusterLinks = false } = {}) {
  for (let attempt = 1; ; attempt++) {
    const clusterPorts = []
    if (clusterLinks)
      for (let i = 0; i < count; i++) clusterPorts.push(await stablePort())
    try {
      return await startGroup(count, (i) => envFor(i, clusterPorts), clusterPorts)
    } catch (error) {
      if (attempt === 3 || !/cannot listen for cluster peers/.test(error.message)) throw error
    }
  }
}

async function startGroup(count, envFor, clusterPorts) {
  const database = await createDatabase()
  // One relay key per deployment: every pod signs lists with the same key.
  const keyDir = await mkdtemp(path.join(tmpdir(), 'comb-key-'))
  const keyFile = path.join(keyDir, 'relay.key')
  await writeFile(keyFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600 })
  const pods = []
  try {
    for (let i = 0; i < count; i++)
      pods.push(await startRelay({ COMB_PUBLIC_URL: 'ws://hive.test',
        COMB_NODE_ID: `pod-${i}`, COMB_RELAY_KEY_FILE: keyFile, COMB_CLUSTER_SECRET: clusterSecret,
        ...envFor(i) }, { database }))
  } catch (error) {
    for (const pod of pods) await pod.stop()
    await dropDatabase(database)
    await rm(keyDir, { recursive: true, force: true })
    throw error
  }
  return {
    pods,
    database,
    keyFile,
    clusterPorts,
    async stop() {
      const results = []
      for (const pod of pods) results.push(await pod.stop())
      await dropDatabase(database)
      await rm(keyDir, { recursive: true, force: true })
      return results
    },
  }
}

/** Stops every pod of `group` and checks each exited 0 by itself (no signal, no timeout). */
export async function stopCleanly(group) {
  const results = await group.stop()
  for (const r of results) assert.deepEqual([r.code, r.signal, r.timedOut], [0, null, false])
}

/** /readyz status code of a pod. */
export async function readiness(pod) {
  return (await httpGet(pod.port, '/readyz')).status
}

/** A raw client on `pod`, authenticated (NIP-42) as `who`. */
export async function authed(pod, who) {
  const client = await RawClient.open(pod)
  const challenge = await client.challenge()
  const auth = finalizeEvent({ kind: 22242, created_at: now(), content: '',
    tags: [['relay', pod.url], ['challenge', challenge]] }, who.sk)
  assert.deepEqual(await client.auth(auth), { ok: true, message: '' })
  return client
}

const adminBin = process.env.COMB_ADMIN_BIN ?? '../../build/bin/comb-admin'

/** Runs comb-admin against the pods' database and key, without Redis; resolves to its stdout. */
export function admin(group, ...args) {
  const url = new URL(process.env.COMB_TEST_DATABASE_URL)
  url.pathname = `/${group.database}`
  return new Promise((resolve, reject) => {
    execFile(adminBin, args, { timeout: 20000, env: { ...process.env, COMB_REDIS_URL: '',
      COMB_DATABASE_URL: url.toString(), COMB_RELAY_KEY_FILE: group.keyFile } },
    (error, stdout, stderr) => (error ? reject(new Error(`comb-admin ${args.join(' ')}: ${stderr}`)) : resolve(stdout)))
  })
}

/**
 * Holds an ACCESS EXCLUSIVE lock on `rooms` for `ms` in `pod`'s database: a pod's reload of a
 * community (storage/access_state.cpp load_access) reads that table last and waits, while
 * membership writes that touch no room, event writes and version checks go on. Resolves once the
 * lock is held; `released` settles when it is let go.
 */
export async function stallReloads(pod, ms) {
  const released = pod.sql(`BEGIN; LOCK TABLE rooms IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(${ms / 1000}); COMMIT;`)
  await eventually(async () => Number(await pod.sql("SELECT count(*) FROM pg_locks l JOIN pg_class c"
    + " ON c.oid = l.relation WHERE c.relname = 'rooms' AND l.mode = 'AccessExclusiveLock' AND l.granted")) === 1,
  'the lock on rooms is held', 5000)
  return { released }
}

/**
 * Has the owner (authenticated on `ownerPod` as `ownerClient`) add `who`, then opens `who`'s
 * authenticated client on `pod` once it may read there, with a live REQ `feed` for kind 1.
 */
export async function memberReading(pod, who, ownerClient, ownerPod, owner) {
  assert.equal((await ownerClient.publish(sign(owner.sk, { kind: 9030, tags: [['p', who.pk], ['relay', ownerPod.url]] }))).message,
    'info: member added')
  const client = await authed(pod, who)
  await eventually(async () => {
    client.send(['REQ', 'probe', { kinds: [1], limit: 1 }])
    return (await client.history('probe')).end[0] === 'EOSE'
  }, 'the member may read on the pod')
  assert.equal((await client.req('feed', { kinds: [1], since: now() })).end[0], 'EOSE')
  return client
}
