// A reader that stops reading is cut once COMB_MAX_OUTBOUND_BYTES of output wait for it, while a
// reader that keeps up gets every event. Then shutdown: connected clients see 1001, exit 0.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { withRelay, itStopsCleanly, settlesWithin, RawClient, keys, sign, now, idsOf, UNBOUNDED_CLIENT_RATES } from './harness.mjs'

// The kernel buffers several MB on loopback (tcp_wmem up to 4 MiB here) before the relay's own
// queue grows, so events are published until the relay reports the cut, then one window more,
// and never more than MAX_EVENTS (about 20 MB).
const MAX_EVENTS = 1200
const CONTENT_BYTES = 16000
// Events published before waiting for their OKs: one window (8 x 16 KB) stays well under the
// 256 KiB bound, since a burst larger than the bound would cut even a reader that keeps up.
const WINDOW = 8

describe('slow reader', () => {
  const ctx = withRelay({
    COMB_MAX_OUTBOUND_BYTES: String(256 * 1024),
    // 1,200 frames of 16 KB from one client: above the default frame buckets on purpose.
    ...UNBOUNDED_CLIENT_RATES,
  })
  let relay
  before(() => { relay = ctx.relay })

  const state = {} // shared by the three steps below, which run in order

  it('cuts the reader that stopped reading; the one that reads gets every event', async () => {
    const slow = await RawClient.open(relay)
    const fast = await RawClient.open(relay)
    const pub = await RawClient.open(relay)
    assert.deepEqual((await slow.req('all', {})).end, ['EOSE', 'all'])
    assert.deepEqual((await fast.req('all', {})).end, ['EOSE', 'all'])
    slow.ws._socket.pause() // stop reading: the relay's output for it piles up
    const before = await relay.metric('comb_slow_reader_disconnects_total')

    const { sk } = keys()
    const t = now()
    const events = Array.from({ length: MAX_EVENTS }, (_, i) =>
      sign(sk, { created_at: t, tags: [['i', String(i)]], content: `${i} `.padEnd(CONTENT_BYTES, 'z') }))
    let published = 0
    let cut = before
    let windowsAfterCut = 0
    while (published < MAX_EVENTS && windowsAfterCut < 2) {
      const batch = events.slice(published, published + WINDOW)
      for (const ev of batch) pub.send(['EVENT', ev])
      for (const ev of batch) assert.deepEqual(await pub.ok(ev.id, 10000), { ok: true, message: '' }, `event ${published}`)
      published += batch.length
      cut = await relay.metric('comb_slow_reader_disconnects_total')
      if (cut > before) windowsAfterCut++
    }
    assert.ok(cut >= before + 1,
      `comb_slow_reader_disconnects_total went from ${before} to ${cut} after ${published} events`)

    const got = []
    for (let n = 0; n < published; n++) got.push(await fast.live('all', 20000))
    assert.deepEqual(idsOf(got), idsOf(events.slice(0, published)), 'the reading client got every event, in order')
    const sentinel = sign(sk, { content: 'sentinel' })
    assert.deepEqual(await pub.publish(sentinel), { ok: true, message: '' })
    assert.equal((await fast.live('all')).id, sentinel.id, 'an event arrived twice')
    assert.equal(fast.closeInfo, null, 'the reading client was not cut')
    Object.assign(state, { slow, fast, pub, published })
  })

  it('lets go of the cut connection while its client still does not read', async () => {
    assert.ok(state.slow, 'the previous step did not cut a reader')
    // Three connections were open; the cut one must be gone from the gauge without any help
    // from its client (the relay meant to drop it at once: its output is never going out).
    let open = null
    for (let i = 0; i < 50 && open !== 2; i++) { // 50 x 100 ms at most
      open = await relay.metric('comb_connections')
      if (open !== 2) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.equal(open, 2, 'comb_connections still counts the cut connection 5 s after the cut')
  })

  it('the slow client, reading again, finds its connection closed short of the events', async () => {
    const { slow, fast, pub, published } = state
    assert.ok(slow, 'the first step did not cut a reader')
    slow.ws._socket.resume()
    assert.ok(await settlesWithin(slow.closed, 10000), 'the slow reader was not disconnected within 10 s of resuming')
    const received = slow.drain((f) => f[0] === 'EVENT' && f[1] === 'all').length
    assert.ok(received < published, `the slow reader got all ${received} events: it was never cut`)
    assert.notEqual(slow.closeInfo.code, 1000, 'a cut is not a normal closure')
    await stillServes(fast)
    await Promise.all([fast.close(), pub.close()])
  })

  it('SIGTERM: a connected client sees close code 1001, the relay exits 0', async () => {
    const client = await RawClient.open(relay)
    assert.deepEqual((await client.req('s', { kinds: [1], limit: 1 })).end, ['EOSE', 's'])
    const stopping = relay.stop()
    assert.ok(await settlesWithin(client.closed, 10000), 'no close within 10 s of SIGTERM')
    assert.deepEqual(client.closeInfo, { code: 1001, reason: 'relay shutting down' })
    const exit = await stopping
    assert.equal(exit.timedOut, false, `relay did not exit within 10 s\n${relay.stderr()}`)
    assert.deepEqual([exit.code, exit.signal], [0, null], relay.stderr())
  })

  itStopsCleanly(ctx)
})

async function stillServes(client) {
  assert.deepEqual((await client.req('after', { kinds: [1], limit: 1 })).end, ['EOSE', 'after'])
}
