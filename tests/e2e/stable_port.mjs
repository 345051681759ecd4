// Ports for servers a test stops and starts again on the same port (a relay's client or cluster
// port, a Redis server). A port the system hands out for port 0 lies in its ephemeral range,
// the range every outgoing connection of every process on the machine takes its local port
// from: once the server stops, any connection may take the port, and the restart's bind fails
// with EADDRINUSE (SO_REUSEADDR allows a port held in TIME_WAIT, not one held by a connected
// socket). No connection takes a port below that range, so such a port stays free until an
// explicit bind takes it.
import { readFileSync } from 'node:fs'
import net from 'node:net'

/** The system's ephemeral port range, [low, high]. */
export function ephemeralRange() {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number)
    if (low > 0 && high >= low) return [low, high]
  } catch {}
  return [32768, 60999] // Linux's default
}

/** Whether 127.0.0.1:`port` can be bound now. */
function bindable(port) {
  return new Promise((resolve) => {
    const server = net.createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** A free loopback port outside the ephemeral range, to keep across restarts. */
export async function stablePort() {
  const [low, high] = ephemeralRange()
  const below = [Math.max(1024, low - 12000), low - 1]
  const above = [high + 1, 65535]
  const [from, to] = below[1] - below[0] >= 1000 ? below : above
  if (to - from < 1000) throw new Error(`no room outside the ephemeral port range ${low}-${high}`)
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = from + Math.floor(Math.random() * (to - from + 1))
    if (await bindable(port)) return port
  }
  throw new Error(`no free port found in ${from}-${to}`)
}
