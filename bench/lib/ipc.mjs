// The server side of the protocol in child.mjs: report the port, answer
// memory questions, take a CPU profile on request (bench/profile.mjs), close
// on { type: 'stop' }, SIGTERM or a lost parent.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

let session;

/** { type: 'profile', action: 'start', intervalUs } then { action: 'stop', file }: the V8 CPU profile of that window. */
async function profile(m) {
  if (m.action === 'start') {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: m.intervalUs ?? 100 });
    await session.post('Profiler.start');
  } else {
    const { profile: p } = await session.post('Profiler.stop');
    session.disconnect();
    session = undefined;
    writeFileSync(m.file, JSON.stringify(p));
  }
  process.send({ type: 'profile', action: m.action });
}
/** Call once the server listens on `port`; `close` runs before the process exits. */
export function serveOverIpc(port, close) {
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    try {
      await close();
    } finally {
      process.exit(0);
    }
  };
  process.on('message', (m) => {
    if (m && m.type === 'memory') process.send({ type: 'memory', usage: process.memoryUsage() });
    if (m && m.type === 'stop') void stop();
    if (m && m.type === 'profile') void profile(m);
  });
  // The parent died or closed the channel: do not outlive it.
  process.once('disconnect', () => void stop());
  process.once('SIGTERM', () => void stop());
  process.send({ type: 'ready', port });
}
