// NIP-29 rooms inside a comb community, driven exactly as Flotilla drives them through welshman:
// makeRoomCreateEvent / makeRoomEditEvent / makeRoomJoinEvent / makeRoomLeaveEvent /
// makeRoomDeleteEvent, kind-9 chat with an `h` tag, 9000 with a role, 9005, 9009 codes.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { PublishStatus } from '@welshman/net'
import { Nip01Signer } from '@welshman/signer'
import {
  ROOM_ADMINS, ROOM_MEMBERS, ROOM_META, getPubkey, getTagValue, makeEvent, makeHttpAuth, sendManagementRequest, makeRoomCreateEvent, makeRoomDeleteEvent,
  makeRoomEditEvent, makeRoomJoinEvent, makeRoomLeaveEvent, makeRoomMeta, makeSecret, readRoomMeta,
} from '@welshman/util'
import { appUser } from './app_user.mjs'
import { RawClient, httpGet, itStopsCleanly, now, withRelay } from './harness.mjs'

const accepted = (result, pattern) => {
  assert.equal(result.status, PublishStatus.Success, `expected success, got ${result.status}: ${result.detail}`)
  if (pattern) assert.match(result.detail, pattern)
}

const refused = (result, pattern) => {
  assert.equal(result.status, PublishStatus.Failure, `expected failure, got ${result.status}: ${result.detail}`)
  assert.match(result.detail, pattern)
}

/** The one live relay-signed state event of `kind` for room `h`. */
async function roomState(user, relay, kind, h) {
  const { events, closed } = await user.read(relay, [{ kinds: [kind], authors: [relay.pubkey], '#d': [h] }])
  assert.equal(closed, null)
  assert.equal(events.length, 1, `one live ${kind} for ${h}`)
  return events[0]
}

const members = (event) => event.tags.filter((t) => t[0] === 'p').map((t) => t[1]).sort()

describe('rooms in a community, as Flotilla uses them', () => {
  const ownerSecret = makeSecret()
  const ctx = withRelay({ COMB_OWNER_PUBKEY: getPubkey(ownerSecret) })
  const owner = appUser(ownerSecret)
  const alice = appUser()
  const bob = appUser()
  const carol = appUser()
  const room = makeRoomMeta({ name: 'Pizza', about: 'for people who love pizza' })
  const secret = makeRoomMeta({ name: 'Kitchen', isClosed: true, isPrivate: true, isRestricted: true })

  it('lists NIP-29 and lets the owner create and name rooms', async () => {
    const { relay } = ctx
    const { body } = await httpGet(relay.port, '/', { Accept: 'application/nostr+json' })
    assert.ok(JSON.parse(body).supported_nips.includes(29))
    for (const user of [owner, alice, bob, carol]) await user.authenticated(relay)
    // Only the community's owner and admins create rooms.
    refused(await alice.publish(relay, makeRoomCreateEvent(makeRoomMeta())), /^restricted: /)
    for (const r of [room, secret]) {
      accepted(await owner.publish(relay, makeRoomCreateEvent(r)))
      accepted(await owner.publish(relay, makeRoomEditEvent(r)))
    }
    const meta = readRoomMeta(await roomState(alice, relay, ROOM_META, room.h))
    assert.equal(meta.name, 'Pizza')
    assert.equal(meta.about, 'for people who love pizza')
    assert.equal(meta.isClosed, false)
    const admins = await roomState(owner, relay, ROOM_ADMINS, room.h)
    assert.deepEqual(admins.tags.find((t) => t[0] === 'p'), ['p', owner.pk, 'admin'])
    // Nobody but the relay publishes room state.
    refused(await owner.publish(relay, makeEvent(ROOM_META, { tags: [['d', room.h], ['name', 'forged']] })),
      /^restricted: only the relay may publish kind 39000/)
  })

  it('lets a member join an open room, chat and read back; a second join is a duplicate', async () => {
    const { relay } = ctx
    const join = await alice.publish(relay, makeRoomJoinEvent(room))
    accepted(join, /^info: /)
    assert.deepEqual(members(await roomState(bob, relay, ROOM_MEMBERS, room.h)), [owner.pk, alice.pk].sort())
    // NIP-29: the relay answers a join with its own 9000; Flotilla shows "joined the room" from it.
    const added = await bob.read(relay, [{ kinds: [9000], '#h': [room.h], '#p': [alice.pk] }])
    assert.deepEqual(added.events.map((e) => e.pubkey), [relay.pubkey])
    // Another join of a member is refused as a duplicate; the same join event again was processed.
    refused(await alice.publish(relay, { ...makeRoomJoinEvent(room), created_at: join.event.created_at + 1 }), /^duplicate: /)
    accepted(await alice.publish(relay, { ...makeRoomJoinEvent(room), created_at: join.event.created_at }),
      /^duplicate: this request was already processed/)
    const chat = await alice.publish(relay, makeEvent(9, { content: 'margherita?', tags: [['h', room.h]] }))
    accepted(chat)
    const read = await bob.read(relay, [{ kinds: [9], '#h': [room.h] }])
    assert.deepEqual(read.events.map((e) => e.id), [chat.event.id])
    // A room that does not exist, and late publication, are refused.
    refused(await alice.publish(relay, makeEvent(9, { content: 'hello?', tags: [['h', 'nowhere1']] })),
      /^invalid: there is no room/)
    refused(await alice.publish(relay, makeEvent(9, { content: 'old', tags: [['h', room.h]], created_at: now() - 3600 })),
      /^invalid: room events must be published within/)
  })

  it('keeps a closed, private, restricted room to members; joins need a 9009 code', async () => {
    const { relay } = ctx
    refused(await bob.publish(relay, makeRoomJoinEvent(secret)), /^restricted: this room is closed/)
    const code = 'kitchen-door-code'
    accepted(await owner.publish(relay, makeEvent(9009, { tags: [['h', secret.h], ['code', code]] })))
    const join = makeRoomJoinEvent(secret)
    join.tags.push(['code', 'wrong'])
    refused(await bob.publish(relay, join), /^restricted: /)
    const withCode = makeRoomJoinEvent(secret)
    withCode.tags.push(['code', code])
    accepted(await bob.publish(relay, withCode))
    // Newer welshman (RoomJoin setClaim) sends the code as `claim`: it admits the same, and the
    // join carrying it is not stored either (its code would admit whoever read it).
    const dave = appUser()
    await dave.authenticated(relay)
    const claimed = makeRoomJoinEvent(secret)
    claimed.tags.push(['claim', code])
    const daveJoin = await dave.publish(relay, claimed)
    accepted(daveJoin)
    assert.ok(members(await roomState(owner, relay, ROOM_MEMBERS, secret.h)).includes(dave.pk))
    assert.ok(!(await owner.read(relay, [{ kinds: [9021], '#h': [secret.h] }])).events.some((e) => e.id === daveJoin.event.id))
    dave.close()
    const note = await bob.publish(relay, makeEvent(9, { content: 'members only', tags: [['h', secret.h]] }))
    accepted(note)
    // Carol is not in the room: she may not post in it, nor read it. Its group metadata she
    // reads (NIP-29: only hidden rooms hide it), its member list included.
    refused(await carol.publish(relay, makeEvent(9, { content: 'let me in', tags: [['h', secret.h]] })), /^restricted: /)
    const denied = await carol.read(relay, [{ kinds: [9], '#h': [secret.h] }])
    assert.equal(denied.closed, null, 'an authenticated reader is not CLOSED: each event is withheld')
    assert.equal(denied.events.length, 0)
    const broad = await carol.read(relay, [{ kinds: [9, ROOM_MEMBERS] }])
    assert.ok(!broad.events.some((e) => e.id === note.event.id), 'a private room event leaked')
    const list = broad.events.find((e) => e.kind === ROOM_MEMBERS && getTagValue('d', e.tags) === secret.h)
    assert.ok(list && members(list).includes(bob.pk) && !members(list).includes(carol.pk))
    assert.equal((await carol.read(relay, [{ kinds: [ROOM_META], '#d': [secret.h] }])).events.length, 1)
    assert.deepEqual((await bob.read(relay, [{ kinds: [9], '#h': [secret.h] }])).events.map((e) => e.id), [note.event.id])
    // The invite code shows to the room's admins only.
    assert.equal((await bob.read(relay, [{ kinds: [9009] }])).events.length, 0)
    assert.equal((await owner.read(relay, [{ kinds: [9009] }])).events.length, 1)
    // COUNT counts only what the same reader's REQ returns: no private room's chat or member
    // list, no invite code.
    const anonymous = await RawClient.open(relay)
    for (const filter of [{ kinds: [9, 9009] }, { kinds: [ROOM_MEMBERS, ROOM_META] }, {}]) {
      const { events } = await anonymous.req('r', filter)
      assert.ok(!events.some((e) => e.id === note.event.id || e.kind === 9009), 'REQ leaked')
      anonymous.send(['COUNT', 'c', filter])
      const counted = await anonymous.take((f) => f[1] === 'c', 'COUNT')
      assert.deepEqual(counted, ['COUNT', 'c', { count: events.length }], JSON.stringify(filter))
    }
    await anonymous.close()
  })

  it('answers whoever a hidden room is hidden from as if it did not exist', async () => {
    const { relay } = ctx
    const den = makeRoomMeta({ name: 'Den', isHidden: true, isClosed: true, isPrivate: true })
    accepted(await owner.publish(relay, makeRoomCreateEvent(den)))
    accepted(await owner.publish(relay, makeRoomEditEvent(den)))
    const nowhere = makeRoomMeta({ name: 'Nowhere' }) // never created
    // Carol is a member of the community, not of the room: she guesses ids. Every answer is the
    // one an id of no room gets, the id aside.
    const answer = async (make, meta) => {
      const result = await carol.publish(relay, make(meta))
      return `${result.status} ${result.detail.replaceAll(meta.h, '<id>')}`
    }
    const probes = [
      (m) => makeEvent(9, { content: 'anyone?', tags: [['h', m.h]] }),
      (m) => makeEvent(5, { tags: [['e', '0'.repeat(64)], ['h', m.h]] }),
      (m) => makeRoomCreateEvent(m),
      (m) => makeRoomEditEvent(m),
      (m) => makeRoomJoinEvent(m),
      (m) => makeRoomLeaveEvent(m),
      (m) => makeEvent(9000, { tags: [['h', m.h], ['p', carol.pk]] }),
    ]
    for (const make of probes) {
      const kind = make(den).kind
      assert.equal(await answer(make, den), await answer(make, nowhere), `kind ${kind}`)
    }
    // The owner sees it; once in, so does Carol, and the open-room join still admits by its id.
    refused(await owner.publish(relay, makeRoomCreateEvent(den)), /^duplicate: .*already/)
    const code = 'den-door-code'
    accepted(await owner.publish(relay, makeEvent(9009, { tags: [['h', den.h], ['code', code]] })))
    const withCode = makeRoomJoinEvent(den)
    withCode.tags.push(['code', code])
    accepted(await carol.publish(relay, withCode))
    accepted(await carol.publish(relay, makeEvent(9, { content: 'hello den', tags: [['h', den.h]] })))
    refused(await carol.publish(relay, makeRoomJoinEvent(den)), /^duplicate: /)
    accepted(await carol.publish(relay, makeRoomLeaveEvent(den)))
    accepted(await owner.publish(relay, makeRoomDeleteEvent(den))) // the tests below count rooms
  })

  it("keeps a private room's calendar event in the room when Flotilla's edit leaves its h out", async () => {
    const { relay } = ctx
    // CalendarEventForm: d, title, location, start, end, D; the h only when created in a room
    // (CalendarEventEdit passes none).
    const start = now() + 86400
    const calendar = (title, h) => makeEvent(31923, {
      content: 'bring plates',
      tags: [['d', 'picnic'], ['title', title], ['location', 'park'], ['start', String(start)],
        ['end', String(start + 3600)], ['D', String(Math.floor(start / 86400))], ...(h ? [['h', h]] : [])],
    })
    accepted(await bob.publish(relay, calendar('Picnic', secret.h)))
    const watching = carol.listen(relay, [{ kinds: [31923] }])
    await new Promise((resolve) => setTimeout(resolve, 300))
    const edit = await bob.publish(relay, { ...calendar('Picnic at noon'), created_at: now() + 1 })
    accepted(edit)
    await new Promise((resolve) => setTimeout(resolve, 300))
    watching.stop()
    assert.deepEqual(watching.events, [], 'the edit went live to someone outside the room')
    assert.equal((await carol.read(relay, [{ kinds: [31923] }])).events.length, 0)
    const anonymous = await RawClient.open(relay)
    assert.ok(!(await anonymous.req('r', { kinds: [31923] })).events.some((e) => e.id === edit.event.id))
    await anonymous.close()
    assert.deepEqual((await bob.read(relay, [{ kinds: [31923] }])).events.map((e) => e.id), [edit.event.id])
  })

  it("tells someone let into a private room so, on the subscription Flotilla keeps open for it", async () => {
    const { relay } = ctx
    // syncUserRoomMembership: kept open on every room of the user's list, member or not yet.
    const sync = carol.listen(relay, [
      { kinds: [9000], '#p': [carol.pk], '#h': [secret.h], limit: 1 },
      { kinds: [9001], '#p': [carol.pk], '#h': [secret.h], limit: 1 },
    ])
    await new Promise((resolve) => setTimeout(resolve, 300))
    const added = await owner.publish(relay, makeEvent(9000, { tags: [['h', secret.h], ['p', carol.pk]] }))
    accepted(added)
    for (let i = 0; i < 100 && sync.events.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
    sync.stop()
    assert.deepEqual(sync.closed, [])
    assert.deepEqual(sync.events.map((e) => e.id), [added.event.id])
    assert.equal((await carol.read(relay, [{ kinds: [9], '#h': [secret.h] }])).events.length, 1)
  })

  it('tells someone removed from a private room so, and shows them no one else\'s 9000 or 9001', async () => {
    const { relay } = ctx
    const sync = carol.listen(relay, [{ kinds: [9001], '#p': [carol.pk], '#h': [secret.h], limit: 1 }])
    await new Promise((resolve) => setTimeout(resolve, 300))
    const removed = await owner.publish(relay, makeEvent(9001, { tags: [['h', secret.h], ['p', carol.pk]] }))
    accepted(removed)
    for (let i = 0; i < 100 && sync.events.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
    sync.stop()
    assert.deepEqual(sync.events.map((e) => e.id), [removed.event.id], 'the removal arrives live')
    // No longer a member: the room's chat is withheld again, the 9000 and 9001 naming her are
    // not; a 9000 naming someone else is not hers to see.
    const dave = getPubkey(makeSecret())
    accepted(await owner.publish(relay, makeEvent(9000, { tags: [['h', secret.h], ['p', dave]] })))
    assert.equal((await carol.read(relay, [{ kinds: [9], '#h': [secret.h] }])).events.length, 0)
    const changes = [{ kinds: [9000, 9001], '#h': [secret.h] }]
    const mine = await carol.read(relay, changes)
    assert.deepEqual(mine.events.map((e) => e.kind).sort(), [9000, 9001])
    assert.ok(mine.events.every((e) => getTagValue('p', e.tags) === carol.pk))
    assert.ok((await bob.read(relay, changes)).events.some((e) => getTagValue('p', e.tags) === dave))
    // COUNT by the same reader counts what her REQ returns; an anonymous one is asked to AUTH.
    const client = await RawClient.open(relay)
    const challenge = await client.challenge()
    const auth = await carol.signer.sign(makeEvent(22242, { tags: [['relay', relay.url], ['challenge', challenge]] }))
    assert.equal((await client.auth(auth)).ok, true)
    client.send(['COUNT', 'c', ...changes])
    assert.deepEqual(await client.take((f) => f[1] === 'c', 'COUNT'), ['COUNT', 'c', { count: 2 }])
    await client.close()
    const anonymous = await RawClient.open(relay)
    anonymous.send(['COUNT', 'a', ...changes])
    const refusal = await anonymous.take((f) => f[1] === 'a', 'COUNT')
    assert.equal(refusal[0], 'CLOSED')
    assert.match(refusal[2], /^auth-required: /)
    await anonymous.close()
  })

  it("keeps comments on a private room's thread to the room, as Flotilla's makeComment sends them (no h), and to its posters", async () => {
    const { relay } = ctx
    // welshman's tagEventForComment on a root event: K, P, E, then k, p, e; no h.
    const commentOn = (root, content) => makeEvent(1111, {
      content,
      tags: [['K', String(root.kind)], ['P', root.pubkey, ''], ['E', root.id, relay.url, root.pubkey],
        ['k', String(root.kind)], ['p', root.pubkey, ''], ['e', root.id, relay.url, root.pubkey]],
    })
    const watching = carol.listen(relay, [{ kinds: [1111] }])
    const bobWatching = bob.listen(relay, [{ kinds: [1111] }])
    await new Promise((resolve) => setTimeout(resolve, 300))
    const secretThread = await bob.publish(relay, makeEvent(11, { content: 'menu ideas', tags: [['h', secret.h], ['title', 'menu']] }))
    accepted(secretThread)
    const publicThread = await alice.publish(relay, makeEvent(11, { content: 'best crust', tags: [['h', room.h], ['title', 'crust']] }))
    accepted(publicThread)
    const secretComment = await bob.publish(relay, commentOn(secretThread.event, 'more basil'))
    accepted(secretComment)
    const reply = await owner.publish(relay, makeEvent(1111, { content: 'agreed',
      tags: [...secretComment.event.tags.filter((t) => ['K', 'P', 'E'].includes(t[0])),
        ['k', '1111'], ['p', bob.pk], ['e', secretComment.event.id]] }))
    accepted(reply)
    const publicComment = await alice.publish(relay, commentOn(publicThread.event, 'thin'))
    accepted(publicComment)
    // Posting in the thread is the room's to allow, as for an event with its h: carol is not in it.
    refused(await carol.publish(relay, commentOn(secretThread.event, 'let me in')),
      /^restricted: only members of this room may post in it/)
    for (let i = 0; i < 100 && (watching.events.length < 1 || bobWatching.events.length < 3); i++)
      await new Promise((resolve) => setTimeout(resolve, 50))
    await new Promise((resolve) => setTimeout(resolve, 300))
    watching.stop()
    bobWatching.stop()
    // Live: the room's member gets all three, carol (not in the room) the public one only.
    assert.deepEqual(watching.events.map((e) => e.id), [publicComment.event.id])
    assert.deepEqual(bobWatching.events.map((e) => e.id).sort(),
      [secretComment.event.id, reply.event.id, publicComment.event.id].sort())
    // History and COUNT, as Flotilla asks: by kind, and by the thread's E.
    const ids = async (user, filters) => (await user.read(relay, filters)).events.map((e) => e.id).sort()
    assert.deepEqual(await ids(carol, [{ kinds: [1111] }]), [publicComment.event.id])
    assert.deepEqual(await ids(carol, [{ kinds: [1111], '#E': [secretThread.event.id] }]), [])
    assert.deepEqual(await ids(carol, [{ authors: [bob.pk, owner.pk], limit: 50 }]).then((all) =>
      all.filter((id) => [secretComment.event.id, reply.event.id].includes(id))), [])
    assert.deepEqual(await ids(bob, [{ kinds: [1111], '#E': [secretThread.event.id] }]),
      [secretComment.event.id, reply.event.id].sort())
    const client = await RawClient.open(relay)
    const challenge = await client.challenge()
    const auth = await carol.signer.sign(makeEvent(22242, { tags: [['relay', relay.url], ['challenge', challenge]] }))
    assert.equal((await client.auth(auth)).ok, true)
    client.send(['COUNT', 'c', { kinds: [1111] }])
    assert.deepEqual(await client.take((f) => f[1] === 'c', 'COUNT'), ['COUNT', 'c', { count: 1 }])
    await client.close()
  })

  it("keeps a comment that names a private room's calendar event only by its address (A) in the room", async () => {
    const { relay } = ctx
    // NIP-22 on an addressable root: A (and K, P) for the root, a (and k, p) for the parent; no E, no h.
    accepted(await bob.publish(relay, makeEvent(31923, { tags: [['d', 'meetup'], ['title', 'Meetup'], ['h', secret.h]] })))
    const root = `31923:${bob.pk}:meetup`
    const comment = (text) => makeEvent(1111, {
      content: text, tags: [['A', root], ['K', '31923'], ['P', bob.pk], ['a', root], ['k', '31923'], ['p', bob.pk]],
    })
    const watching = carol.listen(relay, [{ kinds: [1111], '#A': [root] }])
    await new Promise((resolve) => setTimeout(resolve, 300))
    const posted = await bob.publish(relay, comment('count me in'))
    accepted(posted)
    // Outside the room, carol may not post in its thread either (the room is restricted).
    refused(await carol.publish(relay, comment('me too')), /^restricted: /)
    await new Promise((resolve) => setTimeout(resolve, 300))
    watching.stop()
    assert.deepEqual(watching.events, [], 'the comment went live to someone outside the room')
    assert.equal((await carol.read(relay, [{ kinds: [1111], '#A': [root] }])).events.length, 0)
    assert.deepEqual((await bob.read(relay, [{ kinds: [1111], '#A': [root] }])).events.map((e) => e.id), [posted.event.id])
    // Each root by address is read and locked with the batch: a comment names at most 16.
    const many = makeEvent(1111, { content: 'spam', tags: Array.from({ length: 17 }, (_, i) => ['A', `31923:${bob.pk}:d${i}`]) })
    refused(await bob.publish(relay, many), /^invalid: a comment names at most 16 roots by address/)
  })

  it("keeps a pin or a deletion that names a private room's calendar event only by its address (a) in the room", async () => {
    const { relay } = ctx
    accepted(await bob.publish(relay, makeEvent(31923, { tags: [['d', 'standup'], ['title', 'Standup'], ['h', secret.h]] })))
    const address = `31923:${bob.pk}:standup`
    const watching = carol.listen(relay, [{ kinds: [5, 39067] }])
    await new Promise((resolve) => setTimeout(resolve, 300))
    // A pin as welshman 0.12 writes one (its own d, what it pins), and a NIP-09 deletion by
    // address as clients that delete an addressable event write it: a and k, no e, no h.
    const pin = await bob.publish(relay, makeEvent(39067, { tags: [['d', makeSecret().slice(0, 16)], ['a', address]] }))
    accepted(pin)
    const deletion = await bob.publish(relay, makeEvent(5, { tags: [['a', address], ['k', '31923']] }))
    accepted(deletion)
    await new Promise((resolve) => setTimeout(resolve, 300))
    watching.stop()
    assert.deepEqual(watching.events, [], 'the pin or the deletion went live to someone outside the room')
    assert.equal((await carol.read(relay, [{ kinds: [5, 39067], '#a': [address] }])).events.length, 0)
    const anonymous = await RawClient.open(relay)
    assert.equal((await anonymous.req('r', { kinds: [5, 39067], '#a': [address] })).events.length, 0)
    await anonymous.close()
    const seen = (await bob.read(relay, [{ kinds: [5, 39067], '#a': [address] }])).events.map((e) => e.id)
    assert.deepEqual(seen.sort(), [pin.event.id, deletion.event.id].sort())
    assert.equal((await bob.read(relay, [{ kinds: [31923], '#d': ['standup'] }])).events.length, 0)
  })

  it("keeps reports of a private room's events to the room, as Flotilla's makeReport sends them (no h)", async () => {
    const { relay } = ctx
    // welshman's makeReport: p the author, e the event with the reason; no h.
    const report = (event, content) => makeEvent(1984, { content, tags: [['p', event.pubkey], ['e', event.id, 'spam']] })
    const [secretThread] = (await bob.read(relay, [{ kinds: [11], '#h': [secret.h] }])).events
    const [publicThread] = (await alice.read(relay, [{ kinds: [11], '#h': [room.h] }])).events
    assert.ok(secretThread && publicThread)
    const watching = carol.listen(relay, [{ kinds: [1984] }])
    await new Promise((resolve) => setTimeout(resolve, 300))
    const secretReport = await owner.publish(relay, report(secretThread, 'not about food'))
    accepted(secretReport)
    // Reporting is not posting: carol, in neither room, may report what she can see.
    const publicReport = await carol.publish(relay, report(publicThread, 'wrong room'))
    accepted(publicReport)
    for (let i = 0; i < 100 && watching.events.length < 1; i++)
      await new Promise((resolve) => setTimeout(resolve, 50))
    await new Promise((resolve) => setTimeout(resolve, 300))
    watching.stop()
    assert.deepEqual(watching.events.map((e) => e.id), [publicReport.event.id])
    // As Flotilla asks: every report of the space, and the reports of one event.
    const ids = async (user, filters) => (await user.read(relay, filters)).events.map((e) => e.id).sort()
    assert.deepEqual(await ids(carol, [{ kinds: [1984] }]), [publicReport.event.id])
    assert.deepEqual(await ids(carol, [{ kinds: [1984], '#e': [secretThread.id] }]), [])
    assert.deepEqual(await ids(bob, [{ kinds: [1984] }]), [secretReport.event.id, publicReport.event.id].sort())
  })

  it("keeps votes on a private room's poll to the room, as newer Flotilla sends them (no h), and to its posters", async () => {
    const { relay } = ctx
    // NIP-88: the poll names its room; a vote names only the poll (e) and its choice.
    const poll = await owner.publish(relay, makeEvent(1068, { content: 'Pizza tonight?', tags: [
      ['h', secret.h], ['option', 'yes', 'Yes'], ['option', 'no', 'No'], ['polltype', 'singlechoice']] }))
    accepted(poll)
    const vote = (user, choice) => user.publish(relay, makeEvent(1018, { tags: [['e', poll.event.id], ['response', choice]] }))
    const watching = carol.listen(relay, [{ kinds: [1018] }])
    await new Promise((resolve) => setTimeout(resolve, 300))
    const bobs = await vote(bob, 'yes')
    accepted(bobs)
    // carol, outside the restricted room, may not vote in it.
    refused(await vote(carol, 'no'), /^restricted:/)
    await new Promise((resolve) => setTimeout(resolve, 500))
    watching.stop()
    assert.deepEqual(watching.events, [], 'no vote reaches a non-member live')
    const ids = async (user) => (await user.read(relay, [{ kinds: [1018], '#e': [poll.event.id] }])).events.map((e) => e.id)
    assert.deepEqual(await ids(carol), [])
    assert.deepEqual(await ids(bob), [bobs.event.id])
  })

  it('lets a moderator delete a message for everyone', async () => {
    const { relay } = ctx
    accepted(await owner.publish(relay, makeEvent(9000, { tags: [['h', room.h], ['p', bob.pk, 'moderator']] })))
    const admins = await roomState(alice, relay, ROOM_ADMINS, room.h)
    assert.deepEqual(admins.tags.find((t) => t[1] === bob.pk), ['p', bob.pk, 'moderator'])
    const chat = await alice.publish(relay, makeEvent(9, { content: 'spam', tags: [['h', room.h]] }))
    accepted(chat)
    // A plain member may not moderate; a moderator may not grant roles.
    refused(await alice.publish(relay, makeEvent(9005, { tags: [['h', room.h], ['e', chat.event.id]] })), /^restricted: /)
    refused(await bob.publish(relay, makeEvent(9000, { tags: [['h', room.h], ['p', carol.pk, 'admin']] })), /^restricted: /)
    accepted(await bob.publish(relay, makeEvent(9005, { tags: [['h', room.h], ['e', chat.event.id]] })))
    for (const user of [owner, alice, carol])
      assert.equal((await user.read(relay, [{ ids: [chat.event.id] }])).events.length, 0)
  })

  it('turns a leave into a relay-signed 9001 and a new 39002', async () => {
    const { relay } = ctx
    const before = await roomState(owner, relay, ROOM_MEMBERS, room.h)
    accepted(await alice.publish(relay, makeRoomLeaveEvent(room)))
    const removal = await owner.read(relay, [{ kinds: [9001], '#h': [room.h], '#p': [alice.pk] }])
    assert.equal(removal.events.length, 1)
    assert.equal(removal.events[0].pubkey, relay.pubkey)
    const after = await roomState(owner, relay, ROOM_MEMBERS, room.h)
    assert.ok(after.created_at > before.created_at)
    assert.ok(!members(after).includes(alice.pk))
  })

  it('lets someone who left a restricted room delete what they posted there, as Flotilla sends it', async () => {
    const { relay } = ctx
    const posted = await owner.read(relay, [{ kinds: [9], '#h': [secret.h], authors: [bob.pk] }])
    assert.equal(posted.events.length, 1)
    const [note] = posted.events
    accepted(await bob.publish(relay, makeRoomLeaveEvent(secret)))
    refused(await bob.publish(relay, makeEvent(9, { content: 'back?', tags: [['h', secret.h]] })), /^restricted: /)
    // Flotilla's makeDelete: k, the target, and the target's h.
    const deletion = makeEvent(5, { tags: [['k', '9'], ['e', note.id], ['h', secret.h]] })
    accepted(await bob.publish(relay, deletion))
    assert.equal((await owner.read(relay, [{ ids: [note.id] }])).events.length, 0)
    // A deletion takes only its author's own events: bob's of the owner's note takes nothing.
    const ownerNote = await owner.publish(relay, makeEvent(9, { content: 'stays', tags: [['h', secret.h]] }))
    accepted(ownerNote)
    await bob.publish(relay, makeEvent(5, { tags: [['k', '9'], ['e', ownerNote.event.id], ['h', secret.h]] }))
    assert.equal((await owner.read(relay, [{ ids: [ownerNote.event.id] }])).events.length, 1)
  })

  it('takes a reaction from a reader of a restricted room who may not post there, as Flotilla offers it', async () => {
    const { relay } = ctx
    const news = makeRoomMeta({ name: 'News', isRestricted: true })
    accepted(await owner.publish(relay, makeRoomCreateEvent(news)))
    accepted(await owner.publish(relay, makeRoomEditEvent(news)))
    const post = await owner.publish(relay, makeEvent(9, { content: 'we open at noon', tags: [['h', news.h]] }))
    accepted(post)
    refused(await carol.publish(relay, makeEvent(9, { content: 'me too', tags: [['h', news.h]] })),
      /^restricted: only members of this room may post in it/)
    // Flotilla's makeReaction copies the message's h.
    const react = (user, target, h) => user.publish(relay, makeEvent(7, { content: '+',
      tags: [['k', '9'], ['e', target.id], ['p', target.pubkey], ['h', h]] }))
    accepted(await react(carol, post.event, news.h))
    assert.deepEqual((await alice.read(relay, [{ kinds: [7], '#e': [post.event.id] }])).events.map((e) => e.pubkey),
      [carol.pk])
    // Not in a private room it cannot read: bob left the kitchen.
    const [kept] = (await owner.read(relay, [{ kinds: [9], '#h': [secret.h], authors: [owner.pk] }])).events
    refused(await react(bob, kept, secret.h), /^restricted: only members of this room may post in it/)
    accepted(await owner.publish(relay, makeRoomDeleteEvent(news)))
  })

  it('shows one who left a private room the member list without them, and takes a second leave', async () => {
    const { relay } = ctx
    // Flotilla tells who is in a room from its newest 39002: bob, out of the private room, must
    // read the list that dropped him, or his other devices show him in it still.
    const list = await roomState(bob, relay, ROOM_MEMBERS, secret.h)
    assert.ok(!members(list).includes(bob.pk))
    assert.ok(members(list).includes(owner.pk))
    // Its messages stay hidden from him.
    assert.equal((await bob.read(relay, [{ kinds: [9], '#h': [secret.h] }])).events.length, 0)
    // "Access Pending" sends a leave; only duplicate: is not shown as an error.
    accepted(await bob.publish(relay, makeRoomLeaveEvent(secret)), /^duplicate: /)
  })

  it("lists rooms and a room's members over NIP-86, for the owner only", async () => {
    const { relay } = ctx
    const call = async (secretKey, request) => {
      const template = await makeHttpAuth(`http://${relay.host}`, 'POST', JSON.stringify(request))
      const auth = await Nip01Signer.fromSecret(secretKey).sign(template)
      return sendManagementRequest(`http://${relay.host}`, request, auth)
    }
    const rooms = await call(ownerSecret, { method: 'listrooms', params: [] })
    assert.deepEqual(rooms.result.map((r) => r.id).sort(), [room.h, secret.h].sort())
    assert.deepEqual(rooms.result.find((r) => r.id === secret.h).flags, ['private', 'restricted', 'closed'])
    const inRoom = await call(ownerSecret, { method: 'listroommembers', params: [room.h] })
    assert.deepEqual(inRoom.result, [{ pubkey: owner.pk, roles: ['admin'] }, { pubkey: bob.pk, roles: ['moderator'] }])
    const stranger = await call(makeSecret(), { method: 'listrooms', params: [] })
    assert.ok(stranger.error, 'a non-admin is refused')
  })

  it("answers a burst of joins to one room within the app's publish timeout, the room's 39002 naming all", async () => {
    // Flotilla's "add members" publishes one 9000 per person at once, and people follow one link
    // together; welshman gives up on a publish after 10 s (app_user: 8 s). Paced one a second,
    // the later joins of a burst timed out.
    const { relay } = ctx
    const crowd = makeRoomMeta({ name: 'Crowd' })
    accepted(await owner.publish(relay, makeRoomCreateEvent(crowd)))
    accepted(await owner.publish(relay, makeRoomEditEvent(crowd)))
    const people = Array.from({ length: 12 }, () => appUser())
    await Promise.all(people.map((person) => person.authenticated(relay)))
    const joins = await Promise.all(people.map((person) => person.publish(relay, makeRoomJoinEvent(crowd))))
    for (const join of joins) accepted(join, /^info: /)
    const listed = members(await roomState(owner, relay, ROOM_MEMBERS, crowd.h))
    for (const person of people) assert.ok(listed.includes(person.pk), 'every joiner is in the one live 39002')
    for (const person of people) person.close()
  })

  it('deletes a room with its events', async () => {
    const { relay } = ctx
    refused(await bob.publish(relay, makeRoomDeleteEvent(room)), /^restricted: /)
    accepted(await owner.publish(relay, makeRoomDeleteEvent(room)))
    assert.equal((await owner.read(relay, [{ kinds: [9], '#h': [room.h] }])).events.length, 0)
    assert.equal((await owner.read(relay, [{ kinds: [ROOM_META, ROOM_MEMBERS], '#d': [room.h] }])).events.length, 0)
    refused(await owner.publish(relay, makeEvent(9, { content: 'anyone?', tags: [['h', room.h]] })), /^invalid: there is no room/)
    for (const user of [owner, alice, bob, carol]) user.close()
  })

  itStopsCleanly(ctx)
})
