// Three pods on one Postgres, linked by Redis: every accepted event reaches subscribers on every
// pod exactly once, NIP-43 lists and deltas included; Redis going away never stops local
// delivery, and cross-pod delivery resumes by itself when it returns.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { RawClient, finalizeEvent, keys, sign, now } from '../e2e/harness.mjs'
import { authed, eventually, privateRedis, readiness, startPods, stopCleanly } from './pods.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))


/** Live events of `sub` on `client` for `ms` after the last one, deduplicated only by the test. */
async function liveFor(client, sub, ms) {
  await pause(ms)
  return client.drain((f) => f[0] === 'EVENT' && f[1] === sub).map((f) => f[2])
}

describe('three pods linked by Redis', () => {
  let redis, group, a, b, c
  const owner = keys()

  before(async () => {
    redis = await privateRedis()
    group = await startPods(3, () => ({ COMB_REDIS_URL: redis.url, COMB_OWNER_PUBKEY: owner.pk }))
    ;[a, b, c] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop(); await redis?.dispose() })

  it('delivers regular and ephemeral events and NIP-43 lists and deltas across pods exactly once', async () => {
    const watcher = await RawClient.open(a)
    const { end } = await watcher.req('all', { kinds: [1, 20001, 13534, 8000] , since: now() - 5 })
    assert.equal(end[0], 'EOSE')
    const author = keys()
    const poster = await RawClient.open(b)
    const note = sign(author.sk, { content: 'from pod b' })
    const blip = sign(author.sk, { kind: 20001, content: 'ephemeral from pod b' })
    assert.equal((await poster.publish(note)).ok, true)
    assert.equal((await poster.publish(blip)).ok, true)

    const joiner = keys()
    const member = await authed(c, joiner)
    assert.match((await member.publish(sign(joiner.sk, { kind: 28934, tags: [['-']] }))).message, /^info: welcome/)

    const seen = []
    await eventually(async () => {
      seen.push(...watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'all').map((f) => f[2]))
      return seen.some((e) => e.kind === 13534) && seen.some((e) => e.kind === 8000) && seen.length >= 4
    }, 'all four events on pod a')
    seen.push(...await liveFor(watcher, 'all', 500)) // anything sent twice would show up now
    const ids = seen.map((e) => e.id)
    assert.equal(new Set(ids).size, ids.length, 'no event twice')
    assert.ok(ids.includes(note.id) && ids.includes(blip.id))
    const list = seen.find((e) => e.kind === 13534)
    assert.equal(list.pubkey, a.pubkey)
    assert.ok(list.tags.some((t) => t[0] === 'member' && t[1] === joiner.pk))
    assert.equal(seen.find((e) => e.kind === 8000).tags.find((t) => t[0] === 'p')[1], joiner.pk)
    assert.ok(await a.metric('comb_bridge_received_total') >= 4)
    for (const client of [watcher, poster, member]) await client.close()
  })

  it('keeps serving local clients while Redis is down and resumes when it returns', async () => {
    const watcher = await RawClient.open(a)
    await watcher.req('notes', { kinds: [1], since: now() - 5 })
    const author = keys()
    const localPoster = await RawClient.open(a)
    const remotePoster = await RawClient.open(b)

    await redis.stop()
    await eventually(async () => (await readiness(a)) === 503, '/readyz degraded on pod a')
    const local = sign(author.sk, { content: 'local while redis is down' })
    assert.equal((await localPoster.publish(local)).ok, true)
    assert.equal((await watcher.live('notes')).id, local.id, 'local delivery never stops')
    const stranded = sign(author.sk, { content: 'stored on b while redis is down' })
    assert.equal((await remotePoster.publish(stranded)).ok, true)
    assert.ok(await b.metric('comb_bridge_published_total') > 0)

    await redis.start()
    await eventually(async () => (await readiness(a)) === 200 && (await readiness(b)) === 200, 'ready again', 15000)
    const after = sign(author.sk, { content: 'after redis returned' })
    assert.equal((await remotePoster.publish(after)).ok, true)
    // Cross-pod delivery resumed, and the note stored on b during the outage came too: pod a hands
    // its subscribers the stored events of the gap once Redis is back (each once).
    const live = [(await watcher.live('notes', 10000)).id, (await watcher.live('notes', 10000)).id]
    assert.deepEqual(new Set(live), new Set([stranded.id, after.id]), 'cross-pod delivery resumed, gap included')
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.deepEqual(watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'notes'), [], 'each once')

    const { events } = await watcher.req('check', { authors: [author.pk] })
    assert.deepEqual(new Set(events.map((e) => e.id)), new Set([local.id, stranded.id, after.id]),
      'no stored event was lost')
    for (const client of [watcher, localPoster, remotePoster]) await client.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})
