// /metrics after known traffic: each counter moves by exactly what the traffic caused.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { RawClient, finalizeEvent, httpGet, itStopsCleanly, keys, now, sign, withRelay } from './harness.mjs'

async function scrape(relay) {
  const { status, body } = await httpGet(relay.metricsPort, '/metrics')
  assert.equal(status, 200)
  const values = new Map()
  for (const line of body.split('\n'))
    if (line && !line.startsWith('#')) {
      const at = line.lastIndexOf(' ')
      values.set(line.slice(0, at), Number(line.slice(at + 1)))
    }
  return values
}

// The socket's close reaches the relay after client.close() resolves; wait for the gauge, bounded.
async function scrapeOnceClosed(relay) {
  const deadline = Date.now() + 3000
  for (;;) {
    const values = await scrape(relay)
    if (values.get('comb_connections') === 0 || Date.now() > deadline) return values
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const delta = (before, after, name) => (after.get(name) ?? 0) - (before.get(name) ?? 0)

describe('metrics', () => {
  const owner = keys()
  const ctx = withRelay({ COMB_OWNER_PUBKEY: owner.pk })

  it('count exactly the traffic they describe', async () => {
    const { relay } = ctx
    const before = await scrape(relay)
    const client = await RawClient.open(relay)
    const author = keys()
    const a = sign(author.sk, { content: 'one' })
    const b = sign(author.sk, { content: 'two' })
    assert.equal((await client.publish(a)).ok, true)
    assert.equal((await client.publish(b)).ok, true)
    assert.match((await client.publish(a)).message, /^duplicate:/)
    const forged = { ...sign(author.sk, { content: 'three' }), content: 'tampered' }
    assert.equal((await client.publish(forged)).ok, false)
    assert.equal((await client.req('r', { authors: [author.pk] })).events.length, 2)
    client.send(['COUNT', 'c', { authors: [author.pk] }])
    await client.take((f) => f[0] === 'COUNT', 'COUNT')
    client.send(['CLOSE', 'r'])
    client.send('not json')
    await client.take((f) => f[0] === 'NOTICE', 'NOTICE')
    const challenge = await client.challenge()
    const joiner = keys()
    const auth = finalizeEvent({ kind: 22242, created_at: now(), content: '',
      tags: [['relay', relay.url], ['challenge', challenge]] }, joiner.sk)
    assert.equal((await client.auth(auth)).ok, true)
    assert.match((await client.publish(sign(joiner.sk, { kind: 28934, tags: [['-']] }))).message, /^info: welcome/)
    await client.close()
    const after = await scrapeOnceClosed(relay)

    const expect = {
      'comb_connections_total': 1,
      'comb_messages_total{type="EVENT"}': 5,
      'comb_messages_total{type="REQ"}': 1,
      'comb_messages_total{type="COUNT"}': 1,
      'comb_messages_total{type="CLOSE"}': 1,
      'comb_messages_total{type="AUTH"}': 1,
      'comb_messages_total{type="invalid"}': 1,
      'comb_events_accepted_total': 4,
      'comb_events_rejected_total': 1,
      'comb_events_stored_total': 2,
      'comb_events_duplicate_total': 1,
      'comb_req_seconds_count': 1,
      'comb_list_writes_total': 1,
      'comb_membership_writes_total{path="claim_membership",outcome="changed"}': 1,
    }
    for (const [name, value] of Object.entries(expect)) assert.equal(delta(before, after, name), value, name)
    assert.equal(after.get('comb_connections'), 0)
    assert.equal(after.get('comb_storage_waiting_bytes'), 0, 'each event the writer answered is given back')
    assert.ok(delta(before, after, 'comb_commit_seconds_count') >= 1)
    assert.ok([...after.keys()].some((k) => k.startsWith('comb_community_members{')))
  })

  it('are served on their own listener only, never on a community host', async () => {
    const { relay } = ctx
    const onCommunity = await httpGet(relay.port, '/metrics')
    assert.equal(onCommunity.status, 404)
    assert.doesNotMatch(onCommunity.body, /comb_/)
    const onListener = await httpGet(relay.metricsPort, '/metrics')
    assert.equal(onListener.status, 200)
    assert.match(onListener.body, /comb_sockets_open /)
    assert.equal((await httpGet(relay.metricsPort, '/healthz')).status, 200)
    // Scrapers name an address or a private name (a compose service, a cluster service).
    for (const Host of [`localhost:${relay.metricsPort}`, 'comb:9777', 'comb.monitoring.svc.cluster.local:9777'])
      assert.equal((await httpGet(relay.metricsPort, '/metrics', { Host })).status, 200, Host)
    // No page a browser opens may read them (nor the detailed readiness) across origins.
    for (const target of ['/metrics', '/readyz', '/nothing']) {
      const answer = await httpGet(relay.metricsPort, target, { Origin: 'https://evil.example' })
      assert.equal(answer.headers['access-control-allow-origin'], undefined, target)
    }
    // Nor a page of the same origin: a public name its owner pointed at 127.0.0.1 afterwards.
    for (const target of ['/metrics', '/readyz']) {
      const rebound = await httpGet(relay.metricsPort, target, { Host: `rebind.attacker.example:${relay.metricsPort}` })
      assert.equal(rebound.status, 421, target)
      assert.doesNotMatch(rebound.body, /comb_sockets_open|postgres/i, target)
    }
    assert.equal(await relay.metric('comb_metrics_requests_misdirected_total'), 2)
  })

  it('serve 64 connections at once on their listener; past it one is closed unread and counted', async () => {
    const { relay } = ctx
    const open = () => new Promise((resolve, reject) => {
      const socket = net.connect(relay.metricsPort, '127.0.0.1', () => resolve(socket))
      socket.on('error', reject)
    })
    const closedWithin = (socket, ms) => new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms)
      socket.on('close', () => { clearTimeout(timer); resolve(true) })
    })
    const held = []
    for (let i = 0; i < 64; i++) held.push(await open())
    const extra = await open()
    assert.equal(await closedWithin(extra, 2000), true, 'the 65th connection is closed')
    assert.equal(await closedWithin(held[0], 200), false, 'the ones served stay open')
    for (const socket of held) socket.destroy()
    const deadline = Date.now() + 3000
    let refused
    for (;;) {
      refused = await scrape(relay).then((v) => v.get('comb_metrics_connections_refused_total')).catch(() => undefined)
      if (refused !== undefined || Date.now() > deadline) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(refused, 1)
  })

  itStopsCleanly(ctx)
})
