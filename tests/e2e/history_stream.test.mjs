// History replies larger than COMB_MAX_HISTORY_BYTES are streamed in chunks: the client gets
// every event up to the limit, newest first, then EOSE; a client that pauses holds the storage
// reader at the budget (it is never cut for the reply's size), and one that stops reading for
// good gets its reply abandoned with CLOSED.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { withRelay, itStopsCleanly, RawClient, keys, sign, now, idsOf, newestFirst, UNBOUNDED_CLIENT_RATES, metricAbove } from './harness.mjs'

const BUDGET = 64 * 1024
// 300 events of 40 KB: 12 MB, 190 times the budget and more than loopback's socket buffers
// (several MB), so a client that does not read makes the relay wait.
const EVENTS = 300
const CONTENT_BYTES = 40000
const WINDOW = 16

async function publishAll(relay) {
  const pub = await RawClient.open(relay)
  const { sk, pk } = keys()
  const t = now() - EVENTS
  const events = Array.from({ length: EVENTS }, (_, i) =>
    sign(sk, { created_at: t + i, content: `${i} `.padEnd(CONTENT_BYTES, 'z') }))
  for (let at = 0; at < EVENTS; at += WINDOW) {
    const batch = events.slice(at, at + WINDOW)
    for (const ev of batch) pub.send(['EVENT', ev])
    for (const ev of batch) assert.deepEqual(await pub.ok(ev.id, 10000), { ok: true, message: '' })
  }
  await pub.close()
  return { pk, events }
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))


describe('history streamed in chunks', () => {
  const ctx = withRelay({
    ...UNBOUNDED_CLIENT_RATES,
    COMB_MAX_HISTORY_BYTES: String(BUDGET),
    // Smaller than the reply: a reply sent whole would cut its reader.
    COMB_MAX_OUTBOUND_BYTES: String(1024 * 1024),
    COMB_STORAGE_READERS: '2', // consecutive connections use different readers
  })
  let relay
  let stored
  before(async () => {
    relay = ctx.relay
    stored = await publishAll(relay)
  })

  it('a REQ over the budget gets every event up to its limit, newest first, then EOSE', async () => {
    const chunks = await relay.metric('comb_history_chunks_total')
    const reader = await RawClient.open(relay)
    reader.send(['REQ', 'all', { authors: [stored.pk], limit: 1000 }])
    const { events, end } = await reader.history('all', 10000)
    assert.deepEqual(end, ['EOSE', 'all'])
    assert.deepEqual(idsOf(events), idsOf(newestFirst(stored.events)))
    reader.send(['REQ', 'some', { authors: [stored.pk], limit: 250 }])
    const some = await reader.history('some', 10000)
    assert.deepEqual(idsOf(some.events), idsOf(newestFirst(stored.events).slice(0, 250)))
    // 12 MB in chunks of a sixteenth of 64 KiB (4 KiB; one 40 KB event each): one per event.
    assert.ok(await relay.metric('comb_history_chunks_total') >= chunks + EVENTS + 250 - 2)
    assert.equal(reader.closeInfo, null)
    await reader.close()
  })

  it('a client that pauses holds the reader at the budget, then gets everything, uncut', async () => {
    const waits = await relay.metric('comb_history_waits_total')
    const paused = await RawClient.open(relay)
    await paused.challenge()
    paused.ws._socket.pause()
    paused.send(['REQ', 'slow', { authors: [stored.pk], limit: 1000 }])
    const waited = await metricAbove(relay, 'comb_history_waits_total', waits, 8000)
    assert.ok(waited > waits, 'the reader never waited for the paused client')
    // Meanwhile, another client's REQ is answered by the other reader.
    const other = await RawClient.open(relay)
    other.send(['REQ', 'one', { authors: [stored.pk], limit: 1 }])
    assert.equal((await other.history('one', 5000)).events[0].id, newestFirst(stored.events)[0].id)
    await other.close()
    await pause(1000)
    paused.ws._socket.resume()
    const { events, end } = await paused.history('slow', 20000)
    assert.deepEqual(end, ['EOSE', 'slow'])
    assert.deepEqual(idsOf(events), idsOf(newestFirst(stored.events)))
    assert.equal(paused.closeInfo, null, 'the paused client was cut')
    await paused.close()
  })

  it('only one of two readers waits for paused clients: a second is refused, others still answered', async () => {
    const waits = await relay.metric('comb_history_waits_total')
    const refused = await relay.metric('comb_history_refused_busy_total')
    const first = await RawClient.open(relay)
    await first.challenge()
    first.ws._socket.pause()
    first.send(['REQ', 'slow', { authors: [stored.pk], limit: 1000 }])
    assert.ok(await metricAbove(relay, 'comb_history_waits_total', waits, 8000) > waits, 'the first paused client held no reader')
    const second = await RawClient.open(relay)
    await second.challenge()
    second.ws._socket.pause()
    second.send(['REQ', 'slow', { authors: [stored.pk], limit: 1000 }])
    assert.equal(await metricAbove(relay, 'comb_history_refused_busy_total', refused, 8000), refused + 1,
      'the second paused client made the last free reader wait')
    // Both paused, whichever reader connections are pinned to: a REQ is answered at once.
    for (let n = 0; n < 2; n++) {
      const other = await RawClient.open(relay)
      other.send(['REQ', 'one', { authors: [stored.pk], limit: 1 }])
      assert.equal((await other.history('one', 3000)).events[0].id, newestFirst(stored.events)[0].id)
      await other.close()
    }
    first.ws._socket.resume()
    second.ws._socket.resume()
    const whole = await first.history('slow', 20000)
    assert.deepEqual(whole.end, ['EOSE', 'slow'])
    assert.deepEqual(idsOf(whole.events), idsOf(newestFirst(stored.events)))
    const cut = await second.history('slow', 20000)
    assert.equal(cut.end[0], 'CLOSED')
    assert.match(cut.end[2], /^error: history reply abandoned: too many clients are reading slowly/)
    await Promise.all([first.close(), second.close()])
  })

  itStopsCleanly(ctx)
})

describe('history abandoned', () => {
  // A reader waits for its client at most the statement timeout without progress.
  const ctx = withRelay({ ...UNBOUNDED_CLIENT_RATES, COMB_MAX_HISTORY_BYTES: String(BUDGET), COMB_STATEMENT_TIMEOUT_MS: '1000' })

  it('a client that stops reading for good gets CLOSED, and the relay goes on answering', async () => {
    const { relay } = ctx
    const stored = await publishAll(relay)
    const abandoned = await relay.metric('comb_history_abandoned_total')
    const stuck = await RawClient.open(relay)
    await stuck.challenge()
    stuck.ws._socket.pause()
    stuck.send(['REQ', 'stuck', { authors: [stored.pk], limit: 1000 }])
    assert.equal(await metricAbove(relay, 'comb_history_abandoned_total', abandoned, 10000), abandoned + 1)
    stuck.ws._socket.resume()
    const { events, end } = await stuck.history('stuck', 20000)
    assert.equal(end[0], 'CLOSED')
    assert.match(end[2], /^error: history reply abandoned/)
    // What came before the CLOSED is the newest events, in order.
    assert.deepEqual(idsOf(events), idsOf(newestFirst(stored.events).slice(0, events.length)))
    const fresh = await RawClient.open(relay)
    fresh.send(['REQ', 'one', { authors: [stored.pk], limit: 2 }])
    assert.equal((await fresh.history('one', 5000)).events.length, 2)
    await fresh.close()
    await stuck.close()
  })

  itStopsCleanly(ctx)
})
