// Three pods linked by CAF cluster links, no Redis: the same exactly-once delivery, peers that
// prove the shared secret, and a pod with the wrong secret refused.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { RawClient, keys, sign, now, startRelay } from '../e2e/harness.mjs'
import { eventually, readiness, startPods, stopCleanly } from './pods.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

describe('three pods linked by CAF cluster links', () => {
  let group, a, b, c
  const clusterPorts = []

  before(async () => {
    group = await startPods(3, (i, ports) => ({
      COMB_CLUSTER_LISTEN: `127.0.0.1:${ports[i]}`,
      COMB_CLUSTER_PEERS: ports.filter((_, j) => j !== i).map((p) => `127.0.0.1:${p}`).join(','),
      COMB_CLUSTER_SECRET: 'correct horse battery staple',
    }), { clusterLinks: true })
    clusterPorts.push(...group.clusterPorts)
    ;[a, b, c] = group.pods
    for (const pod of group.pods)
      await eventually(async () => (await pod.metric('comb_cluster_peers_linked')) === 2, 'two peers linked', 20000)
  })
  after(async () => { await group?.stop() })

  it('delivers events from every pod to every pod exactly once', async () => {
    for (const pod of group.pods) assert.equal(await readiness(pod), 200)
    const watcher = await RawClient.open(a)
    await watcher.req('all', { kinds: [1, 20001], since: now() - 5 })
    const author = keys()
    const sent = []
    for (const pod of [b, c]) {
      const poster = await RawClient.open(pod)
      const note = sign(author.sk, { content: `note via ${pod.port}` })
      const blip = sign(author.sk, { kind: 20001, content: `blip via ${pod.port}` })
      assert.equal((await poster.publish(note)).ok, true)
      assert.equal((await poster.publish(blip)).ok, true)
      sent.push(note.id, blip.id)
      await poster.close()
    }
    const seen = []
    await eventually(async () => {
      seen.push(...watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'all').map((f) => f[2].id))
      return seen.length >= 4
    }, 'four events on pod a')
    await pause(500)
    seen.push(...watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'all').map((f) => f[2].id))
    assert.deepEqual([...seen].sort(), [...sent].sort(), 'each event once')
    await watcher.close()
  })

  it('refuses a pod that does not know the secret', async () => {
    const refusedBefore = await a.metric('comb_bridge_refused_peers_total')
    const intruder = await startRelay({
      COMB_CLUSTER_PEERS: `127.0.0.1:${clusterPorts[0]}`,
      COMB_CLUSTER_SECRET: 'a wrong secret, long enough to be accepted',
    })
    try {
      // The intruder refuses pod a's proof (made with the other secret) and so never proves
      // itself; pod a refuses it when the handshake times out.
      await eventually(async () => (await intruder.metric('comb_bridge_refused_peers_total')) > 0,
        'the intruder refuses pod a', 15000)
      await eventually(async () => (await a.metric('comb_bridge_refused_peers_total')) > refusedBefore,
        'pod a refuses the intruder', 25000)
      // Counted before it is logged, and the log reaches this process through a pipe.
      await eventually(async () => /handshake not completed in time/.test(a.log()),
        'pod a logs why it refused the intruder', 5000)
      assert.equal(await intruder.metric('comb_cluster_peers_linked'), 0)
      assert.equal(await a.metric('comb_cluster_peers_linked'), 2)
      assert.equal(await readiness(intruder), 503)
    } finally {
      await intruder.stop()
    }
  })

  it('relinks a peer that restarts', async () => {
    // Pod c goes away: the others notice, then it comes back on the same cluster port.
    await c.stop()
    await eventually(async () => (await a.metric('comb_cluster_peers_linked')) === 1, 'pod a lost pod c', 15000)
    assert.equal(await readiness(a), 503)
    group.pods[2] = c = await startRelay({ COMB_PUBLIC_URL: 'ws://hive.test',
      COMB_NODE_ID: 'pod-2-again', COMB_RELAY_KEY_FILE: group.keyFile,
      COMB_CLUSTER_LISTEN: `127.0.0.1:${clusterPorts[2]}`,
      COMB_CLUSTER_PEERS: `127.0.0.1:${clusterPorts[0]},127.0.0.1:${clusterPorts[1]}`,
      COMB_CLUSTER_SECRET: 'correct horse battery staple' }, { database: group.database })
    await eventually(async () => (await a.metric('comb_cluster_peers_linked')) === 2, 'pod a relinked', 20000)
    const watcher = await RawClient.open(a)
    await watcher.req('back', { kinds: [1], since: now() - 5 })
    const poster = await RawClient.open(c)
    const note = sign(keys().sk, { content: 'from the restarted pod' })
    assert.equal((await poster.publish(note)).ok, true)
    assert.equal((await watcher.live('back', 10000)).id, note.id)
    await watcher.close()
    await poster.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})
