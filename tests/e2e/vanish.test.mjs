// NIP-62 requests to vanish, sent as Flotilla's "delete your account" sends them (ProfileDelete:
// a blanked profile, then kind 62 with ["relay", "ALL_RELAYS"], then kind 5 deletions of what
// the app knows), in an open community and by someone no longer a member of a closed one.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { PublishStatus } from '@welshman/net'
import { RELAY_INVITE, RELAY_JOIN, RELAY_LEAVE, getPubkey, getTagValue, makeEvent, makeSecret } from '@welshman/util'
import { appUser } from './app_user.mjs'
import { RawClient, httpGet, itStopsCleanly, withRelay } from './harness.mjs'

const accepted = (result) =>
  assert.equal(result.status, PublishStatus.Success, `expected success, got ${result.status}: ${result.detail}`)

const refused = (result, pattern) => {
  assert.equal(result.status, PublishStatus.Failure, `expected failure, got ${result.status}: ${result.detail}`)
  assert.match(result.detail, pattern)
}

const vanishRequest = () => makeEvent(62, { tags: [['relay', 'ALL_RELAYS']] })

const idsBy = async (reader, relay, pubkey) =>
  (await reader.read(relay, [{ authors: [pubkey] }])).events.map((e) => e.id)

describe('a request to vanish in an open community', () => {
  const ctx = withRelay()
  const alice = appUser()
  const bob = appUser()

  it("deletes everything of its author up to it, refuses it ever after, and keeps everyone else's", async () => {
    const { relay } = ctx
    const profile = await alice.publish(relay, makeEvent(0, { content: JSON.stringify({ name: 'alice' }) }))
    const note = await alice.publish(relay, makeEvent(1, { content: 'hello' }))
    const reply = await bob.publish(relay, makeEvent(1, { content: 'hi alice', tags: [['e', note.event.id], ['p', alice.pk]] }))
    for (const result of [profile, note, reply]) accepted(result)
    assert.equal((await idsBy(bob, relay, alice.pk)).length, 2)
    // Another community of the same deployment, which the app does not know.
    await relay.sql("INSERT INTO communities (host) VALUES ('other.test')")
    const away = await RawClient.open(relay, { headers: { Host: 'other.test' } })
    const elsewhere = await alice.signer.sign(makeEvent(1, { content: 'hello from elsewhere' }))
    assert.equal((await away.publish(elsewhere)).ok, true)
    assert.deepEqual((await away.req('before', { authors: [alice.pk] })).events.map((e) => e.id), [elsewhere.id])

    // Flotilla's steps: the blanked profile, then the request, then deletions of what it knows.
    accepted(await alice.publish(relay, makeEvent(0, { content: JSON.stringify({ name: '[deleted]' }) })))
    const request = await alice.publish(relay, vanishRequest())
    accepted(request)
    assert.equal(request.detail, '')
    const deletion = makeEvent(5, { tags: [['e', note.event.id], ['a', `0:${alice.pk}:`]] })
    refused(await alice.publish(relay, { ...deletion, created_at: request.event.created_at }), /^blocked: /)

    assert.deepEqual(await idsBy(bob, relay, alice.pk), [])
    assert.deepEqual((await bob.read(relay, [{ kinds: [62] }])).events, [])
    // ALL_RELAYS: every community of the deployment, not only the one it was sent to.
    assert.deepEqual((await away.req('after', { authors: [alice.pk] })).events, [])
    const replayed = await away.publish(elsewhere)
    assert.equal(replayed.ok, false)
    assert.match(replayed.message, /^blocked: /)
    await away.close()
    assert.deepEqual(await idsBy(alice, relay, bob.pk), [reply.event.id])
    // What was deleted does not come back, whoever sends it again; what is newer is taken.
    refused(await bob.publishSigned(relay, note.event), /^blocked: the author of this event asked this relay to delete their events/)
    const later = await alice.publish(relay, makeEvent(1, { content: 'back', created_at: request.event.created_at + 1 }))
    accepted(later)
    assert.deepEqual(await idsBy(bob, relay, alice.pk), [later.event.id])
    // A request naming another relay is refused.
    refused(await alice.publish(relay, makeEvent(62, { tags: [['relay', 'wss://elsewhere.example']] })),
      /^invalid: this request to vanish names other relays/)
    const { body } = await httpGet(relay.metricsPort, '/metrics')
    assert.match(body, /^comb_vanish_requests_total 1$/m)
    assert.match(body, /^comb_vanish_other_communities_total 1$/m)
    for (const user of [alice, bob]) user.close()
  })

  itStopsCleanly(ctx)
})

describe('a request to vanish from someone who left a closed community', () => {
  const ownerSecret = makeSecret()
  const ctx = withRelay({ COMB_ACCESS: 'closed', COMB_OWNER_PUBKEY: getPubkey(ownerSecret) })
  const owner = appUser(ownerSecret)
  const leaver = appUser()

  it('is carried out although its author may no longer post there', async () => {
    const { relay } = ctx
    const invite = await owner.read(relay, [{ kinds: [RELAY_INVITE], limit: 1 }])
    const claim = getTagValue('claim', invite.events[0].tags)
    await leaver.authenticated(relay)
    accepted(await leaver.publish(relay, makeEvent(RELAY_JOIN, { tags: [['claim', claim]] })))
    accepted(await leaver.publish(relay, makeEvent(1, { content: 'my words' })))
    assert.equal((await idsBy(owner, relay, leaver.pk)).length, 1)
    accepted(await leaver.publish(relay, makeEvent(RELAY_LEAVE)))
    refused(await leaver.publish(relay, makeEvent(1, { content: 'still here?' })), /^restricted: /)

    accepted(await leaver.publish(relay, vanishRequest()))
    assert.deepEqual(await idsBy(owner, relay, leaver.pk), [])
    for (const user of [owner, leaver]) user.close()
  })

  itStopsCleanly(ctx)
})
