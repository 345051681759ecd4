// Redis cuts a pod's subscriber when its output buffer limit for pub/sub is passed (here made tiny
// so one large envelope passes it; larger than the 16 KiB reply buffer Redis 7 keeps per client and
// does not count, which an 8 KB envelope could fit in whole while Redis had not yet shrunk it for an
// idle subscriber): the pod reconnects by itself, counts it, says so on /readyz
// meanwhile, live delivery resumes, and the stored events of the gap reach live subscribers from
// Postgres (each once), whatever their created_at.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { RawClient, keys, sign, now } from '../e2e/harness.mjs'
import { eventually, privateRedis, readiness, startPods, stopCleanly } from './pods.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function redisCli(redis, ...args) {
  return new Promise((resolve, reject) => execFile('redis-cli', ['-p', String(redis.port), ...args],
    { timeout: 20000 }, (error, stdout) => (error ? reject(error) : resolve(stdout.trim()))))
}

describe('a pod whose Redis subscriber is cut for its output buffer', () => {
  let redis, group, a, b

  before(async () => {
    redis = await privateRedis()
    group = await startPods(2, () => ({ COMB_REDIS_URL: redis.url }))
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop(); await redis?.dispose() })

  it('reconnects, counts it, delivers live again, and delivers the stored event of the gap once', async () => {
    const watcher = await RawClient.open(a)
    assert.equal((await watcher.req('notes', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    const poster = await RawClient.open(b)
    const reconnectsBefore = await a.metric('comb_redis_reconnects_total')

    assert.equal(await redisCli(redis, 'CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 2048 1024 1'), 'OK')
    const large = sign(keys().sk, { content: 'x'.repeat(40000) })
    assert.equal((await poster.publish(large)).ok, true)
    await eventually(async () => (await a.metric('comb_redis_reconnects_total')) > reconnectsBefore,
      'pod a reconnects after Redis cut it', 10000)
    assert.match(a.log(), /bridge: Redis unreachable; serving local clients, retrying/)

    assert.equal(await redisCli(redis, 'CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 32mb 8mb 60'), 'OK')
    await eventually(async () => (await readiness(a)) === 200 && (await readiness(b)) === 200, 'both ready again', 15000)
    const later = sign(keys().sk, { content: 'after the reconnect' })
    assert.equal((await poster.publish(later)).ok, true)
    // The large note reaches the live subscriber too: after the reconnect pod a hands its fan-out
    // what was stored during the gap (from Postgres), and the fan-out drops what it delivered.
    const seen = []
    while (!(seen.includes(large.id) && seen.includes(later.id))) seen.push((await watcher.live('notes', 10000)).id)
    await pause(300)
    seen.push(...watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'notes').map((f) => f[2].id))
    assert.deepEqual(seen.filter((id) => id === large.id || id === later.id).length, 2, 'each note once')
    assert.match(a.log(), /bridge gap: \d+ stored event\(s\) since \d+ handed to the fan-out/)
    const { events } = await watcher.req('gap', { ids: [large.id] })
    assert.deepEqual(events.map((e) => e.id), [large.id])
    await watcher.close()
    await poster.close()
  })

  it('delivers an event stored in the gap with a created_at long before it', async () => {
    // The gap is filled by when events were stored, not by their created_at: this one was created
    // ten minutes ago and is the one whose envelope makes Redis cut pod a.
    const old = sign(keys().sk, { content: 'y'.repeat(40000), created_at: now() - 600 })
    const watcher = await RawClient.open(a)
    assert.equal((await watcher.req('old', { ids: [old.id] })).end[0], 'EOSE')
    const poster = await RawClient.open(b)
    const reconnectsBefore = await a.metric('comb_redis_reconnects_total')
    assert.equal(await redisCli(redis, 'CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 2048 1024 1'), 'OK')
    assert.equal((await poster.publish(old)).ok, true)
    await eventually(async () => (await a.metric('comb_redis_reconnects_total')) > reconnectsBefore,
      'pod a reconnects after Redis cut it', 10000)
    assert.equal(await redisCli(redis, 'CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 32mb 8mb 60'), 'OK')
    assert.equal((await watcher.live('old', 15000)).id, old.id, 'the old event stored in the gap, live')
    await pause(300)
    assert.equal(watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'old').length, 0, 'once')
    await watcher.close()
    await poster.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})
