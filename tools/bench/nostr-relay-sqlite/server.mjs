// A second relay for side-by-side runs of comb-bench: @nostr-relay/core (Node.js, signatures
// checked with @noble/curves) storing events in SQLite through better-sqlite3 (WAL).
//   node server.mjs PORT DB_FILE
import { NostrRelay } from '@nostr-relay/core';
import { EventRepositorySqlite } from '@nostr-relay/event-repository-sqlite';
import { Validator } from '@nostr-relay/validator';
import { WebSocketServer } from 'ws';

const [port, file] = [Number(process.argv[2] ?? 4869), process.argv[3] ?? 'nostr.db'];
const repository = new EventRepositorySqlite(file);
await repository.init(); // creates the tables
const relay = new NostrRelay(repository);
const validator = new Validator();
const server = new WebSocketServer({ host: '127.0.0.1', port });

server.on('connection', (ws, request) => {
  relay.handleConnection(ws, request.socket.remoteAddress);
  ws.on('message', async (data) => {
    try {
      const message = await validator.validateIncomingMessage(data);
      await relay.handleMessage(ws, message);
    } catch (error) {
      ws.send(JSON.stringify(['NOTICE', String(error?.message ?? error)]));
    }
  });
  ws.on('close', () => relay.handleDisconnect(ws));
});
process.on('SIGTERM', () => { server.close(); relay.destroy().then(() => process.exit(0)); });
console.log(`nostr-relay (sqlite) listening on ws://127.0.0.1:${port}`);
