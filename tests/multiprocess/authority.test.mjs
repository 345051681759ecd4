// Postgres is the membership authority: whatever path changes membership or access (comb-admin
// on a pod without Redis, another pod while Redis is down, a pod whose LISTEN connection was
// killed), every pod enforces it within a second, and live subscribers see the new list and
// delta without Redis. Measured enforcement latencies are printed (docs/benchmarks.md).
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { RawClient, freePort, httpGet, keys, sign, now, startRelay } from '../e2e/harness.mjs'
import { admin, authed, clusterSecret, eventually, privateRedis, readiness, startPods, stopCleanly } from './pods.mjs'

const UNLIMITED_ADDRESS = { COMB_IP_REQUEST_RATE: '100000', COMB_IP_REQUEST_BURST: '100000',
  COMB_MAX_CONNECTIONS_PER_IP: '100000', COMB_IP_FRAME_RATE: '1000000', COMB_IP_FRAME_BURST: '1000000' }

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const latencies = []

/**
 * Milliseconds from `started` (taken when the change was acknowledged: comb-admin exited after
 * its commit, or the OK arrived) until `probe` holds (polled every 20 ms, at most `ms`).
 */
async function enforcedWithin(started, probe, what, ms = 1000) {
  const deadline = started + ms
  for (;;) {
    if (await probe()) {
      const took = Date.now() - started
      latencies.push(took)
      return took
    }
    if (Date.now() > deadline) throw new Error(`not enforced within ${ms} ms: ${what}`)
    await pause(20)
  }
}

/** Whether `who` may read on `pod` now (a fresh connection, AUTH, REQ). */
async function mayRead(pod, who) {
  const client = await authed(pod, who)
  try {
    const { end } = await client.req('probe', { kinds: [1], limit: 1 })
    return end[0] === 'EOSE'
  } finally {
    await client.close()
  }
}

const closedFrame = (client, sub) => () => client.inbox.some((f) => f[0] === 'CLOSED' && f[1] === sub)

/** Whether `pod` serves an anonymous reader now (a fresh connection, no AUTH, REQ). */
async function servesAnonymous(pod) {
  const probe = await RawClient.open(pod)
  const { end } = await probe.req('p', { kinds: [1], limit: 1 })
  await probe.close()
  return end[0] === 'EOSE'
}

/** Opens the community through comb-admin and waits until `pod` serves anonymous readers. */
async function openFor(group, pod) {
  await admin(group, 'community', 'set-access', 'hive.test', 'open')
  await eventually(() => servesAnonymous(pod), 'open for anonymous readers', 2000)
}

function percentile(values, p) {
  const sorted = [...values].sort((x, y) => x - y)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}

describe('one pod without Redis: comb-admin changes are enforced at once', () => {
  let group, pod
  const owner = keys()
  before(async () => {
    group = await startPods(1, () => ({ COMB_OWNER_PUBKEY: owner.pk, COMB_ACCESS: 'closed' }))
    ;[pod] = group.pods
    await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop() })

  it('admits on member add and revokes on member remove, live and new connections', async () => {
    const watcher = await authed(pod, owner)
    assert.equal((await watcher.req('lists', { kinds: [13534, 8000, 8001], since: now() })).end[0], 'EOSE')
    for (let round = 0; round < 10; round++) {
      const member = keys()
      await admin(group, 'member', 'add', 'hive.test', member.pk)
      let started = Date.now()
      await enforcedWithin(started, () => mayRead(pod, member), 'member add')
      const live = await authed(pod, member)
      assert.equal((await live.req('feed', { kinds: [1] })).end[0], 'EOSE')
      await admin(group, 'member', 'remove', 'hive.test', member.pk)
      started = Date.now()
      await enforcedWithin(started, closedFrame(live, 'feed'), 'member remove on a live subscription')
      assert.deepEqual(live.inbox.find((f) => f[0] === 'CLOSED'),
        ['CLOSED', 'feed', 'restricted: you are no longer a member of this community'])
      assert.equal(await mayRead(pod, member), false)
      await live.close()
    }
    // Without Redis, the subscriber still saw every list and delta live, lists in order. The
    // last removal's CLOSED may overtake its list and delta (both follow the same notification).
    const delivered = (kind) => watcher.inbox.filter((f) => f[0] === 'EVENT' && f[2].kind === kind).length
    await eventually(async () => delivered(13534) >= 20 && delivered(8001) >= 10, 'the last list and delta', 2000)
      .catch(() => {}) // the counts below say what is missing
    const seen = watcher.drain((f) => f[0] === 'EVENT').map((f) => f[2])
    const lists = seen.filter((e) => e.kind === 13534)
    assert.equal(lists.length, 20)
    for (let i = 1; i < lists.length; i++) assert.ok(lists[i].created_at > lists[i - 1].created_at)
    assert.equal(seen.filter((e) => e.kind === 8000).length, 10)
    assert.equal(seen.filter((e) => e.kind === 8001).length, 10)
    await watcher.close()
  })

  it('enforces set-role: a demoted admin can no longer invite', async () => {
    const helper = keys()
    await admin(group, 'member', 'add', 'hive.test', helper.pk, '--role', 'admin')
    const client = await authed(pod, helper)
    await eventually(async () => (await client.req(`i${Date.now()}`, { kinds: [28935] })).events.length === 1,
      'the admin may invite', 2000)
    await admin(group, 'member', 'set-role', 'hive.test', helper.pk, 'member')
    const started = Date.now()
    await enforcedWithin(started, async () => {
      const { end } = await client.req(`i${Date.now()}`, { kinds: [28935] })
      return end[0] === 'CLOSED'
    }, 'demotion')
    await client.close()
  })

  it('closes the community: anonymous connections end, members stay', async () => {
    await openFor(group, pod)
    const anonymous = await RawClient.open(pod)
    assert.equal((await anonymous.req('feed', { kinds: [1] })).end[0], 'EOSE')
    const ownerClient = await authed(pod, owner)
    assert.equal((await ownerClient.req('feed', { kinds: [1] })).end[0], 'EOSE')
    await admin(group, 'community', 'set-access', 'hive.test', 'closed')
    const started = Date.now()
    await enforcedWithin(started, () => anonymous.closeInfo !== null, 'anonymous connection ended')
    assert.equal(anonymous.closeInfo.code, 1008)
    const fresh = await RawClient.open(pod)
    assert.equal((await fresh.req('p', { kinds: [1] })).end[0], 'CLOSED')
    await fresh.close()
    assert.equal(ownerClient.closeInfo, null, 'the owner stays')
    await ownerClient.close()
  })

  it('closes the community to what a member\'s socket from before carries in', async () => {
    await openFor(group, pod)
    const { finalizeEvent } = await import('../e2e/harness.mjs')
    const client = await RawClient.open(pod)
    const challenge = await client.challenge()
    const authAs = (who) => client.auth(finalizeEvent({ kind: 22242, created_at: now(), content: '',
      tags: [['relay', pod.url], ['challenge', challenge]] }, who.sk))
    assert.deepEqual(await authAs(owner), { ok: true, message: '' })
    const outsider = keys()
    await admin(group, 'community', 'set-access', 'hive.test', 'closed')
    await eventually(async () => {
      const fresh = await RawClient.open(pod)
      try {
        const { end } = await fresh.req('p', { kinds: [1] })
        return end[0] === 'CLOSED'
      } catch (error) {
        // A probe opened just before the switch is ended by it, as every anonymous socket is.
        if (fresh.closeInfo?.code === 1008) return true
        throw error
      } finally {
        await fresh.close()
      }
    }, 'closed for new connections', 2000)
    // The owner's socket stays open, but carries no non-member's event in...
    const carried = await client.publish(sign(outsider.sk, { content: 'through the owner\'s socket' }))
    assert.equal(carried.ok, false)
    assert.match(carried.message, /^restricted: /)
    // ...nor lets another key authenticate on it (one key per connection) and join through it.
    assert.deepEqual(await authAs(outsider), { ok: false,
      message: 'restricted: this connection is authenticated as another key; open another connection for this one' })
    const join = await client.publish(sign(outsider.sk, { kind: 28934, tags: [] }))
    assert.equal(join.ok, false)
    assert.match(join.message, /^restricted: /)
    // On a socket of its own, it cannot join without an invite.
    const own = await RawClient.open(pod)
    assert.deepEqual(await own.auth(finalizeEvent({ kind: 22242, created_at: now(), content: '',
      tags: [['relay', pod.url], ['challenge', await own.challenge()]] }, outsider.sk)), { ok: true, message: '' })
    const ownJoin = await own.publish(sign(outsider.sk, { kind: 28934, tags: [] }))
    assert.equal(ownJoin.ok, false)
    assert.match(ownJoin.message, /^restricted: .*invite code/)
    await own.close()
    const members = await admin(group, 'member', 'list', 'hive.test')
    assert.ok(!members.includes(outsider.pk), members)
    await client.close()
  })

  it('follows a hand edit of the community row in psql within its version check', async () => {
    await openFor(group, pod)
    const anonymous = await RawClient.open(pod)
    assert.equal((await anonymous.req('feed', { kinds: [1] })).end[0], 'EOSE')
    // No comb-admin, no notification: only the row changes, as an operator's UPDATE does.
    await pod.sql("UPDATE communities SET access = 'closed' WHERE host = 'hive.test'")
    await eventually(() => anonymous.closeInfo !== null, 'anonymous connection ended after the edit', 2500)
    assert.equal(anonymous.closeInfo.code, 1008)
    const fresh = await RawClient.open(pod)
    assert.equal((await fresh.req('p', { kinds: [1] })).end[0], 'CLOSED')
    await fresh.close()
    await pod.sql("UPDATE communities SET access = 'open' WHERE host = 'hive.test'")
    await eventually(() => servesAnonymous(pod), 'open again for anonymous readers after the edit', 2500)
    await admin(group, 'community', 'set-access', 'hive.test', 'closed')
  })

  it('archives: live connections end and new ones are refused', async () => {
    const ownerClient = await authed(pod, owner)
    assert.equal((await ownerClient.req('feed', { kinds: [1] })).end[0], 'EOSE')
    await admin(group, 'community', 'archive', 'hive.test')
    const started = Date.now()
    await enforcedWithin(started, () => ownerClient.closeInfo !== null, 'archived community closes')
    await assert.rejects(RawClient.open(pod), /HTTP 403/)
    await admin(group, 'community', 'unarchive', 'hive.test')
    await eventually(async () => mayRead(pod, owner).catch(() => false), 'unarchived', 2000)
  })

  it('follows a database that went back to an older state (a restore, a failover)', async () => {
    const member = keys()
    const version = async () => Number(await pod.sql("SELECT state_version FROM communities WHERE host = 'hive.test'"))
    const before = await version()
    await admin(group, 'member', 'add', 'hive.test', member.pk)
    await eventually(() => mayRead(pod, member).catch(() => false), 'member admitted', 2000)
    const held = await version()
    assert.ok(held > before)
    // What a restore from a backup taken before the add leaves, or a standby promoted before it
    // received the add: the events the add wrote, its notes and the member's row gone, and the
    // older version, with no notification (session_replication_role = replica keeps the
    // triggers quiet).
    const hive = "(SELECT id FROM communities WHERE host = 'hive.test')"
    await pod.sql(`DELETE FROM events e USING noted_events n WHERE n.community_id = ${hive}`
      + ` AND n.version > ${before} AND e.community_id = n.community_id AND e.id = n.event_id`)
    await pod.sql("SET session_replication_role = replica;"
      + ` DELETE FROM noted_events WHERE community_id = ${hive} AND version > ${before};`
      + ` DELETE FROM members WHERE community_id = ${hive} AND pubkey = '\\x${member.pk}'::bytea;`
      + ` UPDATE communities SET state_version = ${before} WHERE host = 'hive.test'`)
    assert.equal(await version(), before)
    await eventually(async () => !(await mayRead(pod, member).catch(() => false)),
      'the member of the newer state no longer admitted', 3000)
    // The next change brings a version the pod had already reached before the database went back.
    await admin(group, 'member', 'add', 'hive.test', member.pk)
    assert.ok((await version()) <= held)
    await eventually(() => mayRead(pod, member).catch(() => false), 'admitted again by the next change', 2000)
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})

describe('two pods: access does not depend on Redis', () => {
  let redis, group, a, b
  const owner = keys()
  before(async () => {
    redis = await privateRedis()
    // The join load below comes from one address, far past the per-address defaults.
    group = await startPods(2, () => ({ COMB_REDIS_URL: redis.url, COMB_OWNER_PUBKEY: owner.pk,
      COMB_ACCESS: 'closed', ...UNLIMITED_ADDRESS }))
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop(); await redis?.dispose() })

  it('revokes on pod a a member removed through pod b while Redis is down', async () => {
    const member = keys()
    const ownerOnB = await authed(b, owner)
    assert.equal((await ownerOnB.publish(sign(owner.sk, { kind: 9030, tags: [['p', member.pk], ['relay', b.url]] }))).message,
      'info: member added')
    await eventually(() => mayRead(a, member), 'member admitted on pod a', 2000)
    const onA = await authed(a, member)
    assert.equal((await onA.req('feed', { kinds: [1] })).end[0], 'EOSE')
    await redis.stop()
    assert.equal((await ownerOnB.publish(sign(owner.sk, { kind: 9031, tags: [['p', member.pk], ['relay', b.url]] }))).message,
      'info: member removed')
    const started = Date.now()
    await enforcedWithin(started, closedFrame(onA, 'feed'), 'removal reaches pod a without Redis')
    assert.equal(await mayRead(a, member), false)
    await redis.start()
    await pause(1500) // Redis is back: nothing it re-sends brings the member back
    assert.equal(await mayRead(a, member), false)
    for (const client of [ownerOnB, onA]) await client.close()
  })

  it('is right again within a second after its LISTEN connection is killed', async () => {
    const member = keys()
    await admin(group, 'member', 'add', 'hive.test', member.pk)
    await eventually(() => mayRead(a, member), 'member admitted on pod a', 2000)
    const before = await a.metric('comb_access_reloads_total')
    await a.sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                 WHERE datname = current_database() AND query LIKE 'LISTEN%'`)
    // Changed while pod a may have no LISTEN connection: its reload on reconnect finds it.
    await admin(group, 'member', 'remove', 'hive.test', member.pk)
    await enforcedWithin(Date.now(), async () => !(await mayRead(a, member)), 'removal after a LISTEN kill', 2500)
    assert.ok(await a.metric('comb_access_reloads_total') > before)
    await eventually(async () => (await readiness(a)) === 200, 'pod a ready again', 3000)
  })

  it('keeps lists with the clock and in order under many joins over both pods', async () => {
    await admin(group, 'community', 'set-access', 'hive.test', 'open')
    const watchers = await Promise.all([authed(a, owner), authed(b, owner)])
    for (const w of watchers) assert.equal((await w.req('lists', { kinds: [13534], since: now() })).end[0], 'EOSE')
    // Bounded load: COMB_JOINS_PER_SECOND joins a second (default 60) for COMB_JOIN_SECONDS
    // seconds (default 4), alternating pods; docs/benchmarks.md records a heavier run.
    const rate = Number(process.env.COMB_JOINS_PER_SECOND ?? 60)
    const seconds = Number(process.env.COMB_JOIN_SECONDS ?? 4)
    const joiners = Array.from({ length: rate * seconds }, () => keys())
    const clients = []
    for (let i = 0; i < joiners.length; i += 50)
      clients.push(...await Promise.all(joiners.slice(i, i + 50).map((who, j) => authed((i + j) % 2 ? b : a, who))))
    const started = Date.now()
    const replies = []
    const pending = []
    for (let second = 0; second < seconds; second++) {
      const batch = clients.slice(second * rate, second * rate + rate)
      pending.push(...batch.map((client, k) => {
        const join = sign(joiners[second * rate + k].sk, { kind: 28934, tags: [['-']] })
        client.send(['EVENT', join])
        return client.ok(join.id, 20000)
      }))
      await pause(Math.max(0, started + (second + 1) * 1000 - Date.now()))
    }
    replies.push(...await Promise.all(pending))
    console.log(`${joiners.length} joins over two pods in ${Date.now() - started} ms`)
    for (const reply of replies) assert.match(reply.message, /^info: welcome/)
    const finished = now()
    await pause(2500)
    for (const w of watchers) {
      const lists = w.drain((f) => f[0] === 'EVENT').map((f) => f[2])
      assert.ok(lists.length > 0)
      for (let i = 1; i < lists.length; i++)
        assert.ok(lists[i].created_at > lists[i - 1].created_at, 'strictly increasing lists')
    }
    const { events } = await watchers[0].req('final', { kinds: [13534] })
    const names = new Set(events[0].tags.filter((t) => t[0] === 'member').map((t) => t[1]))
    for (const who of joiners) assert.ok(names.has(who.pk), 'the final list names every joiner')
    // The newest list keeps pace with the clock: written by the last join, within 2 s of it,
    // and never ahead of it by more than a second.
    assert.ok(events[0].created_at >= finished - 2, `list ${events[0].created_at}, joins done ${finished}`)
    assert.ok(events[0].created_at <= finished + 1, `list ${events[0].created_at}, joins done ${finished}`)
    for (const client of [...watchers, ...clients]) await client.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})

/** Whether `who` is refused on `pod` now: a fresh connection, AUTH, and a REQ answered CLOSED. */
async function refused(pod, who) {
  const client = await authed(pod, who)
  try {
    const { end } = await client.req('probe', { kinds: [1], limit: 1 })
    return end[0] === 'CLOSED' && /^restricted: /.test(end[2])
  } finally {
    await client.close()
  }
}

/** The env of a pod of `group` (the one startPods gave pod `i`), for starting it again (clients
 * name the public URL's host, so it listens on a fresh port: port 0). */
function podEnv(group, i, extra) {
  return { COMB_PUBLIC_URL: 'ws://hive.test', COMB_NODE_ID: `pod-${i}-again`,
    COMB_RELAY_KEY_FILE: group.keyFile, COMB_CLUSTER_SECRET: clusterSecret, ...extra }
}

describe('two pods linked by CAF cluster links: access does not depend on the link', () => {
  let group, a, b
  const owner = keys()
  const clusterPorts = []
  const common = { COMB_OWNER_PUBKEY: owner.pk, COMB_ACCESS: 'closed', ...UNLIMITED_ADDRESS }
  before(async () => {
    group = await startPods(2, (i, ports) => ({ ...common, COMB_CLUSTER_LISTEN: `127.0.0.1:${ports[i]}`,
      COMB_CLUSTER_PEERS: `127.0.0.1:${ports[1 - i]}` }), { clusterLinks: true })
    clusterPorts.push(...group.clusterPorts)
    ;[a, b] = group.pods
    for (const pod of group.pods)
      await eventually(async () => (await pod.metric('comb_cluster_peers_linked')) === 1, 'pods linked', 20000)
  })
  after(async () => { await group?.stop() })

  it('revokes on pod a a member removed through pod b while no link joins them', async () => {
    const member = keys()
    await admin(group, 'member', 'add', 'hive.test', member.pk)
    await eventually(() => mayRead(a, member), 'member admitted on pod a', 2000)
    const onA = await authed(a, member)
    assert.equal((await onA.req('feed', { kinds: [1] })).end[0], 'EOSE')
    // Pod b comes back on its own ports but with its only peer on a port nobody listens on, and
    // pod a's peer address (pod b's old cluster port) is dead: no CAF link can carry the change.
    await b.stop()
    const nobody = await freePort()
    group.pods[1] = b = await startRelay(podEnv(group, 1, { ...common,
      COMB_CLUSTER_LISTEN: '127.0.0.1:0', COMB_CLUSTER_PEERS: `127.0.0.1:${nobody}` }),
    { database: group.database })
    await eventually(async () => (await a.metric('comb_cluster_peers_linked')) === 0, 'pod a lost its link', 15000)
    assert.equal(await b.metric('comb_cluster_peers_linked'), 0)
    assert.equal(await mayRead(a, member), true, 'still a member before the change')
    const ownerOnB = await authed(b, owner)
    assert.equal((await ownerOnB.publish(sign(owner.sk, { kind: 9031, tags: [['p', member.pk], ['relay', b.url]] }))).message,
      'info: member removed')
    const started = Date.now()
    await enforcedWithin(started, closedFrame(onA, 'feed'), 'removal reaches pod a with no CAF link')
    assert.deepEqual(onA.inbox.find((f) => f[0] === 'CLOSED'),
      ['CLOSED', 'feed', 'restricted: you are no longer a member of this community'])
    await enforcedWithin(started, () => refused(a, member), 'new connection on pod a refused')
    // Refused as a former member, not because pod a (unready without its peer) refuses everyone.
    assert.equal(await mayRead(a, owner), true)
    assert.equal(await a.metric('comb_cluster_peers_linked'), 0, 'no link came up meanwhile')
    for (const client of [ownerOnB, onA]) await client.close()
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})

describe('a pod that restarts after membership changed while it was down', () => {
  let group, a, b
  const owner = keys()
  const common = { COMB_OWNER_PUBKEY: owner.pk, COMB_ACCESS: 'closed', ...UNLIMITED_ADDRESS }
  before(async () => {
    group = await startPods(2, () => common)
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop() })

  it('refuses the removed key and admits the added key within a second of being ready', async () => {
    const removed = keys()
    const added = keys()
    await admin(group, 'member', 'add', 'hive.test', removed.pk)
    // Pod a knew the old state before it went down.
    await eventually(() => mayRead(a, removed), 'removed-to-be admitted on pod a', 2000)
    assert.equal(await refused(a, added), true)
    const stopped = await a.stop()
    assert.deepEqual([stopped.code, stopped.signal, stopped.timedOut], [0, null, false])
    const ownerOnB = await authed(b, owner)
    assert.equal((await ownerOnB.publish(sign(owner.sk, { kind: 9031, tags: [['p', removed.pk], ['relay', b.url]] }))).message,
      'info: member removed')
    assert.equal((await ownerOnB.publish(sign(owner.sk, { kind: 9030, tags: [['p', added.pk], ['relay', b.url]] }))).message,
      'info: member added')
    await ownerOnB.close()
    // Same database, same relay key: pod a again.
    group.pods[0] = a = await startRelay(podEnv(group, 0, common), { database: group.database })
    await eventually(async () => (await readiness(a)) === 200, 'pod a ready again', 10000)
    const ready = Date.now()
    await enforcedWithin(ready, async () => (await refused(a, removed)) && (await mayRead(a, added)),
      'restarted pod a refuses the removed key and admits the added one')
    // And it stays right (no late reload of an older state).
    await pause(1000)
    assert.equal(await refused(a, removed), true)
    assert.equal(await mayRead(a, added), true)
  })

  it('stops cleanly', async () => {
    await stopCleanly(group)
    group = null
  })
})

describe('cross-posting between two communities of one pod', () => {
  let group, pod
  before(async () => {
    group = await startPods(1)
    ;[pod] = group.pods
    await admin(group, 'community', 'create', 'other.test', '--owner', keys().pk)
  })
  after(async () => { await group?.stop() })

  it('delivers one event published to both communities live in each', async () => {
    const home = await RawClient.open(pod)
    const away = await RawClient.open(pod, { headers: { Host: 'other.test' } })
    const author = keys()
    for (const c of [home, away]) assert.equal((await c.req('live', { authors: [author.pk] })).end[0], 'EOSE')
    const note = sign(author.sk, { content: 'cross-posted' })
    assert.equal((await home.publish(note)).ok, true)
    assert.equal((await away.publish(note)).ok, true)
    assert.equal((await home.live('live')).id, note.id)
    assert.equal((await away.live('live')).id, note.id)
    await home.close()
    await away.close()
  })

  it('gives a live 8000 in each community when one key joins both in one second', async () => {
    const joiner = keys()
    const homeWatch = await RawClient.open(pod)
    const awayWatch = await RawClient.open(pod, { headers: { Host: 'other.test' } })
    for (const c of [homeWatch, awayWatch])
      assert.equal((await c.req('adds', { kinds: [8000], '#p': [joiner.pk] })).end[0], 'EOSE')
    const home = await authed(pod, joiner)
    const away = await RawClient.open(pod, { headers: { Host: 'other.test' } })
    const challenge = await away.challenge()
    const { finalizeEvent } = await import('../e2e/harness.mjs')
    const auth = finalizeEvent({ kind: 22242, created_at: now(), content: '',
      tags: [['relay', 'ws://other.test'], ['challenge', challenge]] }, joiner.sk)
    assert.equal((await away.auth(auth)).ok, true)
    const second = now()
    const join = { kind: 28934, tags: [['-']], created_at: second }
    const replies = await Promise.all([home.publish(sign(joiner.sk, join)), away.publish(sign(joiner.sk, join))])
    for (const reply of replies) assert.match(reply.message, /^info: welcome/)
    const [h, w] = await Promise.all([homeWatch.live('adds'), awayWatch.live('adds')])
    assert.equal(h.tags.find((t) => t[0] === 'p')[1], joiner.pk)
    assert.equal(w.tags.find((t) => t[0] === 'p')[1], joiner.pk)
    for (const c of [homeWatch, awayWatch, home, away]) await c.close()
  })

  it('reports the enforcement latency', () => {
    if (latencies.length === 0) return
    console.log(`enforcement latency over ${latencies.length} changes: p50 ${percentile(latencies, 50)} ms,`
      + ` p99 ${percentile(latencies, 99)} ms, max ${Math.max(...latencies)} ms`)
  })
})

/** Runs pg_ctl on the test Postgres (COMB_TEST_PG_DIR), as its owner when we are root. */
function pgCtl(...args) {
  const bin = `${process.env.COMB_PG_BIN ?? '/usr/lib/postgresql/15/bin'}/pg_ctl`
  const [file, argv] = process.getuid() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args]
  return new Promise((resolve, reject) => execFile(file, argv, { timeout: 60000 },
    (error, stdout, stderr) => (error ? reject(new Error(`pg_ctl ${args.join(' ')}: ${stderr}`)) : resolve(stdout))))
}

describe('Postgres restarted under load', () => {
  const dir = process.env.COMB_TEST_PG_DIR
  let group, pod
  before(async () => {
    group = await startPods(1)
    ;[pod] = group.pods
    await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop() })

  it('goes unready while Postgres is away, recovers by itself, and loses no accepted event', { skip: !dir }, async () => {
    const port = new URL(process.env.COMB_TEST_DATABASE_URL).port
    const author = keys()
    const publisher = await RawClient.open(pod)
    const accepted = []
    let publishing = true
    const load = (async () => {
      while (publishing) {
        const note = sign(author.sk, { content: `note ${accepted.length} ${Math.random()}` })
        const reply = await publisher.publish(note).catch(() => ({ ok: false }))
        if (reply.ok) accepted.push(note.id)
        await pause(20)
      }
    })()
    const statuses = []
    let probing = true
    const probe = (async () => {
      while (probing) { statuses.push(await readiness(pod).catch(() => 0)); await pause(100) }
    })()
    await pause(500)
    await pgCtl('-D', `${dir}/data`, '-m', 'fast', '-w', 'stop')
    try {
      await eventually(() => statuses.at(-1) === 503, '/readyz 503 while Postgres is down', 5000)
      // The client port says which service is away, not Postgres's own text (hosts, users).
      assert.equal((await httpGet(pod.port, '/readyz')).body, 'degraded: postgres unreachable\n')
      await pause(1000)
    } finally {
      await pgCtl('-D', `${dir}/data`, '-l', `${dir}/server.log`, '-w', '-t', '60', '-o',
        `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c max_connections=200`, 'start')
    }
    const back = Date.now()
    await eventually(() => statuses.at(-1) === 200, '/readyz 200 again', 5000)
    // Within 5 s of its return, new connections, reads and writes work.
    await eventually(async () => {
      const fresh = await RawClient.open(pod).catch(() => null)
      if (!fresh) return false
      const wrote = (await fresh.publish(sign(author.sk, { content: 'after the restart' }))).ok
      const { end } = await fresh.req('r', { authors: [author.pk], limit: 1 })
      await fresh.close()
      return wrote && end[0] === 'EOSE'
    }, 'reads and writes after the restart', Math.max(500, back + 5000 - Date.now()))
    await pause(500)
    publishing = false
    probing = false
    await load
    await probe
    const reader = await RawClient.open(pod)
    const { events } = await reader.req('all', { authors: [author.pk], limit: 5000 })
    const stored = new Set(events.map((e) => e.id))
    for (const id of accepted) assert.ok(stored.has(id), `accepted event ${id} is stored`)
    assert.ok(statuses.includes(503) && statuses.at(-1) === 200)
    for (const client of [publisher, reader]) await client.close()
  })
})
