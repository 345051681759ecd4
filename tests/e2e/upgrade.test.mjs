// Upgrading a database written by an older comb: its member list is signed with the relay key
// (before each community had a key of its own), carries ["member", hex, "member"] and has no
// 33534 role definitions. The next start moves it to the community's key and rewrites it once in
// the NIP-43 role shape (with the definitions it names); the start after that leaves it alone.
import { describe, it, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { stablePort } from './stable_port.mjs'
import {
  RawClient, createDatabase, dropDatabase, finalizeEvent, keys, now, sign, startRelay,
  stopRelayCleanly,
} from './harness.mjs'

async function authedClient(relay, who) {
  const client = await RawClient.open(relay)
  const challenge = await client.challenge()
  const auth = finalizeEvent({ kind: 22242, created_at: now(), content: '',
    tags: [['relay', relay.url], ['challenge', challenge]] }, who.sk)
  assert.deepEqual(await client.auth(auth), { ok: true, message: '' })
  return client
}

async function liveList(relay, who) {
  const client = await authedClient(relay, who)
  const list = (await client.req('list', { kinds: [13534], authors: [relay.pubkey] })).events
  const roles = (await client.req('roles', { kinds: [33534], authors: [relay.pubkey] })).events
  await client.close()
  assert.equal(list.length, 1)
  return { list: list[0], roles: roles.map((e) => e.tags.find((t) => t[0] === 'd')[1]).sort() }
}

describe('start-up upgrade of member lists to the NIP-43 role shape', () => {
  const owner = keys()
  const member = keys()
  // Both starts take one port, outside the ephemeral range: another process's outgoing
  // connection could take a port 0 gave the first start before the second binds it.
  let database, keyDir, port = 0
  const relays = []
  const start = async () => {
    const relay = await startRelay({ COMB_ACCESS: 'closed', COMB_OWNER_PUBKEY: owner.pk,
      COMB_RELAY_KEY_FILE: path.join(keyDir, 'relay.key'), COMB_LISTEN: `127.0.0.1:${port}` }, { database })
    relays.push(relay)
    port = relay.port
    return relay
  }
  after(async () => {
    for (const relay of relays) await relay.stop()
    if (database) await dropDatabase(database)
    if (keyDir) await rm(keyDir, { recursive: true, force: true })
  })

  it('rewrites an older list once, then leaves it alone', async () => {
    database = await createDatabase()
    keyDir = await mkdtemp(path.join(tmpdir(), 'comb-upgrade-'))
    port = await stablePort()
    const secret = randomBytes(32).toString('hex')
    await writeFile(path.join(keyDir, 'relay.key'), secret + '\n', { mode: 0o600 })

    let relay = await start()
    const client = await authedClient(relay, owner)
    assert.equal((await client.publish(sign(owner.sk, { kind: 9030,
      tags: [['p', member.pk], ['relay', relay.url]] }))).message, 'info: member added')
    await client.close()
    await stopRelayCleanly(relay)

    // What an older comb left behind: the role name "member" on plain members, no 33534s.
    const old = finalizeEvent({ kind: 13534, created_at: now() - 60, content: '',
      tags: [['-'], ['member', owner.pk, 'owner'], ['member', member.pk, 'member']] },
    Uint8Array.from(Buffer.from(secret, 'hex')))
    // And a role definition, which the start must move (not write again): its created_at stays.
    const role = finalizeEvent({ kind: 33534, created_at: now() - 60, content: '',
      tags: [['-'], ['d', 'owner'], ['label', 'Owner']] }, Uint8Array.from(Buffer.from(secret, 'hex')))
    const community = (await relay.sql('SELECT community_id FROM events WHERE kind = 13534')).trim()
    const row = (ev, d) => `(${community}, decode('${ev.id}', 'hex'), decode('${ev.pubkey}', 'hex'),
      ${ev.created_at}, ${ev.kind}, '${d}', '${JSON.stringify(ev).replaceAll("'", "''")}')`
    await relay.sql(`DELETE FROM events WHERE kind IN (13534, 33534);
      INSERT INTO events (community_id, id, pubkey, created_at, kind, d_tag, raw) VALUES
      ${row(old, '')}, ${row(role, 'owner')}`)

    // And a ban of the community's key, which an older pod let an admin store: it hides the
    // community's lists and room state from every read until the start lifts it.
    await relay.sql(`INSERT INTO banned_pubkeys (community_id, pubkey, reason)
      VALUES (${community}, decode('${relay.pubkey}', 'hex'), 'older pod')`)

    relay = await start()
    assert.match(relay.stderr() + '', /1 ban\(s\) of the relay's own keys lifted/)
    assert.match(relay.stderr() + '', /to the community's own key: 2 signed again/)
    assert.match(relay.stderr() + '', /rewritten in the NIP-43 role shape/)
    assert.equal(relay.relayKey, old.pubkey)
    const left = await authedClient(relay, owner)
    assert.deepEqual((await left.req('old', { authors: [relay.relayKey] })).events, [],
      'nothing signed with the relay key is left')
    const moved = (await left.req('moved', { kinds: [33534], authors: [relay.pubkey] })).events
    assert.deepEqual(moved.map((e) => [e.created_at, e.tags]), [[role.created_at, role.tags]])
    await left.close()
    const upgraded = await liveList(relay, owner)
    assert.notEqual(upgraded.list.id, old.id)
    assert.ok(upgraded.list.created_at > old.created_at)
    assert.deepEqual(upgraded.list.tags, [['-'], ['member', owner.pk, 'owner'], ['member', member.pk]])
    assert.deepEqual(upgraded.roles, ['owner'])
    await stopRelayCleanly(relay)

    relay = await start()
    const again = await liveList(relay, owner)
    assert.equal(again.list.id, upgraded.list.id, 'a list in the current shape is left alone')
    assert.deepEqual(again.roles, ['owner'])
    await stopRelayCleanly(relay)
  })
})
