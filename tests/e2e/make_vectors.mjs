// Generates tests/data/nostr_tools_vectors.json: events signed by nostr-tools (a third-party
// implementation) with content and tags that exercise every escaping rule of NIP-01, plus the
// canonical serialization nostr-tools hashes. Run once; the output is committed.
//   cd tests/e2e && npm install && node make_vectors.mjs > ../data/nostr_tools_vectors.json
import { finalizeEvent, getPublicKey, serializeEvent } from 'nostr-tools/pure'
import { npubEncode, nsecEncode } from 'nostr-tools/nip19'
const hexToBytes = (hex) => Uint8Array.from(Buffer.from(hex, 'hex'))

const secrets = [
  '0000000000000000000000000000000000000000000000000000000000000001',
  'b7e151628aed2a6abf7158809cf4f3c762e7160f38b4da56a784d9045190cfef',
  '5a1d7ab6e2fbe0c0a5b2a4a7d0b3e1f2c4d5e6f708192a3b4c5d6e7f80910a1b',
]
const contents = [
  '',
  'hello nostr',
  'quote " backslash \\ slash /',
  'newline \n carriage \r tab \t backspace \b formfeed \f',
  'controls \u0000 \u0001 \u001f and DEL \u007f',
  'line separator \u2028 paragraph \u2029',
  'emoji 🐝🍯 and accents éàü and CJK 蜂巢',
  '{"json":"inside","n":[1,2,3]}',
  '<script>alert(1)</script> & \'single\'',
  'x'.repeat(5000),
]
const tagSets = [
  [],
  [['p', getPublicKey(hexToBytes(secrets[1]))]],
  [['e', 'a'.repeat(64), 'wss://relay.example.com', 'reply'], ['t', 'comb']],
  [['d', 'addr\nwith "quotes"'], ['-']],
  [['expiration', '2000000000'], ['subject', 'tab\there']],
]
const vectors = []
let n = 0
for (const secret of secrets) {
  for (const content of contents) {
    const tags = tagSets[n % tagSets.length]
    const kinds = [1, 0, 3, 10002, 20001, 30023, 5, 7, 13534, 65535]
    const template = { kind: kinds[n % kinds.length], created_at: 1700000000 + n, tags, content }
    const ev = finalizeEvent(template, hexToBytes(secret))
    vectors.push({
      secret,
      nsec: nsecEncode(hexToBytes(secret)),
      npub: npubEncode(ev.pubkey),
      event: { id: ev.id, pubkey: ev.pubkey, created_at: ev.created_at, kind: ev.kind,
               tags: ev.tags, content: ev.content, sig: ev.sig },
      serialized: serializeEvent(ev),
    })
    n++
  }
}
process.stdout.write(JSON.stringify(vectors, null, 1) + '\n')
