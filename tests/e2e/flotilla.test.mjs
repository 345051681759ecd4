// What Flotilla (coracle-social/flotilla on welshman) does with a community relay, step by step as
// its screens do it, and what it concludes from the answers. The audit behind each step is
// docs/apps.md; the app's own code is paraphrased in the comments, never run.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  COMMENT, DELETE, EVENT_TIME, MESSAGE, REACTION, RELAY_ADD_MEMBER, RELAY_INVITE, RELAY_JOIN,
  RELAY_MEMBERS, RELAY_REMOVE_MEMBER, REPORT, ROOM_ADD_MEMBER, ROOM_ADMINS, ROOM_DELETE, ROOM_MEMBERS,
  ROOM_META, ROOM_REMOVE_MEMBER, THREAD, ZAP_GOAL, ZAP_RESPONSE, getPubkey, getTagValue, makeEvent,
  makeRoomCreateEvent, makeRoomEditEvent, makeRoomJoinEvent, makeRoomMeta, makeSecret, readRoomMeta,
  makeZapRequest, unionFilters, displayRelayUrl,
} from '@welshman/util'
import { AuthStatus, Socket, defaultSocketPolicies, makeSocketPolicyAuth } from '@welshman/net'
import { Nip01Signer } from '@welshman/signer'
import { appUser, thunkError } from './app_user.mjs'
import { RawClient, finalizeEvent, generateSecretKey, httpGet, itStopsCleanly, withRelay } from './harness.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Flotilla's deriveUserIsSpaceAdmin: an admin is whoever gets a non-empty supportedmethods. */
const isSpaceAdmin = async (user, relay) => Boolean((await user.manage(relay, 'supportedmethods')).result?.length)

async function nip11(relay) {
  const { body } = await httpGet(relay.port, '/', { Accept: 'application/nostr+json' })
  return JSON.parse(body)
}

async function memberList(user, relay) {
  const { events } = await user.read(relay, [{ kinds: [RELAY_MEMBERS], authors: [relay.pubkey] }])
  assert.equal(events.length, 1)
  return events[0].tags.filter((t) => t[0] === 'member').map((t) => t[1])
}

/** Waits (bounded) until `seen` holds an event matching `pred`. */
async function heard(seen, pred, what) {
  for (let i = 0; i < 250; i++) {
    const event = seen.events.find(pred)
    if (event) return event
    await pause(20)
  }
  throw new Error(`not heard live: ${what}; closed: ${JSON.stringify(seen.closed)}`)
}

/**
 * Flotilla's room form on submit: a create (a refusal saying "already" is fine: the room is
 * being edited), then an edit, then a join (again "already" is fine). Returns the error the form
 * would toast, "" when it goes on.
 */
async function submitRoomForm(user, relay, room) {
  const create = thunkError(await user.publish(relay, makeRoomCreateEvent(room)))
  if (create && !create.includes('already')) return `create: ${create}`
  const edit = thunkError(await user.publish(relay, makeRoomEditEvent(room)))
  if (edit) return `edit: ${edit}`
  const join = thunkError(await user.publish(relay, makeRoomJoinEvent(room)))
  if (join && !join.includes('already')) return `join: ${join}`
  return ''
}

describe('Flotilla managing a closed space', () => {
  const ownerSecret = makeSecret()
  const ctx = withRelay({ COMB_ACCESS: 'closed', COMB_OWNER_PUBKEY: getPubkey(ownerSecret) })
  const owner = appUser(ownerSecret)
  const bob = appUser()
  const stranger = appUser()

  it('shows its admin tools to the owner only (supportedmethods)', async () => {
    const { relay } = ctx
    assert.equal(await isSpaceAdmin(owner, relay), true)
    assert.deepEqual(await owner.manage(relay, 'allowpubkey', [bob.pk]), { result: true })
    assert.equal(await isSpaceAdmin(bob, relay), false, 'a plain member is no admin')
    assert.equal(await isSpaceAdmin(stranger, relay), false)
    // Newer Flotilla asks every user, keeps `result` (a default only for a missing one) and reads
    // its length: a member and a stranger get an empty array, not a refusal's null.
    assert.deepEqual(await bob.manage(relay, 'supportedmethods'), { result: [] })
    assert.deepEqual(await stranger.manage(relay, 'supportedmethods'), { result: [] })
    const refused = await bob.manage(relay, 'listallowedpubkeys')
    assert.match(refused.error, /owner or an admin/)
    // An error carries no `result`: newer Flotilla reads `({result = []})`, whose default a null
    // does not take (its members pages then call `.includes` on null).
    assert.ok(!('result' in refused), JSON.stringify(refused))
  })

  it('lists the space\'s admins as newer Flotilla does (listmethodassignees)', async () => {
    const { relay } = ctx
    const methods = (await owner.manage(relay, 'supportedmethods')).result
    assert.ok(methods.includes('listmethodassignees'))
    assert.ok(!methods.includes('assignmethod'), 'granting single methods is not served')
    const { result } = await owner.manage(relay, 'listmethodassignees')
    assert.deepEqual(result, [{ pubkey: owner.pk, methods }], 'the owner, holding every method; bob is no admin')
    assert.match((await bob.manage(relay, 'listmethodassignees')).error, /owner or an admin/)
    assert.match((await owner.manage(relay, 'assignmethod', [bob.pk, 'banpubkey'])).error, /unsupported method/)
  })

  it('edits the space as its edit form does, emptied description included', async () => {
    const { relay } = ctx
    assert.deepEqual(await owner.manage(relay, 'changerelaydescription', ['bees only']), { result: true })
    assert.equal((await nip11(relay)).description, 'bees only')
    assert.deepEqual(await owner.manage(relay, 'changerelayname', ['The Hive']), { result: true })
    // The form sends `values.description || ""` when the field was emptied.
    assert.deepEqual(await owner.manage(relay, 'changerelaydescription', ['']), { result: true })
    const info = await nip11(relay)
    assert.equal(info.name, 'The Hive')
    assert.notEqual(info.description, 'bees only', 'the description is cleared')
    assert.equal(info.self, relay.pubkey)
    assert.equal(info.pubkey, owner.pk)
  })

  it('bans a member from the member list and restores them from the banned list', async () => {
    const { relay } = ctx
    await bob.authenticated(relay)
    assert.equal(thunkError(await bob.publish(relay, makeEvent(MESSAGE, { content: 'hi' }))), '')
    // SpaceMembers and ProfileDetail ban with the pubkey alone.
    assert.deepEqual(await owner.manage(relay, 'banpubkey', [bob.pk]), { result: true })
    // What bob posted goes from every screen with the ban, as it does on the apps' own relay.
    assert.equal((await owner.read(relay, [{ authors: [bob.pk], kinds: [MESSAGE] }])).events.length, 0)
    const banned = await owner.manage(relay, 'listbannedpubkeys')
    assert.deepEqual(banned.result.map((item) => item.pubkey), [bob.pk])
    assert.ok(!(await memberList(owner, relay)).includes(bob.pk))
    assert.match(thunkError(await bob.publish(relay, makeEvent(MESSAGE, { content: 'still here?' }))), /^(blocked|restricted): /)
    // SpaceMembersBanned restores with allowpubkey, and reports any error it gets.
    const restored = await owner.manage(relay, 'allowpubkey', [bob.pk])
    assert.deepEqual(restored, { result: true }, JSON.stringify(restored))
    assert.ok((await memberList(owner, relay)).includes(bob.pk))
    assert.equal((await owner.read(relay, [{ authors: [bob.pk], kinds: [MESSAGE] }])).events.length, 1,
                 'a restored member\'s posts are served again')
    // The banned list asks each time it opens: in the same second that is the very same NIP-98
    // event, which a read may use again.
    const lists = await Promise.all([owner.manage(relay, 'listbannedpubkeys'), owner.manage(relay, 'listbannedpubkeys')])
    for (const list of lists) assert.deepEqual(list.result, [], JSON.stringify(list))
    assert.equal(thunkError(await bob.publish(relay, makeEvent(MESSAGE, { content: 'back again' }))), '')
  })

  it('bans from a report as the report menu does, its p tag spread into the params', async () => {
    const { relay } = ctx
    // ReportMenu: `const [pubkey, reason = ""] = ptag` on ["p", <hex>], then params [pubkey, reason].
    assert.deepEqual(await owner.manage(relay, 'banpubkey', ['p', bob.pk]), { result: true })
    const banned = await owner.manage(relay, 'listbannedpubkeys')
    assert.deepEqual(banned.result.map((item) => item.pubkey), [bob.pk])
    assert.deepEqual(await owner.manage(relay, 'allowpubkey', [bob.pk]), { result: true })
  })

  it("refuses to ban the community's key (NIP-11 self), which signs the member list", async () => {
    const { relay } = ctx
    const refused = await owner.manage(relay, 'banpubkey', [relay.pubkey])
    assert.match(refused.error ?? '', /key that signs this community's lists cannot be banned/, JSON.stringify(refused))
    assert.deepEqual((await owner.manage(relay, 'listbannedpubkeys')).result, [])
    assert.ok((await memberList(owner, relay)).includes(owner.pk))
  })

  it('deletes a message with banevent and the id alone, as the message menu does', async () => {
    const { relay } = ctx
    const note = await bob.publish(relay, makeEvent(MESSAGE, { content: 'off topic' }))
    assert.equal(thunkError(note), '')
    assert.deepEqual(await owner.manage(relay, 'banevent', [note.event.id]), { result: true })
    assert.equal((await owner.read(relay, [{ ids: [note.event.id] }])).events.length, 0)
    for (const user of [owner, bob, stranger]) user.close()
  })

  itStopsCleanly(ctx)
})

describe('Flotilla joining a closed space', () => {
  const ownerSecret = makeSecret()
  const ctx = withRelay({ COMB_ACCESS: 'closed', COMB_OWNER_PUBKEY: getPubkey(ownerSecret) })

  it('reads a refused claim as NIP-43 says, and names the invite code in it', async () => {
    const { relay } = ctx
    const owner = appUser(ownerSecret)
    const newcomer = appUser()
    try {
      // attemptRelayAccess: AUTH first, then the join; a link without a code sends claim "".
      await newcomer.authenticated(relay)
      for (const claim of ['', 'not-a-code']) {
        const error = thunkError(await newcomer.publish(relay, makeEvent(RELAY_JOIN, { tags: [['claim', claim]] })))
        assert.match(error, /^restricted: /, `claim ${JSON.stringify(claim)}`)
        assert.ok(error.includes('invite code'), `Flotilla shows "join request rejected" for: ${error}`)
      }
      const invite = await owner.read(relay, [{ kinds: [RELAY_INVITE], limit: 1 }])
      const claim = getTagValue('claim', invite.events[0].tags)
      assert.equal(thunkError(await newcomer.publish(relay, makeEvent(RELAY_JOIN, { tags: [['claim', claim]] }))), '')
      assert.ok((await memberList(owner, relay)).includes(newcomer.pk))
    } finally {
      owner.close()
      newcomer.close()
    }
  })

  it('admits everyone an invite link reaches, a code pasted with a newline or as the whole link included', async () => {
    const { relay } = ctx
    const owner = appUser(ownerSecret)
    const people = [appUser(), appUser(), appUser(), appUser()]
    try {
      // SpaceInvite: "Get a link that you can use to invite people", shared once, opened by many.
      const invite = await owner.read(relay, [{ kinds: [RELAY_INVITE], limit: 1 }])
      const claim = getTagValue('claim', invite.events[0].tags)
      // SpaceAccessRequest sends the code box as pasted: people are given SpaceInvite's link.
      const link = 'https://app.flotilla.social/join?' + new URLSearchParams({ r: displayRelayUrl(relay.url), c: claim })
      const pasted = [claim, claim, `${claim}\n`, `${link}\n`]
      for (const [i, person] of people.entries()) {
        await person.authenticated(relay)
        const join = await person.publish(relay, makeEvent(RELAY_JOIN, { tags: [['claim', pasted[i]]] }))
        assert.equal(thunkError(join), '', `person ${i}`)
      }
      const members = await memberList(owner, relay)
      for (const person of people) assert.ok(members.includes(person.pk))
    } finally {
      owner.close()
      for (const person of people) person.close()
    }
  })

  it('invites as newer Flotilla does, with a code it registers over NIP-86 (listclaims, createclaim)', async () => {
    const { relay } = ctx
    const owner = appUser(ownerSecret)
    const people = [appUser(), appUser()]
    try {
      // Access.prepareInvite: supportedmethods, then the first of listclaims, else a code of its
      // own (randomId: the digits of Math.random()) registered with createclaim.
      const methods = (await owner.manage(relay, 'supportedmethods')).result
      for (const m of ['listclaims', 'createclaim', 'deleteclaim']) assert.ok(methods.includes(m), m)
      assert.deepEqual(await owner.manage(relay, 'listclaims'), { result: [] }, 'minted codes are not shown')
      const claim = Math.random().toString().slice(2)
      assert.deepEqual(await owner.manage(relay, 'createclaim', [claim]), { result: true })
      // The same call in the same second is the same NIP-98 event, and a listclaims or a change
      // spends its event (nip86 "refuses ... reused NIP-98 events").
      await pause(1100)
      assert.deepEqual(await owner.manage(relay, 'listclaims'), { result: [claim] }, 'the next invite reuses it')
      assert.deepEqual(await owner.manage(relay, 'createclaim', [claim]), { result: true }, 'a retry is as good')
      assert.match((await owner.manage(relay, 'createclaim', ['1234'])).error, /at least 12/)

      // The link's `c` reaches RelayJoin, which sends the claim tag only when it is non-empty.
      const [first, second] = people
      await first.authenticated(relay)
      assert.equal(thunkError(await first.publish(relay, makeEvent(RELAY_JOIN, { tags: [['-'], ['claim', claim]] }))), '')
      assert.ok((await memberList(owner, relay)).includes(first.pk))
      // A plain member is not staff: an error, which prepareInvite takes as "no claim".
      assert.ok((await first.manage(relay, 'listclaims')).error)
      assert.ok((await first.manage(relay, 'createclaim', [Math.random().toString().slice(2)])).error)

      assert.deepEqual(await owner.manage(relay, 'deleteclaim', [claim]), { result: true })
      await pause(1100)
      assert.deepEqual(await owner.manage(relay, 'listclaims'), { result: [] })
      await second.authenticated(relay)
      const refused = thunkError(await second.publish(relay, makeEvent(RELAY_JOIN, { tags: [['-'], ['claim', claim]] })))
      assert.match(refused, /^restricted: /)
      assert.ok(refused.includes('invite code'), refused)
    } finally {
      owner.close()
      for (const person of people) person.close()
    }
  })

  for (const [signer, authDelayMs] of [['', 0], [' with a signer that takes 5 s over it', 5000]])
  it(`keeps every subscription a member opens before AUTH is done, however many rooms they follow${signer}`, async () => {
    const { relay } = ctx
    const owner = appUser(ownerSecret)
    const member = appUser(undefined, { authDelayMs })
    const live = []
    try {
      assert.deepEqual(await owner.manage(relay, 'allowpubkey', [member.pk]), { result: true })
      // Flotilla opens the space's feeds and each followed room's as the socket opens, before
      // its AUTH is done; after the AUTH's OK welshman sends again only the last 51 messages it
      // sent, and hides the auth-required CLOSEDs: the first ones live only if the relay waits.
      const tag = makeSecret().slice(0, 16)
      for (let i = 0; i < 60; i++)
        live.push(member.listen(relay, [{ kinds: [MESSAGE], '#t': [tag, `room-${i}`], limit: 0 }]))
      await member.authenticated(relay)
      await pause(1500)
      const note = await owner.publish(relay, makeEvent(MESSAGE, { content: 'to every room', tags: [['t', tag]] }))
      assert.equal(thunkError(note), '')
      for (let i = 0; i < 50 && live.some((l) => l.events.length === 0); i++) await pause(100)
      const missed = live.map((l, i) => (l.events.length === 0 ? i : -1)).filter((i) => i >= 0)
      assert.deepEqual(missed, [], 'subscriptions that heard nothing')
      assert.ok(live.every((l) => l.closed.length === 0))
    } finally {
      for (const l of live) l.stop()
      owner.close()
      member.close()
    }
  })

  it('answers every subscription a member of 150 rooms opens as the app starts', async () => {
    const { relay } = ctx
    const owner = appUser(ownerSecret)
    const member = appUser()
    let live = []
    try {
      assert.deepEqual(await owner.manage(relay, 'allowpubkey', [member.pk]), { result: true })
      // syncUserData: for each room of the user's 10009, syncUserRoomMembership's live REQ and
      // its two loads (the user's newest 9000 and 9001 there); then syncSpace's loads. All are
      // sent before any is closed: 3 x 150 + 1 here, past the 200 comb used to allow.
      const rooms = Array.from({ length: 150 }, (_, i) => `${makeSecret().slice(0, 8)}-${i}`)
      live = rooms.map((h) => member.listen(relay, [{ kinds: [ROOM_ADD_MEMBER, ROOM_REMOVE_MEMBER], '#p': [member.pk], '#h': [h], limit: 0 }]))
      const loads = rooms.flatMap((h) => [ROOM_ADD_MEMBER, ROOM_REMOVE_MEMBER].map((kind) =>
        member.read(relay, [{ kinds: [kind], '#p': [member.pk], '#h': [h], limit: 1 }])))
      const members = member.read(relay, [{ kinds: [RELAY_MEMBERS], limit: 100 }])
      await member.authenticated(relay)
      const answers = await Promise.all(loads)
      assert.deepEqual(answers.filter((a) => a.closed !== null).map((a) => a.closed), [])
      const list = await members
      assert.equal(list.closed, null)
      assert.ok(list.events.some((e) => e.kind === RELAY_MEMBERS && e.tags.some((t) => t[0] === 'member' && t[1] === member.pk)))
      assert.ok(live.every((l) => l.closed.length === 0))
    } finally {
      for (const l of live) l.stop()
      owner.close()
      member.close()
    }
  })

  it('stores a zap receipt its Lightning service publishes without AUTH, for a member\'s zap only', async () => {
    const { relay } = ctx
    const owner = appUser(ownerSecret)
    const fan = appUser()
    const outsider = appUser()
    const service = await RawClient.open(relay) // an LNURL service: it never authenticates
    try {
      assert.deepEqual(await owner.manage(relay, 'allowpubkey', [fan.pk]), { result: true })
      const note = await owner.publish(relay, makeEvent(MESSAGE, { content: 'zap me' }))
      assert.equal(thunkError(note), '')
      // Zap.svelte: makeZapRequest with relays [the space's url], signed, sent to the service,
      // which publishes the receipt (9735) to those relays once the invoice is paid.
      const receiptFor = async (payer) => {
        const request = await payer.signer.sign(makeZapRequest({
          msats: 21000, zapper: { lnurl: 'lnurl1dp68gurn8ghj7' }, pubkey: owner.pk,
          relays: [`${relay.url}/`], eventId: note.event.id,
        }))
        return finalizeEvent({
          kind: ZAP_RESPONSE, created_at: Math.floor(Date.now() / 1000), content: '',
          tags: [['p', owner.pk], ['e', note.event.id], ['bolt11', 'lnbc210n1'],
                 ['description', JSON.stringify(request)]],
        }, serviceKey)
      }
      const serviceKey = generateSecretKey()
      const fromFan = await receiptFor(fan)
      assert.deepEqual(await service.publish(fromFan), { ok: true, message: '' })
      const fromOutsider = await receiptFor(outsider)
      assert.match((await service.publish(fromOutsider)).message, /^auth-required: /)
      const zaps = await owner.read(relay, [{ kinds: [ZAP_RESPONSE], '#e': [note.event.id] }])
      assert.deepEqual(zaps.events.map((e) => e.id), [fromFan.id])
    } finally {
      await service.close()
      for (const user of [owner, fan, outsider]) user.close()
    }
  })

  it('shows why an AUTH was refused: a device clock an hour behind', async () => {
    const { relay } = ctx
    // welshman drops every OK false starting "auth-required:", the AUTH's own answer included:
    // refused that way, the socket would wait for an answer forever (Flotilla: "pending_response").
    const signer = Nip01Signer.fromSecret(makeSecret())
    const behind = (template) => signer.sign({ ...template, created_at: template.created_at - 3600 })
    const socket = new Socket(relay.url, [...defaultSocketPolicies, makeSocketPolicyAuth({ sign: behind })])
    try {
      socket.attemptToOpen()
      for (let i = 0; i < 150 && socket.auth.status !== AuthStatus.Forbidden; i++) await pause(20)
      assert.equal(socket.auth.status, AuthStatus.Forbidden, `status ${socket.auth.status}`)
      assert.match(socket.auth.details ?? '', /created_at/)
    } finally {
      socket.cleanup()
    }
  })

  it('takes the code-less join a member added by an admin sends when adding the space', async () => {
    const { relay } = ctx
    const owner = appUser(ownerSecret)
    const added = appUser()
    try {
      assert.deepEqual(await owner.manage(relay, 'allowpubkey', [added.pk]), { result: true })
      // SpaceCheck's attemptRelayAccess(url): AUTH, then a join with claim "".
      await added.authenticated(relay)
      const join = await added.publish(relay, makeEvent(RELAY_JOIN, { tags: [['claim', '']] }))
      assert.equal(thunkError(join), '')
      assert.match(join.detail, /^duplicate: /)
      assert.ok((await memberList(owner, relay)).includes(added.pk))
    } finally {
      owner.close()
      added.close()
    }
  })

  itStopsCleanly(ctx)
})

describe('Flotilla rooms and sync in a closed space', () => {
  const ownerSecret = makeSecret()
  const ctx = withRelay({ COMB_ACCESS: 'closed', COMB_OWNER_PUBKEY: getPubkey(ownerSecret) })
  const owner = appUser(ownerSecret)
  const alice = appUser()
  const bob = appUser()
  const room = makeRoomMeta({ name: 'Pizza', about: 'for people who love pizza' })

  async function roomMeta(user, relay, h) {
    const { events } = await user.read(relay, [{ kinds: [ROOM_META], authors: [relay.pubkey], '#d': [h] }])
    assert.equal(events.length, 1)
    return readRoomMeta(events[0])
  }

  it('creates a room with its room form, and edits it with the same form', async () => {
    const { relay } = ctx
    await owner.authenticated(relay)
    assert.equal(await submitRoomForm(owner, relay, room), '')
    // RoomEdit fills the form from the relay's 39000 (its tags are copied into the 9002).
    const current = await roomMeta(owner, relay, room.h)
    assert.equal(current.name, 'Pizza')
    assert.equal(await submitRoomForm(owner, relay, { ...current, name: 'Pizza Place' }), '')
    const edited = await roomMeta(owner, relay, room.h)
    assert.equal(edited.name, 'Pizza Place')
    assert.equal(edited.about, 'for people who love pizza')
    // Saved again unchanged, a second later.
    await pause(1100)
    assert.equal(await submitRoomForm(owner, relay, edited), '')
  })

  it('lets the owner edit a closed room another admin made, with the same form', async () => {
    const { relay } = ctx
    assert.deepEqual(await owner.manage(relay, 'allowpubkey', [bob.pk]), { result: true })
    const role = await owner.publish(relay, makeEvent(9032, { tags: [['-'], ['p', bob.pk], ['role', 'admin'], ['relay', relay.url]] }))
    assert.equal(thunkError(role), '')
    await bob.authenticated(relay)
    assert.ok(await isSpaceAdmin(bob, relay))
    const backroom = makeRoomMeta({ name: 'Backroom', isClosed: true })
    assert.equal(await submitRoomForm(bob, relay, backroom), '')
    // The owner is not in the room: the form's join after the edit has no code, and a closed
    // room's join without one is refused to everyone but the community's owner and admins.
    const current = await roomMeta(owner, relay, backroom.h)
    assert.equal(current.isClosed, true)
    assert.equal(await submitRoomForm(owner, relay, { ...current, about: 'staff only' }), '')
    assert.equal((await roomMeta(owner, relay, backroom.h)).about, 'staff only')
    bob.close()
  })

  it('loads a space with its sync filters and hears what follows live', async () => {
    const { relay } = ctx
    assert.deepEqual(await owner.manage(relay, 'allowpubkey', [alice.pk]), { result: true })
    await alice.authenticated(relay)
    // syncSpace's filters; pullAndListen loads them with limit 100 each, then listens to their
    // union with limit 0.
    const filters = [
      { kinds: [RELAY_MEMBERS] },
      { kinds: [ROOM_ADMINS, ROOM_MEMBERS] },
      { kinds: [ROOM_META, ROOM_DELETE], limit: 1000 },
      { kinds: [ROOM_ADD_MEMBER, ROOM_REMOVE_MEMBER] },
      { kinds: [RELAY_ADD_MEMBER, RELAY_REMOVE_MEMBER] },
      ...[ZAP_GOAL, EVENT_TIME, THREAD, MESSAGE].map((kind) => ({ kinds: [kind] })),
      { kinds: [COMMENT], '#K': [ZAP_GOAL, EVENT_TIME, THREAD].map(String) },
      { kinds: [REPORT, DELETE, REACTION, ZAP_RESPONSE], limit: 0 },
    ]
    const loaded = await alice.read(relay, filters.map((f) => ({ limit: 100, ...f })))
    assert.equal(loaded.closed, null)
    assert.ok(loaded.events.some((e) => e.kind === RELAY_MEMBERS && e.pubkey === relay.pubkey))
    assert.ok(loaded.events.some((e) => e.kind === ROOM_META && getTagValue('d', e.tags) === room.h))
    // syncUserSpaceMembership: the user's own 8000.
    const mine = await alice.read(relay, [{ kinds: [RELAY_ADD_MEMBER], '#p': [alice.pk], limit: 1 }])
    assert.equal(mine.events.length, 1)
    // The calendar asks for events by day number in an uppercase `D` tag.
    const day = String(Math.floor(Date.now() / 86400000))
    const meeting = await owner.publish(relay, makeEvent(EVENT_TIME, { content: 'meeting', tags: [
      ['d', 'meeting-1'], ['title', 'Meeting'], ['start', String(Math.floor(Date.now() / 1000) + 3600)],
      ['end', String(Math.floor(Date.now() / 1000) + 7200)], ['D', day]] }))
    assert.equal(thunkError(meeting), '')
    const calendar = await alice.read(relay, [{ kinds: [EVENT_TIME], '#D': [day] }])
    assert.deepEqual(calendar.events.map((e) => e.id), [meeting.event.id])

    const live = alice.listen(relay, unionFilters(filters.map(({ limit, ...f }) => f)).map((f) => ({ ...f, limit: 0 })))
    try {
      await pause(300)
      const thread = await owner.publish(relay, makeEvent(THREAD, { content: 'agenda', tags: [['title', 'Agenda']] }))
      assert.equal(thunkError(thread), '')
      const comment = await owner.publish(relay, makeEvent(COMMENT, {
        content: 'item one', tags: [['E', thread.event.id], ['K', String(THREAD)], ['e', thread.event.id], ['k', String(THREAD)]] }))
      assert.equal(thunkError(comment), '')
      const chat = await owner.publish(relay, makeEvent(MESSAGE, { content: 'hello room', tags: [['h', room.h]] }))
      assert.equal(thunkError(chat), '')
      for (const { event } of [thread, comment, chat])
        await heard(live, (e) => e.id === event.id, `kind ${event.kind}`)
      assert.deepEqual(live.closed, [])
    } finally {
      live.stop()
    }
  })

  it('answers a members page\'s profile load: one REQ naming 9,000 authors (a frame of 600 KB)', async () => {
    const { relay } = ctx
    // Flotilla's SpaceMembers renders every member's profile; welshman's loader merges their
    // kind 0 loads of 200 ms into one filter whatever its size, and its profiles carry "-".
    const profile = await owner.publish(relay, makeEvent(0, { content: '{"name":"owner"}', tags: [['-']] }))
    assert.equal(thunkError(profile), '')
    // Keys need not be real: the filter only names them.
    const others = Array.from({ length: 8999 }, () => makeSecret())
    const loaded = await alice.read(relay, [{ kinds: [0], authors: [...others, owner.pk] }])
    assert.equal(loaded.closed, null)
    assert.deepEqual(loaded.events.map((e) => e.id), [profile.event.id])
  })

  it('keeps an idle socket that sends welshman\'s ["PING"] usable', async () => {
    const { relay } = ctx
    const client = await RawClient.open(relay)
    client.send(['PING'])
    client.send(['REQ', 'after-ping', { kinds: [RELAY_MEMBERS], limit: 1 }])
    const { end } = await client.history('after-ping')
    assert.equal(end[0], 'CLOSED') // this closed community wants AUTH first, but it still answers
    assert.match(end[2], /^auth-required: /)
    assert.equal(client.closeInfo, null)
    // welshman 0.11 probes a quiet socket with a REQ that matches nothing: EOSE at once, before
    // AUTH too (it would otherwise wait 3 s for an AUTH, and the probe gives up after 10 s).
    const probed = Date.now()
    client.send(['REQ', 'PING-1', { ids: [] }])
    const probe = await client.history('PING-1')
    assert.equal(probe.end[0], 'EOSE')
    assert.deepEqual(probe.events, [])
    assert.ok(Date.now() - probed < 1000, `the probe was answered after ${Date.now() - probed} ms`)
    await client.close()
    for (const user of [owner, alice]) user.close()
  })

  itStopsCleanly(ctx)
})
