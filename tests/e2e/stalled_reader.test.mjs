// A reader that stops reading but keeps its connection open, sending a frame now and then so that
// the idle timer never fires, is cut once its socket has taken nothing for the idle timeout while
// output waits for it: the outbound bound (set far above what it is sent here) never would, and
// until then it held its socket, its queue and its share of the pod's outbound bytes.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { withRelay, RawClient, keys, sign, now, UNBOUNDED_CLIENT_RATES } from './harness.mjs'

const IDLE_SECONDS = 5
const CONTENT_BYTES = 16000
// Published until the relay holds output for the stalled reader (its socket full), at most this
// many (about 20 MB, more than loopback's buffers take).
const MAX_EVENTS = 1200
const WINDOW = 8
const QUEUED_BYTES = 1024 * 1024

async function until(check, ms, what) {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`${what} within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

describe('stalled reader', () => {
  const ctx = withRelay({
    COMB_IDLE_TIMEOUT_SECONDS: String(IDLE_SECONDS),
    COMB_MAX_OUTBOUND_BYTES: String(256 * 1024 * 1024),
    ...UNBOUNDED_CLIENT_RATES,
  })
  let relay
  before(() => { relay = ctx.relay })

  it('cuts a reader whose socket takes nothing for the idle timeout while it keeps sending', async () => {
    const stalled = await RawClient.open(relay)
    const pub = await RawClient.open(relay)
    assert.deepEqual((await stalled.req('all', {})).end, ['EOSE', 'all'])
    stalled.ws._socket.pause() // stops reading; it still writes
    // A CLOSE of no subscription is answered with nothing: only the relay's idle timer hears it.
    const keepAlive = setInterval(() => stalled.send(['CLOSE', 'nothing']), 1000)
    try {
      const stalledBefore = await relay.metric('comb_stalled_reader_disconnects_total')
      const slowBefore = await relay.metric('comb_slow_reader_disconnects_total')
      const { sk } = keys()
      const t = now()
      let published = 0
      while (published < MAX_EVENTS && await relay.metric('comb_outbound_bytes') < QUEUED_BYTES) {
        const batch = Array.from({ length: WINDOW }, (_, i) => sign(sk,
          { created_at: t, tags: [['i', String(published + i)]], content: `${published + i} `.padEnd(CONTENT_BYTES, 'z') }))
        for (const ev of batch) pub.send(['EVENT', ev])
        for (const ev of batch) assert.deepEqual(await pub.ok(ev.id, 10000), { ok: true, message: '' })
        published += batch.length
      }
      const queued = await relay.metric('comb_outbound_bytes')
      assert.ok(queued >= QUEUED_BYTES, `only ${queued} bytes queued after ${published} events`)
      const cut = await until(async () => {
        const n = await relay.metric('comb_stalled_reader_disconnects_total')
        return n > stalledBefore ? n : undefined
      }, 4 * IDLE_SECONDS * 1000, 'no stalled-reader cut')
      assert.equal(cut, stalledBefore + 1)
      assert.equal(await relay.metric('comb_slow_reader_disconnects_total'), slowBefore, 'the bound cut it instead')
      // Its socket, its place and its queued bytes are let go.
      await until(async () => (await relay.metric('comb_connections')) === 1 ? true : undefined, 5000,
        'comb_connections still counts the cut connection')
      await until(async () => (await relay.metric('comb_outbound_bytes')) === 0 ? true : undefined, 5000,
        'comb_outbound_bytes still counts its queue')
      // The publisher reads what it is sent, and is not cut.
      const sentinel = sign(sk, { content: 'sentinel' })
      assert.deepEqual(await pub.publish(sentinel), { ok: true, message: '' })
      assert.equal(pub.closeInfo, null)
    } finally {
      clearInterval(keepAlive)
    }
  })
})
