// A community app built on welshman (the stack behind Flotilla) against comb: each user is a
// welshman Pool whose sockets answer AUTH by socket policy, and each request is what Flotilla
// sends: REQ 28935 for an invite, a join as {kind: 28934, tags: [["claim", code]]} (no claim in
// an open community), a leave as {kind: 28936, tags: []}. Every NIP-43 event the relay signs is
// checked against a schema of the current NIP-43 text.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { PublishStatus } from '@welshman/net'
import {
  RELAY_ADD_MEMBER, RELAY_INVITE, RELAY_JOIN, RELAY_LEAVE, RELAY_MEMBERS, RELAY_REMOVE_MEMBER,
  getPubkey, getTagValue, makeEvent, makeSecret,
} from '@welshman/util'
import { appUser } from './app_user.mjs'
import { httpGet, itStopsCleanly, withRelay } from './harness.mjs'

const RELAY_ROLE = 33534
const hex64 = /^[0-9a-f]{64}$/

const accepted = (result, detail) => {
  assert.equal(result.status, PublishStatus.Success, `expected success, got ${result.status}: ${result.detail}`)
  if (detail !== undefined) assert.equal(result.detail, detail)
}

const refused = (result, pattern) => {
  assert.equal(result.status, PublishStatus.Failure, `expected failure, got ${result.status}: ${result.detail}`)
  assert.match(result.detail, pattern)
}

// -- NIP-43 as its text stands: the shapes of the relay-signed events ----------------------

const dashTag = (tag) => tag.length === 1 && tag[0] === '-'

/** Per kind: which tags are required, which are allowed, and the shape of each. */
const nip43Schema = {
  [RELAY_MEMBERS]: {
    required: ['-'],
    tags: {
      '-': dashTag,
      // ["member", <hex pubkey>, ...<role ids>]
      member: (t) => t.length >= 2 && hex64.test(t[1]) && t.slice(2).every((r) => typeof r === 'string' && r.length > 0),
    },
  },
  [RELAY_ADD_MEMBER]: { required: ['-', 'p'], single: ['p'], tags: { '-': dashTag, p: (t) => t.length === 2 && hex64.test(t[1]) } },
  [RELAY_REMOVE_MEMBER]: { required: ['-', 'p'], single: ['p'], tags: { '-': dashTag, p: (t) => t.length === 2 && hex64.test(t[1]) } },
  [RELAY_ROLE]: {
    required: ['-', 'd'],
    single: ['d', 'label', 'description', 'color', 'order'],
    tags: {
      '-': dashTag,
      d: (t) => t.length === 2 && t[1].length > 0,
      label: (t) => t.length === 2,
      description: (t) => t.length === 2,
      color: (t) => t.length === 2 && /^\d+$/.test(t[1]) && Number(t[1]) <= 360,
      order: (t) => t.length === 2 && /^-?\d+$/.test(t[1]),
    },
  },
}

/** Asserts `event` has the NIP-43 shape of its kind and is signed by the relay (NIP-11 self). */
function assertNip43Shape(event, relaySelf) {
  const schema = nip43Schema[event.kind]
  assert.ok(schema, `no NIP-43 schema for kind ${event.kind}`)
  assert.equal(event.pubkey, relaySelf, `kind ${event.kind} is signed by the relay's self key`)
  for (const tag of event.tags) {
    const check = schema.tags[tag[0]]
    assert.ok(check, `kind ${event.kind}: tag ${JSON.stringify(tag)} is not in NIP-43`)
    assert.ok(check(tag), `kind ${event.kind}: malformed tag ${JSON.stringify(tag)}`)
  }
  for (const name of schema.required)
    assert.ok(event.tags.some((t) => t[0] === name), `kind ${event.kind} lacks its required ${name} tag`)
  for (const name of schema.single ?? [])
    assert.ok(event.tags.filter((t) => t[0] === name).length <= 1, `kind ${event.kind} repeats ${name}`)
}

/** The member tags of a 13534 as { pubkey: [role ids] }. */
const rolesOf = (list) => Object.fromEntries(list.tags.filter((t) => t[0] === 'member').map((t) => [t[1], t.slice(2)]))

async function relaySelf(relay) {
  const { body } = await httpGet(relay.port, '/', { Accept: 'application/nostr+json' })
  const info = JSON.parse(body)
  assert.ok(info.supported_nips.includes(43), 'NIP-11 lists NIP-43')
  return info.self
}

/** The one live 13534, checked against the schema, and every role it names has a 33534. */
async function memberList(user, relay, self) {
  const { events, closed } = await user.read(relay, [{ kinds: [RELAY_MEMBERS], authors: [self] }])
  assert.equal(closed, null)
  assert.equal(events.length, 1, 'one live member list')
  assertNip43Shape(events[0], self)
  return events[0]
}

describe('a Flotilla-style client in a closed community', () => {
  const ownerSecret = makeSecret()
  const ctx = withRelay({ COMB_ACCESS: 'closed', COMB_OWNER_PUBKEY: getPubkey(ownerSecret) })

  it('gets an invite, joins, sees the role-shaped list and its role definitions, posts, reads, leaves', async () => {
    const { relay } = ctx
    const self = await relaySelf(relay)
    assert.equal(self, relay.pubkey)
    const owner = appUser(ownerSecret)
    const newcomer = appUser()
    try {
      // The owner's app asks for an invite exactly as Flotilla's requestRelayClaim does.
      const invite = await owner.read(relay, [{ kinds: [RELAY_INVITE], limit: 1 }])
      assert.equal(invite.closed, null)
      assert.equal(invite.events.length, 1)
      assert.equal(invite.events[0].pubkey, self)
      const claim = getTagValue('claim', invite.events[0].tags)
      assert.match(claim, /^[0-9a-f]{32}$/)

      // Before joining the newcomer may look but not read.
      const before = await newcomer.read(relay, [{ kinds: [1] }])
      assert.equal(before.closed, 'restricted: you are not a member of this community')

      await newcomer.authenticated(relay)
      const join = await newcomer.publish(relay, makeEvent(RELAY_JOIN, { tags: [['claim', claim]] }))
      assert.ok(!join.event.tags.some((t) => t[0] === '-'), 'the app sends no - tag')
      accepted(join, `info: welcome to ${relay.url}!`)

      // The new 13534: plain members by key alone, the owner with the owner role id.
      const list = await memberList(owner, relay, self)
      assert.deepEqual(rolesOf(list), { [owner.pk]: ['owner'], [newcomer.pk]: [] })
      assert.deepEqual(list.tags.find((t) => t[1] === newcomer.pk), ['member', newcomer.pk])
      const roles = await newcomer.read(relay, [{ kinds: [RELAY_ROLE], authors: [self] }])
      assert.equal(roles.closed, null)
      assert.deepEqual(roles.events.map((e) => getTagValue('d', e.tags)), ['owner'])
      for (const role of roles.events) assertNip43Shape(role, self)
      assert.equal(getTagValue('label', roles.events[0].tags), 'Owner')
      const added = await owner.read(relay, [{ kinds: [RELAY_ADD_MEMBER], '#p': [newcomer.pk] }])
      assert.equal(added.events.length, 1)
      assertNip43Shape(added.events[0], self)

      // A second join is a duplicate; the same join event again changes nothing either.
      accepted(await newcomer.publish(relay, makeEvent(RELAY_JOIN, { tags: [['claim', claim]], created_at: join.event.created_at + 1 })),
        'duplicate: you are already a member of this relay.')
      accepted(await newcomer.publishSigned(relay, join.event), 'duplicate: you are already a member of this relay.')

      // Members post and read.
      const note = await newcomer.publish(relay, makeEvent(1, { content: 'hello from a welshman app' }))
      accepted(note, '')
      const feed = await owner.read(relay, [{ kinds: [1], authors: [newcomer.pk] }])
      assert.deepEqual(feed.events.map((e) => e.id), [note.event.id])

      // Leaving as Flotilla does: kind 28936, no tags.
      const leave = await newcomer.publish(relay, makeEvent(RELAY_LEAVE))
      assert.deepEqual(leave.event.tags, [])
      accepted(leave, 'info: you have left this community')
      const after = await newcomer.read(relay, [{ kinds: [1] }])
      assert.equal(after.closed, 'restricted: you are not a member of this community')
      refused(await newcomer.publish(relay, makeEvent(1, { content: 'still here?' })), /^restricted: /)

      const finalList = await memberList(owner, relay, self)
      assert.deepEqual(rolesOf(finalList), { [owner.pk]: ['owner'] })
      const removed = await owner.read(relay, [{ kinds: [RELAY_REMOVE_MEMBER], '#p': [newcomer.pk] }])
      assert.equal(removed.events.length, 1)
      assertNip43Shape(removed.events[0], self)

      // The leave replayed after a new join (say, through another pod) removes nobody.
      const invite2 = await owner.read(relay, [{ kinds: [RELAY_INVITE], limit: 1 }])
      accepted(await newcomer.publish(relay, makeEvent(RELAY_JOIN, { tags: [['claim', getTagValue('claim', invite2.events[0].tags)]] })),
        `info: welcome to ${relay.url}!`)
      accepted(await newcomer.publishSigned(relay, leave.event), 'duplicate: this request was already processed')
      assert.deepEqual(Object.keys(rolesOf(await memberList(owner, relay, self))).sort(), [owner.pk, newcomer.pk].sort())
    } finally {
      owner.close()
      newcomer.close()
    }
  })

  it('writes an admin role definition with the first list naming an admin', async () => {
    const { relay } = ctx
    const self = relay.pubkey
    const owner = appUser(ownerSecret)
    const helper = appUser()
    try {
      const add = await owner.publish(relay, makeEvent(9030, { tags: [['p', helper.pk], ['role', 'admin'], ['relay', relay.url]] }))
      accepted(add, 'info: member added')
      const list = await memberList(owner, relay, self)
      assert.deepEqual(rolesOf(list)[helper.pk], ['admin'])
      const roles = await helper.read(relay, [{ kinds: [RELAY_ROLE], authors: [self] }])
      assert.deepEqual(roles.events.map((e) => getTagValue('d', e.tags)).sort(), ['admin', 'owner'])
      for (const role of roles.events) assertNip43Shape(role, self)
      const admin = roles.events.find((e) => getTagValue('d', e.tags) === 'admin')
      assert.equal(getTagValue('label', admin.tags), 'Admin')
      assert.ok(admin.created_at <= list.created_at)
      // The same command again is not applied twice; one naming another community is refused.
      accepted(await owner.publishSigned(relay, add.event), 'duplicate: this request was already processed')
      refused(await owner.publish(relay, makeEvent(9031, { tags: [['p', helper.pk], ['relay', 'wss://elsewhere.example']] })),
        /^invalid: the relay tag names another community/)
      refused(await owner.publish(relay, makeEvent(9031, { tags: [['p', helper.pk]] })), /^invalid: a relay tag/)
      // Clients may not publish role definitions.
      refused(await owner.publish(relay, makeEvent(RELAY_ROLE, { tags: [['-'], ['d', 'king'], ['label', 'King']] })),
        /^restricted: only the relay may publish kind 33534/)
    } finally {
      owner.close()
      helper.close()
    }
  })

  it("refuses a member's connection publishing a non-member's event", async () => {
    const { relay } = ctx
    const owner = appUser(ownerSecret)
    const stranger = appUser()
    try {
      const foreign = await stranger.signer.sign(makeEvent(1, { content: 'carried by a member' }))
      refused(await owner.publishSigned(relay, foreign), /^restricted: the author of this event is not a member/)
      const found = await owner.read(relay, [{ ids: [foreign.id] }])
      assert.equal(found.events.length, 0)
      // And nobody sends a join on someone else's behalf.
      const join = await stranger.signer.sign(makeEvent(RELAY_JOIN, { tags: [['claim', 'x']] }))
      refused(await owner.publishSigned(relay, join), /^restricted: this request may only be sent by its author/)
    } finally {
      owner.close()
      stranger.close()
    }
  })

  itStopsCleanly(ctx)
})

describe('a Flotilla-style client in an open community', () => {
  const ctx = withRelay({})

  it('joins with no claim (or an empty one), posts, reads and leaves', async () => {
    const { relay } = ctx
    const self = await relaySelf(relay)
    const first = appUser()
    const second = appUser()
    try {
      // Looking first, as an app does when it opens a space; AUTH happens by socket policy.
      assert.equal((await first.read(relay, [{ kinds: [RELAY_MEMBERS] }])).closed, null)
      assert.equal((await second.read(relay, [{ kinds: [RELAY_MEMBERS] }])).closed, null)
      await first.authenticated(relay)
      await second.authenticated(relay)
      accepted(await first.publish(relay, makeEvent(RELAY_JOIN)), `info: welcome to ${relay.url}!`)
      accepted(await second.publish(relay, makeEvent(RELAY_JOIN, { tags: [['claim', '']] })), `info: welcome to ${relay.url}!`)
      const list = await memberList(first, relay, self)
      assert.deepEqual(rolesOf(list), { [first.pk]: [], [second.pk]: [] })
      // No role is used, so none is defined.
      assert.equal((await first.read(relay, [{ kinds: [RELAY_ROLE] }])).events.length, 0)
      const note = await first.publish(relay, makeEvent(1, { content: 'open hello' }))
      accepted(note, '')
      assert.deepEqual((await second.read(relay, [{ ids: [note.event.id] }])).events.map((e) => e.id), [note.event.id])
      accepted(await first.publish(relay, makeEvent(RELAY_LEAVE)), 'info: you have left this community')
      assert.deepEqual(rolesOf(await memberList(second, relay, self)), { [second.pk]: [] })
    } finally {
      first.close()
      second.close()
    }
  })

  it('adds a visitor whose join goes out as the space opens, before AUTH', async () => {
    // Flotilla's space layout publishes the 28934 as it mounts (deriveRelayAuthError); welshman
    // sends a join without waiting for AUTH, never again, and hides an auth-required refusal.
    const { relay } = ctx
    const self = await relaySelf(relay)
    const visitor = appUser()
    try {
      accepted(await visitor.publish(relay, makeEvent(RELAY_JOIN)), `info: welcome to ${relay.url}!`)
      assert.ok(visitor.pk in rolesOf(await memberList(visitor, relay, self)))
    } finally {
      visitor.close()
    }
  })

  it('ends every request a member sent as the space opened, while its AUTH was under way', async () => {
    // Flotilla sends a space's requests as the socket opens, three per room; welshman drops each
    // EOSE that arrives while it authenticates and, after the OK, sends again only its last 51
    // messages: the others ended only when their page gave up.
    const { relay } = ctx
    const member = appUser(makeSecret(), { authDelayMs: 400 })
    try {
      const started = Date.now()
      const pages = []
      for (let i = 0; i < 80; i++) pages.push(member.ended(relay, [{ kinds: [1], '#t': [`room-${i}`], limit: 20 }], 6000))
      await member.authenticated(relay)
      const ended = await Promise.all(pages)
      assert.deepEqual(ended.filter((eosed) => !eosed).length, 0, 'requests never ended')
      assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`)
    } finally {
      member.close()
    }
  })

  it('takes joins and leaves only from their authenticated author', async () => {
    const { relay } = ctx
    const someone = appUser()
    const other = appUser()
    try {
      assert.equal((await someone.read(relay, [{ kinds: [1], limit: 1 }])).closed, null)
      const join = await other.signer.sign(makeEvent(RELAY_JOIN))
      refused(await someone.publishSigned(relay, join), /^restricted: this request may only be sent by its author/)
    } finally {
      someone.close()
      other.close()
    }
  })

  itStopsCleanly(ctx)
})
