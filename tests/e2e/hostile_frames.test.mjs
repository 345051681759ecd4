// Hostile clients at the socket edge: oversized HTTP headers, invalid UTF-8 in a text frame, a
// compressed frame that inflates past the message bound or claims a terabyte, a message
// fragmented past it, messages left unfinished on many connections (or claimed and stalled), and ping floods (answered within the connection's ping budget, cut past it). Each gets one clear answer (an HTTP status or a close code), is counted, and leaves
// every other connection working.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import zlib from 'node:zlib'
import { randomBytes } from 'node:crypto'
import { WebSocket, httpGet, withRelay, itStopsCleanly, RawClient, keys, sign, metricAbove } from './harness.mjs'

const maxMessage = 4096

/** The connection still serves a REQ: a fresh subscription id gets its EOSE. */
async function stillUp(client, sub = `alive-${Math.random().toString(36).slice(2, 8)}`) {
  assert.deepEqual((await client.req(sub, { kinds: [1], limit: 1 })).end, ['EOSE', sub], 'connection still up')
}

/** Sends `request` on a raw TCP socket; resolves with everything the relay wrote before closing. */
function rawHttp(port, request, ms = 5000) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    let answer = ''
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no close within ${ms} ms: ${answer.slice(0, 200)}`)) }, ms)
    socket.on('data', (d) => { answer += d.toString('latin1') })
    socket.on('error', () => {})
    socket.on('close', () => { clearTimeout(timer); resolve(answer) })
    socket.write(request)
  })
}

/** An EVENT frame of exactly `bytes` bytes of JSON, signed by `sk`. */
function eventFrameOf(sk, bytes) {
  const at = Math.floor(Date.now() / 1000)
  const bare = JSON.stringify(['EVENT', sign(sk, { content: '', created_at: at })]).length
  return JSON.stringify(['EVENT', sign(sk, { content: 'a'.repeat(bytes - bare), created_at: at })])
}

/** A masked client frame (RFC 6455 5.2) with a payload under 64 KiB. */
function clientFrame(opcode, fin, text) {
  const payload = Buffer.from(text)
  const mask = randomBytes(4)
  const length = payload.length < 126 ? [payload.length | 0x80] : [126 | 0x80, payload.length >> 8, payload.length & 0xff]
  const masked = payload.map((byte, i) => byte ^ mask[i % 4])
  return Buffer.concat([Buffer.from([(fin ? 0x80 : 0) | opcode, ...length]), mask, masked])
}

/**
 * The header of a masked client frame that claims `length` payload bytes (64-bit length), and
 * the first of them: what the client sends before it stalls. Compressed (RSV1), those are a
 * deflated '["REQ"' flushed, so the relay inflates something and reads on; else one byte.
 */
function claimingFrame(length, compressed = false, sent = 1) {
  const header = Buffer.alloc(2 + 8)
  header[0] = 0x80 | (compressed ? 0x40 : 0) | 0x1
  header[1] = 0x80 | 127
  header.writeBigUInt64BE(BigInt(length), 2)
  const mask = randomBytes(4)
  const payload = compressed ? zlib.deflateRawSync('["REQ"', { finishFlush: zlib.constants.Z_SYNC_FLUSH })
    : Buffer.from('['.padEnd(sent, ' '))
  return Buffer.concat([header, mask, payload.map((byte, i) => byte ^ mask[i % 4])])
}

/**
 * A raw upgraded socket that sends `frames` and then stays silent; { closeCode(), destroy() }:
 * closeCode resolves with the close code the relay sent, or null when it only hung up.
 */
function stalledSocket(relay, frames, extensions = '') {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port: relay.port, host: '127.0.0.1' })
    let received = Buffer.alloc(0)
    let upgraded = false
    const ended = new Promise((done) => socket.on('close', () => {
      const after = received.subarray(received.indexOf('\r\n\r\n') + 4)
      const close = after.indexOf(Buffer.from([0x88]))
      done(close >= 0 && after.length >= close + 4 ? after.readUInt16BE(close + 2) : null)
    }))
    socket.on('error', () => {})
    socket.on('data', (d) => {
      received = Buffer.concat([received, d])
      if (!upgraded && received.includes('\r\n\r\n')) {
        upgraded = true
        if (!received.toString('latin1').startsWith('HTTP/1.1 101')) return reject(new Error('no upgrade'))
        socket.write(Buffer.concat(frames))
        resolve({ closeCode: () => ended, destroy: () => socket.destroy(), upgrade: received.toString('latin1') })
      }
    })
    socket.write(`GET / HTTP/1.1\r\nHost: ${relay.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
      + `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extensions}\r\n`)
  })
}

/** Upgrades a raw socket, sends `frames` at once, and resolves with every byte after the upgrade. */
function rawWebSocket(relay, frames, ms = 5000, localAddress = undefined) {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port: relay.port, host: '127.0.0.1', localAddress })
    let received = Buffer.alloc(0)
    const timer = setTimeout(() => { socket.destroy(); reject(new Error('the relay never closed')) }, ms)
    socket.on('error', () => {})
    socket.on('data', (d) => {
      const upgraded = received.includes('\r\n\r\n')
      received = Buffer.concat([received, d])
      if (!upgraded && received.includes('\r\n\r\n')) socket.write(Buffer.concat(frames))
    })
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(received.subarray(received.indexOf('\r\n\r\n') + 4))
    })
    socket.write(`GET / HTTP/1.1\r\nHost: ${relay.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
      + 'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n')
  })
}

/** A ws client that offers permessage-deflate (the harness's RawClient never does). */
function deflateClient(relay) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(relay.url, { perMessageDeflate: true })
    const closed = new Promise((done) => ws.on('close', (code) => done(code)))
    ws.on('error', () => {})
    ws.once('open', () => resolve({ ws, closed }))
    ws.once('unexpected-response', () => reject(new Error('no upgrade')))
  })
}

/** A plain ws client whose close code can be awaited. */
function plainClient(relay) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(relay.url, { perMessageDeflate: false })
    const closed = new Promise((done) => ws.on('close', (code) => done(code)))
    ws.on('error', () => {})
    ws.once('open', () => resolve({ ws, closed }))
    ws.once('unexpected-response', () => reject(new Error('no upgrade')))
  })
}

describe('hostile clients at the socket edge', () => {
  const ctx = withRelay({ COMB_MAX_MESSAGE_BYTES: String(maxMessage) })
  let relay, bystander
  before(async () => {
    relay = ctx.relay
    bystander = await RawClient.open(relay)
  })

  it('answers request headers over the bound with 431 and closes, counted', async () => {
    const before = await relay.metric('comb_http_too_large_total')
    const huge = 'x'.repeat(20 * 1024)
    for (const target of ['/', '/readyz']) {
      const answer = await rawHttp(relay.port, `GET ${target} HTTP/1.1\r\nHost: ${relay.host}\r\nX-Big: ${huge}\r\n\r\n`)
      assert.match(answer, /^HTTP\/1\.1 431 /, `answer: ${answer.slice(0, 120)}`)
      assert.match(answer, /[Cc]onnection: close/)
    }
    const upgrade = await rawHttp(relay.port, `GET / HTTP/1.1\r\nHost: ${relay.host}\r\nUpgrade: websocket\r\n`
      + 'Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'
      + `X-Big: ${huge}\r\n\r\n`)
    assert.match(upgrade, /^HTTP\/1\.1 431 /, `answer: ${upgrade.slice(0, 120)}`)
    assert.ok(await relay.metric('comb_http_too_large_total') >= before + 3)
    await stillUp(bystander)
  })

  it('answers a chunked body whose chunk line never ends with 413 and closes at once', async () => {
    // The parser's limits count headers and declared chunk sizes, not a chunk line's bytes:
    // without a bound on the read buffer this request grew it until the 10 s timeout.
    const before = await relay.metric('comb_http_too_large_total')
    const head = `POST / HTTP/1.1\r\nHost: ${relay.host}\r\nTransfer-Encoding: chunked\r\n\r\n`
    const started = Date.now()
    const answer = await rawHttp(relay.port, head + '1' + ';a'.repeat(64 * 1024), 4000)
    // The 413 is written before the close, and what the client sent after it is read and
    // dropped: a close on unread bytes would reset the connection and take the answer with it.
    assert.match(answer, /^HTTP\/1\.1 413 /, `answer: ${answer.slice(0, 120)}`)
    assert.ok(Date.now() - started < 3000, 'closed before the upgrade timeout')
    assert.ok(await relay.metric('comb_http_too_large_total') >= before + 1)
    await stillUp(bystander)
  })

  it('answers a body over the bound with a 413 its client reads, the whole body sent at once', async () => {
    // A browser sends headers and body together; the answer goes before the body is read.
    const body = JSON.stringify({ method: 'changerelayname', params: ['x'.repeat(100 * 1024)] })
    const request = `POST / HTTP/1.1\r\nHost: ${relay.host}\r\nContent-Type: application/nostr+json+rpc\r\n`
      + `Content-Length: ${body.length}\r\n\r\n${body}`
    for (let round = 0; round < 5; ++round) {
      const answer = await rawHttp(relay.port, request, 4000)
      assert.match(answer, /^HTTP\/1\.1 413 /, `round ${round}, answer: ${answer.slice(0, 120)}`)
      assert.match(answer, /"error":"request body is too large"/)
    }
    await stillUp(bystander)
  })

  it('closes a text frame of invalid UTF-8 with 1007', async () => {
    const { ws, closed } = await plainClient(relay)
    ws.send(Buffer.from([0x5b, 0x22, 0xff, 0xfe, 0x22, 0x5d]), { binary: false }) // ["\xff\xfe"]
    assert.equal(await closed, 1007)
    await stillUp(bystander)
  })

  it('reads a message of exactly the message bound whose last fragment is empty', async () => {
    const { sk } = keys()
    const frame = eventFrameOf(sk, maxMessage)
    assert.equal(frame.length, maxMessage)
    const { ws, closed } = await plainClient(relay)
    const ok = new Promise((resolve) => ws.on('message', (data) => {
      const reply = JSON.parse(data.toString())
      if (reply[0] === 'OK') resolve(reply)
    }))
    ws.send(frame, { fin: false })
    ws.send('', { fin: true })
    const reply = await Promise.race([ok, closed.then((code) => ['closed', code])])
    assert.deepEqual(reply.slice(0, 3), ['OK', JSON.parse(frame)[1].id, true])
    ws.close()
  })

  it('closes a message fragmented past the message bound with 1009', async () => {
    // Raw frames: the ws package, still writing fragments when the close arrives, reports 1006.
    const answer = await rawWebSocket(relay, [
      clientFrame(0x1, false, '["REQ","frag",{"kinds":[1],"#t":["'),
      ...Array.from({ length: 8 }, () => clientFrame(0x0, false, 'a'.repeat(1024))),
      clientFrame(0x0, true, '"]}]'),
    ])
    const close = answer.indexOf(Buffer.from([0x88]))
    assert.ok(close >= 0, 'a close frame came back')
    assert.equal(answer.readUInt16BE(close + 2), 1009)
    await stillUp(bystander)
  })

  it('answers a burst of pings within the connection\'s ping budget, and keeps serving it', async () => {
    const client = await RawClient.open(relay)
    let pongs = 0
    client.ws.on('pong', () => { pongs++ })
    for (let i = 0; i < 150; i++) client.ws.ping(Buffer.from(String(i))) // the burst is 200
    await stillUp(client)
    assert.ok(pongs > 0, 'pongs came back')
    await client.close()
    await stillUp(bystander)
  })

  it('cuts a connection whose pings pass its ping budget, counted, answering far fewer', async () => {
    // 20,000 empty masked pings in one write: each would cost the relay a write of its own.
    const ping = () => Buffer.concat([Buffer.from([0x89, 0x80]), randomBytes(4)])
    const before = await relay.metric('comb_pings_refused_total')
    const answer = await rawWebSocket(relay, [Buffer.concat(Array.from({ length: 20000 }, ping))], 10000, '127.0.0.42')
    let pongs = 0
    for (let at = 0; at + 1 < answer.length; at += 2 + (answer[at + 1] & 0x7f)) if (answer[at] === 0x8a) pongs++
    // A connection's ping burst is 200, refilled at 20/s.
    assert.ok(pongs < 10000, `${pongs} pongs for 20,000 pings`)
    assert.ok(await relay.metric('comb_pings_refused_total') > before, 'the refusal was not counted')
    await stillUp(bystander)
  })

  it('asks the database once a second, not once a request, about a host nobody serves', async () => {
    const before = await relay.metric('comb_host_lookups_total')
    const statuses = []
    for (let i = 0; i < 50; i++) statuses.push((await httpGet(relay.port, '/', { Host: 'nobody.example' })).status)
    assert.deepEqual([...new Set(statuses)], [404])
    const asked = (await relay.metric('comb_host_lookups_total')) - before
    assert.ok(asked >= 1 && asked <= 3, `${asked} lookups for 50 requests`)
    await stillUp(bystander)
  })

  it('closes the bystander cleanly', async () => { await bystander.close() })

  itStopsCleanly(ctx)
})

describe('a hostile client where the relay offers permessage-deflate', () => {
  const ctx = withRelay({ COMB_MAX_MESSAGE_BYTES: String(maxMessage), COMB_WS_DEFLATE: 'true' })
  let relay
  before(() => { relay = ctx.relay })

  it('closes a compressed frame that inflates past the message bound with 1009', async () => {
    const { ws, closed } = await deflateClient(relay)
    assert.match(ws.extensions, /permessage-deflate/, 'the relay offered deflate')
    const { sk } = keys()
    // About 1 KiB on the wire, 256 KiB once inflated.
    ws.send(JSON.stringify(['EVENT', sign(sk, { content: 'a'.repeat(256 * 1024) })]))
    assert.equal(await closed, 1009)
    assert.ok(await metricAbove(relay, 'comb_oversize_disconnects_total', 0) >= 1)
    const other = await RawClient.open(relay)
    await stillUp(other)
    await other.close()
  })

  it('reads a compressed message of exactly the message bound', async () => {
    const { ws, closed } = await deflateClient(relay)
    const { sk } = keys()
    const frame = eventFrameOf(sk, maxMessage)
    assert.equal(frame.length, maxMessage)
    const ok = new Promise((resolve) => ws.on('message', (data) => {
      const reply = JSON.parse(data.toString())
      if (reply[0] === 'OK') resolve(reply)
    }))
    ws.send(frame)
    const reply = await Promise.race([ok, closed.then((code) => ['closed', code])])
    assert.deepEqual(reply.slice(0, 3), ['OK', JSON.parse(frame)[1].id, true])
    ws.close()
  })

  it('holds no more than arrives for a compressed frame that claims a terabyte, and goes on serving', async () => {
    // Beast never checks a compressed frame's claimed length against the message bound.
    const stalled = await stalledSocket(relay, [claimingFrame(2 ** 40, true)],
      'Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n')
    assert.match(stalled.upgrade, /permessage-deflate/i, 'the relay took deflate')
    await new Promise((resolve) => setTimeout(resolve, 500)) // the relay has read what came
    const other = await RawClient.open(relay)
    await stillUp(other)
    await other.close()
    assert.equal(await relay.metric('comb_io_handler_exceptions_total'), 0)
    stalled.destroy()
  })

  itStopsCleanly(ctx)
})

describe('clients that begin messages and never finish them', () => {
  // Each connection may hold an unfinished message up to the message bound; the pod holds 64 KiB
  // of them here in all.
  const ctx = withRelay({ COMB_MAX_POD_PARTIAL_BYTES: '65536' })
  let relay
  before(() => { relay = ctx.relay })

  it('closes the connection whose fragment would pass the pod\'s bound (1009), counted; the others go on', async () => {
    const opening = '["REQ","frag",{"kinds":[1],"#t":["'
    const first = await plainClient(relay)
    first.ws.send(opening + 'a'.repeat(40000), { fin: false })
    const replies = []
    first.ws.on('message', (data) => {
      const reply = JSON.parse(data.toString())
      if (reply[0] !== 'AUTH') replies.push(reply)
    })
    await new Promise((resolve) => setTimeout(resolve, 300)) // the relay has read it
    // A second unfinished message of the same size would make 80,000 bytes held.
    const second = await plainClient(relay)
    second.ws.send(opening + 'b'.repeat(40000), { fin: false })
    assert.equal(await second.closed, 1009)
    assert.ok(await relay.metric('comb_partial_message_disconnects_total') >= 1)
    // The first connection finishes its message and is answered: what it held is released.
    first.ws.send('"]}]', { fin: true })
    for (let i = 0; i < 100 && replies.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    assert.ok(replies.length > 0, 'the finished message was answered')
    assert.equal(replies[0][1], 'frag')
    // With nothing held, the same unfinished message is taken again.
    const third = await plainClient(relay)
    third.ws.send(opening + 'c'.repeat(40000), { fin: false })
    await new Promise((resolve) => setTimeout(resolve, 300))
    third.ws.send('"]}]', { fin: true })
    const reply = await new Promise((resolve) => third.ws.on('message', (data) => {
      const message = JSON.parse(data.toString())
      if (message[0] !== 'AUTH') resolve(message)
    }))
    assert.equal(reply[1], 'frag')
    first.ws.close()
    third.ws.close()
  })

  it('counts the room a stalled message holds, not only what arrived: claims are cut at the pod\'s bound', async () => {
    // Each claims a large frame and sends 2,000 bytes, past what a message's first two reads
    // take uncounted (1,536): what arrived and the next read's room (16 KiB) count, so the fourth
    // passes the 64 KiB bound.
    const stalled = []
    for (let i = 0; i < 3; i++) {
      stalled.push(await stalledSocket(relay, [claimingFrame(400 * 1024, false, 2000)]))
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const before = await relay.metric('comb_partial_message_disconnects_total')
    const fourth = await stalledSocket(relay, [claimingFrame(400 * 1024, false, 2000)])
    assert.equal(await fourth.closeCode(), 1009)
    assert.ok(await relay.metric('comb_partial_message_disconnects_total') > before)
    for (const socket of stalled) socket.destroy()
    const other = await RawClient.open(relay)
    await stillUp(other)
    await other.close()
  })

  itStopsCleanly(ctx)
})

describe('clients that declare request bodies and never send them', () => {
  const ctx = withRelay({ COMB_MAX_CONNECTIONS_PER_IP: '400' })
  let relay
  before(() => { relay = ctx.relay })

  /** A socket that sent a POST's headers declaring `length` bytes of body, and a few of them. */
  function stalledPost(length, localAddress = '127.0.0.1') {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port: relay.port, host: '127.0.0.1', localAddress })
      let answer = ''
      socket.on('data', (d) => { answer += d.toString('latin1') })
      socket.on('error', () => {})
      socket.once('connect', () => {
        socket.write(`POST / HTTP/1.1\r\nHost: ${relay.host}\r\nContent-Type: application/nostr+json+rpc\r\n`
          + `Content-Length: ${length}\r\n\r\n{"method"`)
        resolve({ socket, answer: () => answer })
      })
      socket.once('error', reject)
    })
  }

  /** The refusal as a browser's NIP-86 client must read it: CORS, and a JSON `error`. */
  function assertJsonRefusal(answer, status, error) {
    assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `), `answer: ${answer.slice(0, 160)}`)
    assert.match(answer, /\r\nAccess-Control-Allow-Origin: \*\r\n/i)
    assert.equal(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error, error)
  }

  it('answers 429 past the bodies one address sends at once, whatever its sockets', async () => {
    const held = []
    for (let i = 0; i < 16; i++) held.push(await stalledPost(65536, '127.0.0.21'))
    const fifth = await stalledPost(65536, '127.0.0.21')
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const h of held) assert.equal(h.answer(), '', 'a body within the bound is waited for')
    assertJsonRefusal(fifth.answer(), 429, 'rate-limited: too many requests in progress from your address')
    // Another address is served meanwhile; the first again once its bodies go.
    const other = await stalledPost(65536, '127.0.0.22')
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(other.answer(), '')
    for (const h of [...held, other, fifth]) h.socket.destroy()
    await new Promise((resolve) => setTimeout(resolve, 300))
    const again = await stalledPost(65536, '127.0.0.21')
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(again.answer(), '')
    again.socket.destroy()
  })

  it('answers 503 past the bodies the pod reads at once, and serves again once they go', async () => {
    // Each declared body is reserved as its headers arrive: 256 of 64 KiB is the pod's bound,
    // 16 from each of 16 addresses here.
    const held = []
    for (let i = 0; i < 256; i++) held.push(await stalledPost(65536, `127.0.1.${1 + Math.floor(i / 16)}`))
    await new Promise((resolve) => setTimeout(resolve, 300))
    for (const h of held) assert.equal(h.answer(), '', 'a body within the bound is waited for')
    const refused = await rawHttp(relay.port, `POST / HTTP/1.1\r\nHost: ${relay.host}\r\n`
      + 'Content-Length: 65536\r\n\r\n{"method"')
    assertJsonRefusal(refused, 503, 'relay: too many requests in progress, retry shortly')
    for (const h of held) h.socket.destroy()
    await new Promise((resolve) => setTimeout(resolve, 300))
    const body = '{"method":"supportedmethods","params":[]}'
    const served = await rawHttp(relay.port, `POST / HTTP/1.1\r\nHost: ${relay.host}\r\nConnection: close\r\n`
      + `Content-Type: application/nostr+json+rpc\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    assert.match(served, /^HTTP\/1\.1 401 /, `answer: ${served.slice(0, 120)}`)
  })

  it('refuses a WebSocket upgrade that carries bytes before the handshake is answered', async () => {
    const upgrade = `GET / HTTP/1.1\r\nHost: ${relay.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
      + 'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'
    const early = await rawHttp(relay.port, Buffer.concat([Buffer.from(upgrade),
      clientFrame(0x1, true, '["REQ","early",{"limit":1}]')]))
    assert.match(early, /^HTTP\/1\.1 400 /, `answer: ${early.slice(0, 120)}`)
    assert.match(early, /before the WebSocket handshake/)
    const client = await RawClient.open(relay)
    await stillUp(client)
    await client.close()
  })

  itStopsCleanly(ctx)
})
