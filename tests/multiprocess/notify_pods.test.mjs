// Events written by an access change reach every pod's subscribers whole, without Redis: pods
// load them by version from the database (noted_events), not from the notification's payload,
// so closing a community whose rooms are rewritten in 120 events delivers all 120 live on both
// pods, and a version whose notification never came is delivered when the pod catches up.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { UNBOUNDED_CLIENT_RATES, keys, sign } from '../e2e/harness.mjs'
import { admin, authed, eventually, readiness, startPods } from './pods.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))


const pTags = (ev) => ev.tags.filter((t) => t[0] === 'p').map((t) => t[1])
const dTag = (ev) => ev.tags.find((t) => t[0] === 'd')?.[1]

/** Every reply of `events` sent at once by `client`, waiting up to `ms` for each. */
async function publishAll(client, events, ms) {
  for (const ev of events) client.send(['EVENT', ev])
  const replies = []
  for (const ev of events) replies.push(await client.ok(ev.id, ms))
  return replies
}

describe('access-change events across two pods without Redis', () => {
  let group, a, b
  const owner = keys()
  const outsider = keys()
  const rooms = Array.from({ length: 60 }, (_, i) => `room-${i}`)

  before(async () => {
    group = await startPods(2, () => ({ COMB_OWNER_PUBKEY: owner.pk, ...UNBOUNDED_CLIENT_RATES }))
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop() })

  it('delivers all 120 room events of a close through comb-admin live on both pods', async () => {
    const ownerOnA = await authed(a, owner)
    for (const reply of await publishAll(ownerOnA, rooms.map((h) => sign(owner.sk, { kind: 9007, tags: [['h', h]] })), 10000))
      assert.equal(reply.ok, true, reply.message)
    // An outsider (not a community member) moderates every room: closing rewrites 39001 and 39002.
    const moderators = rooms.map((h) => sign(owner.sk, { kind: 9000, tags: [['h', h], ['p', outsider.pk, 'moderator']] }))
    for (const reply of await publishAll(ownerOnA, moderators, 30000)) assert.equal(reply.ok, true, reply.message)

    const watchers = [ownerOnA, await authed(b, owner)]
    for (const client of watchers) {
      const { events, end } = await client.req('rooms', { kinds: [39001, 39002], '#d': rooms })
      assert.equal(end[0], 'EOSE')
      assert.equal(events.length, 120)
      for (const ev of events) assert.ok(pTags(ev).includes(outsider.pk), 'the outsider is in every room')
    }
    await admin(group, 'community', 'set-access', 'hive.test', 'closed')

    for (const [i, client] of watchers.entries()) {
      const seen = new Map()
      while (seen.size < 120) {
        const ev = await client.live('rooms', 15000)
        const key = `${ev.kind}:${dTag(ev)}`
        assert.ok(!seen.has(key), `pod ${i}: ${key} delivered once`)
        assert.ok(!pTags(ev).includes(outsider.pk), `pod ${i}: ${key} without the outsider`)
        seen.set(key, ev.id)
      }
      await pause(300)
      assert.deepEqual(client.drain((f) => f[1] === 'rooms'), [], `pod ${i}: nothing more`)
      const { events } = await client.req(`after-${i}`, { kinds: [39001, 39002], '#d': rooms })
      assert.deepEqual(new Set(events.map((ev) => ev.id)), new Set(seen.values()), `pod ${i}: live is what REQ serves`)
    }
    assert.ok(await b.metric('comb_access_events_delivered_total') >= 120)
    for (const client of watchers) await client.close()
  })

  it('delivers the events of a version whose notification was lost, whatever a bogus notification says', async () => {
    const ownerOnA = await authed(a, owner)
    const ownerOnB = await authed(b, owner)
    assert.equal((await ownerOnB.req('notes', { kinds: [1] })).end[0], 'EOSE')
    // Without Redis or cluster links, a post on pod a does not reach pod b live by itself.
    const post = sign(owner.sk, { kind: 1, content: 'recorded, never notified' })
    assert.equal((await ownerOnA.publish(post)).ok, true)
    await pause(500)
    assert.deepEqual(ownerOnB.drain((f) => f[1] === 'notes'), [])
    // A notification naming a version that does not exist moves nothing.
    await a.sql(`SELECT pg_notify('comb_access', id || ' 9223372036854775807 +') FROM communities`)
    await pause(300)
    // A change that recorded the post under a new version and whose notification never came
    // (as one committed while pod b's LISTEN connection was down).
    await a.sql(`UPDATE communities SET state_version = state_version + 1
                   WHERE id = (SELECT community_id FROM events WHERE id = '\\x${post.id}');
                 INSERT INTO noted_events (community_id, version, position, event_id)
                   SELECT c.id, c.state_version, 1, e.id FROM communities c JOIN events e
                   ON e.community_id = c.id WHERE e.id = '\\x${post.id}'`)
    // The next change is notified; catching up from the version it saw, pod b delivers both.
    await admin(group, 'community', 'set-access', 'hive.test', 'open')
    assert.equal((await ownerOnB.live('notes', 5000)).id, post.id)
    await pause(300)
    assert.deepEqual(ownerOnB.drain((f) => f[1] === 'notes'), [], 'once')
    for (const client of [ownerOnA, ownerOnB]) await client.close()
  })
})
