// NIP-86 across two pods on one database, with no bus between them: what one pod did is held by
// Postgres for the other. An auth event used on one pod is refused on the other; a ban made on
// one pod refuses the author's events and joins and the banned event on the other; and the
// newest 13534 names exactly the members.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { createHash } from 'node:crypto'
import { RawClient, finalizeEvent, keys, now, sign } from '../e2e/harness.mjs'
import { authed, startPods } from './pods.mjs'

/** A NIP-98 event for `body`, as the apps sign it, for the community's public URL. */
function httpAuth(who, body, created_at = now()) {
  const payload = createHash('sha256').update(body).digest('hex')
  return finalizeEvent({ kind: 27235, created_at, content: '',
    tags: [['u', 'https://hive.test'], ['method', 'POST'], ['payload', payload]] }, who.sk)
}

/** POSTs a NIP-86 call to `pod` as the host hive.test: { status, json }. */
function manage(pod, auth, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: pod.port, method: 'POST', path: '/', agent: false,
      headers: { Host: 'hive.test', 'Content-Type': 'application/nostr+json+rpc',
                 Authorization: `Nostr ${Buffer.from(JSON.stringify(auth)).toString('base64')}` } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

async function call(pod, who, method, params = [], created_at = now()) {
  const body = JSON.stringify({ method, params })
  return manage(pod, httpAuth(who, body, created_at), body)
}

async function assertListIsMembers(pod) {
  const client = await RawClient.open(pod)
  const { events } = await client.req('list', { kinds: [13534] })
  await client.close()
  assert.equal(events.length, 1)
  const listed = events[0].tags.filter((t) => t[0] === 'member').map((t) => t[1]).sort()
  const stored = (await pod.sql('SELECT encode(pubkey, \'hex\') FROM members ORDER BY 1'))
    .split('\n').filter(Boolean)
  assert.deepEqual(listed, stored, 'the newest 13534 names exactly the members')
  return listed
}

describe('NIP-86 on two pods without a bus', () => {
  let group, a, b
  const owner = keys()
  const bob = keys()

  before(async () => {
    group = await startPods(2, () => ({ COMB_OWNER_PUBKEY: owner.pk }))
    ;[a, b] = group.pods
  })
  after(async () => { await group?.stop() })

  it('refuses on one pod an auth event already used on the other', async () => {
    const body = JSON.stringify({ method: 'allowpubkey', params: [bob.pk] })
    const auth = httpAuth(owner, body)
    const first = await manage(a, auth, body)
    assert.equal(first.status, 200, JSON.stringify(first.json))
    assert.deepEqual(first.json, { result: true })
    const replayed = await manage(b, auth, body)
    assert.equal(replayed.status, 401)
    assert.match(replayed.json.error, /already used/)
    assert.ok((await assertListIsMembers(b)).includes(bob.pk))
  })

  it('holds a ban made on one pod on the other: events, joins and banned ids refused', async () => {
    const bobOnB = await authed(b, bob)
    const post = sign(bob.sk, { content: 'before the ban' })
    assert.equal((await bobOnB.publish(post)).ok, true)

    const banned = await call(a, owner, 'banpubkey', [bob.pk, 'spam'])
    assert.deepEqual(banned.json, { result: true })
    assert.ok(!(await assertListIsMembers(b)).includes(bob.pk))

    const after = await bobOnB.publish(sign(bob.sk, { content: 'after the ban' }))
    assert.equal(after.ok, false)
    assert.match(after.message, /^blocked:/)
    const join = await bobOnB.publish(sign(bob.sk, { kind: 28934, tags: [['-']] }))
    assert.equal(join.ok, false)
    assert.match(join.message, /^blocked:/)
    await bobOnB.close()
    assert.ok(!(await assertListIsMembers(a)).includes(bob.pk))

    const listed = await call(b, owner, 'listbannedpubkeys')
    assert.deepEqual(listed.json.result, [{ pubkey: bob.pk, reason: 'spam' }])

    const other = keys()
    const offTopic = sign(other.sk, { content: 'off topic' })
    const onA = await RawClient.open(a)
    assert.equal((await onA.publish(offTopic)).ok, true)
    await onA.close()
    assert.deepEqual((await call(a, owner, 'banevent', [offTopic.id])).json, { result: true })
    const onB = await RawClient.open(b)
    const again = await onB.publish(offTopic)
    assert.equal(again.ok, false)
    assert.match(again.message, /^blocked:/)
    const { events } = await onB.req('gone', { ids: [offTopic.id] })
    assert.equal(events.length, 0)
    await onB.close()
  })
})
