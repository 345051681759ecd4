// strfry interop (integration tier): events written to strfry over its WebSocket, `strfry
// export`, `comb-admin import`: every id present and the same REQ answers; then back, `comb-admin
// export` -> `strfry import` into a fresh strfry: the same again. strfry is found through
// COMB_STRFRY_DIR or ../shared/peers/strfry next to the repository; without it this file says
// so and exits 77, which ctest reports as skipped (never as passed).
import { spawn, execFile } from 'node:child_process'
import { existsSync, createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import {
  RawClient, freePort, keys, now, sign, startRelay, stopRelayCleanly, within,
} from './harness.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const repository = path.resolve(here, '../..')
const strfryDir = process.env.COMB_STRFRY_DIR || path.resolve(repository, '../shared/peers/strfry')
const adminBin = process.env.COMB_ADMIN_BIN || path.resolve(repository, 'build/bin/comb-admin')

if (!existsSync(path.join(strfryDir, 'strfry')) || !existsSync(path.join(strfryDir, 'run.sh'))) {
  console.log(`SKIPPED: no strfry build in ${strfryDir} (set COMB_STRFRY_DIR to a folder with strfry and run.sh)`)
  process.exit(77)
}

/** Runs a program to completion; stdin from `input` (a path) when given. Resolves to stdout. */
function run(program, args, { env = process.env, input, output, ms = 60000 } = {}) {
  return within(new Promise((resolve, reject) => {
    const child = spawn(program, args, { env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    if (output) child.stdout.pipe(createWriteStream(output))
    else child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    if (input) createReadStream(input).pipe(child.stdin)
    else child.stdin.end()
    child.once('error', reject)
    child.once('close', (code) => (code === 0 ? resolve({ stdout, stderr })
      : reject(new Error(`${path.basename(program)} ${args.join(' ')} exited ${code}\n${stderr}`))))
  }), ms, `${path.basename(program)} ${args[0]}`)
}

/** A strfry relay on a free port with a fresh database: { url, strfry(args, opts), stop() }. */
async function startStrfry() {
  const state = await mkdtemp(path.join(tmpdir(), 'comb-strfry-'))
  const port = await freePort()
  await run('bash', [path.join(strfryDir, 'run.sh'), 'start', String(port), state])
  const config = `--config=${path.join(state, 'strfry.conf')}`
  return {
    url: `ws://127.0.0.1:${port}`,
    strfry: (args, opts) => run(path.join(strfryDir, 'strfry'), [config, ...args], opts),
    stop: () => run('bash', [path.join(strfryDir, 'run.sh'), 'stop', state]),
  }
}

/** comb-admin against `relay`'s database. */
function admin(relay, args, opts = {}) {
  const url = new URL(process.env.COMB_TEST_DATABASE_URL)
  url.pathname = `/${relay.database}`
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COMB_')))
  return run(adminBin, args, { ...opts, env: { ...env, COMB_DATABASE_URL: url.toString() } })
}

/** The ids a REQ with `filter` gets from `url`, in reply order. */
async function reqIds(url, filter) {
  const client = await RawClient.open({ url })
  try {
    const { events, end } = await client.req('q', filter)
    assert.equal(end[0], 'EOSE', `${url} ${JSON.stringify(filter)}: ${JSON.stringify(end)}`)
    return events.map((e) => e.id)
  } finally {
    await client.close()
  }
}

const idsOfFile = async (file) => (await readFile(file, 'utf8')).split('\n').filter(Boolean)
  .map((line) => JSON.parse(line).id)

/** A community's worth of events: notes with tags, replaceable and addressable versions,
 * a deletion, an expiring note; every created_at distinct, so order never depends on ties. */
function corpus() {
  const alice = keys()
  const bob = keys()
  const t = now() - 3000
  const events = []
  const add = (who, fields) => { const e = sign(who.sk, { ...fields, created_at: t + events.length }); events.push(e); return e }
  for (let i = 0; i < 12; i++) {
    add(i % 2 ? alice : bob, { kind: 1, content: `note ${i}`, tags: [['t', i % 3 ? 'hive' : 'comb']] })
  }
  add(alice, { kind: 1, content: 'reply', tags: [['e', events[0].id], ['p', bob.pk]] })
  add(alice, { kind: 0, content: '{"name":"alice"}' })
  add(alice, { kind: 0, content: '{"name":"alice, again"}' })
  add(bob, { kind: 3, content: '', tags: [['p', alice.pk]] })
  add(bob, { kind: 30023, content: 'draft', tags: [['d', 'post'], ['title', 'one']] })
  add(bob, { kind: 30023, content: 'final', tags: [['d', 'post'], ['title', 'one']] })
  add(bob, { kind: 30023, content: 'other', tags: [['d', 'other']] })
  const doomed = add(alice, { kind: 1, content: 'to be deleted' })
  add(alice, { kind: 5, content: '', tags: [['e', doomed.id]] })
  add(bob, { kind: 1, content: 'expires in an hour', tags: [['expiration', String(now() + 3600)]] })
  return { events, alice, bob, t }
}

function filtersFor({ alice, bob, t }) {
  return [
    { authors: [alice.pk, bob.pk] },
    { kinds: [1] },
    { kinds: [1], authors: [alice.pk], limit: 3 },
    { kinds: [0, 3] },
    { kinds: [30023] },
    { kinds: [30023], '#d': ['post'] },
    { kinds: [5] },
    { '#t': ['hive'] },
    { '#p': [bob.pk] },
    { authors: [bob.pk], since: t + 2, until: t + 9 },
  ]
}

async function assertSameAnswers(aUrl, bUrl, filters) {
  for (const filter of filters) {
    const [a, b] = await Promise.all([reqIds(aUrl, filter), reqIds(bUrl, filter)])
    assert.ok(a.length > 0, `no events for ${JSON.stringify(filter)}: the filter tests nothing`)
    assert.deepEqual(b, a, `REQ ${JSON.stringify(filter)}`)
  }
}

describe('strfry -> comb -> strfry', () => {
  const data = corpus()
  let folder
  let source
  let target
  let comb

  before(async () => {
    folder = await mkdtemp(path.join(tmpdir(), 'comb-interop-'))
    source = await startStrfry()
    comb = await startRelay()
  })
  after(async () => {
    await source?.stop()
    await target?.stop()
    await comb?.stop()
    if (folder) await rm(folder, { recursive: true, force: true })
  })

  it('strfry takes the corpus over its WebSocket', async () => {
    const client = await RawClient.open({ url: source.url })
    for (const event of data.events) {
      const { ok, message } = await client.publish(event)
      assert.ok(ok, `strfry refused ${event.kind}: ${message}`)
    }
    await client.close()
  })

  it('strfry export, comb-admin import: every id present, the same REQ answers', async () => {
    const exported = path.join(folder, 'strfry.jsonl')
    await source.strfry(['export'], { output: exported })
    const ids = await idsOfFile(exported)
    // strfry keeps the newest version of each replaceable key and drops the deleted note.
    assert.equal(ids.length, data.events.length - 3)
    // Through stdin, as `strfry export | comb-admin import HOST` would.
    const { stdout } = await admin(comb, ['import', comb.host, '--json'], { input: exported })
    const result = JSON.parse(stdout)
    assert.equal(result.stored, ids.length, stdout)
    assert.equal(result.bad_lines, 0, stdout)
    const present = await reqIds(comb.url, { ids })
    assert.deepEqual([...present].sort(), [...ids].sort())
    await assertSameAnswers(source.url, comb.url, filtersFor(data))
  })

  it('comb-admin export, strfry import into a fresh strfry: the same again', async () => {
    const exported = path.join(folder, 'comb.jsonl')
    await admin(comb, ['export', comb.host, '--out', exported])
    const ids = await idsOfFile(exported)
    target = await startStrfry()
    await target.strfry(['import'], { input: exported })
    const present = await reqIds(target.url, { ids })
    assert.deepEqual([...present].sort(), [...ids].sort())
    await assertSameAnswers(comb.url, target.url, filtersFor(data))
  })

  it('comb exits cleanly', () => stopRelayCleanly(comb))
})
