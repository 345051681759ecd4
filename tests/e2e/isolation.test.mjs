// Two communities on one relay, told apart by the Host header: nothing posted in one is ever
// visible in the other, by REQ, COUNT or live delivery.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { RawClient, httpGet, itStopsCleanly, keys, sign, withRelay } from './harness.mjs'

describe('community isolation', () => {
  const ctx = withRelay({})

  it('keeps each community to itself', async () => {
    const { relay } = ctx
    await relay.sql("INSERT INTO communities (host) VALUES ('other.test')")
    const info = await httpGet(relay.port, '/', { Host: 'other.test', Accept: 'application/nostr+json' })
    assert.equal(info.status, 200)

    const home = await RawClient.open(relay)
    const away = await RawClient.open(relay, { headers: { Host: 'other.test' } })
    const author = keys()
    await home.req('live', { authors: [author.pk] })
    await away.req('live', { authors: [author.pk] })

    const here = sign(author.sk, { content: 'posted in the default community' })
    const there = sign(author.sk, { content: 'posted in other.test' })
    assert.equal((await home.publish(here)).ok, true)
    assert.equal((await away.publish(there)).ok, true)
    assert.equal((await home.live('live')).id, here.id)
    assert.equal((await away.live('live')).id, there.id)

    const homeHistory = await home.req('h', { authors: [author.pk] })
    const awayHistory = await away.req('h', { authors: [author.pk] })
    assert.deepEqual(homeHistory.events.map((e) => e.id), [here.id])
    assert.deepEqual(awayHistory.events.map((e) => e.id), [there.id])
    home.send(['COUNT', 'c', { authors: [author.pk] }])
    assert.deepEqual(await home.take((f) => f[0] === 'COUNT', 'COUNT'), ['COUNT', 'c', { count: 1 }])
    // Nothing of the other community arrived live either.
    assert.equal(home.drain((f) => f[0] === 'EVENT').length, 0)
    assert.equal(away.drain((f) => f[0] === 'EVENT').length, 0)
    await home.close()
    await away.close()
  })

  it('refuses an archived community, at once for new connections', async () => {
    const { relay } = ctx
    await relay.sql("INSERT INTO communities (host, archived_at) VALUES ('gone.test', now())")
    const page = await httpGet(relay.port, '/', { Host: 'gone.test' })
    assert.equal(page.status, 403)
  })

  it('closes the connections of a community when it is archived', async () => {
    const { relay } = ctx
    await relay.sql("INSERT INTO communities (host) VALUES ('soon.test')")
    const client = await RawClient.open(relay, { headers: { Host: 'soon.test' } })
    assert.equal((await client.req('s', { kinds: [1] })).end[0], 'EOSE')
    await relay.sql("UPDATE communities SET archived_at = now() WHERE host = 'soon.test'")
    const closed = await Promise.race([client.closed, new Promise((r) => setTimeout(() => r(null), 12000))])
    assert.deepEqual(closed, { code: 1008, reason: 'community archived or deleted' })
  })

  it('closes the connections of a deleted community and stops reloading it', async () => {
    const { relay } = ctx
    await relay.sql("INSERT INTO communities (host) VALUES ('brief.test')")
    const client = await RawClient.open(relay, { headers: { Host: 'brief.test' } })
    assert.equal((await client.req('s', { kinds: [1] })).end[0], 'EOSE')
    // No notification: the watcher's periodic version check finds the community gone.
    await relay.sql("DELETE FROM communities WHERE host = 'brief.test'")
    const closed = await Promise.race([client.closed, new Promise((r) => setTimeout(() => r(null), 12000))])
    assert.deepEqual(closed, { code: 1008, reason: 'community archived or deleted' })
    const page = await httpGet(relay.port, '/', { Host: 'brief.test' })
    assert.equal(page.status, 404)
    // Checked every second: a deleted community still served would be reloaded each time.
    const reloads = await relay.metric('comb_access_reloads_total')
    await new Promise((r) => setTimeout(r, 2500))
    assert.equal(await relay.metric('comb_access_reloads_total'), reloads)
  })

  itStopsCleanly(ctx)
})
