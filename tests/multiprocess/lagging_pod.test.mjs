// The bridge against a pod that lags behind the database and against replays:
// - a pod whose reload of a removal is stuck (a lock its read waits for) holds bridged events of
//   the community until it has the removal, so the member the origin already removed never gets
//   one, and the remaining members get it once the pod catches up; one that waited too long is
//   dropped from the hold and filled from Postgres again, under the same rule;
// - REQs and COUNTs a pod reads after a removal it has not loaded wait until it has, so the
//   removed member reads nothing there and the others read all;
// - a captured envelope, published again within the skew minute after the pod restarted (its
//   memory of envelopes empty), is refused and counted.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { RawClient, keys, sign, now, startRelay } from '../e2e/harness.mjs'
import { admin, authed, clusterSecret, envelope, eventually, memberReading, privateRedis, readiness, stallReloads,
  startPods, stopCleanly } from './pods.mjs'

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** PUBLISH on the bridge channel with redis-cli, as anyone who can reach Redis could. */
function publish(redis, payload) {
  return new Promise((resolve) => execFile('redis-cli', ['-p', String(redis.port), 'PUBLISH', 'comb:events',
    payload], { timeout: 20000 }, (error, stdout) => resolve(error ? '' : stdout.trim())))
}

const eventsOf = (client, sub) => client.inbox.filter((f) => f[0] === 'EVENT' && f[1] === sub).map((f) => f[2].id)

for (const transport of ['redis', 'cluster links']) describe(`a pod that has not applied a removal yet (${transport})`, () => {
  let redis, group, a, b
  const owner = keys()

  before(async () => {
    const common = { COMB_OWNER_PUBKEY: owner.pk, COMB_ACCESS: 'closed' }
    if (transport === 'redis') {
      redis = await privateRedis()
      group = await startPods(2, () => ({ ...common, COMB_REDIS_URL: redis.url }))
    } else {
      group = await startPods(2, (i, ports) => ({ ...common, COMB_CLUSTER_LISTEN: `127.0.0.1:${ports[i]}`,
        COMB_CLUSTER_PEERS: `127.0.0.1:${ports[1 - i]}` }), { clusterLinks: true })
    }
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready', 20000)
  })
  after(async () => { await group?.stop(); await redis?.dispose() })

  const memberReadingOnB = (who, ownerOnA) => memberReading(b, who, ownerOnA, a, owner)

  it('never delivers a bridged event to the member the origin removed, and delivers it to the others', async () => {
    const ownerOnA = await authed(a, owner)
    const removed = keys()
    const staying = keys()
    const removedOnB = await memberReadingOnB(removed, ownerOnA)
    const stayingOnB = await memberReadingOnB(staying, ownerOnA)
    const heldBefore = await b.metric('comb_bridge_held_total')

    // Pod b cannot finish reading the community from Postgres for 2.5 s (as with a lagging
    // LISTEN connection); pod a removes the member and posts right away.
    const { released } = await stallReloads(a, 2500)
    assert.equal((await ownerOnA.publish(sign(owner.sk, { kind: 9031, tags: [['p', removed.pk], ['relay', a.url]] }))).message,
      'info: member removed')
    const note = sign(owner.sk, { content: 'after the removal, posted on pod a' })
    assert.equal((await ownerOnA.publish(note)).ok, true)

    // The staying member gets it once pod b has caught up; the removed one never does.
    assert.equal((await stayingOnB.live('feed', 10000)).id, note.id)
    await released
    const closed = await removedOnB.take((f) => f[0] === 'CLOSED' && f[1] === 'feed', 'CLOSED feed on pod b', 10000)
    assert.equal(closed[2], 'restricted: you are no longer a member of this community')
    await pause(500)
    assert.deepEqual(eventsOf(removedOnB, 'feed'), [], 'the removed member never got the note on pod b')
    assert.ok((await b.metric('comb_bridge_held_total')) > heldBefore, 'pod b held the note')
    assert.equal(await b.metric('comb_bridge_holding'), 0)
    assert.equal(await b.metric('comb_bridge_hold_dropped_total'), 0)
    for (const client of [ownerOnA, removedOnB, stayingOnB]) await client.close()
  })

  it('holds what a pod stores after a removal it has not loaded yet, there and on the other pods, until each has it', async () => {
    const ownerOnA = await authed(a, owner)
    const removed = keys()
    const staying = keys()
    const removedOnB = await memberReadingOnB(removed, ownerOnA)
    const stayingOnB = await memberReadingOnB(staying, ownerOnA)
    const removedOnA = await authed(a, removed)
    assert.equal((await removedOnA.req('feed', { kinds: [1], since: now() })).end[0], 'EOSE')
    const ownerOnB = await authed(b, owner)
    const awaitedBefore = await b.metric('comb_events_awaited_total')

    // Neither pod can reload the community; the operator removes the member in Postgres. Pod b
    // stores the owner's note after the removal committed, with both pods' caches still before it.
    const { released } = await stallReloads(a, 2500)
    await admin(group, 'member', 'remove', 'hive.test', removed.pk)
    const note = sign(owner.sk, { content: 'stored on pod b after a removal neither pod has loaded' })
    assert.equal((await ownerOnB.publish(note)).ok, true)

    // Each pod delivers it once it holds the removal: to the staying member, never to the
    // removed one (pod b's own fan-out included).
    assert.equal((await stayingOnB.live('feed', 10000)).id, note.id)
    await released
    for (const [client, pod] of [[removedOnA, 'a'], [removedOnB, 'b']]) {
      const closed = await client.take((f) => f[0] === 'CLOSED' && f[1] === 'feed', `CLOSED feed on pod ${pod}`, 10000)
      assert.equal(closed[2], 'restricted: you are no longer a member of this community')
    }
    await pause(500)
    assert.deepEqual(eventsOf(removedOnA, 'feed'), [], 'the removed member never got the note on pod a')
    assert.deepEqual(eventsOf(removedOnB, 'feed'), [], 'the removed member never got the note on pod b')
    assert.ok((await b.metric('comb_events_awaited_total')) > awaitedBefore, 'pod b held its own note')
    assert.equal(await b.metric('comb_bridge_hold_dropped_total'), 0)
    for (const client of [ownerOnA, ownerOnB, removedOnA, removedOnB, stayingOnB]) await client.close()
  })

  it('refuses, and never stores, what a removed member posts on pod b before pod b has the removal', async () => {
    const ownerOnA = await authed(a, owner)
    const removed = keys()
    const removedOnB = await memberReadingOnB(removed, ownerOnA)
    // Pod b's cache still lists the member while its reload waits; the database does not.
    const { released } = await stallReloads(a, 2500)
    assert.equal((await ownerOnA.publish(sign(owner.sk, { kind: 9031, tags: [['p', removed.pk], ['relay', a.url]] }))).message,
      'info: member removed')
    const post = sign(removed.sk, { content: 'posted on pod b after the removal' })
    const reply = await removedOnB.publish(post)
    assert.equal(reply.ok, false)
    assert.equal(reply.message, 'restricted: the author of this event is not a member of this community')
    await released
    assert.equal((await b.sql(`SELECT count(*) FROM events WHERE id = '\\x${post.id}'::bytea`)).trim(), '0')
    for (const client of [ownerOnA, removedOnB]) await client.close()
  })

  it('answers no REQ or COUNT pod b read after a removal it has not loaded, and the others once it has', async () => {
    const ownerOnA = await authed(a, owner)
    const removed = keys()
    const staying = keys()
    const removedOnB = await memberReadingOnB(removed, ownerOnA)
    const stayingOnB = await memberReadingOnB(staying, ownerOnA)
    const note = sign(owner.sk, { content: 'history the removed member may no longer read' })
    assert.equal((await ownerOnA.publish(note)).ok, true)
    const awaitedBefore = await b.metric('comb_replies_awaited_total')

    // Pod b still lists the member while its reload waits, so the REQ and COUNT pass its checks;
    // their rows come from a database that has the removal.
    const { released } = await stallReloads(a, 2500)
    assert.equal((await ownerOnA.publish(sign(owner.sk, { kind: 9031, tags: [['p', removed.pk], ['relay', a.url]] }))).message,
      'info: member removed')
    removedOnB.send(['REQ', 'again', { kinds: [1], limit: 20 }])
    removedOnB.send(['COUNT', 'how-many', { kinds: [1] }])
    stayingOnB.send(['REQ', 'mine', { kinds: [1], limit: 20 }])

    const again = await removedOnB.history('again', 10000)
    assert.deepEqual(again.events.map((e) => e.id), [], 'the removed member read no history on pod b')
    assert.equal(again.end[0], 'CLOSED')
    assert.match(again.end[2], /^restricted: /)
    const counted = await removedOnB.take((f) => ['COUNT', 'CLOSED'].includes(f[0]) && f[1] === 'how-many',
      'the answer to the COUNT', 10000)
    assert.equal(counted[0], 'CLOSED')
    assert.match(counted[2], /^restricted: /)
    const mine = await stayingOnB.history('mine', 10000)
    assert.equal(mine.end[0], 'EOSE')
    assert.ok(mine.events.some((e) => e.id === note.id), 'the staying member read it once pod b caught up')
    assert.ok((await b.metric('comb_replies_awaited_total')) > awaitedBefore, 'pod b held the replies')
    assert.equal(await b.metric('comb_replies_awaited_too_long_total'), 0)
    await released
    for (const client of [ownerOnA, removedOnB, stayingOnB]) await client.close()
  })

  it('withholds on pod a the ephemeral events pod b still admits from the member pod a removed', async () => {
    const ownerOnA = await authed(a, owner)
    const removed = keys()
    const staying = keys()
    const removedOnB = await memberReadingOnB(removed, ownerOnA)
    const stayingOnB = await memberReadingOnB(staying, ownerOnA)
    const readerOnA = await authed(a, owner)
    assert.equal((await readerOnA.req('typing', { kinds: [20001] })).end[0], 'EOSE')
    const withheldBefore = await a.metric('comb_bridge_withheld_total')

    // Pod b cannot reload the community, so it still holds the removed member as one: an
    // ephemeral event never meets the database, and pod b admits and bridges it.
    const { released } = await stallReloads(a, 2500)
    assert.equal((await ownerOnA.publish(sign(owner.sk, { kind: 9031, tags: [['p', removed.pk], ['relay', a.url]] }))).message,
      'info: member removed')
    const fromRemoved = sign(removed.sk, { kind: 20001, content: 'typing after the removal' })
    assert.deepEqual(await removedOnB.publish(fromRemoved), { ok: true, message: '' })
    const fromStaying = sign(staying.sk, { kind: 20001, content: 'typing, still a member' })
    assert.deepEqual(await stayingOnB.publish(fromStaying), { ok: true, message: '' })

    // Pod a holds the removal: it delivers the member's and withholds the removed one's.
    assert.equal((await readerOnA.live('typing', 10000)).id, fromStaying.id)
    await eventually(async () => (await a.metric('comb_bridge_withheld_total')) > withheldBefore,
      'pod a withheld the removed member\'s event', 10000)
    await released
    await pause(300)
    assert.deepEqual(eventsOf(readerOnA, 'typing'), [], 'nothing else reached the reader on pod a')
    for (const client of [ownerOnA, removedOnB, stayingOnB, readerOnA]) await client.close()
  })

  it('drops (and counts) what waits longer than it may, and fills it from Postgres once caught up, never to the removed member', async () => {
    const ownerOnA = await authed(a, owner)
    const removed = keys()
    const staying = keys()
    const removedOnB = await memberReadingOnB(removed, ownerOnA)
    const stayingOnB = await memberReadingOnB(staying, ownerOnA)
    const droppedBefore = await b.metric('comb_bridge_hold_dropped_total')
    const retriesBefore = await b.metric('comb_bridge_fill_retries_total')

    const { released } = await stallReloads(a, 7000) // longer than the 5 s a held event may wait
    assert.equal((await ownerOnA.publish(sign(owner.sk, { kind: 9031, tags: [['p', removed.pk], ['relay', a.url]] }))).message,
      'info: member removed')
    const note = sign(owner.sk, { content: 'posted while pod b is cut off from the removal' })
    assert.equal((await ownerOnA.publish(note)).ok, true)
    await eventually(async () => (await b.metric('comb_bridge_hold_dropped_total')) > droppedBefore,
      'pod b dropped the held note', 10000)
    await released
    await removedOnB.take((f) => f[0] === 'CLOSED' && f[1] === 'feed', 'CLOSED feed on pod b', 10000)
    // Its origin stored it: pod b asks Postgres for it again, and delivers it once it has the
    // removal (the removed member's subscription is closed by then).
    assert.equal((await stayingOnB.live('feed', 15000)).id, note.id, 'filled again once pod b caught up')
    assert.ok((await b.metric('comb_bridge_fill_retries_total')) > retriesBefore, 'a fill asked again')
    await pause(500)
    assert.deepEqual(eventsOf(removedOnB, 'feed'), [], 'the removed member never got the note on pod b')
    assert.deepEqual(eventsOf(stayingOnB, 'feed'), [], 'once')
    // And later events flow again.
    const later = sign(owner.sk, { content: 'after pod b caught up' })
    assert.equal((await ownerOnA.publish(later)).ok, true)
    assert.equal((await stayingOnB.live('feed', 10000)).id, later.id)
    for (const client of [ownerOnA, removedOnB, stayingOnB]) await client.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})

describe('a captured envelope replayed after the receiving pod restarted', () => {
  let redis, group, a

  before(async () => {
    redis = await privateRedis()
    group = await startPods(2, () => ({ COMB_REDIS_URL: redis.url }))
    ;[a] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop(); await redis?.dispose() })

  it('is refused and counted, while envelopes sent after the restart pass', async () => {
    const watcher = await RawClient.open(a)
    await watcher.req('notes', { kinds: [1], since: now() - 60 })
    const captured = envelope(sign(keys().sk, { content: 'said once, within the minute' }), Date.now())
    assert.equal(await publish(redis, captured), '2')
    await watcher.live('notes', 10000)
    // Published again while pod a still remembers it: dropped as already received.
    assert.equal(await publish(redis, captured), '2')
    await pause(300)
    assert.equal(eventsOf(watcher, 'notes').length, 0, 'delivered once before the restart')
    await watcher.close()

    // Pod a restarts: same database and secret; an empty memory of envelopes.
    await a.stop()
    group.pods[0] = a = await startRelay({ COMB_PUBLIC_URL: 'ws://hive.test',
      COMB_NODE_ID: 'pod-0-again', COMB_RELAY_KEY_FILE: group.keyFile, COMB_CLUSTER_SECRET: clusterSecret,
      COMB_REDIS_URL: redis.url }, { database: group.database })
    await eventually(async () => (await readiness(a)) === 200, 'pod a ready again')
    const again = await RawClient.open(a)
    await again.req('notes', { kinds: [1], since: now() - 60 })
    const replaysBefore = await a.metric('comb_bridge_replays_total')
    assert.equal(await publish(redis, captured), '2')
    const fresh = sign(keys().sk, { content: 'enveloped after the restart' })
    assert.equal(await publish(redis, envelope(fresh, Date.now())), '2')
    assert.equal((await again.live('notes', 10000)).id, fresh.id)
    await pause(300)
    assert.deepEqual(eventsOf(again, 'notes'), [], 'the captured envelope is not delivered again')
    assert.equal(await a.metric('comb_bridge_replays_total'), replaysBefore + 1)
    assert.match(a.log(), /envelope sent before this pod started/)
    await again.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})
