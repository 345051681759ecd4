// Replaceable (0, 10002) and addressable (30023) events, and NIP-09 deletion by `e` and `a`.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { withRelay, itStopsCleanly, RawClient, keys, sign, now, idsOf } from './harness.mjs'

const OK = { ok: true, message: '' }
const NOT_KEPT = { ok: true, message: 'info: deleted your events it names here; not kept, as it names events that are not yours here' }

describe('replaceable, addressable and deleted events', () => {
  const ctx = withRelay()
  let relay
  let pub
  before(async () => {
    relay = ctx.relay
    pub = await RawClient.open(relay)
  })

  async function stored(filter) {
    const reader = await RawClient.open(relay)
    const { events, end } = await reader.req('q', filter)
    await reader.close()
    assert.deepEqual(end, ['EOSE', 'q'])
    return events
  }

  for (const kind of [0, 10002]) {
    it(`kind ${kind}: the newest version wins`, async () => {
      const { sk, pk } = keys()
      const tags = kind === 10002 ? [['r', 'wss://relay.example.com']] : []
      const v1 = sign(sk, { kind, tags, created_at: now() - 20, content: kind === 0 ? '{"name":"v1"}' : '' })
      const v2 = sign(sk, { kind, tags, created_at: now() - 10, content: kind === 0 ? '{"name":"v2"}' : '' })
      assert.deepEqual(await pub.publish(v1), OK)
      assert.deepEqual(await pub.publish(v2), OK)
      assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [kind] })), [v2.id])
    })
  }

  it('an older version gets OK true "duplicate: have a newer version" and is not delivered live', async () => {
    const { sk, pk } = keys()
    const newer = sign(sk, { kind: 0, created_at: now() - 10, content: '{"name":"newer"}' })
    const older = sign(sk, { kind: 0, created_at: now() - 20, content: '{"name":"older"}' })
    assert.deepEqual(await pub.publish(newer), OK)
    const reader = await RawClient.open(relay)
    assert.deepEqual(idsOf((await reader.req('meta', { authors: [pk], kinds: [0] })).events), [newer.id])
    assert.deepEqual(await pub.publish(older), { ok: true, message: 'duplicate: have a newer version' })
    const newest = sign(sk, { kind: 0, created_at: now(), content: '{"name":"newest"}' })
    assert.deepEqual(await pub.publish(newest), OK)
    assert.equal((await reader.live('meta')).id, newest.id, 'the older version was delivered live')
    await reader.close()
    assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [0] })), [newest.id])
  })

  describe('same created_at: the lowest id survives, whatever the arrival order', () => {
    function pair() {
      const k = keys()
      const at = now() - 30
      const [low, high] = [sign(k.sk, { kind: 0, created_at: at, content: '{"name":"x"}' }),
        sign(k.sk, { kind: 0, created_at: at, content: '{"name":"y"}' })].sort((a, b) => (a.id < b.id ? -1 : 1))
      return { ...k, low, high }
    }

    it('higher id first, then lower id: the lower replaces it', async () => {
      const { pk, low, high } = pair()
      assert.deepEqual(await pub.publish(high), OK)
      assert.deepEqual(await pub.publish(low), OK)
      assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [0] })), [low.id])
    })

    it('lower id first, then higher id: the higher is refused as a duplicate', async () => {
      const { pk, low, high } = pair()
      assert.deepEqual(await pub.publish(low), OK)
      assert.deepEqual(await pub.publish(high), { ok: true, message: 'duplicate: have a newer version' })
      assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [0] })), [low.id])
    })

    it('both in one burst (one write batch), either order', async () => {
      for (const order of ['high-first', 'low-first']) {
        const { pk, low, high } = pair()
        const sent = order === 'high-first' ? [high, low] : [low, high]
        for (const ev of sent) pub.send(['EVENT', ev])
        for (const ev of sent) assert.equal((await pub.ok(ev.id)).ok, true)
        assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [0] })), [low.id], order)
      }
    })
  })

  it('kind 30023 is keyed by its d tag', async () => {
    const { sk, pk } = keys()
    const a1 = sign(sk, { kind: 30023, tags: [['d', 'a']], created_at: now() - 30, content: 'a v1' })
    const a2 = sign(sk, { kind: 30023, tags: [['d', 'a']], created_at: now() - 20, content: 'a v2' })
    const b1 = sign(sk, { kind: 30023, tags: [['d', 'b']], created_at: now() - 25, content: 'b v1' })
    const a0 = sign(sk, { kind: 30023, tags: [['d', 'a']], created_at: now() - 40, content: 'a v0' })
    for (const ev of [a1, a2, b1]) assert.deepEqual(await pub.publish(ev), OK)
    assert.deepEqual(await pub.publish(a0), { ok: true, message: 'duplicate: have a newer version' })
    assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [30023] })), [a2.id, b1.id])
    assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [30023], '#d': ['b'] })), [b1.id])
    const other = keys()
    const theirs = sign(other.sk, { kind: 30023, tags: [['d', 'a']], created_at: now() - 50, content: 'theirs' })
    assert.deepEqual(await pub.publish(theirs), OK, 'another author has its own address')
  })

  describe('NIP-09 deletion', () => {
    it('by e tag removes the author\'s event; republishing it is blocked', async () => {
      const { sk, pk } = keys()
      const gone = sign(sk, { created_at: now() - 20, content: 'to delete' })
      const kept = sign(sk, { created_at: now() - 10, content: 'to keep' })
      for (const ev of [gone, kept]) assert.deepEqual(await pub.publish(ev), OK)
      const deletion = sign(sk, { kind: 5, tags: [['e', gone.id]], content: 'oops' })
      assert.deepEqual(await pub.publish(deletion), OK)
      assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [1] })), [kept.id])
      assert.deepEqual(idsOf(await stored({ ids: [gone.id] })), [])
      assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [5] })), [deletion.id])
      const again = await pub.publish(gone)
      assert.equal(again.ok, false)
      assert.equal(again.message, 'blocked: this event was deleted by its author')
      assert.ok(again.message.startsWith('blocked:'))
    })

    it('by another author removes nothing and is not kept, and naming another key is refused', async () => {
      const { sk, pk } = keys()
      const mallory = keys()
      const note = sign(sk, { content: 'mine' })
      assert.deepEqual(await pub.publish(note), OK)
      // Stored, it would be served, and welshman 0.8.1 (pinned by Flotilla 1.6.3) hides whatever a
      // kind 5 names, whoever signed it.
      // Naming her stored event is answered as naming an unknown id, so that the answer does not
      // tell whether an id is stored here.
      const othersDeleted = { ok: false, message: "invalid: a deletion may name only its author's events" }
      const forged = sign(mallory.sk, { kind: 5, tags: [['e', note.id]], content: '' })
      assert.deepEqual(await pub.publish(forged), NOT_KEPT)
      const asAddress = sign(mallory.sk, { kind: 5, tags: [['a', note.id]], content: '' })
      assert.deepEqual(await pub.publish(asAddress), NOT_KEPT)
      const room = sign(mallory.sk, { kind: 5, tags: [['a', `30023:${pk}:post`]], content: '' })
      assert.deepEqual(await pub.publish(room), othersDeleted)
      assert.deepEqual(idsOf(await stored({ authors: [mallory.pk] })), [])
      assert.deepEqual(idsOf(await stored({ authors: [pk] })), [note.id])
      assert.deepEqual(await pub.publish(note), { ok: true, message: 'duplicate: already have this event' })
      // Apps match an `a` against events of any kind: `9:<key>:` names all her messages.
      assert.deepEqual(await pub.publish(sign(mallory.sk, { kind: 5, tags: [['a', `9:${pk}:`]] })), othersDeleted)
      // ... and welshman reads an `e` value the same way.
      assert.deepEqual(await pub.publish(sign(mallory.sk, { kind: 5, tags: [['e', `9:${pk}:`]] })), othersDeleted)
      assert.deepEqual(idsOf(await stored({ authors: [mallory.pk] })), [])
      // One naming what this community does not hold (another community's message, or an id
      // predictable before it exists) is carried out but never kept or served.
      const later = sign(sk, { content: 'deleted in advance by someone else' })
      assert.deepEqual(await pub.publish(sign(mallory.sk, { kind: 5, tags: [['e', later.id]] })), NOT_KEPT)
      assert.deepEqual(idsOf(await stored({ authors: [mallory.pk] })), [])
      assert.deepEqual(await pub.publish(later), OK)
    })

    it('arriving before its target still blocks the target, and is not served', async () => {
      const { sk, pk } = keys()
      const note = sign(sk, { created_at: now() - 5, content: 'deleted in advance' })
      assert.deepEqual(await pub.publish(sign(sk, { kind: 5, tags: [['e', note.id]] })), NOT_KEPT)
      assert.equal((await pub.publish(note)).message, 'blocked: this event was deleted by its author')
      assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [1, 5] })), [])
    })

    it('by a address removes versions up to the deletion\'s created_at', async () => {
      const { sk, pk } = keys()
      const t = now() - 100
      const post = sign(sk, { kind: 30023, tags: [['d', 'post']], created_at: t, content: 'post' })
      const other = sign(sk, { kind: 30023, tags: [['d', 'other']], created_at: t, content: 'other' })
      for (const ev of [post, other]) assert.deepEqual(await pub.publish(ev), OK)
      const deletion = sign(sk, { kind: 5, created_at: t + 10, tags: [['a', `30023:${pk}:post`]] })
      assert.deepEqual(await pub.publish(deletion), OK)
      assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [30023] })), [other.id])
      const stale = sign(sk, { kind: 30023, tags: [['d', 'post']], created_at: t + 5, content: 'stale' })
      const stale2 = await pub.publish(stale)
      assert.deepEqual(stale2, { ok: false, message: 'blocked: this address was deleted' })
      const fresh = sign(sk, { kind: 30023, tags: [['d', 'post']], created_at: t + 20, content: 'fresh' })
      assert.deepEqual(await pub.publish(fresh), OK)
      assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [30023], '#d': ['post'] })), [fresh.id])
    })

    it('takes an account deletion as Flotilla sends it: 500 events and their addresses in one request', async () => {
      const { sk, pk } = keys()
      const t = now() - 100
      const notes = []
      for (let i = 0; i < 5; i++) notes.push(sign(sk, { created_at: t + i, content: `note ${i}` }))
      const profile = sign(sk, { kind: 30023, tags: [['d', 'profile-ish']], created_at: t, content: 'p' })
      for (const ev of [...notes, profile]) assert.deepEqual(await pub.publish(ev), OK)
      // ProfileDelete: an e tag per event, and an a tag per replaceable one, in chunks of 500.
      const tags = [...notes, profile].map((ev) => ['e', ev.id])
      tags.push(['a', `30023:${pk}:profile-ish`])
      while (tags.length < 1000) tags.push(['e', sign(sk, { content: `never sent ${tags.length}` }).id])
      // It names events other relays hold: carried out here, not kept.
      assert.deepEqual(await pub.publish(sign(sk, { kind: 5, tags })), NOT_KEPT)
      assert.deepEqual(idsOf(await stored({ authors: [pk], kinds: [1, 5, 30023] })), [])
      tags.push(['e', notes[0].id])
      const over = await pub.publish(sign(sk, { kind: 5, tags }))
      assert.equal(over.ok, false)
      assert.match(over.message, /^invalid: a deletion may name at most 1000/)
    })

    it('by another author\'s a tag is refused and removes nothing', async () => {
      const { sk, pk } = keys()
      const mallory = keys()
      const post = sign(sk, { kind: 30023, tags: [['d', 'p']], created_at: now() - 10, content: 'p' })
      assert.deepEqual(await pub.publish(post), OK)
      assert.deepEqual(await pub.publish(sign(mallory.sk, { kind: 5, tags: [['a', `30023:${pk}:p`]] })),
        { ok: false, message: "invalid: a deletion may name only its author's events" })
      assert.deepEqual(idsOf(await stored({ authors: [pk] })), [post.id])
    })
  })

  itStopsCleanly(ctx)
})
