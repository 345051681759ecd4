// Limits: each refusal carries its NIP-01 prefix and leaves the connection usable (a REQ sent
// afterwards still gets its EOSE); only an oversize frame closes the connection (1009).
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { withRelay, itStopsCleanly, RawClient, keys, sign, now, idsOf, newestFirst, metricAbove } from './harness.mjs'

const OK = { ok: true, message: '' }

/** The connection still serves a REQ: a fresh subscription id gets its EOSE. */
async function stillUp(client, sub = `alive-${Math.random().toString(36).slice(2, 8)}`) {
  assert.deepEqual((await client.req(sub, { kinds: [1], limit: 1 })).end, ['EOSE', sub], 'connection still up')
}

describe('limits', () => {
  const ctx = withRelay({
    COMB_MAX_SUBSCRIPTIONS: '3',
    COMB_MAX_FILTERS: '2',
    COMB_MAX_LIMIT: '5',
    COMB_MAX_EVENT_TAGS: '5',
    COMB_MAX_TAG_ELEMENTS: '12',
    COMB_MAX_MESSAGE_BYTES: '4096',
  })
  let relay
  before(() => { relay = ctx.relay })

  it('a subscription over COMB_MAX_SUBSCRIPTIONS gets CLOSED "rate-limited: ..."', async () => {
    const client = await RawClient.open(relay)
    for (const sub of ['s1', 's2', 's3']) assert.deepEqual((await client.req(sub, { kinds: [1] })).end, ['EOSE', sub])
    const refused = await client.req('s4', { kinds: [1] })
    assert.deepEqual(refused, { events: [], end: ['CLOSED', 's4', 'rate-limited: too many open subscriptions (at most 3)'] })
    assert.deepEqual((await client.req('s2', { kinds: [7] })).end, ['EOSE', 's2'], 'reusing an open id is allowed')
    client.send(['CLOSE', 's1'])
    await stillUp(client)
    await client.close()
  })

  it('a REQ or COUNT with more than COMB_MAX_FILTERS filters gets CLOSED "invalid: too many filters"', async () => {
    const client = await RawClient.open(relay)
    const three = [{ kinds: [1] }, { kinds: [7] }, { kinds: [0] }]
    assert.deepEqual(await client.req('many', ...three), { events: [], end: ['CLOSED', 'many', 'invalid: too many filters'] })
    client.send(['COUNT', 'cnt', ...three])
    assert.deepEqual(await client.take((f) => f[1] === 'cnt', 'COUNT reply'), ['CLOSED', 'cnt', 'invalid: too many filters'])
    assert.deepEqual((await client.req('two', three[0], three[1])).end, ['EOSE', 'two'], 'two filters are fine')
    await stillUp(client)
    await client.close()
  })

  it('after CLOSED for a reused subscription id, nothing more arrives on that id', async () => {
    const client = await RawClient.open(relay)
    const { sk, pk } = keys()
    assert.deepEqual((await client.req('s', { authors: [pk], kinds: [1] })).end, ['EOSE', 's'])
    assert.deepEqual((await client.req('watch', { authors: [pk], kinds: [7] })).end, ['EOSE', 'watch'])
    const three = [{ authors: [pk] }, { kinds: [1] }, { kinds: [7] }]
    assert.deepEqual((await client.req('s', ...three)).end, ['CLOSED', 's', 'invalid: too many filters'])
    const pub = await RawClient.open(relay)
    assert.deepEqual(await pub.publish(sign(sk, { kind: 1, content: 'for the closed s' })), OK)
    const sentinel = sign(sk, { kind: 7, content: '+' })
    assert.deepEqual(await pub.publish(sentinel), OK)
    assert.equal((await client.live('watch')).id, sentinel.id)
    assert.deepEqual(client.drain((f) => f[1] === 's'), [], 'events on a subscription the relay said was CLOSED')
    await Promise.all([client.close(), pub.close()])
  })

  it('limit is capped at COMB_MAX_LIMIT, and is the default when absent', async () => {
    const { sk, pk } = keys()
    const events = Array.from({ length: 8 }, (_, i) => sign(sk, { created_at: now() - 100 + i, content: `e${i}` }))
    const pub = await RawClient.open(relay)
    for (const ev of events) assert.deepEqual(await pub.publish(ev), OK)
    const newest5 = idsOf(newestFirst(events).slice(0, 5))
    assert.deepEqual(idsOf((await pub.req('big', { authors: [pk], limit: 100 })).events), newest5)
    assert.deepEqual(idsOf((await pub.req('none', { authors: [pk] })).events), newest5)
    assert.deepEqual(idsOf((await pub.req('small', { authors: [pk], limit: 2 })).events), newest5.slice(0, 2))
    pub.send(['COUNT', 'c', { authors: [pk], limit: 1 }])
    assert.deepEqual(await pub.take((f) => f[1] === 'c', 'COUNT'), ['COUNT', 'c', { count: 8 }], 'COUNT ignores limit')
    await pub.close()
  })

  it('an event with more than COMB_MAX_EVENT_TAGS tags gets OK false "invalid: too many tags"', async () => {
    const client = await RawClient.open(relay)
    const { sk } = keys()
    const tags = (n) => Array.from({ length: n }, (_, i) => ['t', `tag${i}`])
    assert.deepEqual(await client.publish(sign(sk, { tags: tags(6), content: 'six' })),
      { ok: false, message: 'invalid: too many tags' })
    assert.deepEqual(await client.publish(sign(sk, { tags: tags(5), content: 'five' })), OK)
    await stillUp(client)
    await client.close()
  })

  it('an event with more than COMB_MAX_TAG_ELEMENTS strings in its tags gets OK false "invalid: too many strings in tags"', async () => {
    const client = await RawClient.open(relay)
    const { sk } = keys()
    // Two tags of empty strings: short on the wire, a string each once parsed.
    const empties = (n) => [['x', ...Array(n - 1).fill('')], ['y', ...Array(n - 1).fill('')]]
    assert.deepEqual(await client.publish(sign(sk, { tags: empties(7), content: 'fourteen' })),
      { ok: false, message: 'invalid: too many strings in tags' })
    assert.deepEqual(await client.publish(sign(sk, { tags: empties(6), content: 'twelve' })), OK)
    await stillUp(client)
    await client.close()
  })

  it('created_at too far in the future gets OK false "invalid: created_at is too far in the future"', async () => {
    const client = await RawClient.open(relay)
    const { sk } = keys()
    assert.deepEqual(await client.publish(sign(sk, { created_at: now() + 16 * 60 })),
      { ok: false, message: 'invalid: created_at is too far in the future' })
    await stillUp(client)
    await client.close()
  })

  for (const kind of [13534, 8000, 8001, 28935, 19004]) {
    it(`kind ${kind} from a client gets OK false "restricted: ..."`, async () => {
      const client = await RawClient.open(relay)
      const { sk } = keys()
      const reply = await client.publish(sign(sk, { kind, tags: [['-']], content: '' }))
      assert.deepEqual(reply, { ok: false, message: `restricted: only the relay may publish kind ${kind}` })
      await stillUp(client)
      await client.close()
    })
  }

  it('an oversize frame closes that connection with 1009; another connection keeps working', async () => {
    const other = await RawClient.open(relay)
    await stillUp(other)
    const big = await RawClient.open(relay)
    await big.challenge()
    const { sk } = keys()
    big.send(['EVENT', sign(sk, { content: 'x'.repeat(10 * 1024) })])
    const closed = await big.closed
    assert.equal(closed.code, 1009, `close ${JSON.stringify(closed)}`)
    assert.ok(await metricAbove(relay, 'comb_oversize_disconnects_total', 0) >= 1)
    await stillUp(other)
    assert.deepEqual(await other.publish(sign(sk, { content: 'small' })), OK)
    await other.close()
  })

  itStopsCleanly(ctx)
})

describe('event rate', () => {
  const ctx = withRelay({ COMB_EVENT_RATE: '1', COMB_EVENT_BURST: '3' })
  let relay
  before(() => { relay = ctx.relay })

  it('past the burst: OK false "rate-limited: ..."; the connection stays up', async () => {
    const client = await RawClient.open(relay)
    const { sk } = keys()
    const events = Array.from({ length: 5 }, (_, i) => sign(sk, { content: `burst ${i}` }))
    for (const ev of events) client.send(['EVENT', ev])
    const replies = []
    for (const ev of events) replies.push(await client.ok(ev.id))
    assert.deepEqual(replies.slice(0, 3), [OK, OK, OK])
    for (const r of replies.slice(3)) assert.deepEqual(r, { ok: false, message: 'rate-limited: slow down, too many events' })
    await stillUp(client)
    const other = await RawClient.open(relay)
    assert.deepEqual(await other.publish(sign(sk, { content: 'another connection has its own budget' })), OK)
    await Promise.all([client.close(), other.close()])
  })

  it('refills at COMB_EVENT_RATE per second', async () => {
    const client = await RawClient.open(relay)
    const { sk } = keys()
    for (let i = 0; i < 3; i++) assert.deepEqual(await client.publish(sign(sk, { content: `b${i}` })), OK)
    assert.equal((await client.publish(sign(sk, { content: 'over' }))).ok, false)
    await new Promise((resolve) => setTimeout(resolve, 1100)) // one token at 1 event/s
    assert.deepEqual(await client.publish(sign(sk, { content: 'refilled' })), OK)
    assert.equal((await client.publish(sign(sk, { content: 'over again' }))).ok, false)
    await client.close()
  })

  itStopsCleanly(ctx)
})
