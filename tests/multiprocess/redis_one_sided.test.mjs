// Only one pod's Redis link goes down (a network cut between that pod and Redis): the other pods'
// links never drop, so none of them sees a loss of its own. What the cut pod published meanwhile
// never reached them; they learn it from the pod's envelope numbers once it is back (its next
// heartbeat is ahead of what they received) and hand their subscribers the stored events of the
// gap from Postgres, each once, with nothing else published to show it.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { RawClient, keys, sign, now } from '../e2e/harness.mjs'
import { linkRelay } from './link_relay.mjs'
import { authed, eventually, memberReading, privateRedis, readiness, stallReloads, startPods,
  stopCleanly } from './pods.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Two pods on one Redis: pod a goes to it directly, pod b through a relay the test cuts. */
async function podsWithCuttableLink(env = {}) {
  const redis = await privateRedis()
  const relay = await linkRelay(() => redis.port)
  const group = await startPods(2, (i) => ({ ...env,
    COMB_REDIS_URL: i === 0 ? redis.url : `redis://127.0.0.1:${relay.port}` }))
  for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  return { redis, relay, group }
}

describe('a pod whose own Redis link is cut while the others stay linked', () => {
  let redis, relay, group, a, b

  before(async () => {
    ;({ redis, relay, group } = await podsWithCuttableLink())
    ;[a, b] = group.pods
  })
  after(async () => { await group?.stop(); await relay?.close(); await redis?.dispose() })

  it('delivers what the cut pod stored during its cut to the other pod\'s subscribers, once', async () => {
    const watcher = await RawClient.open(a)
    assert.equal((await watcher.req('notes', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    const poster = await RawClient.open(b)
    const before = sign(keys().sk, { content: 'before the cut' })
    assert.equal((await poster.publish(before)).ok, true)
    assert.equal((await watcher.live('notes', 10000)).id, before.id, 'linked: delivered live')
    const gapsBefore = await a.metric('comb_bridge_sequence_gaps_total')

    relay.cut()
    await eventually(async () => (await readiness(b)) === 503, 'pod b degraded', 15000)
    assert.equal(await readiness(a), 200, 'pod a never lost its link')
    const stranded = sign(keys().sk, { content: 'stored on b while its Redis link was cut' })
    assert.equal((await poster.publish(stranded)).ok, true)
    relay.mend()
    await eventually(async () => (await readiness(b)) === 200, 'pod b linked again', 15000)

    // Nothing else is published: pod b's heartbeat is what tells pod a.
    assert.equal((await watcher.live('notes', 15000)).id, stranded.id, 'the stranded event, live on pod a')
    await pause(500)
    assert.deepEqual(watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'notes'), [], 'each once')
    assert.ok(await a.metric('comb_bridge_sequence_gaps_total') > gapsBefore, 'counted as a gap')
    assert.match(a.log(), /bridge gap: \d+ stored event\(s\) since \d+ handed to the fan-out/)
    await watcher.close()
    await poster.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})

// The fill of a pod that has not applied a removal yet: the events a fill brings are held, as
// bridged envelopes are, until the pod has the state the database had when they were read, so
// the member the origin already removed never gets one.
describe('a fill on a pod that lags behind a removal', () => {
  let redis, relay, group, a, b
  const owner = keys()

  before(async () => {
    ;({ redis, relay, group } = await podsWithCuttableLink({ COMB_OWNER_PUBKEY: owner.pk, COMB_ACCESS: 'closed' }))
    ;[a, b] = group.pods
  })
  after(async () => { await group?.stop(); await relay?.close(); await redis?.dispose() })

  it('never hands the removed member what the fill brings, and hands it to the others', async () => {
    const ownerOnA = await authed(a, owner)
    const removed = keys()
    const staying = keys()
    const removedOnB = await memberReading(b, removed, ownerOnA, a, owner)
    const stayingOnB = await memberReading(b, staying, ownerOnA, a, owner)
    const heldBefore = await b.metric('comb_bridge_held_total')

    relay.cut()
    await eventually(async () => (await readiness(b)) === 503, 'pod b degraded', 15000)
    // Pod b cannot finish reading the community for 6 s (a lagging LISTEN connection would do
    // the same); meanwhile pod a removes the member and posts, and pod b's link comes back.
    const { released } = await stallReloads(a, 6000)
    assert.equal((await ownerOnA.publish(sign(owner.sk, { kind: 9031, tags: [['p', removed.pk], ['relay', a.url]] }))).message,
      'info: member removed')
    const note = sign(owner.sk, { content: 'after the removal, while pod b was cut from Redis' })
    assert.equal((await ownerOnA.publish(note)).ok, true)
    relay.mend()

    assert.equal((await stayingOnB.live('feed', 15000)).id, note.id, 'the fill reaches the staying member')
    await released
    const closed = await removedOnB.take((f) => f[0] === 'CLOSED' && f[1] === 'feed', 'CLOSED feed on pod b', 10000)
    assert.equal(closed[2], 'restricted: you are no longer a member of this community')
    await pause(500)
    assert.deepEqual(removedOnB.inbox.filter((f) => f[0] === 'EVENT' && f[1] === 'feed'), [],
      'the removed member never got the note on pod b')
    assert.ok((await b.metric('comb_bridge_held_total')) > heldBefore, 'pod b held the filled note')
    assert.equal(await b.metric('comb_bridge_hold_dropped_total'), 0)
    for (const client of [ownerOnA, removedOnB, stayingOnB]) await client.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})

// A pod that stops while its own Redis link is cut never sends the heartbeat that would show the
// other pods its gap: they fill from Postgres once it has been silent for a few seconds (and
// again at longer silences, in case it stored more before it stopped).
describe('a pod that stops while its own Redis link is cut', () => {
  let redis, relay, group, a, b

  before(async () => {
    ;({ redis, relay, group } = await podsWithCuttableLink())
    ;[a, b] = group.pods
  })
  after(async () => { await group?.stop(); await relay?.close(); await redis?.dispose() })

  it('has what it stored during the cut delivered live on the other pod, once', async () => {
    const watcher = await RawClient.open(a)
    assert.equal((await watcher.req('notes', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    const poster = await RawClient.open(b)
    const before = sign(keys().sk, { content: 'before the cut' })
    assert.equal((await poster.publish(before)).ok, true)
    assert.equal((await watcher.live('notes', 10000)).id, before.id, 'pod a heard from pod b')
    relay.cut()
    await eventually(async () => (await readiness(b)) === 503, 'pod b degraded', 15000)
    const stranded = sign(keys().sk, { content: 'stored on b just before it stopped, its link cut' })
    assert.equal((await poster.publish(stranded)).ok, true)
    await poster.close()
    const stopped = await b.stop()
    assert.deepEqual([stopped.code, stopped.signal], [0, null])

    assert.equal((await watcher.live('notes', 30000)).id, stranded.id, 'the stranded event, live on pod a')
    await pause(500)
    assert.deepEqual(watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'notes'), [], 'each once')
    assert.ok(await a.metric('comb_bridge_quiet_fills_total') >= 1, 'a fill for a silent pod')
    await watcher.close()
  })
})
