// Publishing with nostr-tools: OK replies for new, duplicate, tampered and badly signed events,
// and the checks a relay makes before storing (expiration, created_at, rate).
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { withRelay, itStopsCleanly, toolsRelay, publishWith, RawClient, keys, sign, now } from './harness.mjs'

describe('publish (nostr-tools)', () => {
  const ctx = withRelay()
  let relay
  let tools
  before(async () => {
    relay = ctx.relay
    tools = await toolsRelay(relay)
  })
  after(() => tools?.close())

  it('accepts a kind-1 note with OK true and an empty message', async () => {
    const { sk } = keys()
    const note = sign(sk, { content: 'hello from nostr-tools' })
    assert.deepEqual(await publishWith(tools, note), { ok: true, message: '' })
  })

  it('answers a second copy with OK true "duplicate: ..." and stores it once', async () => {
    const { sk, pk } = keys()
    const note = sign(sk, { content: 'twice' })
    assert.deepEqual(await publishWith(tools, note), { ok: true, message: '' })
    const again = await publishWith(tools, note)
    assert.equal(again.ok, true)
    assert.equal(again.message, 'duplicate: already have this event')
    const reader = await RawClient.open(relay)
    const { events, end } = await reader.req('dup', { authors: [pk] })
    assert.deepEqual(end, ['EOSE', 'dup'])
    assert.deepEqual(events, [stripSymbols(note)])
    await reader.close()
  })

  it('refuses an event whose content changed after signing', async () => {
    const { sk, pk } = keys()
    const tampered = { ...sign(sk, { content: 'original' }), content: 'changed' }
    assert.deepEqual(await publishWith(tools, tampered),
      { ok: false, message: 'invalid: event id does not match its content' })
    const reader = await RawClient.open(relay)
    assert.deepEqual((await reader.req('t', { authors: [pk] })).events, [])
    await reader.close()
  })

  it('refuses an event with a bad signature', async () => {
    const { sk } = keys()
    const ev = sign(sk, { content: 'signed' })
    const flipped = ev.sig.slice(0, -1) + (ev.sig.endsWith('0') ? '1' : '0')
    assert.deepEqual(await publishWith(tools, { ...ev, sig: flipped }),
      { ok: false, message: 'invalid: signature verification failed' })
  })

  it('refuses a valid signature of another event', async () => {
    const { sk } = keys()
    const other = keys()
    const ev = sign(sk, { content: 'whose?' })
    const forged = sign(other.sk, { content: 'whose?', created_at: ev.created_at })
    const swapped = { ...forged, sig: ev.sig }
    assert.deepEqual(await publishWith(tools, swapped),
      { ok: false, message: 'invalid: signature verification failed' })
  })

  it('refuses an event that has already expired (NIP-40)', async () => {
    const { sk } = keys()
    const ev = sign(sk, { tags: [['expiration', String(now() - 10)]], content: 'stale' })
    assert.deepEqual(await publishWith(tools, ev),
      { ok: false, message: 'invalid: event has already expired' })
  })

  it('serves an event until its expiration, then no longer (NIP-40)', async () => {
    const { sk, pk } = keys()
    const expires = now() + 2
    const ev = sign(sk, { tags: [['expiration', String(expires)]], content: 'soon gone' })
    assert.deepEqual(await publishWith(tools, ev), { ok: true, message: '' })
    const reader = await RawClient.open(relay)
    const first = await reader.req('x0', { authors: [pk] })
    assert.deepEqual(first.events.map((e) => e.id), [ev.id], 'served before it expires')
    let gone = null
    for (let attempt = 1; attempt <= 40 && !gone; attempt++) { // 40 x 250 ms at most
      await new Promise((resolve) => setTimeout(resolve, 250))
      const { events } = await reader.req(`x${attempt}`, { authors: [pk] })
      if (events.length === 0) gone = Date.now() / 1000
    }
    assert.ok(gone, 'still served 10 s after its expiration')
    assert.ok(gone >= expires, `dropped at ${gone}, before its expiration ${expires}`)
    assert.deepEqual((await reader.req('count-after', { ids: [ev.id] })).events, [])
    reader.send(['COUNT', 'cx', { ids: [ev.id] }])
    assert.deepEqual(await reader.take((f) => f[1] === 'cx', 'COUNT cx'), ['COUNT', 'cx', { count: 0 }])
    await reader.close()
  })

  it('refuses created_at too far in the future', async () => {
    const { sk } = keys()
    const ev = sign(sk, { created_at: now() + 3600, content: 'from the future' })
    assert.deepEqual(await publishWith(tools, ev),
      { ok: false, message: 'invalid: created_at is too far in the future' })
  })

  it('accepts created_at a little ahead (within the 15-minute window)', async () => {
    const { sk } = keys()
    const ev = sign(sk, { created_at: now() + 60, content: 'a minute ahead' })
    assert.deepEqual(await publishWith(tools, ev), { ok: true, message: '' })
  })

  it('refuses AUTH events sent as EVENT', async () => {
    const { sk } = keys()
    const ev = sign(sk, { kind: 22242, tags: [['relay', relay.url], ['challenge', 'x']] })
    assert.deepEqual(await publishWith(tools, ev),
      { ok: false, message: 'invalid: AUTH events are sent with AUTH, not EVENT' })
  })

  it('answers a malformed frame with a NOTICE and keeps the connection', async () => {
    const client = await RawClient.open(relay)
    client.send('["EVENT", {"id": 1')
    assert.deepEqual(await client.take((f) => f[0] === 'NOTICE', 'NOTICE'), ['NOTICE', 'invalid: malformed JSON'])
    client.send(['FOO', 'bar'])
    assert.deepEqual(await client.take((f) => f[0] === 'NOTICE', 'NOTICE'),
      ['NOTICE', 'invalid: unknown message type'])
    assert.deepEqual((await client.req('still', { limit: 0 })).end, ['EOSE', 'still'])
    await client.close()
  })

  itStopsCleanly(ctx)
})

function stripSymbols(ev) {
  const { id, pubkey, created_at, kind, tags, content, sig } = ev
  return { id, pubkey, created_at, kind, tags, content, sig }
}
