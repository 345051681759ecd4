// REQ, live delivery, CLOSE, subscription replacement, every filter field, COUNT (NIP-45) and
// ephemeral events. "Not delivered" is proven with a sentinel: an event published after the one
// that must not arrive, on the same path, whose arrival means the first would have arrived too.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { withRelay, itStopsCleanly, toolsRelay, within, RawClient, holdTransaction, keys, sign, now, idsOf, newestFirst }
  from './harness.mjs'

describe('subscribe', () => {
  const ctx = withRelay()
  let relay
  let pub // a raw publisher shared by the tests
  before(async () => {
    relay = ctx.relay
    pub = await RawClient.open(relay)
  })

  async function publishAll(events) {
    for (const ev of events) assert.deepEqual(await pub.publish(ev), { ok: true, message: '' }, ev.content)
  }

  it('returns stored events newest first (same second: lowest id first), then EOSE', async () => {
    const { sk, pk } = keys()
    const t = now() - 100
    const events = [30, 10, 50, 20, 40].map((dt, i) => sign(sk, { created_at: t + dt, content: `n${i}` }))
    events.push(sign(sk, { created_at: t + 20, content: 'same second a' }))
    events.push(sign(sk, { created_at: t + 20, content: 'same second b' }))
    await publishAll(events)
    const reader = await RawClient.open(relay)
    const { events: got, end } = await reader.req('order', { authors: [pk] })
    assert.deepEqual(end, ['EOSE', 'order'])
    assert.deepEqual(idsOf(got), idsOf(newestFirst(events)))
    await reader.close()
  })

  it('delivers a live event from another client after EOSE, exactly once (nostr-tools reader)', async () => {
    const { sk, pk } = keys()
    const tools = await toolsRelay(relay)
    const seen = []
    let eosed = false
    const eose = new Promise((resolve) => {
      tools.subscribe([{ authors: [pk] }], {
        onevent: (ev) => seen.push({ id: ev.id, afterEose: eosed }),
        oneose: () => { eosed = true; resolve() },
      })
    })
    await within(eose, 5000, 'EOSE')
    const live = sign(sk, { content: 'live one' })
    await publishAll([live])
    const sentinel = sign(sk, { content: 'sentinel' })
    await publishAll([sentinel])
    for (let i = 0; i < 100 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 50))
    assert.deepEqual(seen, [{ id: live.id, afterEose: true }, { id: sentinel.id, afterEose: true }])
    tools.close()
  })

  it('delivers every event exactly once when REQ races with publishing', async () => {
    const { sk, pk } = keys()
    const events = Array.from({ length: 40 }, (_, i) => sign(sk, { created_at: now() - 40 + i, content: `r${i}` }))
    const reader = await RawClient.open(relay)
    for (const ev of events.slice(0, 20)) pub.send(['EVENT', ev])
    reader.send(['REQ', 'race', { authors: [pk] }])
    for (const ev of events.slice(20)) pub.send(['EVENT', ev])
    for (const ev of events) assert.deepEqual(await pub.ok(ev.id), { ok: true, message: '' })
    const sentinel = sign(sk, { content: 'race sentinel' })
    await publishAll([sentinel])
    const { events: history, end } = await reader.history('race')
    assert.deepEqual(end, ['EOSE', 'race'])
    const live = []
    for (let n = 0; n <= events.length && live.at(-1)?.id !== sentinel.id; n++) live.push(await reader.live('race'))
    const all = [...idsOf(history), ...idsOf(live)]
    assert.equal(new Set(all).size, all.length, 'an event was sent twice')
    assert.deepEqual([...all].sort(), [...idsOf(events), sentinel.id].sort())
    await reader.close()
  })

  it('stops delivery after CLOSE', async () => {
    const { sk, pk } = keys()
    const reader = await RawClient.open(relay)
    assert.deepEqual((await reader.req('closing', { authors: [pk], kinds: [1] })).end, ['EOSE', 'closing'])
    assert.deepEqual((await reader.req('other', { authors: [pk], kinds: [7] })).end, ['EOSE', 'other'])
    reader.send(['CLOSE', 'closing'])
    const note = sign(sk, { content: 'after close' })
    await publishAll([note])
    const sentinel = sign(sk, { kind: 7, content: '+' })
    await publishAll([sentinel])
    assert.equal((await reader.live('other')).id, sentinel.id)
    assert.deepEqual(reader.drain((f) => f[1] === 'closing'), [], 'frames after CLOSE')
    await reader.close()
  })

  it('keeps answering REQs after many were closed as soon as they were sent', async () => {
    // welshman closes a request it no longer needs (a timeout, a view that went away), often
    // before the relay has started reading for it. Each query's place must come back.
    const { sk, pk } = keys()
    const note = sign(sk, { content: 'still readable' })
    await publishAll([note])
    const reader = await RawClient.open(relay)
    for (let i = 0; i < 40; i++) {
      reader.send(['REQ', `gone-${i}`, { authors: [pk] }])
      reader.send(['CLOSE', `gone-${i}`])
    }
    const { events, end } = await reader.req('after', { authors: [pk] })
    assert.deepEqual(end, ['EOSE', 'after'])
    assert.deepEqual(idsOf(events), [note.id])
    await reader.close()
  })

  it('replaces the filters when a subscription id is reused', async () => {
    const { sk, pk } = keys()
    const old = sign(sk, { kind: 1, created_at: now() - 10, content: 'stored note' })
    const reaction = sign(sk, { kind: 7, created_at: now() - 10, content: '+' })
    await publishAll([old, reaction])
    const reader = await RawClient.open(relay)
    assert.deepEqual(idsOf((await reader.req('s', { authors: [pk], kinds: [1] })).events), [old.id])
    assert.deepEqual(idsOf((await reader.req('s', { authors: [pk], kinds: [7] })).events), [reaction.id])
    await publishAll([sign(sk, { kind: 1, content: 'matches the old filter only' })])
    const sentinel = sign(sk, { kind: 7, content: 'matches the new filter' })
    await publishAll([sentinel])
    assert.equal((await reader.live('s')).id, sentinel.id, 'the old filter still delivered')
    await reader.close()
  })

  it('after the EOSE of a reused id, only events matching the new filters arrive (during a flood)', async () => {
    const { sk, pk } = keys()
    const reader = await RawClient.open(relay)
    assert.deepEqual((await reader.req('s', { authors: [pk], kinds: [1] })).end, ['EOSE', 's'])
    const flood = Array.from({ length: 150 }, (_, i) => sign(sk, { kind: 1, content: `flood ${i}` }))
    for (const ev of flood.slice(0, 50)) pub.send(['EVENT', ev])
    for (const ev of flood.slice(0, 10)) await pub.ok(ev.id) // the flood is reaching the relay
    reader.send(['REQ', 's', { authors: [pk], kinds: [7] }])
    for (const ev of flood.slice(50)) pub.send(['EVENT', ev])
    const { end } = await reader.history('s') // old live events may come first: skipped
    assert.deepEqual(end, ['EOSE', 's'])
    for (const ev of flood.slice(10)) assert.equal((await pub.ok(ev.id)).ok, true)
    const sentinel = sign(sk, { kind: 7, content: 'new filter' })
    await publishAll([sentinel])
    const after = []
    for (let n = 0; n <= flood.length && after.at(-1)?.id !== sentinel.id; n++) after.push(await reader.live('s'))
    assert.deepEqual(after.filter((e) => e.kind !== 7).map((e) => e.content), [],
      'events of the replaced filter delivered after the new EOSE')
    await reader.close()
  })

  it('a burst of REQs past what the storage readers may queue is answered late, never refused', async () => {
    // 40 connections x 5 REQs = 200 queries against a bound of 64 per reader (2 readers): with
    // the events table locked, the readers cannot end any, so the rest must wait their turn.
    const { pk } = keys()
    const clients = []
    for (let i = 0; i < 40; i++) clients.push(await RawClient.open(relay))
    const lock = await holdTransaction(relay.database, 'LOCK TABLE events IN ACCESS EXCLUSIVE MODE')
    const waitedBefore = await relay.metric('comb_queries_waited_total')
    const replies = []
    try {
      for (const [c, client] of clients.entries())
        for (let n = 0; n < 5; n++) {
          client.send(['REQ', `burst-${c}-${n}`, { authors: [pk], kinds: [n] }])
          replies.push(client.history(`burst-${c}-${n}`, 20000).then((r) => r.end))
        }
      const waited = async () => (await relay.metric('comb_queries_waited_total')) - waitedBefore
      for (let tries = 0; tries < 50 && (await waited()) === 0; tries++) await new Promise((r) => setTimeout(r, 100))
      assert.ok((await waited()) > 0, 'the burst reached the readers\' bound')
    } finally {
      await lock.release()
    }
    const ends = await Promise.all(replies)
    assert.deepEqual(ends.filter((end) => end[0] !== 'EOSE'), [], 'every REQ ends with EOSE')
    for (const client of clients) await client.close()
  })

  describe('filters', () => {
    const a = keys()
    const b = keys()
    const t = now() - 1000
    const target = sign(a.sk, { created_at: t, content: 'target' })
    const evs = {
      target,
      tagged: sign(a.sk, { created_at: t + 1, tags: [['t', 'comb'], ['t', 'bees']], content: 'tagged' }),
      reply: sign(b.sk, { created_at: t + 2, tags: [['e', target.id], ['p', a.pk]], content: 'reply' }),
      reaction: sign(b.sk, { kind: 7, created_at: t + 3, tags: [['e', target.id]], content: '+' }),
      late: sign(a.sk, { created_at: t + 4, tags: [['t', 'honey']], content: 'late' }),
    }
    const both = [a.pk, b.pk]
    const expect = async (filters, names) => {
      const reader = await RawClient.open(relay)
      const { events, end } = await reader.req('f', ...filters)
      await reader.close()
      assert.deepEqual(end, ['EOSE', 'f'])
      assert.deepEqual(idsOf(events), idsOf(newestFirst(names.map((n) => evs[n]))), JSON.stringify(filters))
    }
    before(() => publishAll(Object.values(evs)))

    it('ids', () => expect([{ ids: [evs.reply.id, evs.late.id] }], ['reply', 'late']))
    it('authors', () => expect([{ authors: [b.pk] }], ['reply', 'reaction']))
    it('kinds', () => expect([{ authors: both, kinds: [7] }], ['reaction']))
    it('#t', () => expect([{ authors: both, '#t': ['comb', 'honey'] }], ['tagged', 'late']))
    it('#e', () => expect([{ '#e': [target.id] }], ['reply', 'reaction']))
    it('#p', () => expect([{ '#p': [a.pk] }], ['reply']))
    it('since and until are inclusive', () => expect([{ authors: both, since: t + 1, until: t + 3 }],
      ['tagged', 'reply', 'reaction']))
    it('limit returns the newest N', () => expect([{ authors: both, limit: 2 }], ['late', 'reaction']))
    it('several filters: the union, each event once', () =>
      expect([{ authors: [a.pk], kinds: [1] }, { '#e': [target.id] }], ['target', 'tagged', 'reply', 'reaction', 'late']))
    it('conditions of one filter all hold', () => expect([{ authors: [b.pk], kinds: [1], '#e': [target.id] }], ['reply']))

    it('a live event is delivered only to the subscriptions whose filters match', async () => {
      const reader = await RawClient.open(relay)
      for (const [sub, f] of [['t', { '#t': ['live-tag'] }], ['k', { authors: [b.pk], kinds: [7] }],
        ['p', { '#p': [b.pk] }]]) assert.deepEqual((await reader.req(sub, f)).end, ['EOSE', sub])
      const tagged = sign(a.sk, { tags: [['t', 'live-tag']], content: 'live tagged' })
      await publishAll([tagged])
      assert.equal((await reader.live('t')).id, tagged.id)
      const mention = sign(a.sk, { kind: 7, tags: [['p', b.pk]], content: '+' })
      await publishAll([mention])
      assert.equal((await reader.live('p')).id, mention.id)
      assert.deepEqual(reader.drain((f) => f[0] === 'EVENT'), [], 'delivered to a non-matching subscription')
      await reader.close()
    })
  })

  it('COUNT answers ["COUNT", id, {"count": N}] (NIP-45)', async () => {
    const { sk, pk } = keys()
    const other = keys()
    await publishAll([1, 2, 3].map((i) => sign(sk, { created_at: now() - i, content: `c${i}` })))
    await publishAll([sign(sk, { kind: 7, content: '+' }), sign(other.sk, { content: 'other' })])
    const client = await RawClient.open(relay)
    const count = async (id, ...filters) => {
      client.send(['COUNT', id, ...filters])
      return client.take((f) => f[1] === id, `COUNT ${id}`)
    }
    assert.deepEqual(await count('c1', { authors: [pk], kinds: [1] }), ['COUNT', 'c1', { count: 3 }])
    assert.deepEqual(await count('c2', { authors: [pk] }), ['COUNT', 'c2', { count: 4 }])
    assert.deepEqual(await count('c3', { authors: [pk, other.pk], kinds: [1] }), ['COUNT', 'c3', { count: 4 }])
    assert.deepEqual(await count('c4', { authors: [pk] }, { kinds: [7], authors: [pk] }), ['COUNT', 'c4', { count: 4 }])
    assert.deepEqual(await count('c5', { authors: [pk], kinds: [30023] }), ['COUNT', 'c5', { count: 0 }])
    const tools = await toolsRelay(relay)
    assert.equal(await within(tools.count([{ authors: [pk] }]), 5000, 'nostr-tools count'), 4)
    tools.close()
    await client.close()
  })

  it('delivers ephemeral events live and never returns them later', async () => {
    const { sk, pk } = keys()
    const reader = await RawClient.open(relay)
    assert.deepEqual((await reader.req('eph', { authors: [pk], kinds: [20001] })).events, [])
    const ev = sign(sk, { kind: 20001, content: 'here and gone' })
    assert.deepEqual(await pub.publish(ev), { ok: true, message: '' })
    assert.equal((await reader.live('eph')).id, ev.id)
    const later = await RawClient.open(relay)
    assert.deepEqual(await later.req('eph2', { authors: [pk] }), { events: [], end: ['EOSE', 'eph2'] })
    later.send(['COUNT', 'ce', { authors: [pk] }])
    assert.deepEqual(await later.take((f) => f[1] === 'ce', 'COUNT'), ['COUNT', 'ce', { count: 0 }])
    await Promise.all([reader.close(), later.close()])
  })

  itStopsCleanly(ctx)
})
