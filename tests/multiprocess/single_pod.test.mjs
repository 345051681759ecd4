// One pod with neither Redis nor cluster links: it has no other pod to tell, so its bridge gets
// nothing to encode (no envelope, no MAC, no actor hop per event), while its own subscribers
// still get every regular and ephemeral event and stored events stay readable.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { RawClient, keys, sign, now } from '../e2e/harness.mjs'
import { eventually, readiness, startPods } from './pods.mjs'

describe('a single pod without Redis or cluster links', () => {
  let group, pod

  before(async () => {
    group = await startPods(1)
    ;[pod] = group.pods
    await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
  })
  after(async () => { await group?.stop() })

  it('delivers and stores events without publishing any envelope', async () => {
    const watcher = await RawClient.open(pod)
    const { end } = await watcher.req('live', { kinds: [1, 20001], since: now() - 5 })
    assert.equal(end[0], 'EOSE')
    const author = keys()
    const poster = await RawClient.open(pod)
    const note = sign(author.sk, { content: 'single pod note' })
    const blip = sign(author.sk, { kind: 20001, content: 'single pod ephemeral' })
    assert.equal((await poster.publish(note)).ok, true)
    assert.equal((await watcher.live('live')).id, note.id)
    assert.equal((await poster.publish(blip)).ok, true)
    assert.equal((await watcher.live('live')).id, blip.id)
    const { events } = await watcher.req('stored', { authors: [author.pk] })
    assert.deepEqual(events.map((e) => e.id), [note.id])
    assert.ok(await pod.metric('comb_events_stored_total') >= 1)
    assert.equal(await pod.metric('comb_bridge_published_total'), 0)
    for (const client of [watcher, poster]) await client.close()
  })
})
