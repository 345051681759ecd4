// NIP-17 direct messages in gift wraps (kind 1059), wrapped as welshman's Nip59 wraps them for
// Flotilla: served only to the user the wrap is addressed to (`#p`, known by AUTH), in history,
// COUNT and live; anyone else asking for kind 1059 is refused, and their broader filters never
// match one.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { PublishStatus } from '@welshman/net'
import { Nip59 } from '@welshman/signer'
import { DIRECT_MESSAGE, WRAP, getPubkey, makeEvent, makeSecret } from '@welshman/util'
import { appUser } from './app_user.mjs'
import { RawClient, itStopsCleanly, withRelay } from './harness.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

describe('gift wraps', () => {
  const ctx = withRelay()
  const alice = appUser()
  const bob = appUser()
  const carol = appUser()

  const wrapFor = async (recipient, content) =>
    Nip59.fromSigner(alice.signer).wrap(recipient.pk, makeEvent(DIRECT_MESSAGE, { content, tags: [['p', recipient.pk]] }))

  it('reach their recipient only, whoever else asks and however', async () => {
    const { relay } = ctx
    const wrap = await wrapFor(bob, 'hello bob')
    const sent = await alice.publishSigned(relay, wrap)
    assert.equal(sent.status, PublishStatus.Success, sent.detail)

    // The recipient, as welshman asks: refused until it authenticates, then served.
    const mine = await bob.read(relay, [{ kinds: [WRAP], '#p': [bob.pk] }])
    assert.deepEqual(mine.events.map((e) => e.id), [wrap.id])
    assert.equal((await Nip59.fromSigner(bob.signer).unwrap(mine.events[0])).content, 'hello bob')

    // Someone else, authenticated: refused when asking for wraps, never served one otherwise.
    await carol.authenticated(relay)
    const asked = await carol.read(relay, [{ kinds: [WRAP], '#p': [bob.pk] }])
    assert.deepEqual(asked.events, [])
    assert.match(asked.closed ?? '', /^restricted: /)
    for (const filter of [{ '#p': [bob.pk] }, { ids: [wrap.id] }, { authors: [wrap.pubkey] }, {}])
      assert.deepEqual((await carol.read(relay, [filter])).events.filter((e) => e.kind === WRAP), [],
        `served by ${JSON.stringify(filter)}`)

    // Anonymous: told to authenticate; a COUNT counts none.
    const raw = await RawClient.open(relay)
    const anonymous = await raw.req('w', { kinds: [WRAP] })
    assert.equal(anonymous.end[0], 'CLOSED')
    assert.match(anonymous.end[2], /^auth-required: /)
    raw.send(['COUNT', 'c', { '#p': [bob.pk] }])
    const counted = await raw.take((f) => f[0] === 'COUNT' && f[1] === 'c', 'COUNT')
    assert.equal(counted[2].count, 0)
    await raw.close()

    // Live: the recipient's subscription gets the next wrap, a broad one of someone else none.
    const bobLive = bob.listen(relay, [{ kinds: [WRAP], '#p': [bob.pk] }])
    const carolLive = carol.listen(relay, [{ '#p': [bob.pk] }, { kinds: [1, WRAP - 1] }])
    await pause(300)
    const next = await wrapFor(bob, 'again')
    assert.equal((await alice.publishSigned(relay, next)).status, PublishStatus.Success)
    for (let i = 0; i < 100 && !bobLive.events.some((e) => e.id === next.id); i++) await pause(50)
    assert.ok(bobLive.events.some((e) => e.id === next.id), 'the recipient got the wrap live')
    await pause(300)
    assert.deepEqual(carolLive.events.filter((e) => e.kind === WRAP), [])
    bobLive.stop()
    carolLive.stop()
    for (const user of [alice, bob, carol]) user.close()
  })

  itStopsCleanly(ctx)
})

describe('gift wraps in a closed community', () => {
  const ownerSecret = makeSecret()
  const ctx = withRelay({ COMB_ACCESS: 'closed', COMB_OWNER_PUBKEY: getPubkey(ownerSecret) })
  const owner = appUser(ownerSecret)
  const alice = appUser()
  const bob = appUser()
  const stranger = appUser()

  const wrap = (from, recipient, content) =>
    Nip59.fromSigner(from.signer).wrap(recipient.pk, makeEvent(DIRECT_MESSAGE, { content, tags: [['p', recipient.pk]] }))

  it('are stored from a member, whose wrap is signed with a throwaway key, and from nobody else', async () => {
    const { relay } = ctx
    for (const member of [alice, bob])
      assert.deepEqual(await owner.manage(relay, 'allowpubkey', [member.pk]), { result: true })
    // The wrap's author is a key made for it alone, never a member: the authenticated member
    // who publishes it vouches for it.
    const fromAlice = await wrap(alice, bob, 'hello bob')
    const sent = await alice.publishSigned(relay, fromAlice)
    assert.equal(sent.status, PublishStatus.Success, sent.detail)
    const fromStranger = await wrap(stranger, bob, 'let me in')
    const refused = await stranger.publishSigned(relay, fromStranger)
    assert.equal(refused.status, PublishStatus.Failure)
    assert.match(refused.detail, /^restricted: /)
    const mine = await bob.read(relay, [{ kinds: [WRAP], '#p': [bob.pk] }])
    assert.deepEqual(mine.events.map((e) => e.id), [fromAlice.id])
    assert.equal((await Nip59.fromSigner(bob.signer).unwrap(mine.events[0])).content, 'hello bob')
    for (const user of [owner, alice, bob, stranger]) user.close()
  })

  itStopsCleanly(ctx)
})
