// NIP-29 rooms across two pods sharing one database: joins racing through both processes all land
// in the room's one 39002, and a room made private on one pod is enforced on the other at once,
// for history and for live delivery; closing the community through comb-admin takes non-members
// out of its rooms, and the other pod serves the new 39002 at once.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { keys, sign } from '../e2e/harness.mjs'
import { admin, authed, eventually, privateRedis, readiness, startPods } from './pods.mjs'



const pTags = (ev) => new Set(ev.tags.filter((t) => t[0] === 'p').map((t) => t[1]))

/** Creates room `h` as Flotilla does: a 9007, then a 9002 with its flags (none: open, public). */
async function openRoom(ownerClient, owner, h) {
  assert.equal((await ownerClient.publish(sign(owner.sk, { kind: 9007, tags: [['h', h]] }))).message, '')
  const edit = await ownerClient.publish(sign(owner.sk, { kind: 9002, tags: [['h', h], ['name', h]] }))
  assert.equal(edit.ok, true, edit.message)
}

describe('rooms across two pods', () => {
  let redis, group, a, b
  const owner = keys()

  before(async () => {
    redis = await privateRedis()
    group = await startPods(2, () => ({ COMB_REDIS_URL: redis.url, COMB_OWNER_PUBKEY: owner.pk }))
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop(); await redis?.dispose() })

  it('lands 8 concurrent joins through two processes in the final 39002', async () => {
    const ownerOnA = await authed(a, owner)
    await openRoom(ownerOnA, owner, 'lobby')
    const joiners = Array.from({ length: 8 }, () => keys())
    const clients = await Promise.all(joiners.map((who, i) => authed(i % 2 ? b : a, who)))
    // Pod b learns of the room from the database's notification before its clients post.
    await eventually(async () => {
      const { end } = await clients[1].req(`probe-${Date.now()}`, { kinds: [39000], '#d': ['lobby'] })
      return end[0] === 'EOSE'
    }, 'pod b knows the room')
    // A room's state is written at most once a second, so 8 joins take about 8 seconds.
    const replies = await Promise.all(clients.map((client, i) => {
      const join = sign(joiners[i].sk, { kind: 9021, tags: [['h', 'lobby']] })
      client.send(['EVENT', join])
      return client.ok(join.id, 30000)
    }))
    for (const reply of replies) assert.match(reply.message, /^info: welcome/)
    for (const pod of [ownerOnA, clients[1]]) {
      const { events } = await pod.req(`members-${Math.random()}`, { kinds: [39002], '#d': ['lobby'] })
      assert.equal(events.length, 1, 'one live 39002')
      assert.deepEqual(pTags(events[0]), new Set([owner.pk, ...joiners.map((j) => j.pk)]))
    }
    for (const client of [ownerOnA, ...clients]) await client.close()
  })

  it('enforces a room made private on pod a for readers on pod b, history and live', async () => {
    const member = keys()
    const stranger = keys()
    const ownerOnA = await authed(a, owner)
    await openRoom(ownerOnA, owner, 'den')
    const memberOnB = await authed(b, member)
    await eventually(async () => {
      const reply = await memberOnB.publish(sign(member.sk, { kind: 9021, tags: [['h', 'den']] }))
      return reply.message.startsWith('info: welcome')
    }, 'the member joins through pod b')
    // Posted while the room is public; the stranger reads it on pod b until the room is private.
    const early = sign(member.sk, { kind: 9, content: 'said in public', tags: [['h', 'den']] })
    assert.equal((await memberOnB.publish(early)).message, '')
    const strangerOnB = await authed(b, stranger)
    const strangerSees = async () => {
      const sub = `den-${Date.now()}`
      const { events, end } = await strangerOnB.req(sub, { kinds: [9], '#h': ['den'] })
      strangerOnB.send(['CLOSE', sub])
      assert.equal(end[0], 'EOSE', 'an authenticated reader is answered, not CLOSED')
      return events.map((e) => e.id)
    }
    assert.deepEqual(await strangerSees(), [early.id])
    assert.match((await ownerOnA.publish(sign(owner.sk, { kind: 9002, tags: [['h', 'den'], ['name', 'Den'], ['private']] }))).message, /^$/)
    await eventually(async () => (await strangerSees()).length === 0, 'pod b hides a private room from a stranger')
    const { events: kept } = await memberOnB.req('den-member', { kinds: [9], '#h': ['den'] })
    assert.deepEqual(kept.map((e) => e.id), [early.id], 'the member still reads it on pod b')
    // Live: a broad subscription on pod b gets the member's post, the stranger's does not.
    strangerOnB.send(['REQ', 'all', { kinds: [9] }])
    assert.equal((await strangerOnB.history('all')).end[0], 'EOSE')
    memberOnB.send(['REQ', 'mine', { kinds: [9] }])
    assert.equal((await memberOnB.history('mine')).end[0], 'EOSE')
    const post = sign(owner.sk, { kind: 9, content: 'private words', tags: [['h', 'den']] })
    assert.equal((await ownerOnA.publish(post)).message, '')
    assert.equal((await memberOnB.live('mine', 10000)).id, post.id)
    const open = sign(owner.sk, { kind: 9, content: 'public words' })
    assert.equal((await ownerOnA.publish(open)).message, '')
    // The stranger's next live event is the public one: the private post was withheld.
    assert.equal((await strangerOnB.live('all', 10000)).id, open.id)
    for (const client of [ownerOnA, memberOnB, strangerOnB]) await client.close()
  })

  // Last: it closes the community.
  it('closing the community on comb-admin drops non-members from 39002, live and in REQ on pod b', async () => {
    const stranger = keys()
    const ownerOnA = await authed(a, owner)
    await openRoom(ownerOnA, owner, 'hall')
    const strangerOnB = await authed(b, stranger)
    await eventually(async () => {
      const reply = await strangerOnB.publish(sign(stranger.sk, { kind: 9021, tags: [['h', 'hall']] }))
      return reply.message.startsWith('info: welcome')
    }, 'a non-member joins the room of the open community through pod b')
    const ownerOnB = await authed(b, owner)
    const { events: before } = await ownerOnB.req('hall', { kinds: [39002], '#d': ['hall'] })
    assert.deepEqual(pTags(before[0]), new Set([owner.pk, stranger.pk]))
    await admin(group, 'community', 'set-access', 'hive.test', 'closed')
    // Live: pod b delivers the 39002 the switch wrote, from the database's notification.
    const live = await ownerOnB.live('hall', 10000)
    assert.equal(live.kind, 39002)
    assert.deepEqual(pTags(live), new Set([owner.pk]))
    const { events } = await ownerOnB.req(`after-${Date.now()}`, { kinds: [39002], '#d': ['hall'] })
    assert.equal(events.length, 1, 'one live 39002')
    assert.equal(events[0].id, live.id)
    for (const client of [ownerOnA, ownerOnB, strangerOnB]) await client.close()
  })
})
