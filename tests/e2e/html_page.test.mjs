// The page a browser gets at a community's address, rendered by headless Chromium (Debian's
// package, installed by tools/test.sh): name, wss:// URL, access and relay key are on it, an
// admin's markup is not run, and NIP-11 and plain-text answers are unchanged.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import net from 'node:net'
import { httpGet, itStopsCleanly, withRelay, within } from './harness.mjs'

const chromiumBin = process.env.COMB_CHROMIUM_BIN || '/usr/bin/chromium'

/** The DOM Chromium built from `url` (scripts would have run by then). */
async function renderedDom(url) {
  const profile = await mkdtemp(path.join(tmpdir(), 'comb-chromium-'))
  try {
    return await new Promise((resolve, reject) => execFile(chromiumBin, [
      '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions',
      `--user-data-dir=${profile}`, '--dump-dom', url,
    ], { timeout: 60000, maxBuffer: 4 << 20 }, (error, stdout, stderr) =>
      (error ? reject(new Error(`chromium: ${stderr.slice(-2000) || error}`)) : resolve(stdout))))
  } finally {
    await rm(profile, { recursive: true, force: true })
  }
}

/** Everything the relay sends back for `request`, written as is, until it closes. */
function rawExchange(port, request, ms = 5000) {
  return within(new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request))
    let got = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk) => { got += chunk })
    socket.on('end', () => resolve(got))
    socket.on('error', reject)
  }), ms, 'raw HTTP exchange')
}

describe('the HTML page at /', () => {
  const ctx = withRelay({ COMB_PUBLIC_URL: 'wss://hive.test', COMB_ACCESS: 'closed' })
  let relay
  before(async () => {
    relay = ctx.relay
    // The page is per community: the loopback alias of the fresh install is the same community.
    await relay.sql(`UPDATE communities SET name = 'Hive <b>bees</b>',
      description = 'Keep out <script>document.title="pwned"</script>' WHERE host = 'hive.test'`)
  })

  it('Chromium shows the name, the wss:// URL, closed access with how to join, and the relay npub', async () => {
    const dom = await renderedDom(`http://127.0.0.1:${relay.port}/`)
    assert.match(dom, /<h1 id="name">Hive &lt;b&gt;bees&lt;\/b&gt;<\/h1>/)
    assert.match(dom, /<code id="url">wss:\/\/hive\.test<\/code>/)
    assert.match(dom, /Closed: only members read and post\./)
    assert.match(dom, /invite code/)
    assert.ok(dom.includes(relay.npub), 'the relay npub is on the page')
    // The admin's script stayed text: the title is still the community's name.
    assert.match(dom, /<title>Hive &lt;b&gt;bees&lt;\/b&gt;<\/title>/)
    assert.doesNotMatch(dom, /<script/)
  })

  it('NIP-11 and plain-text answers are as before', async () => {
    const info = await httpGet(relay.port, '/', { Accept: 'application/nostr+json' })
    assert.match(info.headers['content-type'], /^application\/nostr\+json/)
    assert.equal(JSON.parse(info.body).name, 'Hive <b>bees</b>')
    const text = await httpGet(relay.port, '/', { Accept: '*/*' })
    assert.match(text.headers['content-type'], /^text\/plain/)
    assert.match(text.body, /^comb relay for hive\.test: connect with a Nostr client/)
    const html = await httpGet(relay.port, '/', { Accept: 'text/html' })
    assert.match(html.headers['content-type'], /^text\/html/)
    assert.match(html.headers['content-security-policy'], /default-src 'none'/)
    // One address, three answers: a cache in front must key them by Accept.
    for (const answer of [info, text, html])
      assert.equal(answer.headers.vary, 'Accept')
  })

  it('answers HEAD / as GET, headers only (uptime monitors use it)', async () => {
    const got = await httpGet(relay.port, '/', { Accept: 'application/nostr+json' })
    const raw = await rawExchange(relay.port,
      `HEAD / HTTP/1.1\r\nHost: 127.0.0.1:${relay.port}\r\nAccept: application/nostr+json\r\nConnection: close\r\n\r\n`)
    const [head, ...rest] = raw.split('\r\n\r\n')
    assert.match(head, /^HTTP\/1\.1 200 /)
    assert.match(head, /\r\nContent-Type: application\/nostr\+json/i)
    assert.match(head, new RegExp(`\r\nContent-Length: ${Buffer.byteLength(got.body)}(\r\n|$)`, 'i'))
    assert.equal(rest.join('\r\n\r\n'), '', 'no body after the headers')
  })

  it('closes with "Connection: close" what it refuses and then closes (an unknown host)', async () => {
    const raw = await rawExchange(relay.port, 'GET / HTTP/1.1\r\nHost: nowhere.example\r\n\r\n')
    assert.match(raw, /^HTTP\/1\.1 404 /)
    assert.match(raw, /\r\nConnection: close\r\n/i)
  })

  itStopsCleanly(ctx)
})
