// NIP-11 relay information, host routing, NIP-42 AUTH and NIP-70 protected events.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { withRelay, itStopsCleanly, toolsRelay, within, httpGet, RawClient, keys, sign, now, finalizeEvent }
  from './harness.mjs'

const NOSTR_JSON = { Accept: 'application/nostr+json' }

describe('NIP-11, hosts, NIP-42 and NIP-70', () => {
  const ctx = withRelay({ COMB_MAX_SUBSCRIPTIONS: '7', COMB_NAME: 'comb e2e' })
  let relay
  before(() => { relay = ctx.relay })

  /** A kind-22242 AUTH event for `challenge`, naming `url` in its relay tag. */
  const authEvent = (sk, challenge, url = relay.url) =>
    sign(sk, { kind: 22242, tags: [['relay', url], ['challenge', challenge]] })

  describe('NIP-11 and hosts', () => {
    it('GET / with Accept: application/nostr+json returns the information document', async () => {
      const res = await httpGet(relay.port, '/', NOSTR_JSON)
      assert.equal(res.status, 200)
      assert.match(res.headers['content-type'], /^application\/nostr\+json/)
      assert.equal(res.headers['access-control-allow-origin'], '*')
      assert.match(res.headers['access-control-allow-headers'], /Accept/) // NIP-11: all three on the document
      assert.match(res.headers['access-control-allow-methods'], /GET/)
      const doc = JSON.parse(res.body)
      assert.equal(doc.self, relay.pubkey, 'self is the printed relay key')
      assert.equal(doc.name, 'comb e2e')
      for (const nip of [1, 11, 42, 45, 70]) assert.ok(doc.supported_nips.includes(nip), `NIP-${nip} listed`)
      assert.ok(doc.supported_nips.every(Number.isInteger))
      assert.equal(typeof doc.limitation, 'object')
      assert.equal(doc.limitation.max_subscriptions, 7, 'limitation follows COMB_MAX_SUBSCRIPTIONS')
      assert.equal(doc.limitation.max_subid_length, 64)
      assert.equal(doc.limitation.auth_required, false)
    })

    it('GET / without the Accept header is not the document', async () => {
      const res = await httpGet(relay.port, '/')
      assert.equal(res.status, 200)
      assert.doesNotMatch(res.headers['content-type'], /nostr\+json/)
    })

    it('the loopback aliases of the fresh install are served', async () => {
      const res = await httpGet(relay.port, '/', { ...NOSTR_JSON, Host: `localhost:${relay.port}` })
      assert.equal(res.status, 200)
      assert.equal(JSON.parse(res.body).self, relay.pubkey)
    })

    it('an unknown Host gets 404 for a plain GET', async () => {
      for (const headers of [{ Host: 'nowhere.example' }, { Host: 'nowhere.example', ...NOSTR_JSON }]) {
        const res = await httpGet(relay.port, '/', headers)
        assert.equal(res.status, 404, JSON.stringify(headers))
      }
    })

    it('an unknown Host gets 404 instead of a WebSocket upgrade', async () => {
      await assert.rejects(RawClient.open(relay, { headers: { Host: 'nowhere.example' } }), (error) => {
        assert.equal(error.status, 404, error.message)
        return true
      })
      const fine = await RawClient.open(relay)
      assert.deepEqual((await fine.req('s', { limit: 1 })).end, ['EOSE', 's'])
      await fine.close()
    })
  })

  describe('NIP-42', () => {
    it('sends ["AUTH", challenge] on connect, a different challenge per connection', async () => {
      const [a, b] = await Promise.all([RawClient.open(relay), RawClient.open(relay)])
      const first = await within(a.take(() => true, 'first frame'), 5000, 'first frame')
      assert.equal(first.length, 2)
      assert.equal(first[0], 'AUTH')
      assert.match(first[1], /^\S{16,}$/)
      assert.notEqual(first[1], await b.challenge())
      await Promise.all([a.close(), b.close()])
    })

    it('nostr-tools authenticates with OK true', async () => {
      const { sk } = keys()
      const tools = await toolsRelay(relay)
      for (let i = 0; i < 100 && !tools.challenge; i++) await new Promise((r) => setTimeout(r, 20))
      assert.ok(tools.challenge, 'nostr-tools saw no challenge')
      const reason = await within(tools.auth((t) => finalizeEvent(t, sk)), 5000, 'nostr-tools auth')
      assert.equal(reason, '')
      tools.close()
    })

    it('refuses an AUTH whose relay tag names another host', async () => {
      const client = await RawClient.open(relay)
      const challenge = await client.challenge()
      const { sk } = keys()
      assert.deepEqual(await client.auth(authEvent(sk, challenge, 'ws://relay.other.example:7777')),
        { ok: false, message: 'invalid: relay tag names another relay' })
      assert.deepEqual(await client.auth(authEvent(sk, challenge, `ws://127.0.0.1:${relay.port + 1}`)),
        { ok: false, message: 'invalid: relay tag names another relay' })
      await client.close()
    })

    it('refuses an AUTH with another challenge or a stale created_at', async () => {
      const client = await RawClient.open(relay)
      const challenge = await client.challenge()
      const { sk } = keys()
      assert.deepEqual(await client.auth(authEvent(sk, 'not-the-challenge')),
        { ok: false, message: 'invalid: challenge does not match' })
      const stale = sign(sk, { kind: 22242, created_at: now() - 3600,
        tags: [['relay', relay.url], ['challenge', challenge]] })
      assert.deepEqual(await client.auth(stale), { ok: false, message: 'invalid: created_at is too far from now' })
      await client.close()
    })

    it('accepts an AUTH naming the loopback alias the client connected to', async () => {
      const host = `localhost:${relay.port}`
      const client = await RawClient.open(relay, { headers: { Host: host } })
      const { sk } = keys()
      assert.deepEqual(await client.auth(authEvent(sk, await client.challenge(), `ws://${host}`)),
        { ok: true, message: '' })
      await client.close()
    })
  })

  describe('NIP-70 protected events', () => {
    it('before AUTH: OK false "auth-required: ..."', async () => {
      const client = await RawClient.open(relay)
      const { sk, pk } = keys()
      const ev = sign(sk, { tags: [['-']], content: 'protected' })
      const reply = await client.publish(ev)
      assert.equal(reply.ok, false)
      assert.equal(reply.message, 'auth-required: this event may only be published by its author')
      assert.deepEqual((await client.req('p', { authors: [pk] })).events, [])
      await client.close()
    })

    it('after AUTH as its author: OK true, stored and served', async () => {
      const tools = await toolsRelay(relay)
      const { sk, pk } = keys()
      for (let i = 0; i < 100 && !tools.challenge; i++) await new Promise((r) => setTimeout(r, 20))
      assert.equal(await within(tools.auth((t) => finalizeEvent(t, sk)), 5000, 'auth'), '')
      const ev = sign(sk, { tags: [['-']], content: 'protected, by its author' })
      assert.equal(await within(tools.publish(ev), 5000, 'publish'), '')
      tools.close()
      const reader = await RawClient.open(relay)
      const { events } = await reader.req('p', { authors: [pk] })
      assert.deepEqual(events.map((e) => [e.id, e.tags]), [[ev.id, [['-']]]])
      await reader.close()
    })

    it('authenticated as someone else: OK false "restricted: ..."', async () => {
      const client = await RawClient.open(relay)
      const me = keys()
      const author = keys()
      assert.deepEqual(await client.auth(authEvent(me.sk, await client.challenge())), { ok: true, message: '' })
      const reply = await client.publish(sign(author.sk, { tags: [['-']], content: 'not mine' }))
      assert.deepEqual(reply, { ok: false, message: 'restricted: this event may only be published by its author' })
      const mine = sign(me.sk, { tags: [['-']], content: 'mine' })
      assert.deepEqual(await client.publish(mine), { ok: true, message: '' }, 'the connection still works')
      await client.close()
    })
  })

  itStopsCleanly(ctx)
})
