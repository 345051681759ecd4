// A pod told to stop (SIGTERM, as a rolling upgrade does) answers what each connection asks,
// its OKs included, and closes each with 1001 once nothing is left unanswered: an event stored
// during the stop is never left without its OK.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { once } from 'node:events'
import {
  startRelay, createDatabase, dropDatabase, holdTransaction, toolsRelay, publishWith, RawClient, keys, sign,
  settlesWithin,
} from './harness.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

describe('stopping (SIGTERM)', () => {
  it('answers the events whose commit was under way at the signal, and what comes meanwhile, then closes with 1001', async () => {
    const database = await createDatabase()
    const relay = await startRelay({}, { database })
    let lock = null
    try {
      const tools = await toolsRelay(relay)
      const raw = await RawClient.open(relay)
      // The writer's commit waits for this lock: both events are in flight when the signal comes.
      lock = await holdTransaction(database, 'LOCK TABLE events IN ACCESS EXCLUSIVE MODE')
      const { sk } = keys()
      const published = sign(sk, { content: 'stored while the pod stops' })
      const viaTools = publishWith(tools, published)
      const own = sign(sk, { content: 'the raw client keeps its connection busy' })
      raw.send(['EVENT', own])
      await pause(500)

      const stopping = relay.stop(15000)
      await pause(500)
      // Still open (its event is unanswered), and serving what it reads meanwhile: neither
      // welshman nor nostr-tools sends again a publish or a REQ refused with error:.
      assert.equal(raw.closeInfo, null, 'a connection with an event in flight was closed at the signal')
      const late = sign(sk, { content: 'sent after the signal' })
      raw.send(['EVENT', late])
      raw.send(['REQ', 'late', { ids: [late.id] }])
      await assert.rejects(RawClient.open(relay), 'a new connection was accepted after the signal')

      await lock.release()
      lock = null
      assert.deepEqual(await viaTools, { ok: true, message: '' }, 'nostr-tools got no OK true for the event stored during the stop')
      for (const ev of [own, late]) {
        const ok = await raw.take((f) => f[0] === 'OK' && f[1] === ev.id, `OK for ${ev.content}`)
        assert.equal(ok[2], true, JSON.stringify(ok))
      }
      await raw.take((f) => f[0] === 'EOSE' && f[1] === 'late', 'EOSE of the REQ sent after the signal')
      assert.ok(await settlesWithin(raw.closed, 5000), 'the answered connection was not closed')
      assert.equal(raw.closeInfo.code, 1001)

      const exit = await stopping
      assert.equal(exit.timedOut, false, `relay did not exit within 15 s of SIGTERM\n${relay.stderr()}`)
      assert.deepEqual([exit.code, exit.signal], [0, null], relay.stderr())
      const stored = await relay.sql(`SELECT count(*) FROM events WHERE id IN ('\\x${published.id}', '\\x${own.id}', '\\x${late.id}')`)
      assert.equal(stored.trim(), '3', 'the three events answered OK true are stored')
    } finally {
      await lock?.release()
      await relay.stop()
      await dropDatabase(database)
    }
  })

  it('a writer stuck in a statement holds the stop only for its bounded wait, then the pod exits 1', async () => {
    const relay = await startRelay()
    let lock = null
    let frozen = null
    try {
      const raw = await RawClient.open(relay)
      lock = await holdTransaction(relay.database, 'LOCK TABLE events IN ACCESS EXCLUSIVE MODE')
      const { sk } = keys()
      raw.send(['EVENT', sign(sk, { content: 'its commit never returns' })])
      // The writer's backend waits for the lock; frozen, it stays in its statement after the lock
      // goes, as on a stalled disk (no lock_timeout, no socket error ever ends it).
      for (let tries = 0; !frozen && tries < 50; ++tries) {
        await pause(100)
        const pid = (await relay.sql("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
          + " AND backend_type = 'client backend' AND query ILIKE '%events%' LIMIT 1")).trim()
        if (pid) frozen = Number(pid)
      }
      assert.ok(frozen, 'no backend waited for the lock')
      process.kill(frozen, 'SIGSTOP')
      await lock.release()
      lock = null
      const started = Date.now()
      relay.proc.kill('SIGTERM')
      assert.ok(await settlesWithin(relay.exited, 40000), `no exit within 40 s of SIGTERM\n${relay.stderr()}`)
      const ms = Date.now() - started
      assert.deepEqual(await relay.exited, { code: 1, signal: null }, relay.stderr())
      // drain 5 s + close 1 s + writers 15 s, under Kubernetes' default 30 s grace
      assert.ok(ms >= 15000 && ms < 25000, `exit ${ms} ms after the signal\n${relay.stderr()}`)
      assert.match(relay.stderr(), /storage writers were still committing/)
    } finally {
      if (frozen) process.kill(frozen, 'SIGCONT')
      await lock?.release()
      await relay.stop()
    }
  })

  it('sockets that never close by themselves (an HTTP keep-alive, a client ignoring the close) end with the pod, which exits 0', async () => {
    // Their coroutines are still suspended when the I/O threads stop: they are destroyed while
    // the server and the counters they refer to live (an ASan build checks the order).
    const relay = await startRelay()
    let http = null
    try {
      http = net.connect(relay.port, '127.0.0.1')
      await once(http, 'connect')
      let answer = ''
      http.on('data', (chunk) => { answer += chunk.toString() })
      http.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${relay.port}\r\nConnection: keep-alive\r\n\r\n`)
      for (let tries = 0; !answer.includes('\r\n\r\n') && tries < 50; ++tries) await pause(100)
      assert.match(answer, /^HTTP\/1\.1 200/)
      const deaf = await RawClient.open(relay)
      deaf.ws._socket.pause() // reads nothing more: the relay's close frame is never answered
      const started = Date.now()
      relay.proc.kill('SIGTERM')
      assert.ok(await settlesWithin(relay.exited, 15000), `no exit within 15 s of SIGTERM\n${relay.stderr()}`)
      assert.deepEqual(await relay.exited, { code: 0, signal: null }, relay.stderr())
      assert.ok(Date.now() - started < 15000)
      assert.match(relay.stderr(), /stopped/)
    } finally {
      http?.destroy()
      await relay.stop()
    }
  })

  it('a second signal during the drain exits at once', async () => {
    const relay = await startRelay()
    let lock = null
    try {
      const raw = await RawClient.open(relay)
      lock = await holdTransaction(relay.database, 'LOCK TABLE events IN ACCESS EXCLUSIVE MODE')
      const { sk } = keys()
      raw.send(['EVENT', sign(sk, { content: 'keeps the drain waiting' })])
      await pause(500)
      relay.proc.kill('SIGTERM')
      await pause(500)
      assert.equal(raw.closeInfo, null, 'the drain did not wait for the event in flight')
      const started = Date.now()
      relay.proc.kill('SIGTERM')
      assert.ok(await settlesWithin(relay.exited, 2000), 'no exit within 2 s of the second signal')
      assert.deepEqual(await relay.exited, { code: 1, signal: null })
      assert.ok(Date.now() - started < 2000)
    } finally {
      await lock?.release()
      await relay.stop()
    }
  })
})
