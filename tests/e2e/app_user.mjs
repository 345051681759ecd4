// A user of a Flotilla-like app on welshman, shared by the e2e files that drive comb as such an
// app does (community_apps, rooms).
import assert from 'node:assert/strict'
import { AuthStatus, Pool, PublishStatus, Socket, defaultSocketPolicies, makeSocketPolicyAuth, publishOne, requestOne } from '@welshman/net'
import { Nip01Signer } from '@welshman/signer'
import { getPubkey, makeHttpAuth, makeSecret, normalizeRelayUrl, sendManagementRequest } from '@welshman/util'

/**
 * What welshman's waitForThunkError gives Flotilla for one publish: the relay's message when it
 * refused the event, "" when it took it (a timeout fails the test: Flotilla would wait on it).
 */
export function thunkError(result) {
  assert.ok([PublishStatus.Success, PublishStatus.Failure].includes(result.status),
    `no OK from the relay: ${result.status} ${result.detail}`)
  return result.status === PublishStatus.Failure ? result.detail : ''
}

/**
 * A user of a Flotilla-like app: a key, a signer and a pool of its own. (Nip01Signer arms a 30 s
 * timer per signature that it never clears, so a test file using it exits about 30 s after its
 * last test.)
 */
export function appUser(secret = makeSecret(), { authDelayMs = 0 } = {}) {
  const signer = Nip01Signer.fromSecret(secret)
  // A slow signer (a NIP-46 bunker, an extension's first prompt) takes this long over the AUTH.
  const signAuth = async (template) => {
    if (authDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, authDelayMs))
    return signer.sign(template)
  }
  const pool = new Pool({
    makeSocket: (url) => new Socket(url, [...defaultSocketPolicies, makeSocketPolicyAuth({ sign: signAuth })]),
  })
  const context = { pool }
  return {
    pk: getPubkey(secret),
    signer,
    /** Signs `template` and publishes it; { event, status, detail }. */
    async publish(relay, template) {
      return this.publishSigned(relay, await signer.sign(template))
    },
    /** Publishes an already signed event through this user's socket. */
    async publishSigned(relay, event) {
      const result = await publishOne({ event, relay: relay.url, context, timeout: 8000 })
      return { event, status: result.status, detail: result.detail }
    },
    /**
     * Opens the socket and waits (bounded) until the socket policy has answered the relay's AUTH
     * challenge, as Flotilla's attemptRelayAccess does before it sends a join.
     */
    async authenticated(relay) {
      const socket = pool.get(relay.url)
      socket.attemptToOpen()
      for (let i = 0; i < 250 + authDelayMs / 20 && socket.auth.status !== AuthStatus.Ok; i++)
        await new Promise((resolve) => setTimeout(resolve, 20))
      assert.equal(socket.auth.status, AuthStatus.Ok, `AUTH by socket policy: ${socket.auth.details}`)
    },
    /** One REQ to EOSE or CLOSED: { events, closed }. */
    async read(relay, filters) {
      let closed = null
      const events = await requestOne({
        relay: relay.url, filters, context, autoClose: true, signal: AbortSignal.timeout(8000),
        onClosed: (message) => { closed = message },
      })
      return { events, closed }
    },
    /**
     * One REQ as a page of Flotilla's makeFeed sends it, ended only by EOSE or by its signal after
     * `ms` (welshman then sets no timeout of its own): whether EOSE came.
     */
    async ended(relay, filters, ms = 8000) {
      let eosed = false
      await requestOne({
        relay: relay.url, filters, context, autoClose: true, signal: AbortSignal.timeout(ms),
        onEose: () => { eosed = true },
      })
      return eosed
    },
    /**
     * A live subscription as Flotilla's pullAndListen opens it (one REQ per filter, kept open);
     * { events, closed, stop() }.
     */
    listen(relay, filters) {
      const controller = new AbortController()
      const seen = { events: [], closed: [], stop: () => controller.abort() }
      requestOne({
        relay: relay.url, filters, context, signal: controller.signal,
        onEvent: (event) => seen.events.push(event),
        onClosed: (message) => seen.closed.push(message),
      })
      return seen
    },
    /**
     * NIP-86 as welshman's manageRelay makes the call for Flotilla: the normalized relay URL with
     * ws replaced by http, a NIP-98 event over the body, the answer's JSON body.
     */
    async manage(relay, method, params = []) {
      const url = normalizeRelayUrl(relay.url).replace(/^ws/, 'http')
      const request = { method, params }
      const auth = await signer.sign(await makeHttpAuth(url, 'POST', JSON.stringify(request)))
      return sendManagementRequest(url, request, auth)
    },
    close() { pool.clear() },
  }
}
