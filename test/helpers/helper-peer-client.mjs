// A client of the helper's socket for the peer-limit tests, run as another
// user (setpriv). argv: <socket> <plan JSON>: a list of connections, each
// { "send"?: "<request line>", "every"?: ms, "times"?: n }, opened one after
// the other. It reports on stdout, one JSON line each: {"ev":"pid"},
// {"c":i,"ev":"connect"|"line"|"close"|"error"}. It ends when stdin closes.
import { createConnection } from 'node:net';
import process from 'node:process';
import { clearInterval, setInterval } from 'node:timers';

const [socket, planJson] = process.argv.slice(2);
const plan = JSON.parse(planJson);
const say = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
say({ ev: 'pid', pid: process.pid });

const open = (c, spec) =>
  new Promise((resolve) => {
    const conn = createConnection(socket);
    let buf = '';
    let timer;
    conn.setEncoding('utf8');
    conn.on('connect', () => {
      say({ c, ev: 'connect' });
      if (spec.send) conn.write(`${spec.send}\n`);
      let left = (spec.times ?? 1) - 1;
      if (spec.every && left > 0) {
        timer = setInterval(() => {
          conn.write(`${spec.send}\n`);
          if (--left <= 0) clearInterval(timer);
        }, spec.every);
      }
      resolve();
    });
    conn.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        say({ c, ev: 'line', line: buf.slice(0, nl) });
        buf = buf.slice(nl + 1);
      }
    });
    conn.on('error', (err) => {
      say({ c, ev: 'error', code: err.code });
      resolve();
    });
    conn.on('close', () => {
      clearInterval(timer);
      say({ c, ev: 'close' });
    });
  });

for (const [c, spec] of plan.entries()) await open(c, spec);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
