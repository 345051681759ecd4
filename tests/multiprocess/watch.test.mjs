// comb-watch against two pods linked by Redis: owner and admin each get exactly one alert per new
// member, a plain member none, a burst of 50 joins one summary, and a restart with the same
// ledger nothing. Joins go through the pod the watcher is not connected to.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { keys, settlesWithin, sign, startRelay } from '../e2e/harness.mjs'
import { authed, clusterSecret, eventually, privateRedis, readiness, startPods, stopCleanly } from './pods.mjs'
import { stablePort } from '../e2e/stable_port.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const watchBin = process.env.COMB_WATCH_BIN || path.resolve(here, '../../build/bin/comb-watch')
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
// Longer than comb-watch's 1.5 s quiet window, so "nothing more came" means something.
const QUIET_MS = 3000

/** A comb-watch process for `who` on `pod`, printing JSON alerts; its ledger lives in `stateDir`. */
async function startWatch(pod, who, stateDir) {
  const keyFile = path.join(stateDir, 'key')
  await writeFile(keyFile, Buffer.from(who.sk).toString('hex') + '\n', { mode: 0o600 })
  const proc = spawn(watchBin, ['--relay', pod.url, '--key', keyFile, '--state', stateDir, '--json'],
    { stdio: ['ignore', 'pipe', 'pipe'] })
  const watch = { alerts: [], log: '', proc }
  let pending = ''
  proc.stdout.on('data', (chunk) => {
    pending += chunk
    const lines = pending.split('\n')
    pending = lines.pop()
    for (const line of lines) if (line) watch.alerts.push(JSON.parse(line))
  })
  proc.stderr.on('data', (chunk) => { watch.log += chunk })
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })))
  watch.stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
    if (!(await settlesWithin(exited, 5000))) proc.kill('SIGKILL')
    return exited
  }
  await eventually(() => watch.log.includes('subscribed to the member list'),
    `comb-watch subscribed\n${watch.log}`, 15000)
  return watch
}

async function join(pod, who) {
  const client = await authed(pod, who)
  const reply = await client.publish(sign(who.sk, { kind: 28934, tags: [['-']] }))
  assert.match(reply.message, /^info: welcome/)
  return client
}

const membersOf = (alerts) => alerts.flatMap((a) => a.members)

describe('comb-watch on two pods', () => {
  let redis, group, a, b
  const owner = keys()
  const helper = keys()
  const plain = keys()
  const watches = []
  let folders = []

  before(async () => {
    redis = await privateRedis()
    // Pod b restarts on its port below: one outside the ephemeral range stays free meanwhile.
    const portB = await stablePort()
    group = await startPods(2, (i) => ({ COMB_REDIS_URL: redis.url, COMB_OWNER_PUBKEY: owner.pk,
      COMB_ACCESS: 'open', ...(i === 1 ? { COMB_LISTEN: `127.0.0.1:${portB}` } : {}) }))
    ;[a, b] = group.pods
    for (const pod of group.pods) await eventually(async () => (await readiness(pod)) === 200, 'pod ready')
    const ownerOnA = await authed(a, owner)
    assert.equal((await ownerOnA.publish(sign(owner.sk, { kind: 9030,
      tags: [['p', helper.pk], ['role', 'admin'], ['relay', a.url]] }))).message, 'info: member added')
    assert.equal((await ownerOnA.publish(sign(owner.sk, { kind: 9030, tags: [['p', plain.pk], ['relay', a.url]] }))).message,
      'info: member added')
    await ownerOnA.close()
    folders = await Promise.all([0, 1, 2].map(() => mkdtemp(path.join(tmpdir(), 'comb-watch-'))))
  })

  after(async () => {
    for (const w of watches) await w.stop()
    await group?.stop()
    await redis?.dispose()
    for (const folder of folders) await rm(folder, { recursive: true, force: true })
  })

  let ownerWatch, adminWatch, plainWatch

  it('starts watchers: managers seed silently, a plain member is told it gets no alerts', async () => {
    ownerWatch = await startWatch(a, owner, folders[0])
    adminWatch = await startWatch(b, helper, folders[1])
    plainWatch = await startWatch(a, plain, folders[2])
    watches.push(ownerWatch, adminWatch, plainWatch)
    assert.match(ownerWatch.log, /seeded with 3 members/)
    assert.match(adminWatch.log, /seeded with 3 members/)
    assert.match(plainWatch.log, /does not name you as owner or admin/)
    await pause(QUIET_MS)
    for (const w of watches) assert.deepEqual(w.alerts, [])
  })

  it('alerts owner and admin exactly once per new member, through the other pod', async () => {
    const first = keys()
    const second = keys()
    const clients = [await join(b, first), await join(a, second)]
    const expected = [first.pk, second.pk].sort()
    for (const w of [ownerWatch, adminWatch]) {
      await eventually(() => w.alerts.length >= 2, `two alerts\n${w.log}`, 15000)
    }
    await pause(QUIET_MS)
    for (const w of [ownerWatch, adminWatch]) {
      assert.equal(w.alerts.length, 2, JSON.stringify(w.alerts))
      for (const alert of w.alerts) {
        assert.equal(alert.summary, false)
        assert.equal(alert.members.length, 1)
        assert.equal(typeof alert.at, 'number')
      }
      assert.deepEqual(membersOf(w.alerts).sort(), expected)
    }
    assert.equal(ownerWatch.alerts[0].community, `127.0.0.1:${a.port}`)
    assert.equal(adminWatch.alerts[0].community, `127.0.0.1:${b.port}`)
    assert.deepEqual(plainWatch.alerts, [])
    for (const c of clients) await c.close()
  })

  it('collapses a burst of 50 joins into one summary', async () => {
    const joiners = Array.from({ length: 50 }, () => keys())
    const [ownerBefore, adminBefore] = [ownerWatch.alerts.length, adminWatch.alerts.length]
    // Everyone connects first, so that the joins themselves land as one burst.
    const clients = await Promise.all(joiners.map((who, i) => authed(i % 2 ? b : a, who)))
    const replies = await Promise.all(clients.map((client, i) =>
      client.publish(sign(joiners[i].sk, { kind: 28934, tags: [['-']] }))))
    for (const reply of replies) assert.match(reply.message, /^info: welcome/)
    for (const [w, before] of [[ownerWatch, ownerBefore], [adminWatch, adminBefore]])
      await eventually(() => w.alerts.length > before, `the summary\n${w.log}`, 15000)
    await pause(QUIET_MS)
    for (const [w, before] of [[ownerWatch, ownerBefore], [adminWatch, adminBefore]]) {
      const fresh = w.alerts.slice(before)
      assert.equal(fresh.length, 1, JSON.stringify(fresh.map((x) => x.members.length)))
      assert.equal(fresh[0].summary, true)
      assert.deepEqual([...fresh[0].members].sort(), joiners.map((j) => j.pk).sort())
    }
    assert.deepEqual(plainWatch.alerts, [])
    for (const c of clients) await c.close()
  })

  it('alerts nothing after a restart with the same ledger, and the next join once', async () => {
    assert.deepEqual(await ownerWatch.stop(), { code: 0, signal: null })
    const restarted = await startWatch(a, owner, folders[0])
    watches.push(restarted)
    assert.doesNotMatch(restarted.log, /seeded/)
    await pause(QUIET_MS)
    assert.deepEqual(restarted.alerts, [])

    const late = keys()
    const client = await join(b, late)
    await eventually(() => restarted.alerts.length === 1, `the late join\n${restarted.log}`, 15000)
    await pause(QUIET_MS)
    assert.deepEqual(restarted.alerts.map((x) => x.members), [[late.pk]])
    assert.deepEqual(plainWatch.alerts, [])
    await client.close()
  })

  it('reconnects when its pod restarts, and the replayed list alerts nothing', async () => {
    const before = adminWatch.alerts.length
    const env = { COMB_PUBLIC_URL: 'ws://hive.test', COMB_LISTEN: `127.0.0.1:${b.port}`, COMB_NODE_ID: 'pod-1',
      COMB_RELAY_KEY_FILE: group.keyFile, COMB_REDIS_URL: redis.url, COMB_CLUSTER_SECRET: clusterSecret, COMB_OWNER_PUBKEY: owner.pk,
      COMB_ACCESS: 'open' }
    const reconnects = (adminWatch.log.match(/subscribed to the member list/g) ?? []).length
    await b.stop()
    b = await startRelay(env, { database: group.database })
    group.pods[1] = b
    await eventually(async () => (await readiness(b)) === 200, 'pod b ready again')
    await eventually(() => (adminWatch.log.match(/subscribed to the member list/g) ?? []).length > reconnects,
      `comb-watch back on pod b\n${adminWatch.log}`, 20000)
    await pause(QUIET_MS)
    assert.equal(adminWatch.alerts.length, before, 'the list replayed after reconnecting is not news')

    const late = keys()
    const client = await join(a, late)
    await eventually(() => adminWatch.alerts.length === before + 1, `the join after reconnecting\n${adminWatch.log}`, 15000)
    await pause(QUIET_MS)
    assert.deepEqual(adminWatch.alerts.slice(before).map((x) => x.members), [[late.pk]])
    await client.close()
  })

  it('stops cleanly', async () => {
    for (const w of watches) {
      const result = await w.stop()
      assert.ok(result.code === 0 || w === ownerWatch, `comb-watch exit ${JSON.stringify(result)}`)
    }
    await stopCleanly(group)
    group = null
  })
})
