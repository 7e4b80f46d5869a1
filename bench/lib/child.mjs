// Starts a server script as its own Node process and talks to it over IPC.
// The child reports { type: 'ready', port } once it listens; the parent can ask
// for { type: 'memory' } and end it with { type: 'stop' } (SIGKILL as a fallback).
import { fork } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { clearTimeout, setTimeout } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';

const live = new Set();
const CLK_TCK = 100; // USER_HZ; Linux reports utime/stime in these on every architecture it runs on

/** Busy CPU seconds of the whole machine so far (/proc/stat: all but idle and iowait), or null off Linux. */
export function machineBusySeconds() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, , , irq, softirq, steal] = f;
    return (user + nice + system + irq + softirq + steal) / CLK_TCK;
  } catch {
    return null;
  }
}

/** Kills every child still running; safe to call more than once. */
export function killAll() {
  for (const c of live) {
    try {
      c.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

process.once('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    killAll();
    process.exit(130);
  });
}

/**
 * @param {string} script absolute path of the server module
 * @param {{ env?: Record<string, string>, logFile?: string, execArgv?: string[], startTimeoutMs?: number }} opts
 */
export async function startChild(script, opts = {}) {
  // The child's stdout (where pino writes) goes to a file, not through this
  // process: reading it here would put the log traffic on the load generator's loop.
  const out = opts.logFile ? openSync(opts.logFile, 'a') : 'ignore';
  const child = fork(script, [], {
    env: { ...process.env, ...opts.env },
    execArgv: opts.execArgv ?? [],
    stdio: ['ignore', out, 'inherit', 'ipc'],
  });
  if (typeof out === 'number') closeSync(out);
  live.add(child);
  child.once('exit', () => live.delete(child));

  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script}: not listening after ${opts.startTimeoutMs ?? 20000} ms`)), opts.startTimeoutMs ?? 20000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${script}: exited before listening (code ${code}, signal ${signal})`));
    });
    child.on('message', (m) => {
      if (m && m.type === 'ready') {
        clearTimeout(timer);
        resolve(m.port);
      }
    });
  });

  return {
    pid: child.pid,
    port,
    url: `http://127.0.0.1:${port}`,
    /** process.memoryUsage() of the child, asked over IPC. */
    memory() {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no memory answer')), 5000);
        const onMsg = (m) => {
          if (m && m.type === 'memory') {
            clearTimeout(timer);
            child.off('message', onMsg);
            resolve(m.usage);
          }
        };
        child.on('message', onMsg);
        child.send({ type: 'memory' });
      });
    },
    /** Starts ('start') or stops ('stop', writing `file`) a CPU profile in the child. */
    profile(action, extra = {}) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no profile ${action} answer`)), 30000);
        const onMsg = (m) => {
          if (m && m.type === 'profile' && m.action === action) {
            clearTimeout(timer);
            child.off('message', onMsg);
            resolve();
          }
        };
        child.on('message', onMsg);
        child.send({ type: 'profile', action, ...extra });
      });
    },
    /** VmRSS of the child in MiB, from /proc (Linux); falls back to the child's own report. */
    async rssMiB() {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
        const kb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1]);
        if (Number.isFinite(kb)) return { mib: kb / 1024, source: '/proc VmRSS' };
      } catch {
        // not Linux, or the process is gone
      }
      const usage = await this.memory();
      return { mib: usage.rss / 1048576, source: 'process.memoryUsage().rss' };
    },
    /**
     * CPU seconds the child has used so far (Linux /proc, clock ticks of 1/100 s):
     * the whole process and its main thread (the event loop), user and system.
     */
    cpuSeconds() {
      const read = (path) => {
        const st = readFileSync(path, 'utf8');
        const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
        return { user: Number(f[11]) / CLK_TCK, sys: Number(f[12]) / CLK_TCK };
      };
      return { process: read(`/proc/${child.pid}/stat`), main: read(`/proc/${child.pid}/task/${child.pid}/stat`) };
    },
    /** Asks the child to close cleanly (so --cpu-prof can write), then SIGKILLs it. */
    async stop(graceMs = 5000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      try {
        child.send({ type: 'stop' });
      } catch {
        // IPC already closed
      }
      const done = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
      if (!done) {
        child.kill('SIGKILL');
        await exited;
      }
      live.delete(child);
    },
  };
}
