// Two pods where only pod a lists pod b as a cluster peer (pod b only accepts pod a's dial), the
// link running through a TCP relay of the test's own that can cut it: events cross the one link
// in both directions, and after a cut each pod hands its live subscribers what the other stored
// meanwhile, once the link is back, even when the pod that dialed restarted meanwhile under
// another node id.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { RawClient, keys, sign, now, startRelay } from '../e2e/harness.mjs'
import { clusterSecret, eventually, startPods, stopCleanly } from './pods.mjs'
import { linkRelay } from './link_relay.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const linked = (pod) => pod.metric('comb_cluster_peers_linked')
const losses = (pod) => (pod.log().match(/cluster: link from peer \S+ lost/g) ?? []).length

describe('a cluster peer listed on one side only', () => {
  let group, a, b, relay

  before(async () => {
    relay = await linkRelay(() => group?.pods[1]?.clusterPort)
    group = await startPods(2, (i) => (i === 0
      ? { COMB_CLUSTER_LISTEN: '127.0.0.1:0', COMB_CLUSTER_PEERS: `127.0.0.1:${relay.port}` }
      : { COMB_CLUSTER_LISTEN: '127.0.0.1:0' }))
    ;[a, b] = group.pods
    await eventually(async () => (await linked(a)) === 1, 'pod a linked to pod b', 20000)
  })
  after(async () => {
    await group?.stop()
    await relay?.close()
  })

  it('carries events both ways over the link pod a dialed', async () => {
    const onA = await RawClient.open(a)
    const onB = await RawClient.open(b)
    assert.equal((await onA.req('notes', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    assert.equal((await onB.req('notes', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    const fromB = sign(keys().sk, { content: 'posted on pod b' })
    assert.equal((await onB.publish(fromB)).ok, true)
    assert.equal((await onB.live('notes', 5000)).id, fromB.id, 'pod b\'s own')
    assert.equal((await onA.live('notes', 10000)).id, fromB.id, 'pod b to pod a')
    const fromA = sign(keys().sk, { content: 'posted on pod a' })
    assert.equal((await onA.publish(fromA)).ok, true)
    assert.equal((await onA.live('notes', 5000)).id, fromA.id, 'pod a\'s own')
    assert.equal((await onB.live('notes', 10000)).id, fromA.id, 'pod a to pod b')
    await pause(500)
    assert.equal(onA.drain((f) => f[0] === 'EVENT').length, 0, 'each once on pod a')
    assert.equal(onB.drain((f) => f[0] === 'EVENT').length, 0, 'each once on pod b')
    await onA.close()
    await onB.close()
  })

  it('fills the gap on both pods once the link is back', async () => {
    const onA = await RawClient.open(a)
    const onB = await RawClient.open(b)
    assert.equal((await onA.req('gap', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    assert.equal((await onB.req('gap', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    relay.cut()
    await eventually(async () => (await linked(a)) === 0, 'link down', 15000)
    // Pod b sees the loss too (it dialed nothing; it watches the link pod a dialed).
    await eventually(async () => /cluster: link from peer pod-0 lost/.test(b.log()), 'pod b saw the loss', 15000)
    const duringB = sign(keys().sk, { content: 'stored on pod b during the cut' })
    const duringA = sign(keys().sk, { content: 'stored on pod a during the cut' })
    assert.equal((await onB.publish(duringB)).ok, true)
    assert.equal((await onA.publish(duringA)).ok, true)
    assert.equal((await onA.live('gap', 5000)).id, duringA.id, 'pod a\'s own event, live')
    assert.equal((await onB.live('gap', 5000)).id, duringB.id, 'pod b\'s own event, live')
    await pause(500)
    assert.equal(onA.drain((f) => f[0] === 'EVENT').length, 0, 'nothing crosses a cut link')
    assert.equal(onB.drain((f) => f[0] === 'EVENT').length, 0, 'nothing crosses a cut link')

    relay.mend()
    assert.equal((await onA.live('gap', 20000)).id, duringB.id, 'pod b\'s gap event on pod a')
    assert.equal((await onB.live('gap', 20000)).id, duringA.id, 'pod a\'s gap event on pod b')
    await pause(1500)
    assert.equal(onA.drain((f) => f[0] === 'EVENT').length, 0, 'each once on pod a')
    assert.equal(onB.drain((f) => f[0] === 'EVENT').length, 0, 'each once on pod b')
    assert.match(a.log(), /bridge gap: \d+ stored event\(s\) since \d+ handed to the fan-out/)
    assert.match(b.log(), /bridge gap: \d+ stored event\(s\) since \d+ handed to the fan-out/)

    const after = sign(keys().sk, { content: 'after the link is back' })
    assert.equal((await onB.publish(after)).ok, true)
    assert.equal((await onA.live('gap', 10000)).id, after.id)
    await onA.close()
    await onB.close()
  })

  it('fills what a dialer stored before and after it restarted under another node id', async () => {
    // Pod b cannot tell the restarted pod a from a new peer (another node id, and pod b dials
    // nothing), so no gap of pod b's matches it by name.
    const onB = await RawClient.open(b)
    assert.equal((await onB.req('restart', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    const lossesBefore = losses(b)
    relay.cut()
    await eventually(async () => losses(b) > lossesBefore, 'pod b saw the loss', 15000)
    const poster = await RawClient.open(a)
    const tail = sign(keys().sk, { content: 'stored on pod a after the cut, before its restart' })
    assert.equal((await poster.publish(tail)).ok, true)
    await poster.close()
    await a.stop()
    group.pods[0] = a = await startRelay({ COMB_PUBLIC_URL: 'ws://hive.test',
      COMB_NODE_ID: 'pod-0-again', COMB_RELAY_KEY_FILE: group.keyFile,
      COMB_CLUSTER_SECRET: clusterSecret, COMB_CLUSTER_LISTEN: '127.0.0.1:0',
      COMB_CLUSTER_PEERS: `127.0.0.1:${relay.port}` }, { database: group.database })
    const again = await RawClient.open(a)
    const early = sign(keys().sk, { content: 'stored on the restarted pod a before it linked' })
    assert.equal((await again.publish(early)).ok, true)
    await again.close()
    relay.mend()
    await eventually(async () => (await linked(a)) === 1, 'the restarted pod a linked', 20000)
    const seen = [(await onB.live('restart', 20000)).id, (await onB.live('restart', 20000)).id]
    assert.deepEqual(new Set(seen), new Set([tail.id, early.id]), 'both, live on pod b')
    await pause(1500)
    assert.equal(onB.drain((f) => f[0] === 'EVENT').length, 0, 'each once')
    await onB.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})
