// Only one pod's Redis link goes down (a network cut between that pod and Redis): the other pods'
// links never drop, so none of them sees a loss of its own. What the cut pod published meanwhile
// never reached them; they learn it from the pod's envelope numbers once it is back (its next
// heartbeat is ahead of what they received) and hand their subscribers the stored events of the
// gap from Postgres, each once, with nothing else published to show it.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { RawClient, keys, sign, now } from '../e2e/harness.mjs'
import { linkRelay } from './link_relay.mjs'
import { eventually, privateRedis, readiness, startPods } from './pods.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

describe('a pod whose own Redis link is cut while the others stay linked', () => {
  let redis, relay, group, a, b

  before(async () => {
    redis = await privateRedis()
    relay = await linkRelay(() => redis.port)
    // Pod a goes to Redis directly, pod b through the relay the test cuts.
    group = await startPods(2, (i) => ({
      COMB_REDIS_URL: i === 0 ? redis.url : `redis://127.0.0.1:${relay.port}`,
    }))
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
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
    const results = await group.stop()
    for (const r of results) assert.deepEqual([r.code, r.signal, r.timedOut], [0, null, false])
    group = null
  })
})
