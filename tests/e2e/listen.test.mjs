// Listen addresses: a host name works (resolved at start), and a bad address stops the start
// before the database is touched, with the setting's name in the error.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  Relay, createDatabase, dropDatabase, freePort, keys, sign, startRelay, stopRelayCleanly, within,
} from './harness.mjs'

function tablesIn(database) {
  const url = new URL(process.env.COMB_TEST_DATABASE_URL)
  url.pathname = `/${database}`
  return new Promise((resolve, reject) => execFile('psql', [url.toString(), '-qAtc',
    "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"],
  { timeout: 20000 }, (error, stdout) => (error ? reject(error) : resolve(Number(stdout.trim())))))
}

/** Starts a relay that must fail; resolves to its error message (stderr included). */
async function failedStart(env, database) {
  try {
    const relay = await startRelay(env, { database })
    await relay.stop()
  } catch (error) {
    return error.message
  }
  assert.fail(`comb-relay started with ${JSON.stringify(env)}`)
}

describe('listen addresses', () => {
  it('COMB_LISTEN=localhost:0 binds one port on every address and serves the community localhost:PORT', async () => {
    const relay = await startRelay({ COMB_LISTEN: 'localhost:0' })
    const port = relay.port
    try {
      assert.notEqual(port, 0)
      assert.match(relay.log(), new RegExp(`community localhost:${port} \\(id \\d+\\)`),
        'the community names the bound port, not 0')
      const client = await within(Relay.connect(`ws://localhost:${port}`), 5000, 'connect')
      const author = keys()
      const note = sign(author.sk, { content: 'hello through a listen name' })
      await within(client.publish(note), 5000, 'publish')
      const got = await within(new Promise((resolve) => {
        const found = []
        const sub = client.subscribe([{ ids: [note.id] }], {
          onevent: (e) => found.push(e),
          oneose: () => { sub.close(); resolve(found) },
        })
      }), 5000, 'read back')
      assert.deepEqual(got.map((e) => e.id), [note.id])
      client.close()
      assert.match(relay.log() + '', /community localhost:\d+ \(id \d+\)/)
    } finally {
      await stopRelayCleanly(relay)
    }
  })

  it('a name that does not resolve stops the start before the database is touched', async () => {
    const database = await createDatabase()
    try {
      const message = await failedStart({ COMB_LISTEN: `nowhere.invalid:${await freePort()}` }, database)
      assert.match(message, /COMB_LISTEN=nowhere\.invalid:\d+: cannot resolve nowhere\.invalid/)
      assert.equal(await tablesIn(database), 0, 'no migration ran, no community was created')
    } finally {
      await dropDatabase(database)
    }
  })

  it('a start its settings stop leaves no new relay key; --check-config names what is wrong', async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'comb-key-'))
    const keyFile = path.join(folder, 'relay.key')
    const database = await createDatabase()
    try {
      await failedStart({ COMB_LISTEN: `nowhere.invalid:${await freePort()}`, COMB_RELAY_KEY_FILE: keyFile }, database)
      assert.equal(existsSync(keyFile), false, 'a key file was made by a start that could not proceed')
    } finally {
      await dropDatabase(database)
    }
    const bin = process.env.COMB_RELAY_BIN
      || path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../build/bin/comb-relay')
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COMB_')))
    const check = (env) => new Promise((resolve) => execFile(bin, ['--check-config'],
      { env: { ...inherited, COMB_CONFIG: '', COMB_LISTEN: '127.0.0.1:0', COMB_METRICS_LISTEN: 'off', ...env }, timeout: 20000 },
      (error, stdout, stderr) => resolve({ code: error ? error.code : 0, out: stdout + stderr })))
    const noDatabase = await check({ COMB_RELAY_KEY_FILE: keyFile })
    assert.equal(noDatabase.code, 2)
    assert.match(noDatabase.out, /COMB_DATABASE_URL is not set/)
    const url = { COMB_DATABASE_URL: process.env.COMB_TEST_DATABASE_URL, COMB_RELAY_KEY_FILE: keyFile }
    assert.equal((await check(url)).code, 0, 'a key file not made yet is made at the first start')
    await writeFile(keyFile, `${'1'.repeat(64)}\n`)
    await chmod(keyFile, 0o644)
    const shared = await check(url)
    assert.equal(shared.code, 2)
    assert.match(shared.out, /is readable by group or others/)
    await chmod(keyFile, 0o600)
    assert.equal((await check(url)).code, 0)
  })

  it('a key the database refuses (it belongs to another relay key) is not left in the key file', async () => {
    const database = await createDatabase()
    const keyFile = path.join(await mkdtemp(path.join(tmpdir(), 'comb-key-')), 'relay.key')
    try {
      const first = await startRelay({}, { database }) // records its own key
      await stopRelayCleanly(first)
      const message = await failedStart({ COMB_RELAY_KEY_FILE: keyFile }, database)
      assert.match(message, /relay key/)
      assert.equal(existsSync(keyFile), false, 'the refused key stayed in its file')
    } finally {
      await dropDatabase(database)
    }
  })

  it('[zz] is not an IPv6 address: refused by the settings, naming COMB_LISTEN', async () => {
    const database = await createDatabase()
    try {
      const message = await failedStart({ COMB_LISTEN: '[zz]:7777' }, database)
      assert.match(message, /exited with 2/)
      assert.match(message, /invalid setting server\.listen: COMB_LISTEN="\[zz\]:7777"/)
      assert.equal(await tablesIn(database), 0)
    } finally {
      await dropDatabase(database)
    }
  })
})
