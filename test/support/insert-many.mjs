// A second writer process for concurrency tests: inserts N chat messages into a session DB through the same
// module the host uses (dist/, built by `npm test`). Prints the seqs it got as one JSON array.
import { openSessionDb } from '../../dist/src/db/connection.js';
import { insertInbound } from '../../dist/src/db/messages.js';

const [dbPath, count, tag] = process.argv.slice(2);
const db = openSessionDb(dbPath);
const seqs = [];
for (let i = 0; i < Number(count); i++) {
  seqs.push(insertInbound(db, { kind: 'chat', content: { text: `${tag}-${i}`, sender: tag } }).seq);
}
db.close();
process.stdout.write(JSON.stringify(seqs));
