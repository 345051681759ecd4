// Pods on a Redis that requires a password: they log in (and again after a restart), envelopes
// published on the channel by anyone without the cluster secret are dropped and counted, a
// legitimate envelope from another pod is delivered once, and the password appears in no log
// line, error or printed configuration.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { RawClient, keys, sign, now, startRelay } from '../e2e/harness.mjs'
import { envelope, eventually, privateRedis, readiness, startPods, stopCleanly } from './pods.mjs'

const relayBin = process.env.COMB_RELAY_BIN
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const password = 'redis-pass-4a9f/@:c2'

function run(bin, args, env = {}) {
  return new Promise((resolve) => execFile(bin, args, { env: { ...process.env, ...env }, timeout: 20000 },
    (error, stdout, stderr) => resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr })))
}

/** PUBLISH on the bridge channel with redis-cli, as anyone who can reach Redis could. */
function publish(redis, payload) {
  return run('redis-cli', ['-p', String(redis.port), '--no-auth-warning', '-a', password,
    'PUBLISH', 'comb:events', payload])
}

describe('pods on a Redis with requirepass', () => {
  let redis, group, a, b

  before(async () => {
    redis = await privateRedis({ password })
    group = await startPods(2, () => ({ COMB_REDIS_URL: redis.url }))
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop(); await redis?.dispose() })

  it('drops an envelope published without the MAC, and delivers a pod\'s own once', async () => {
    const watcher = await RawClient.open(a)
    await watcher.req('notes', { kinds: [1], since: now() - 5 })
    const before = await a.metric('comb_bridge_unauthenticated_total')
    const forged = sign(keys().sk, { content: 'forged on the Redis channel' })
    const bare = JSON.stringify({ origin: 'pod-x', community: 1, event: forged })
    const guessed = JSON.stringify({ origin: 'pod-x', community: 1, event: forged, mac: 'ab'.repeat(32) })
    for (const payload of [bare, guessed]) assert.equal((await publish(redis, payload)).stdout.trim(), '2')
    await eventually(async () => (await a.metric('comb_bridge_unauthenticated_total')) >= before + 2, 'both counted')
    assert.match(a.log(), /dropped an envelope: envelope (without a MAC|MAC does not match)/)

    const poster = await RawClient.open(b)
    const note = sign(keys().sk, { content: 'legitimate, from pod b' })
    assert.equal((await poster.publish(note)).ok, true)
    assert.equal((await watcher.live('notes', 10000)).id, note.id)
    await pause(500)
    const rest = watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'notes').map((f) => f[2].id)
    assert.deepEqual(rest, [], 'the forged events never arrive, the legitimate one only once')
    await watcher.close()
    await poster.close()
  })

  it('drops an envelope with a valid MAC sent over a minute ago (a replay), and counts it', async () => {
    const watcher = await RawClient.open(a)
    await watcher.req('replays', { kinds: [1], since: now() - 600 })
    const before = await a.metric('comb_bridge_stale_total')
    // The same MAC construction, sent now, is delivered: the stale one is refused for its age alone.
    const fresh = sign(keys().sk, { content: 'enveloped now' })
    const captured = sign(keys().sk, { content: 'enveloped ten minutes ago', created_at: now() - 600 })
    // A pod logs one dropped envelope a second at most: the last test's drops must not hide these.
    await pause(1100)
    assert.equal((await publish(redis, envelope(captured, Date.now() - 600_000))).stdout.trim(), '2')
    assert.equal((await publish(redis, envelope(captured, Date.now() + 600_000))).stdout.trim(), '2')
    assert.equal((await publish(redis, envelope(fresh, Date.now()))).stdout.trim(), '2')
    assert.equal((await watcher.live('replays', 10000)).id, fresh.id)
    await eventually(async () => (await a.metric('comb_bridge_stale_total')) >= before + 2, 'both counted as stale')
    await pause(300)
    const rest = watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'replays').map((f) => f[2].id)
    assert.deepEqual(rest, [], 'the replayed envelope never arrives')
    assert.match(a.log(), /dropped an envelope: envelope sent (too long ago|ahead of this pod's clock)/)
    await watcher.close()
  })

  it('logs in again after Redis restarts', async () => {
    await redis.stop()
    await eventually(async () => (await readiness(a)) === 503, 'degraded while Redis is down')
    await redis.start()
    await eventually(async () => (await readiness(a)) === 200 && (await readiness(b)) === 200, 'ready again', 15000)
    const watcher = await RawClient.open(a)
    await watcher.req('again', { kinds: [1], since: now() - 5 })
    const poster = await RawClient.open(b)
    const note = sign(keys().sk, { content: 'after the restart' })
    assert.equal((await poster.publish(note)).ok, true)
    assert.equal((await watcher.live('again', 10000)).id, note.id)
    await watcher.close()
    await poster.close()
  })

  it('a pod with a wrong password says so on /readyz and never logs a password', async () => {
    const wrongUrl = redis.url.replace(encodeURIComponent(password), 'wrong-pass-91b3')
    const wrong = await startRelay({ COMB_REDIS_URL: wrongUrl, COMB_CLUSTER_SECRET: 'a secret long enough for the check' })
    try {
      await pause(1500)
      assert.equal(await readiness(wrong), 503)
      const { httpGet } = await import('../e2e/harness.mjs')
      assert.match((await httpGet(wrong.port, '/readyz')).body, /refused the credentials/)
      assert.match(wrong.log(), /Redis refused the credentials of COMB_REDIS_URL/)
      assert.ok(!wrong.log().includes('wrong-pass-91b3'))
    } finally {
      await wrong.stop()
    }
    for (const pod of group.pods) {
      assert.ok(!pod.log().includes(password) && !pod.log().includes(encodeURIComponent(password)))
    }
  })

  it('neither --print-config nor a refused URL shows the password', async () => {
    const printed = await run(relayBin, ['--print-config'], { COMB_REDIS_URL: redis.url })
    assert.equal(printed.code, 0)
    assert.ok(!printed.stdout.includes(encodeURIComponent(password)))
    const refused = await run(relayBin, [], { COMB_REDIS_URL: `redis://:${encodeURIComponent(password)}@127.0.0.1:notaport`,
      COMB_CLUSTER_SECRET: 'a secret long enough for the check', COMB_DATABASE_URL: process.env.COMB_TEST_DATABASE_URL,
      COMB_DATA_DIR: '/tmp', COMB_RELAY_KEY_FILE: group.keyFile })
    assert.notEqual(refused.code, 0)
    assert.match(refused.stderr, /invalid Redis URL 'redis:\/\/:\*\*\*@127.0.0.1:notaport'/)
    assert.ok(!refused.stderr.includes(encodeURIComponent(password)))
  })

  it('refuses to start with Redis but without a cluster secret, and says how to make one', async () => {
    const refused = await run(relayBin, [], { COMB_REDIS_URL: redis.url, COMB_CLUSTER_SECRET: '',
      COMB_DATABASE_URL: process.env.COMB_TEST_DATABASE_URL, COMB_DATA_DIR: '/tmp', COMB_RELAY_KEY_FILE: group.keyFile })
    assert.notEqual(refused.code, 0)
    assert.match(refused.stderr, /COMB_CLUSTER_SECRET is required.*head -c 32 \/dev\/urandom \| xxd -p -c 64/)
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})
