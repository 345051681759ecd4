// NIP-43 across pods: joins racing through two processes all land in the one list, a member
// removed on one pod loses live access on another at once, and a request processed on one pod
// changes nothing when replayed to the other.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { RawClient, finalizeEvent, keys, sign, now } from '../e2e/harness.mjs'
import { authed, eventually, privateRedis, readiness, startPods, stopCleanly } from './pods.mjs'


const membersOf = (list) => new Set(list.tags.filter((t) => t[0] === 'member').map((t) => t[1]))

describe('membership across two pods', () => {
  let redis, group, a, b
  const owner = keys()

  before(async () => {
    redis = await privateRedis()
    group = await startPods(2, () => ({ COMB_REDIS_URL: redis.url, COMB_OWNER_PUBKEY: owner.pk,
      COMB_ACCESS: 'closed' }))
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop(); await redis?.dispose() })

  it('lands 8 concurrent joins through two processes in the final list', async () => {
    const ownerOnA = await authed(a, owner)
    const invite = await ownerOnA.req('invite', { kinds: [28935] })
    const ownerOnB = await authed(b, owner)
    const code = invite.events[0].tags.find((t) => t[0] === 'claim')[1]
    // One code per joiner, as a relay run with single-use codes (COMB_INVITE_USES=1) needs.
    const codes = [code]
    for (let i = 1; i < 8; i++) {
      const pod = i % 2 ? ownerOnB : ownerOnA
      const more = await pod.req(`invite-${i}`, { kinds: [28935] })
      codes.push(more.events[0].tags.find((t) => t[0] === 'claim')[1])
    }
    const joiners = Array.from({ length: 8 }, () => keys())
    const clients = await Promise.all(joiners.map((who, i) => authed(i % 2 ? b : a, who)))
    const replies = await Promise.all(clients.map((client, i) =>
      client.publish(sign(joiners[i].sk, { kind: 28934, tags: [['-'], ['claim', codes[i]]] }))))
    for (const reply of replies) assert.match(reply.message, /^info: welcome/)
    const { events } = await ownerOnA.req('list', { kinds: [13534] })
    assert.equal(events.length, 1, 'one live list')
    assert.deepEqual(membersOf(events[0]), new Set([owner.pk, ...joiners.map((j) => j.pk)]))
    for (const client of [ownerOnA, ownerOnB, ...clients]) await client.close()
  })

  it('revokes on pod a a member removed on pod b', async () => {
    const member = keys()
    const ownerOnB = await authed(b, owner)
    assert.equal((await ownerOnB.publish(sign(owner.sk, { kind: 9030, tags: [['p', member.pk], ['relay', b.url]] }))).message,
      'info: member added')
    const onA = await authed(a, member)
    // Pod a learns of the new member from pod b's list, through Redis.
    await eventually(async () => {
      onA.send(['REQ', 'probe', { kinds: [1], limit: 1 }])
      const { end } = await onA.history('probe')
      return end[0] === 'EOSE'
    }, 'the member may read on pod a')
    onA.send(['REQ', 'feed', { kinds: [1] }])
    assert.equal((await onA.history('feed')).end[0], 'EOSE')

    assert.equal((await ownerOnB.publish(sign(owner.sk, { kind: 9031, tags: [['p', member.pk], ['relay', b.url]] }))).message,
      'info: member removed')
    const closed = await onA.take((f) => f[0] === 'CLOSED' && f[1] === 'feed', 'CLOSED feed on pod a', 10000)
    assert.equal(closed[2], 'restricted: you are no longer a member of this community')
    onA.send(['REQ', 'again', { kinds: [1] }])
    assert.deepEqual((await onA.history('again')).end,
      ['CLOSED', 'again', 'restricted: you are not a member of this community'])
    for (const client of [ownerOnB, onA]) await client.close()
  })

  it('remembers a processed join and leave across pods', async () => {
    const who = keys()
    const ownerOnA = await authed(a, owner)
    const invite = await ownerOnA.req('invite-replay', { kinds: [28935] })
    const code = invite.events[0].tags.find((t) => t[0] === 'claim')[1]
    const onA = await authed(a, who)
    const onB = await authed(b, who)
    // As the apps send them: no - tag.
    const join = sign(who.sk, { kind: 28934, tags: [['claim', code]] })
    assert.match((await onA.publish(join)).message, /^info: welcome/)
    const leave = sign(who.sk, { kind: 28936, tags: [] })
    assert.equal((await onA.publish(leave)).message, 'info: you have left this community')
    // The same join on pod b admits nobody and says why (a used code would say otherwise).
    assert.deepEqual(await onB.publish(join), { ok: true, message: 'duplicate: this request was already processed' })
    const { events } = await ownerOnA.req('list-after-replay', { kinds: [13534] })
    assert.ok(!membersOf(events[0]).has(who.pk), 'the replayed join admitted nobody')
    // Joined again with a new code; the old leave replayed on pod b removes nobody.
    const again = await ownerOnA.req('invite-again', { kinds: [28935] })
    const fresh = sign(who.sk, { kind: 28934, tags: [['claim', again.events[0].tags.find((t) => t[0] === 'claim')[1]]],
      created_at: join.created_at + 1 })
    assert.match((await onA.publish(fresh)).message, /^info: welcome/)
    await eventually(async () => {
      onB.send(['REQ', 'probe', { kinds: [1], limit: 1 }])
      return (await onB.history('probe')).end[0] === 'EOSE'
    }, 'pod b knows the member again')
    assert.deepEqual(await onB.publish(leave), { ok: true, message: 'duplicate: this request was already processed' })
    const { events: final } = await ownerOnA.req('list-final', { kinds: [13534] })
    assert.ok(membersOf(final[0]).has(who.pk), 'still a member after the replayed leave')
    for (const client of [ownerOnA, onA, onB]) await client.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})
