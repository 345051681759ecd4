// Two pods linked by CAF cluster links through TCP relays of the test's own, which can cut the
// links while both pods keep serving their clients: an event stored on pod b during the cut
// (whatever its created_at) reaches pod a's live subscribers from Postgres once the link is
// back, each once, as after a Redis gap (access_watcher fill_gap). A link gone silent (nothing
// crosses it, nothing closes it) is dropped by the pods' own link timeout and filled the same way.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { RawClient, keys, sign, now } from '../e2e/harness.mjs'
import { eventually, startPods, stopCleanly } from './pods.mjs'
import { linkRelay } from './link_relay.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const linked = (pod) => pod.metric('comb_cluster_peers_linked')

describe('a cluster link cut, or gone silent, while both pods serve clients', () => {
  let group, a, b
  const relays = []

  before(async () => {
    // relays[i] carries the link to pod i: the other pod dials it.
    for (let i = 0; i < 2; i++) relays.push(await linkRelay(() => group?.pods[i]?.clusterPort))
    group = await startPods(2, (i) => ({ COMB_CLUSTER_LISTEN: '127.0.0.1:0',
      COMB_CLUSTER_PEERS: `127.0.0.1:${relays[1 - i].port}` }))
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await linked(pod)) === 1, 'linked', 20000)
  })
  after(async () => {
    await group?.stop()
    for (const relay of relays) await relay.close()
  })

  it('delivers what pod b stored during the cut to pod a\'s subscribers once the link is back', async () => {
    const watcher = await RawClient.open(a)
    assert.equal((await watcher.req('notes', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    const old = sign(keys().sk, { content: 'created ten minutes ago, stored during the cut', created_at: now() - 600 })
    assert.equal((await watcher.req('old', { ids: [old.id] })).end[0], 'EOSE')
    const poster = await RawClient.open(b)
    const before = sign(keys().sk, { content: 'while linked' })
    assert.equal((await poster.publish(before)).ok, true)
    assert.equal((await watcher.live('notes', 10000)).id, before.id, 'the link carries events')

    for (const relay of relays) relay.cut()
    await eventually(async () => (await linked(a)) === 0 && (await linked(b)) === 0, 'both links down', 15000)
    const during = sign(keys().sk, { content: 'stored on pod b during the cut' })
    assert.equal((await poster.publish(during)).ok, true)
    assert.equal((await poster.publish(old)).ok, true)
    await pause(500)
    assert.equal(watcher.drain((f) => f[0] === 'EVENT').length, 0, 'nothing crosses a cut link')

    for (const relay of relays) relay.mend()
    assert.equal((await watcher.live('notes', 20000)).id, during.id, 'the gap\'s event, live on pod a')
    assert.equal((await watcher.live('old', 5000)).id, old.id, 'an old event stored in the gap too')
    await pause(300)
    assert.equal(watcher.drain((f) => f[0] === 'EVENT').length, 0, 'each once')
    assert.match(a.log(), /bridge gap: \d+ stored event\(s\) since \d+ handed to the fan-out/)
    assert.equal(await linked(a), 1)

    const after = sign(keys().sk, { content: 'after the link is back' })
    assert.equal((await poster.publish(after)).ok, true)
    assert.equal((await watcher.live('notes', 10000)).id, after.id)
    await watcher.close()
    await poster.close()
  })

  for (const first of [1, 0]) {
    it(`delivers again, and fills the gap, once one direction is back (${first ? 'pod a\'s' : 'pod b\'s'} link first)`, async () => {
      // A pod sends to a peer over whichever link between them is up (the one it dialed, or
      // the one the peer dialed), so the first link back ends the gap; the second one doubles
      // nothing.
      const watcher = await RawClient.open(a)
      assert.equal((await watcher.req('notes', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
      const poster = await RawClient.open(b)
      for (const relay of relays) relay.cut()
      await eventually(async () => (await linked(a)) === 0 && (await linked(b)) === 0, 'both links down', 15000)
      const during = sign(keys().sk, { content: `stored on pod b during the cut (${first})` })
      assert.equal((await poster.publish(during)).ok, true)
      await pause(500)
      assert.equal(watcher.drain((f) => f[0] === 'EVENT').length, 0, 'nothing crosses a cut link')
      relays[first].mend()
      const [back, still] = first === 1 ? [a, b] : [b, a]
      await eventually(async () => (await linked(back)) === 1, 'one link back', 20000)
      assert.equal(await linked(still), 0, 'the other link is still cut')
      assert.equal((await watcher.live('notes', 20000)).id, during.id, 'the gap filled over one link')
      const late = sign(keys().sk, { content: `stored on pod b while one link is back (${first})` })
      assert.equal((await poster.publish(late)).ok, true)
      assert.equal((await watcher.live('notes', 10000)).id, late.id, 'live over the one link')
      relays[1 - first].mend()
      await eventually(async () => (await linked(still)) === 1, 'both links back', 20000)
      const after = sign(keys().sk, { content: `stored on pod b with both links back (${first})` })
      assert.equal((await poster.publish(after)).ok, true)
      assert.equal((await watcher.live('notes', 10000)).id, after.id)
      await pause(1500)
      assert.equal(watcher.drain((f) => f[0] === 'EVENT').length, 0, 'each once')
      await watcher.close()
      await poster.close()
    })
  }

  it('is given up within seconds (not buffered for until TCP gives up), and its gap is filled', async () => {
    for (const pod of group.pods) await eventually(async () => (await linked(pod)) === 1, 'linked', 20000)
    const watcher = await RawClient.open(a)
    assert.equal((await watcher.req('notes', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    const poster = await RawClient.open(b)
    const started = Date.now()
    for (const relay of relays) relay.stall()
    // Nothing closes these connections but the pods' own link timeout (10 s without a byte).
    await eventually(async () => (await linked(a)) === 0 && (await linked(b)) === 0, 'silent links dropped', 30000)
    assert.ok(Date.now() - started >= 5000, 'a link is not dropped for a short silence')
    const during = sign(keys().sk, { content: 'stored on pod b while the link was silent' })
    assert.equal((await poster.publish(during)).ok, true)
    for (const relay of relays) relay.mend()
    assert.equal((await watcher.live('notes', 20000)).id, during.id, 'the gap\'s event, live on pod a')
    await eventually(async () => (await linked(a)) === 1, 'linked again', 20000)
    const after = sign(keys().sk, { content: 'after the link is back' })
    assert.equal((await poster.publish(after)).ok, true)
    assert.equal((await watcher.live('notes', 10000)).id, after.id)
    await watcher.close()
    await poster.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})

