// NIP-43 member life cycle driven by nostr-tools against a closed community: an owner mints an
// invite (REQ 28935), a newcomer joins with it (28934), the owner sees the 13534 and 8000 live,
// the newcomer leaves (28936), the 8001 arrives, and the newcomer's reads end.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  RawClient, finalizeEvent, itStopsCleanly, keys, sign, toolsRelay, within, withRelay,
} from './harness.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A nostr-tools connection authenticated as `who` (waits for the relay's challenge). */
async function authenticated(relay, who) {
  const conn = await toolsRelay(relay)
  for (let i = 0; i < 50 && !conn.challenge; i++) await pause(20)
  await within(conn.auth((template) => finalizeEvent(template, who.sk)), 5000, 'AUTH')
  return conn
}

/** Collects events of `filters` on `conn`, live included. */
function watch(conn, filters) {
  const seen = { events: [], eose: false, closed: null }
  seen.sub = conn.subscribe(filters, {
    onevent: (e) => seen.events.push(e),
    oneose: () => { seen.eose = true },
    onclose: (reason) => { seen.closed = reason },
  })
  return seen
}

async function until(predicate, what, ms = 5000) {
  const deadline = Date.now() + ms
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`)
    await pause(20)
  }
}

// NIP-43: [pubkey, ...role ids]; plain members carry no role id.
const membersOf = (list) => list.tags.filter((t) => t[0] === 'member').map((t) => t.slice(1))
const pTag = (e) => e.tags.find((t) => t[0] === 'p')?.[1]

describe('NIP-43 in a closed community', () => {
  const owner = keys()
  const newcomer = keys()
  // Single-use codes, so that a used one can be refused (the default admits any number).
  const ctx = withRelay({ COMB_ACCESS: 'closed', COMB_OWNER_PUBKEY: owner.pk, COMB_INVITE_USES: '1' })

  it('runs the whole member life cycle with a third-party client', async () => {
    const { relay } = ctx
    const host = await authenticated(relay, owner)
    const roster = watch(host, [{ kinds: [13534, 8000, 8001] }])
    await until(() => roster.eose, 'EOSE of the roster subscription')
    const bootList = roster.events.find((e) => e.kind === 13534)
    assert.equal(bootList.pubkey, relay.pubkey, 'the list is signed by the relay key (NIP-11 self)')
    assert.deepEqual(membersOf(bootList), [[owner.pk, 'owner']])

    const invite = watch(host, [{ kinds: [28935] }])
    await until(() => invite.eose, 'the invite and EOSE')
    assert.equal(invite.events.length, 1)
    assert.equal(invite.events[0].pubkey, relay.pubkey)
    const code = invite.events[0].tags.find((t) => t[0] === 'claim')[1]
    assert.match(code, /^[0-9a-f]{32}$/)

    const guest = await authenticated(relay, newcomer)
    const refused = watch(guest, [{ kinds: [1] }])
    await until(() => refused.closed, 'CLOSED for a non-member')
    assert.equal(refused.closed, 'restricted: you are not a member of this community')
    await assert.rejects(guest.publish(sign(newcomer.sk, { content: 'let me in' })),
      /restricted: you are not a member of this community/)

    const welcome = await guest.publish(sign(newcomer.sk, { kind: 28934, tags: [['-'], ['claim', code]] }))
    assert.equal(welcome, `info: welcome to ws://127.0.0.1:${relay.port}!`)
    await until(() => roster.events.some((e) => e.kind === 8000 && pTag(e) === newcomer.pk), '8000 live')
    await until(() => roster.events.filter((e) => e.kind === 13534).length === 2, 'new 13534 live')
    const joinedList = roster.events.filter((e) => e.kind === 13534)[1]
    assert.deepEqual(membersOf(joinedList), [[owner.pk, 'owner'], [newcomer.pk]])
    assert.ok(joinedList.created_at > bootList.created_at)

    const again = await guest.publish(sign(newcomer.sk, { kind: 28934, tags: [['-'], ['claim', code]] }))
    assert.equal(again, 'duplicate: you are already a member of this relay.')
    const feed = watch(guest, [{ kinds: [1] }])
    await until(() => feed.eose, 'members may read')
    assert.equal(await guest.publish(sign(newcomer.sk, { content: 'hello hive' })), '')

    const bye = await guest.publish(sign(newcomer.sk, { kind: 28936, tags: [['-']] }))
    assert.equal(bye, 'info: you have left this community')
    await until(() => roster.events.some((e) => e.kind === 8001 && pTag(e) === newcomer.pk), '8001 live')
    await until(() => feed.closed, 'the open subscription of a member who left is closed')
    assert.equal(feed.closed, 'restricted: you are no longer a member of this community')
    const after = watch(guest, [{ kinds: [1] }])
    await until(() => after.closed, 'reads refused after leaving')
    assert.equal(after.closed, 'restricted: you are not a member of this community')
    const finalList = roster.events.filter((e) => e.kind === 13534).at(-1)
    assert.deepEqual(membersOf(finalList), [[owner.pk, 'owner']])
    host.close()
    guest.close()
  })

  it('refuses a used single-use code, a bad code, and a join without AUTH', async () => {
    const { relay } = ctx
    const host = await authenticated(relay, owner)
    const invite = watch(host, [{ kinds: [28935] }])
    await until(() => invite.eose, 'invite')
    const code = invite.events[0].tags.find((t) => t[0] === 'claim')[1]
    const first = keys()
    const second = keys()
    const a = await authenticated(relay, first)
    assert.match(await a.publish(sign(first.sk, { kind: 28934, tags: [['-'], ['claim', code]] })), /^info: welcome/)
    const b = await authenticated(relay, second)
    await assert.rejects(b.publish(sign(second.sk, { kind: 28934, tags: [['-'], ['claim', code]] })),
      /restricted: this invite code has no uses left/)
    await assert.rejects(b.publish(sign(second.sk, { kind: 28934, tags: [['-'], ['claim', 'nope']] })),
      /restricted: invalid invite code/)
    const raw = await RawClient.open(relay)
    const join = sign(keys().sk, { kind: 28934, tags: [['-'], ['claim', code]] })
    // A join waits for an AUTH up to 20 s (welshman never sends one again), then is refused.
    raw.send(['EVENT', join])
    assert.match((await raw.ok(join.id, 25000)).message, /^auth-required:/)
    await raw.close()
    for (const c of [host, a, b]) c.close()
  })

  it('checks roles: admins are made by the owner, members cannot invite', async () => {
    const { relay } = ctx
    const here = ['relay', relay.url] // 9030-9032 name the community they are meant for
    const host = await authenticated(relay, owner)
    const helper = keys()
    const plain = keys()
    assert.equal(await host.publish(sign(owner.sk, { kind: 9030, tags: [['p', helper.pk], ['role', 'admin'], here] })),
      'info: member added')
    const admin = await authenticated(relay, helper)
    assert.equal(await admin.publish(sign(helper.sk, { kind: 9030, tags: [['p', plain.pk], here] })), 'info: member added')
    await assert.rejects(admin.publish(sign(helper.sk, { kind: 9030, tags: [['p', keys().pk], ['role', 'admin'], here] })),
      /restricted: your role does not allow this/)
    await assert.rejects(admin.publish(sign(helper.sk, { kind: 9031, tags: [['p', owner.pk], here] })),
      /restricted: the owner/)
    const invite = watch(admin, [{ kinds: [28935] }])
    await until(() => invite.eose, 'an admin gets an invite')
    assert.equal(invite.events.length, 1)
    const member = await authenticated(relay, plain)
    const denied = watch(member, [{ kinds: [28935] }])
    await until(() => denied.closed, 'a plain member is refused an invite')
    assert.equal(denied.closed, 'restricted: you may not create invites in this community')
    assert.equal(await host.publish(sign(owner.sk, { kind: 9031, tags: [['p', plain.pk], here] })), 'info: member removed')
    await assert.rejects(host.publish(sign(owner.sk, { kind: 28936, tags: [['-']] })), /restricted: the owner cannot leave/)
    for (const c of [host, admin, member]) c.close()
  })

  it('sends no invite on a subscription closed while it was minted', async () => {
    const { relay } = ctx
    const client = await RawClient.open(relay)
    const challenge = await client.challenge()
    const authed = await client.auth(sign(owner.sk, { kind: 22242, tags: [['relay', relay.url], ['challenge', challenge]] }))
    assert.equal(authed.ok, true, authed.message)
    // The CLOSE reaches the connection before the database has minted the code.
    client.send(['REQ', 'gone', { kinds: [28935] }])
    client.send(['CLOSE', 'gone'])
    const kept = await client.req('kept', { kinds: [28935] })
    assert.equal(kept.events.length, 1, 'a later invite REQ is still answered')
    await pause(300)
    assert.deepEqual(client.drain((f) => f[1] === 'gone'), [])
    await client.close()
  })

  itStopsCleanly(ctx)
})

describe('NIP-43 in an open community', () => {
  const ctx = withRelay({})

  it('admits any join request and keeps the list', async () => {
    const { relay } = ctx
    const who = keys()
    const conn = await authenticated(relay, who)
    const list = watch(conn, [{ kinds: [13534], authors: [relay.pubkey] }])
    await until(() => list.eose, 'EOSE')
    assert.match(await conn.publish(sign(who.sk, { kind: 28934, tags: [['-']] })), /^info: welcome/)
    await until(() => list.events.length === 1, 'the 13534 arrives live')
    assert.deepEqual(membersOf(list.events[0]), [[who.pk]])
    conn.close()
  })

  itStopsCleanly(ctx)
})
