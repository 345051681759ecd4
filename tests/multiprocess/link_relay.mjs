// A TCP relay between a pod and the port a peer dials, which a test can cut, stall and mend.
import net from 'node:net'

/**
 * A TCP relay on a loopback port of its own to `target()` (a port known later): cut() closes
 * every relayed connection and refuses new ones until mend(); stall() keeps them open but
 * silent; close() ends it.
 */
export async function linkRelay(target) {
  const sockets = new Set()
  let cut = false
  const server = net.createServer((client) => {
    const port = target()
    if (cut || !port) return client.destroy()
    const upstream = net.connect(port, '127.0.0.1')
    for (const [a, b] of [[client, upstream], [upstream, client]]) {
      sockets.add(a)
      a.on('error', () => {})
      a.on('close', () => { sockets.delete(a); b.destroy() })
      a.pipe(b)
    }
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: server.address().port,
    cut() { cut = true; for (const socket of sockets) socket.destroy() },
    /**
     * Goes silent as a partition that drops packets does: the relayed connections stay open but
     * nothing more crosses them (nor is read, so the senders' buffers fill), and new ones are
     * refused until mend().
     */
    stall() { cut = true; for (const socket of sockets) { socket.unpipe(); socket.pause() } },
    mend() { cut = false },
    close() { this.cut(); return new Promise((resolve) => server.close(resolve)) },
  }
}
