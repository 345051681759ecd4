// A pod's cluster port facing a node that knows no secret (tests/multiprocess/intruder): plain
// CAF on loopback links, then with mutual TLS a node without a certificate, with one from
// another CA, and with a valid certificate but no secret. Its attempts (the bridge's local
// handlers, envelopes, an unearned welcome, reflected challenges and proofs, exit and down
// messages) are refused, logged and counted; it receives no event; nothing it sends reaches a
// subscriber; the legitimate pods stay linked and ready.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { RawClient, keys, sign, now, freePort, httpGet } from '../e2e/harness.mjs'
import { eventually, startPods, stopCleanly } from './pods.mjs'

const intruderBin = process.env.COMB_INTRUDER_BIN || path.resolve('../../build/bin/comb-intruder')
const adminBin = process.env.COMB_ADMIN_BIN || path.resolve('../../build/bin/comb-admin')
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function run(bin, args) {
  return new Promise((resolve) => execFile(bin, args, { timeout: 60000 }, (error, stdout, stderr) =>
    resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr })))
}

/** Runs the intruder against `port`; its JSON report. */
async function intrude(port, envelopeFile, tls = []) {
  const { code, stdout, stderr } = await run(intruderBin, ['127.0.0.1', String(port), envelopeFile, ...tls, '--listen-ms', '4000'])
  assert.equal(code, 0, stderr)
  return JSON.parse(stdout.trim().split('\n').at(-1))
}

/** A forged envelope: a valid event of community 1 with no MAC, and one with a made-up MAC. */
async function forgedEnvelope(dir) {
  const note = sign(keys().sk, { content: 'injected by the intruder' })
  const file = path.join(dir, 'envelope.json')
  await writeFile(file, JSON.stringify({ origin: 'pod-x', community: 1, event: note, mac: '00'.repeat(32) }))
  return { note, file }
}

/** Subscribes on every pod; returns a check that none of them saw `id`. */
async function watchAll(pods) {
  const watchers = []
  for (const pod of pods) {
    const w = await RawClient.open(pod)
    await w.req('all', { kinds: [1], since: now() - 5 })
    watchers.push(w)
  }
  return {
    async sawNone(id) {
      await pause(500)
      for (const w of watchers)
        assert.equal(w.drain((f) => f[0] === 'EVENT' && f[2].id === id).length, 0, 'the injected event reached a subscriber')
    },
    async close() { for (const w of watchers) await w.close() },
  }
}

async function counters(pod) {
  return {
    dropped: await pod.metric('comb_cluster_dropped_messages_total'),
    refused: await pod.metric('comb_bridge_refused_peers_total'),
  }
}

/** What every intruder that got in must have seen and caused. */
async function assertRepelled(report, pod, before, linked, peer = null) {
  assert.equal(report.connected, true)
  assert.equal(report.envelopes, 0, 'no event left the pod')
  assert.deepEqual(report.named, [], "CAF's named actors (ConfigServ, SpawnServ) are not reachable")
  assert.ok(!report.replies.includes('welcome'), `welcomed: ${report.replies}`)
  // The intruder has exited once it sent everything; a busy pod may still be reading it off the
  // socket, so the counts are awaited (bounded), not read once.
  const counted = async () => {
    const after = await counters(pod)
    return { dropped: after.dropped - before.dropped, refused: after.refused - before.refused }
  }
  // redis, ready, peer, down and two exits: dropped at the gate, unread; envelope x3, welcome,
  // reflected challenge, reflected hello, proofs x2: refused
  const seen = await eventually(async () => {
    const got = await counted()
    return got.dropped >= 6 && got.refused >= 6 && got
  }, 'the gate dropped and refused what the intruder sent', 5000).catch(async () => counted())
  assert.ok(seen.dropped >= 6, `dropped ${seen.dropped}`)
  assert.ok(seen.refused >= 6, `refused ${seen.refused}`)
  assert.match(pod.log(), /cluster: refused .*welcome from a node this pod did not dial/)
  assert.match(pod.log(), /reflected/)
  assert.match(pod.log(), /dropped a message the cluster port does not take/)
  // Should this fail, the reason and the pod's last cluster lines say which link dropped and why.
  const ready = await httpGet(pod.port, '/readyz')
  const lastCluster = (p) => p.log().split('\n').filter((l) => /cluster|bridge/.test(l)).slice(-15).join('\n')
  // Both ends: when a link drops, the peer's log may be the one that says why.
  const clusterLog = lastCluster(pod) + (peer ? `\n--- the peer pod:\n${lastCluster(peer)}` : '')
  assert.equal(ready.status, 200, `${ready.body.trim()}\n${clusterLog}`)
  assert.equal(await pod.metric('comb_cluster_peers_linked'), linked)
}

/**
 * Runs the intruder against pod `a` while notes are posted on both pods (so envelopes are flowing
 * between them as it listens); returns its report once the notes reached pod a's subscriber.
 */
async function intrudeWhileBusy(a, b, port, envelopeFile, tls = []) {
  const watcher = await RawClient.open(a)
  await watcher.req('busy', { kinds: [1], since: now() - 5 })
  const running = intrude(port, envelopeFile, tls)
  await pause(1200) // the intruder has connected and made its attempts; it is listening now
  const notes = []
  for (const pod of [b, a]) {
    const poster = await RawClient.open(pod)
    const note = sign(keys().sk, { content: `posted on ${pod.port} while the intruder listens` })
    assert.equal((await poster.publish(note)).ok, true)
    notes.push(note.id)
    await poster.close()
  }
  const seen = []
  await eventually(async () => {
    seen.push(...watcher.drain((f) => f[0] === 'EVENT' && f[1] === 'busy').map((f) => f[2].id))
    return notes.every((id) => seen.includes(id))
  }, 'both notes on pod a (the link to pod b works meanwhile)')
  await watcher.close()
  return running
}

/** A note posted on `from` reaches a subscriber on `to` exactly once. */
async function stillLinked(from, to) {
  const watcher = await RawClient.open(to)
  await watcher.req('live', { kinds: [1], since: now() - 5 })
  const poster = await RawClient.open(from)
  const note = sign(keys().sk, { content: 'legitimate, after the intruder' })
  assert.equal((await poster.publish(note)).ok, true)
  assert.equal((await watcher.live('live', 10000)).id, note.id)
  await pause(300)
  assert.equal(watcher.drain((f) => f[0] === 'EVENT' && f[2].id === note.id).length, 0, 'delivered once')
  await watcher.close()
  await poster.close()
}

describe('an intruder on a loopback cluster port without TLS', () => {
  let group, dir, forged
  const clusterPorts = []

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'comb-intruder-'))
    forged = await forgedEnvelope(dir)
    group = await startPods(2, (i, ports) => ({
      COMB_CLUSTER_LISTEN: `127.0.0.1:${ports[i]}`,
      COMB_CLUSTER_PEERS: `127.0.0.1:${ports[1 - i]}`,
    }), { clusterLinks: true })
    clusterPorts.push(...group.clusterPorts)
    for (const pod of group.pods)
      await eventually(async () => (await pod.metric('comb_cluster_peers_linked')) === 1, 'linked', 30000)
  })
  after(async () => { await group?.stop(); await rm(dir, { recursive: true, force: true }) })

  it('says in the log that links are loopback only', () => {
    assert.match(group.pods[0].log(), /cluster links without TLS .*loopback only/)
  })

  it('refuses, logs and counts every attempt, and the pods stay linked', async () => {
    const [a, b] = group.pods
    const watch = await watchAll(group.pods)
    const before = await counters(a)
    const report = await intrudeWhileBusy(a, b, clusterPorts[0], forged.file)
    assert.ok(report.replies.includes('challenge'), 'a hello is answered (that is all)')
    await assertRepelled(report, a, before, 1, b)
    await watch.sawNone(forged.note.id)
    await watch.close()
    await stillLinked(b, a)
    await stillLinked(a, b)
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})

describe('an intruder on a cluster port with mutual TLS', () => {
  let group, dir, forged, ca, other
  const clusterPorts = []

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'comb-tls-'))
    forged = await forgedEnvelope(dir)
    ca = path.join(dir, 'ca')
    other = path.join(dir, 'other')
    for (const [folder, nodes] of [[ca, ['pod-0', 'pod-1', 'intruder']], [other, ['intruder']]]) {
      const init = await run(adminBin, ['cluster', 'init-ca', folder])
      assert.equal(init.code, 0, init.stderr)
      for (const node of nodes) {
        const issued = await run(adminBin, ['cluster', 'issue', folder, node])
        assert.equal(issued.code, 0, issued.stderr)
      }
    }
    group = await startPods(2, (i, ports) => ({
      COMB_CLUSTER_LISTEN: `127.0.0.1:${ports[i]}`,
      COMB_CLUSTER_PEERS: `127.0.0.1:${ports[1 - i]}`,
      COMB_CLUSTER_CERT: path.join(ca, `pod-${i}.pem`),
      COMB_CLUSTER_KEY: path.join(ca, `pod-${i}.key`),
      COMB_CLUSTER_CA: path.join(ca, 'ca.pem'),
    }), { clusterLinks: true })
    clusterPorts.push(...group.clusterPorts)
    for (const pod of group.pods)
      await eventually(async () => (await pod.metric('comb_cluster_peers_linked')) === 1, 'linked over TLS', 30000)
  })
  after(async () => { await group?.stop(); await rm(dir, { recursive: true, force: true }) })

  it('comb-admin made keys readable by their owner only, and the log says TLS', async () => {
    for (const file of ['ca/ca.key', 'ca/pod-0.key', 'other/intruder.key'])
      assert.equal((await stat(path.join(dir, file))).mode & 0o777, 0o600, file)
    assert.match(group.pods[0].log(), /cluster links over mutual TLS/)
    const again = await run(adminBin, ['cluster', 'issue', ca, 'pod-0'])
    assert.equal(again.code, 5, 'an existing certificate is never replaced')
  })

  it('a plain CAF node without a certificate cannot connect', async () => {
    const report = await intrude(clusterPorts[0], forged.file)
    assert.equal(report.connected, false)
  })

  it('a node with a certificate from another CA cannot connect', async () => {
    const report = await intrude(clusterPorts[0], forged.file, ['--cert', path.join(other, 'intruder.pem'),
      '--key', path.join(other, 'intruder.key'), '--ca', path.join(other, 'ca.pem')])
    assert.equal(report.connected, false)
    const trusting = await intrude(clusterPorts[0], forged.file, ['--cert', path.join(other, 'intruder.pem'),
      '--key', path.join(other, 'intruder.key'), '--ca', path.join(ca, 'ca.pem')])
    assert.equal(trusting.connected, false, 'the pod checks the client certificate too')
  })

  it('a node with a valid certificate but no secret gets nothing in or out', async () => {
    const [a, b] = group.pods
    const watch = await watchAll(group.pods)
    const before = await counters(a)
    const report = await intrudeWhileBusy(a, b, clusterPorts[0], forged.file, ['--cert', path.join(ca, 'intruder.pem'),
      '--key', path.join(ca, 'intruder.key'), '--ca', path.join(ca, 'ca.pem')])
    await assertRepelled(report, a, before, 1, b)
    await watch.sawNone(forged.note.id)
    await watch.close()
    await stillLinked(b, a)
  })

  it('refuses to start with a certificate from another CA, or links off loopback without TLS', async () => {
    const { startRelay } = await import('../e2e/harness.mjs')
    const port = await freePort()
    const wrong = await startRelay({ COMB_CLUSTER_LISTEN: `127.0.0.1:${port}`,
      COMB_CLUSTER_SECRET: 'a secret long enough for the check',
      COMB_CLUSTER_CERT: path.join(other, 'intruder.pem'), COMB_CLUSTER_KEY: path.join(other, 'intruder.key'),
      COMB_CLUSTER_CA: path.join(ca, 'ca.pem') }).catch((e) => e)
    assert.ok(wrong instanceof Error, 'the pod must not start')
    assert.match(String(wrong.message), /does not chain to COMB_CLUSTER_CA/)
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})
