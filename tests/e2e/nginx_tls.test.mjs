// comb behind Debian's nginx terminating TLS for two community hosts, configured as
// docs/operations.md "Behind a reverse proxy" says: nostr-tools connects by wss:// to each host,
// AUTHs with the wss:// URL, publishes and reads; the relay believes X-Forwarded-For only from
// the proxy it trusts. nginx runs from a private prefix on free loopback ports.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import net from 'node:net'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  Relay, RawClient, WebSocket, finalizeEvent, freePort, keys, settlesWithin, sign, startRelay,
  stopRelayCleanly, within,
} from './harness.mjs'

const hosts = ['hive.test', 'garden.test']
const clientAddress = '127.0.0.5' // the browser, as nginx sees it
const nginxBin = process.env.COMB_NGINX_BIN || '/usr/sbin/nginx'

function run(file, args, options = {}) {
  return new Promise((resolve, reject) => execFile(file, args, { timeout: 30000, ...options },
    (error, stdout, stderr) => (error ? reject(new Error(`${file} ${args.join(' ')}: ${stderr || error}`)) : resolve(stdout))))
}

/** A self-signed certificate naming both hosts: it is its own CA for the client. */
async function makeCertificate(dir) {
  const key = path.join(dir, 'tls.key')
  const cert = path.join(dir, 'tls.crt')
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256',
    '-nodes', '-days', '1', '-subj', '/CN=comb e2e', '-keyout', key, '-out', cert,
    '-addext', `subjectAltName=${hosts.map((h) => `DNS:${h}`).join(',')}`])
  return { key, cert }
}

/** The docs' nginx site, with the private paths a test instance needs around it. */
function nginxConfig({ dir, tlsPort, relayPort, cert, key }) {
  const user = process.getuid() === 0 ? 'user root root;' : '' // workers as the test's user
  return `${user}
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log info;
events { worker_connections 256; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;

  # --- as in docs/operations.md ---
  map $http_upgrade $connection_upgrade {
    default upgrade;
    ''      close;
  }
  upstream comb {
    server 127.0.0.1:${relayPort};
  }
  server {
    listen 127.0.0.1:${tlsPort} ssl;
    server_name ${hosts.join(' ')};
    ssl_certificate     ${cert};
    ssl_certificate_key ${key};
    location / {
      proxy_pass http://comb;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
      proxy_buffering off;
    }
  }
}
`
}

async function startNginx(dir, config) {
  const file = path.join(dir, 'nginx.conf')
  await writeFile(file, config)
  await run(nginxBin, ['-t', '-p', dir, '-e', path.join(dir, 'error.log'), '-c', file])
  const proc = spawn(nginxBin, ['-p', dir, '-e', path.join(dir, 'error.log'), '-c', file, '-g', 'daemon off;'],
    { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  proc.stdout.on('data', (d) => { output += d })
  proc.stderr.on('data', (d) => { output += d })
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  return {
    /** Resolves once nginx accepts connections on `port` (it binds after the spawn returns). */
    async listening(port, ms = 5000) {
      const deadline = Date.now() + ms
      for (;;) {
        const open = await new Promise((resolve) => {
          const socket = net.connect({ host: '127.0.0.1', port }, () => { socket.destroy(); resolve(true) })
          socket.once('error', () => resolve(false))
        })
        if (open) return
        if (proc.exitCode !== null || Date.now() > deadline)
          throw new Error(`nginx is not listening on ${port}: ${output}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
    proc,
    output: () => output,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGQUIT')
      if (!(await settlesWithin(exited, 5000))) proc.kill('SIGKILL')
      await exited
    },
  }
}

/** Every *.test host is on 127.0.0.1. */
const lookup = (_host, options, callback) => (options?.all
  ? callback(null, [{ address: '127.0.0.1', family: 4 }])
  : callback(null, '127.0.0.1', 4))

/**
 * nostr-tools' WebSocket: trusts the test's certificate, finds the hosts with `lookup` and leaves
 * from `clientAddress`, so the relay can tell the client from the proxy.
 */
function tlsWebSocket(ca, headers = {}) {
  return class extends WebSocket {
    constructor(url, protocols) {
      super(url, protocols, { ca, lookup, headers, localAddress: clientAddress, perMessageDeflate: false })
    }
  }
}

const connect = (url, ca) => within(Relay.connect(url, { websocketImplementation: tlsWebSocket(ca) }),
  5000, `connect ${url}`)

const eventsOf = (relay, filter) => within(new Promise((resolve) => {
  const found = []
  const sub = relay.subscribe([filter], {
    onevent: (e) => found.push(e),
    oneose: () => { sub.close(); resolve(found) },
  })
}), 5000, 'REQ')

const linesMatching = (relay, pattern) =>
  relay.log().split('\n').filter((line) => pattern.test(line)).length

/** Whether the relay logs more than `already` lines matching `pattern` within `ms`. */
async function logShows(relay, pattern, already = 0, ms = 5000) {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (linesMatching(relay, pattern) > already) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}

describe('behind nginx terminating TLS', () => {
  let dir, relay, nginx, tlsPort, ca
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'comb-nginx-'))
    const { cert, key } = await makeCertificate(dir)
    ca = await readFile(cert)
    relay = await startRelay({ COMB_TRUSTED_PROXIES: '127.0.0.1' })
    // nginx cannot say which port it took, so the test picks one; another process may take it
    // first (nginx then says so and retries the bind): three tries on fresh ports.
    for (let attempt = 1; ; attempt++) {
      tlsPort = await freePort()
      for (const host of hosts)
        await relay.sql(`INSERT INTO communities (host) VALUES ('${host}:${tlsPort}')`)
      await writeFile(path.join(dir, 'error.log'), '')
      nginx = await startNginx(dir, nginxConfig({ dir, tlsPort, relayPort: relay.port, cert, key }))
      await nginx.listening(tlsPort)
      await new Promise((resolve) => setTimeout(resolve, 300)) // nginx reports a failed bind at once
      const errors = nginx.output() + await readFile(path.join(dir, 'error.log'), 'utf8')
      if (!/Address already in use/.test(errors)) break
      await nginx.stop()
      if (attempt === 3) throw new Error(`nginx could not bind a port: ${errors}`)
    }
  })
  after(async () => {
    await nginx?.stop()
    await relay?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  for (const host of hosts) {
    it(`wss://${host}: AUTH with the wss:// URL, publish and read`, async () => {
      const url = `wss://${host}:${tlsPort}`
      const tools = await connect(url, ca)
      const author = keys()
      // comb sends its challenge at connect; nostr-tools signs an AUTH naming the wss:// URL.
      for (let i = 0; i < 100 && !tools.challenge; i++) await new Promise((r) => setTimeout(r, 20))
      assert.ok(tools.challenge, 'a challenge arrived through the proxy')
      let named = null
      await within(tools.auth(async (template) => {
        named = template.tags.find((t) => t[0] === 'relay')[1]
        return finalizeEvent(template, author.sk)
      }), 5000, 'AUTH accepted')
      assert.equal(named.replace(/\/$/, ''), url)
      const note = sign(author.sk, { content: `hello ${host} over TLS` })
      await within(tools.publish(note), 5000, 'publish')
      assert.deepEqual((await eventsOf(tools, { authors: [author.pk] })).map((e) => e.id), [note.id])
      tools.close()
      const closed = new RegExp(`peer 127\\.0\\.0\\.1:\\d+ client ${clientAddress.replace(/\./g, '\\.')} community \\d+ host ${host}:${tlsPort}`)
      assert.ok(await logShows(relay, closed), `the relay logged the client's address for ${host}\n${relay.stderr()}`)
    })
  }

  it('the other host sees nothing of the first', async () => {
    const author = keys()
    const hive = await connect(`wss://${hosts[0]}:${tlsPort}`, ca)
    const garden = await connect(`wss://${hosts[1]}:${tlsPort}`, ca)
    const note = sign(author.sk, { content: 'only in the hive' })
    await within(hive.publish(note), 5000, 'publish')
    assert.deepEqual((await eventsOf(hive, { authors: [author.pk] })).length, 1)
    assert.deepEqual((await eventsOf(garden, { authors: [author.pk] })).length, 0)
    hive.close()
    garden.close()
  })

  it('a forged X-Forwarded-For is ignored: from an untrusted peer, and before the proxy', async () => {
    // Straight to the relay from 127.0.0.9, which is no proxy: the header is not believed.
    const direct = await RawClient.open(relay, { localAddress: '127.0.0.9',
      headers: { 'X-Forwarded-For': '203.0.113.7', 'X-Real-IP': '203.0.113.8' } })
    await direct.close()
    assert.ok(await logShows(relay, /peer 127\.0\.0\.9:\d+ client 127\.0\.0\.9 community/),
      `the relay logged the socket's address\n${relay.stderr()}`)
    // Through nginx with a forged header: nginx appends the address it saw, which wins.
    const viaProxy = new RegExp(`client 127\\.0\\.0\\.5 community \\d+ host ${hosts[0]}:${tlsPort} reason`)
    const seen = linesMatching(relay, viaProxy)
    const ForgedSocket = tlsWebSocket(ca, { 'X-Forwarded-For': '203.0.113.7' })
    const raw = new ForgedSocket(`wss://${hosts[0]}:${tlsPort}`)
    await within(new Promise((resolve, reject) => { raw.once('open', resolve); raw.once('error', reject) }),
      5000, 'open through nginx')
    raw.close()
    assert.ok(await logShows(relay, viaProxy, seen), `one more close line for 127.0.0.5\n${relay.stderr()}`)
    assert.doesNotMatch(relay.log(), /client 203\.0\.113\.[78]/)
  })

  it('nginx and the relay stop cleanly', async () => {
    await nginx.stop()
    await stopRelayCleanly(relay)
  })
})
