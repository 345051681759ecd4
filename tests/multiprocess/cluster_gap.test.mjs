// Two pods linked by CAF cluster links through TCP relays of the test's own, which can cut the
// links while both pods keep serving their clients: an event stored on pod b during the cut
// (whatever its created_at) reaches pod a's live subscribers from Postgres once the link is
// back, each once, as after a Redis gap (access_watcher fill_gap).
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { RawClient, keys, sign, now } from '../e2e/harness.mjs'
import { eventually, startPods } from './pods.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A TCP relay on a loopback port of its own to `target()` (a port known later): cut() closes
 * every relayed connection and refuses new ones until mend(); close() ends it.
 */
async function linkRelay(target) {
  const sockets = new Set()
  let cut = false
  const server = net.createServer((client) => {
    const port = target()
    if (cut || !port) return client.destroy()
    const upstream = net.connect(port, '127.0.0.1')
    for (const [a, b] of [[client, upstream], [upstream, client]]) {
      sockets.add(a)
      a.on('error', () => {})
      a.on('close', () => { sockets.delete(a); b.destroy() })
      a.pipe(b)
    }
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: server.address().port,
    cut() { cut = true; for (const socket of sockets) socket.destroy() },
    mend() { cut = false },
    close() { this.cut(); return new Promise((resolve) => server.close(resolve)) },
  }
}

const linked = (pod) => pod.metric('comb_cluster_peers_linked')

describe('a cluster link cut while both pods serve clients', () => {
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

  it('fills the gap once both directions are back, whichever comes back last', async () => {
    // Pod a receives pod b's events on the link pod b dialed (relays[0]): its own link to pod b
    // (relays[1]) coming back first must not end the gap.
    const watcher = await RawClient.open(a)
    assert.equal((await watcher.req('notes', { kinds: [1], since: now() - 5 })).end[0], 'EOSE')
    const poster = await RawClient.open(b)
    for (const relay of relays) relay.cut()
    await eventually(async () => (await linked(a)) === 0 && (await linked(b)) === 0, 'both links down', 15000)
    relays[1].mend()
    await eventually(async () => (await linked(a)) === 1, 'pod a linked to pod b again', 20000)
    assert.equal(await linked(b), 0, 'pod b\'s link to pod a is still cut')
    const late = sign(keys().sk, { content: 'stored on pod b while only pod a\'s link is back' })
    assert.equal((await poster.publish(late)).ok, true)
    await pause(500)
    assert.equal(watcher.drain((f) => f[0] === 'EVENT').length, 0, 'nothing came over the cut link')
    relays[0].mend()
    assert.equal((await watcher.live('notes', 20000)).id, late.id, 'filled once pod b\'s link is back')
    await pause(300)
    assert.equal(watcher.drain((f) => f[0] === 'EVENT').length, 0, 'once')
    await watcher.close()
    await poster.close()
  })

  it('stops cleanly', async () => {
    const results = await group.stop()
    for (const r of results) assert.deepEqual([r.code, r.signal, r.timedOut], [0, null, false])
    group = null
  })
})
