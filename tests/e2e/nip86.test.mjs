// NIP-86 relay management driven exactly as Flotilla does it: welshman's makeHttpAuth (NIP-98,
// signed by @welshman/signer) and sendManagementRequest, POSTed to the community's URL. Every
// method, each refusal (401/403/200 with error), the CORS preflight, NIP-11 after a rename, the
// bans on the WebSocket path, and after every change the newest 13534 names exactly the members.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { makeHttpAuth, sendManagementRequest, ManagementMethod } from '@welshman/util'
import { Nip01Signer } from '@welshman/signer'
import { RawClient, holdTransaction, httpGet, itStopsCleanly, keys, now, sign, withRelay } from './harness.mjs'

const hex = (sk) => Buffer.from(sk).toString('hex')

/** One NIP-86 call as Flotilla makes it; `tweak` may change the auth template before signing. */
async function manage(relay, who, method, params = [], { tweak, body, url } = {}) {
  const target = url ?? `http://${relay.host}`
  const request = { method, params }
  const template = await makeHttpAuth(target, 'POST', body ?? JSON.stringify(request))
  if (tweak) tweak(template)
  const auth = await Nip01Signer.fromSecret(hex(who.sk)).sign(template)
  return { reply: await sendManagementRequest(`http://${relay.host}`, request, auth), auth }
}

/** The same call with the raw HTTP status, for the refusals (welshman only returns the body). */
async function post(relay, auth, request) {
  const res = await fetch(`http://${relay.host}`, {
    method: 'POST',
    body: JSON.stringify(request),
    headers: { 'Content-Type': 'application/nostr+json+rpc',
               Authorization: `Nostr ${Buffer.from(JSON.stringify(auth)).toString('base64')}` },
  })
  return { status: res.status, json: await res.json(), cors: res.headers.get('access-control-allow-origin') }
}

async function signedAuth(relay, who, request, tweak) {
  const template = await makeHttpAuth(`http://${relay.host}`, 'POST', JSON.stringify(request))
  if (tweak) tweak(template)
  return Nip01Signer.fromSecret(hex(who.sk)).sign(template)
}

/** A raw POST with any Host header: { status, json }. */
function postTo(port, host, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/', agent: false,
      headers: { Host: host, 'Content-Type': 'application/nostr+json+rpc' } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** The newest 13534 must name exactly the stored members (DESIGN.md, "The invariant"). */
async function assertListIsMembers(relay, reader = null) {
  // A closed community is read by a member (authenticated); an open one by anyone.
  const client = reader ? await authedClient(relay, reader) : await RawClient.open(relay)
  const { events } = await client.req('list', { kinds: [13534] })
  await client.close()
  assert.equal(events.length, 1, 'one live list')
  const listed = events[0].tags.filter((t) => t[0] === 'member').map((t) => t[1]).sort()
  const stored = (await relay.sql('SELECT encode(pubkey, \'hex\') FROM members ORDER BY 1'))
    .split('\n').filter(Boolean)
  assert.deepEqual(listed, stored, 'the newest 13534 names exactly the members')
  return listed
}

async function authedClient(relay, who) {
  const client = await RawClient.open(relay)
  const challenge = await client.challenge()
  const ok = await client.auth(sign(who.sk, { kind: 22242, tags: [['relay', relay.url], ['challenge', challenge]] }))
  assert.equal(ok.ok, true, ok.message)
  return client
}

describe('NIP-86 management of a community', () => {
  const owner = keys()
  const admin = keys()
  const bob = keys()
  const carol = keys()
  const stranger = keys()
  const ctx = withRelay({ COMB_OWNER_PUBKEY: owner.pk })

  it('answers the CORS preflight on the community host', async () => {
    const res = await fetch(`http://${ctx.relay.host}`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.flotilla.social', 'Access-Control-Request-Method': 'POST',
                 'Access-Control-Request-Headers': 'authorization,content-type' },
    })
    assert.ok(res.status === 204 || res.status === 200, `status ${res.status}`)
    assert.equal(res.headers.get('access-control-allow-origin'), '*')
    assert.match(res.headers.get('access-control-allow-methods'), /POST/)
    const allowed = res.headers.get('access-control-allow-headers').toLowerCase()
    assert.match(allowed, /authorization/)
    assert.match(allowed, /content-type/)
  })

  it('lets the owner list methods and manage members', async () => {
    const { relay } = ctx
    const { reply: methods } = await manage(relay, owner, ManagementMethod.SupportedMethods)
    for (const m of ['allowpubkey', 'unallowpubkey', 'listallowedpubkeys', 'banpubkey', 'unbanpubkey',
      'listbannedpubkeys', 'banevent', 'allowevent', 'listbannedevents', 'changerelayname',
      'changerelaydescription', 'changerelayicon']) assert.ok(methods.result.includes(m), m)

    for (const who of [admin, bob, carol]) {
      const { reply } = await manage(relay, owner, ManagementMethod.AllowPubkey, [who.pk])
      assert.deepEqual(reply, { result: true })
      await assertListIsMembers(relay)
    }
    // Make `admin` an admin with comb's own 9032, as the owner.
    const client = await authedClient(relay, owner)
    const role = await client.publish(sign(owner.sk, {
      kind: 9032, tags: [['-'], ['p', admin.pk], ['role', 'admin'], ['relay', relay.url]] }))
    assert.equal(role.ok, true, role.message)
    await client.close()
    const listed = await assertListIsMembers(relay)

    const { reply: allowed } = await manage(relay, admin, ManagementMethod.ListAllowedPubkeys)
    assert.deepEqual(allowed.result.map((e) => e.pubkey).sort(), listed)
    assert.equal(allowed.result.find((e) => e.pubkey === owner.pk).reason, 'owner')

    const { reply: removed } = await manage(relay, admin, ManagementMethod.UnallowPubkey, [carol.pk])
    assert.deepEqual(removed, { result: true })
    assert.ok(!(await assertListIsMembers(relay)).includes(carol.pk))
  })

  it('refuses callers without the right, and bad or reused NIP-98 events', async () => {
    const { relay } = ctx
    const before = await assertListIsMembers(relay)
    const request = { method: 'allowpubkey', params: [stranger.pk] }

    const member = await post(relay, await signedAuth(relay, bob, request), request)
    assert.equal(member.status, 403)
    assert.match(member.json.error, /owner or an admin/)
    assert.equal(member.cors, '*')

    const outsider = await post(relay, await signedAuth(relay, stranger, request), request)
    assert.equal(outsider.status, 403)
    // A stranger's call writes nothing, not even its auth event as spent: sent again, the same
    // event is refused for the role (403), not as used (401).
    const strangerAuth = await signedAuth(relay, stranger, request)
    for (let i = 0; i < 2; i++) assert.equal((await post(relay, strangerAuth, request)).status, 403)

    const wrongU = await post(relay, await signedAuth(relay, owner, request, (t) => {
      t.tags = t.tags.map((x) => (x[0] === 'u' ? ['u', 'https://other.example.com'] : x)) }), request)
    assert.equal(wrongU.status, 401)
    assert.match(wrongU.json.error, /u tag/)
    // A bad signature or auth event is answered before the call may wait for the actor.
    assert.ok((await relay.metric('comb_management_calls_refused_early_total')) >= 1)

    const stale = await post(relay, await signedAuth(relay, owner, request, (t) => { t.created_at = now() - 700 }), request)
    assert.equal(stale.status, 401)
    assert.match(stale.json.error, /created_at/)
    // A device clock two minutes off (AUTH still passes, within 10 minutes) or a remote signer
    // approved late: Flotilla decides who is an admin from one supportedmethods call, for the
    // session, so a refusal here would hide the admin tools without a word.
    const methods = { method: 'supportedmethods', params: [] }
    const late = await post(relay, await signedAuth(relay, owner, methods, (t) => { t.created_at = now() - 120 }), methods)
    assert.equal(late.status, 200, JSON.stringify(late.json))
    assert.ok(late.json.result.length > 0)

    const other = { method: 'allowpubkey', params: [carol.pk] }
    const wrongHash = await post(relay, await signedAuth(relay, owner, other), request)
    assert.equal(wrongHash.status, 401)
    assert.match(wrongHash.json.error, /payload/)

    const missing = await fetch(`http://${relay.host}`, { method: 'POST', body: JSON.stringify(request),
      headers: { 'Content-Type': 'application/nostr+json+rpc' } })
    assert.equal(missing.status, 401)
    assert.ok((await missing.json()).error)

    // A change is spent once: the same auth event again is refused, and changes nothing.
    const removal = { method: 'unallowpubkey', params: [carol.pk] }
    const auth = await signedAuth(relay, owner, removal)
    const first = await post(relay, auth, removal)
    assert.equal(first.status, 200)
    const replayed = await post(relay, auth, removal)
    assert.equal(replayed.status, 401)
    assert.match(replayed.json.error, /already used/)
    // A read may come again within the event's window (apps ask the same list twice in one
    // second: one event id); its payload hash still binds it to the very same body.
    const listing = { method: 'listbannedpubkeys', params: [] }
    const readAuth = await signedAuth(relay, owner, listing)
    for (let i = 0; i < 2; i++) assert.equal((await post(relay, readAuth, listing)).status, 200)
    const riding = await post(relay, readAuth, { method: 'banpubkey', params: [carol.pk] })
    assert.equal(riding.status, 401)
    assert.match(riding.json.error, /payload/)
    // But listclaims, whose answer admits people, is spent once as a change is: a header read
    // from a proxy's log lists no codes.
    const claims = { method: 'listclaims', params: [] }
    const claimsAuth = await signedAuth(relay, owner, claims)
    assert.equal((await post(relay, claimsAuth, claims)).status, 200)
    const claimsAgain = await post(relay, claimsAuth, claims)
    assert.equal(claimsAgain.status, 401)
    assert.match(claimsAgain.json.error, /already used/)

    const { reply: banOwner } = await manage(relay, admin, ManagementMethod.BanPubkey, [owner.pk])
    assert.match(banOwner.error, /owner/)
    // Not the same second as the call above: that would be the very same, already used event.
    const banOwnerStatus = await post(relay, await signedAuth(relay, admin,
      { method: 'banpubkey', params: [owner.pk] }, (t) => { t.created_at = now() - 5 }),
    { method: 'banpubkey', params: [owner.pk] })
    assert.equal(banOwnerStatus.status, 403)

    const huge = { method: 'changerelayname', params: ['x'.repeat(20000)] }
    const tooBig = await post(relay, await signedAuth(relay, owner, huge), huge)
    assert.equal(tooBig.status, 413)
    assert.match(tooBig.json.error, /too large/)

    const nowhere = await postTo(relay.port, 'nowhere.example', JSON.stringify(request))
    assert.equal(nowhere.status, 404)
    assert.match(nowhere.json.error, /no community/)

    const { reply: unknown } = await manage(relay, owner, 'blockip', ['1.2.3.4'])
    assert.match(unknown.error, /unsupported method/)
    const { reply: badParams } = await manage(relay, owner, ManagementMethod.BanPubkey, ['nope'])
    assert.match(badParams.error, /hex/)

    assert.deepEqual(await assertListIsMembers(relay), before, 'no refused call changed anything')
    assert.equal((await relay.sql('SELECT count(*) FROM banned_pubkeys')).trim(), '0')
  })

  it('bans a member: removed, their events and joins refused, listed; unban lifts it', async () => {
    const { relay } = ctx
    const client = await authedClient(relay, bob)
    const early = sign(bob.sk, { content: 'before the ban' })
    assert.equal((await client.publish(early)).ok, true)

    const { reply } = await manage(relay, admin, ManagementMethod.BanPubkey, [bob.pk, 'spam'])
    assert.deepEqual(reply, { result: true })
    assert.ok(!(await assertListIsMembers(relay)).includes(bob.pk))

    const after = await client.publish(sign(bob.sk, { content: 'after the ban' }))
    assert.equal(after.ok, false)
    assert.match(after.message, /^blocked:/)
    const join = await client.publish(sign(bob.sk, { kind: 28934, tags: [] }))
    assert.equal(join.ok, false)
    assert.match(join.message, /^blocked:/)
    await client.close()
    await assertListIsMembers(relay)

    const { reply: banned } = await manage(relay, owner, ManagementMethod.ListBannedPubkeys)
    assert.deepEqual(banned.result, [{ pubkey: bob.pk, reason: 'spam' }])
    const { reply: lifted } = await manage(relay, admin, ManagementMethod.UnbanPubkey, [bob.pk])
    assert.deepEqual(lifted, { result: true })
    // An unban lifts the ban only: membership is not restored (allowpubkey does both, as
    // Flotilla's restore uses it: flotilla.test.mjs).
    assert.ok(!(await assertListIsMembers(relay)).includes(bob.pk))
    // The owner's same call in the same second is the very same NIP-98 event: a read, so fine.
    const { reply: none } = await manage(relay, owner, ManagementMethod.ListBannedPubkeys)
    assert.deepEqual(none.result, [])
    const again = await RawClient.open(relay)
    assert.equal((await again.publish(sign(bob.sk, { content: 'welcome back' }))).ok, true)
    await again.close()
    await assertListIsMembers(relay)
  })

  it('bans an event: deleted, refused again, listed; allowevent lifts it', async () => {
    const { relay } = ctx
    const client = await RawClient.open(relay)
    const post1 = sign(carol.sk, { content: 'off topic' })
    assert.equal((await client.publish(post1)).ok, true)
    const { reply } = await manage(relay, admin, ManagementMethod.BanEvent, [post1.id, 'off topic'])
    assert.deepEqual(reply, { result: true })
    const { events } = await client.req('gone', { ids: [post1.id] })
    assert.equal(events.length, 0, 'the banned event is deleted')
    const again = await client.publish(post1)
    assert.equal(again.ok, false)
    assert.match(again.message, /^blocked:/)
    const { reply: listed } = await manage(relay, owner, ManagementMethod.ListBannedEvents)
    assert.deepEqual(listed.result, [{ id: post1.id, reason: 'off topic' }])
    const { reply: allowed } = await manage(relay, owner, ManagementMethod.AllowEvent, [post1.id])
    assert.deepEqual(allowed, { result: true })
    assert.equal((await client.publish(post1)).ok, true)
    // An admin lifts no ban the owner made.
    const post2 = sign(carol.sk, { content: 'banned by the owner' })
    assert.equal((await client.publish(post2)).ok, true)
    assert.deepEqual((await manage(relay, owner, ManagementMethod.BanEvent, [post2.id, 'no'])).reply, { result: true })
    const lift = { method: ManagementMethod.AllowEvent, params: [post2.id] }
    const refused = await post(relay, await signedAuth(relay, admin, lift), lift)
    assert.equal(refused.status, 403)
    assert.match(refused.json.error, /only the owner lifts the owner's/)
    assert.equal((await client.publish(post2)).ok, false, 'still banned')
    await client.close()
    await assertListIsMembers(relay)
  })

  it('renames the community in its NIP-11 document', async () => {
    const { relay } = ctx
    const info = async () => JSON.parse((await httpGet(relay.port, '/', { Accept: 'application/nostr+json' })).body)
    assert.equal((await info()).description, 'A community relay', 'unset: the deployment\'s')
    for (const [method, value] of [[ManagementMethod.ChangeRelayName, 'The Hive'],
      [ManagementMethod.ChangeRelayDescription, 'bees only'],
      [ManagementMethod.ChangeRelayIcon, 'https://img.example/hive.png']]) {
      const { reply } = await manage(relay, admin, method, [value])
      assert.deepEqual(reply, { result: true }, method)
    }
    const { status, body } = await httpGet(relay.port, '/', { Accept: 'application/nostr+json' })
    assert.equal(status, 200)
    const doc = JSON.parse(body)
    assert.equal(doc.name, 'The Hive')
    assert.equal(doc.description, 'bees only')
    assert.equal(doc.icon, 'https://img.example/hive.png')
    assert.equal(doc.pubkey, owner.pk, 'pubkey is the owner')
    assert.equal(doc.self, relay.pubkey, 'self is the relay key')
    assert.ok(doc.supported_nips.includes(86))
    await assertListIsMembers(relay)
    // Flotilla's space form sends "" for a description the admin emptied: none, not the default.
    const { reply } = await manage(relay, admin, ManagementMethod.ChangeRelayDescription, [''])
    assert.deepEqual(reply, { result: true })
    assert.equal((await info()).description, '')
  })

  it('answers 503 at once past the calls that may wait on the management actor', async () => {
    const { relay } = ctx
    const request = { method: 'listallowedpubkeys', params: [] }
    const auth = await signedAuth(relay, owner, request) // a read: its auth event may be used again
    // The actor reads the caller's role: with the members table locked, every call waits.
    const lock = await holdTransaction(relay.database, 'LOCK TABLE members IN ACCESS EXCLUSIVE MODE')
    const calls = Array.from({ length: 80 }, () => post(relay, auth, request))
    try {
      await new Promise((r) => setTimeout(r, 1500))
    } finally {
      await lock.release()
    }
    const answers = await Promise.all(calls)
    const statuses = answers.map((a) => a.status).join(' ')
    const busy = answers.filter((a) => a.status === 503 && /too many management calls are waiting/.test(a.json.error))
    // A call may meet one of the address's own bounds first (bodies in progress, requests):
    // refused at once too (429). None other waited past the 64 places.
    const limited = answers.filter((a) => a.status === 429 && /^rate-limited: /.test(a.json.error))
    const waited = answers.filter((a) => a.status === 200)
    assert.ok(waited.length <= 64, statuses)
    assert.equal(busy.length + limited.length + waited.length, 80, statuses)
    assert.ok(busy.length >= 1, statuses)
    // The ones that waited were answered once the lock went.
    assert.ok(waited.length >= 1, statuses)
    assert.ok((await relay.metric('comb_management_calls_refused_total')) >= busy.length)
  })

  it('answers a flood of strangers\' calls before they can wait, so the owner\'s still go through', async () => {
    const { relay } = ctx
    const request = { method: 'listallowedpubkeys', params: [] }
    // Fresh keys, each signature valid: with the members table locked, each would otherwise hold
    // one of the 64 places while the actor asked Postgres for its role.
    const strangers = await Promise.all(Array.from({ length: 80 }, () => signedAuth(relay, keys(), request)))
    const lock = await holdTransaction(relay.database, 'LOCK TABLE members IN ACCESS EXCLUSIVE MODE')
    const calls = strangers.map((auth) => post(relay, auth, request))
    try {
      await new Promise((r) => setTimeout(r, 1500))
    } finally {
      await lock.release()
    }
    const answers = await Promise.all(calls)
    // Past half the places, strangers were answered at once, so none found the places taken
    // (503); past the address's own request bound some are answered 429.
    const statuses = answers.map((a) => a.status)
    assert.ok(statuses.every((status) => status === 403 || status === 429), statuses.join(' '))
    assert.ok(statuses.filter((status) => status === 403).length > 16, statuses.join(' '))
    // How many reach the wait at once depends on the machine's speed (a slow one never fills
    // half the places), so the early refusals are not counted here: no 503 is the point.
    const { reply } = await manage(relay, owner, 'listallowedpubkeys')
    assert.ok(Array.isArray(reply.result))
  })

  it('counts calls by method and outcome', async () => {
    const { body } = await httpGet(ctx.relay.metricsPort, '/metrics')
    assert.match(body, /comb_management_calls_total\{method="banpubkey",outcome="ok"\} [1-9]/)
    assert.match(body, /comb_management_calls_total\{method="allowpubkey",outcome="forbidden"\} [1-9]/)
    assert.match(body, /comb_management_calls_total\{method="[a-z]+",outcome="unauthorized"\} [1-9]/)
  })

  itStopsCleanly(ctx)
})

describe('NIP-86 bans in a closed community', () => {
  const owner = keys()
  const bob = keys()
  const ctx = withRelay({ COMB_OWNER_PUBKEY: owner.pk, COMB_ACCESS: 'closed' })

  it('ends a banned member\'s live reads at once and refuses what they send', async () => {
    const { relay } = ctx
    const { reply } = await manage(relay, owner, ManagementMethod.AllowPubkey, [bob.pk])
    assert.deepEqual(reply, { result: true })
    const client = await authedClient(relay, bob)
    const { end } = await client.req('feed', { kinds: [1] })
    assert.equal(end[0], 'EOSE', 'a member reads')
    assert.equal((await client.publish(sign(bob.sk, { content: 'hello' }))).ok, true)

    const { reply: banned } = await manage(relay, owner, ManagementMethod.BanPubkey, [bob.pk])
    assert.deepEqual(banned, { result: true })
    const closed = await client.take((f) => f[0] === 'CLOSED' && f[1] === 'feed', 'CLOSED of feed')
    assert.match(closed[2], /^restricted:/)
    const refused = await client.publish(sign(bob.sk, { content: 'still here?' }))
    assert.equal(refused.ok, false)
    assert.match(refused.message, /^(blocked|restricted):/)
    await client.close()
    assert.ok(!(await assertListIsMembers(relay, owner)).includes(bob.pk))
  })

  itStopsCleanly(ctx)
})
