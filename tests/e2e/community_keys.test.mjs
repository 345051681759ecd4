// One deployment, two communities: each signs its lists with a key of its own and names it as
// its NIP-11 `self`. Apps keep the events of every relay in one repository, one replaceable
// event per kind and author (welshman's Repository, as Flotilla does); with one key for both,
// the newer community's 13534 would stand in for the other's.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Repository } from '@welshman/net'
import { RawClient, finalizeEvent, httpGet, itStopsCleanly, keys, now, sign, withRelay } from './harness.mjs'

const OTHER = 'games.test'

async function selfOf(relay, host) {
  const res = await httpGet(relay.port, '/', { Host: host, Accept: 'application/nostr+json' })
  assert.equal(res.status, 200)
  return JSON.parse(res.body).self
}

/** Joins the open community at `host` as `who` and returns the connection. */
async function join(relay, host, who) {
  const client = await RawClient.open(relay, host === relay.host ? {} : { headers: { Host: host } })
  const challenge = await client.challenge()
  const url = host === relay.host ? relay.url : `ws://${host}`
  const auth = finalizeEvent({ kind: 22242, created_at: now(), content: '',
    tags: [['relay', url], ['challenge', challenge]] }, who.sk)
  assert.deepEqual(await client.auth(auth), { ok: true, message: '' })
  assert.match((await client.publish(sign(who.sk, { kind: 28934, tags: [['-']] }))).message, /^info: welcome/)
  return client
}

async function liveListAt(relay, host, self) {
  const client = await RawClient.open(relay, host === relay.host ? {} : { headers: { Host: host } })
  const { events } = await client.req('list', { kinds: [13534], authors: [self] })
  await client.close()
  assert.equal(events.length, 1)
  return events[0]
}

const membersOf = (list) => list.tags.filter((t) => t[0] === 'member').map((t) => t[1]).sort()

describe('communities of one deployment', () => {
  const ctx = withRelay({})

  it('sign with keys of their own, so an app that holds both sees each one\'s members', async () => {
    const { relay } = ctx
    await relay.sql(`INSERT INTO communities (host) VALUES ('${OTHER}')`)
    const home = await selfOf(relay, relay.host)
    const games = await selfOf(relay, OTHER)
    await relay.sql(`INSERT INTO community_hosts (host, community_id) SELECT 'play.test', id FROM communities WHERE host = '${OTHER}'`)
    assert.equal(await selfOf(relay, 'play.test'), games, 'an alias serves its community\'s key')
    assert.equal(home, relay.pubkey, 'the printed signing key is the configured community\'s self')

    const alice = keys(), bob = keys(), carol = keys()
    for (const [host, who] of [[relay.host, alice], [relay.host, bob], [OTHER, alice], [OTHER, carol]])
      await (await join(relay, host, who)).close()

    const homeList = await liveListAt(relay, relay.host, home)
    const gamesList = await liveListAt(relay, OTHER, games)
    const repository = new Repository()
    repository.publish(homeList)
    repository.publish(gamesList)
    const inRepository = (self) => repository.query([{ kinds: [13534], authors: [self] }])
    assert.deepEqual(inRepository(home).map(membersOf), [[alice.pk, bob.pk].sort()])
    assert.deepEqual(inRepository(games).map(membersOf), [[alice.pk, carol.pk].sort()])
    assert.notEqual(home, games)
    assert.notEqual(home, relay.relayKey, 'the relay key itself signs for no community')
  })

  itStopsCleanly(ctx)
})
