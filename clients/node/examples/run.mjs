// The examples behind examples/run (see there).
import { Mailbolt, verify } from '../index.js';

function need(name) {
  const v = process.env[name];
  if (!v) {
    process.stderr.write(`examples/run: ${name} is not set\n`);
    process.exit(2);
  }
  return v;
}

async function send() {
  const client = new Mailbolt(); // MAILBOLT_BASE_URL, MAILBOLT_API_KEY, MAILBOLT_CA_FILE
  const message = await client.messages.send({
    from: need('MAILBOLT_EXAMPLE_FROM'),
    to: [need('MAILBOLT_EXAMPLE_TO')],
    subject: 'Hello from mailbolt-node',
    text: 'Sent by clients/node/examples/run.',
  });
  process.stdout.write(`${message.id}\n`);
}

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks);
}

async function verifyExample() {
  const body = await readStdin(); // the raw bytes, never re-serialised
  const secrets = need('MAILBOLT_EXAMPLE_WEBHOOK_SECRET').split(',').map((s) => s.trim()).filter(Boolean);
  const headers = {
    'X-Service-Signature': need('MAILBOLT_EXAMPLE_SIGNATURE'),
    'X-Service-Timestamp': need('MAILBOLT_EXAMPLE_TIMESTAMP'),
  };
  const options = process.env.MAILBOLT_EXAMPLE_NOW ? { now: Number(process.env.MAILBOLT_EXAMPLE_NOW) } : {};
  const ok = verify(body, headers, ...secrets, options);
  process.stdout.write(ok ? 'valid\n' : 'invalid\n');
  process.exitCode = ok ? 0 : 1;
}

const cmd = process.argv[2];
try {
  if (cmd === 'send') await send();
  else if (cmd === 'verify') await verifyExample();
  else {
    process.stderr.write('usage: examples/run send|verify\n');
    process.exitCode = 2;
  }
} catch (e) {
  process.stderr.write(`examples/run: ${e.code ? `${e.status} ${e.code}: ` : ''}${e.message}\n`);
  process.exitCode = 1;
}
