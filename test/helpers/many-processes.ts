import { spawn } from 'node:child_process';

export type Sleepers = { count: number; stop(): Promise<void> };

/**
 * `count` more processes on the machine, each waiting: what a loaded host
 * looks like to code that walks /proc. One shell forks them (a fork, no exec:
 * far quicker than as many `sleep`s), each a subshell blocked reading the
 * shell's stdin, a pipe from this process. stop() closes that pipe, so every
 * one of them ends, and kills the group; should this process die first, the
 * pipe closes all the same. Resolves once the shell has forked them all.
 */
export async function startSleepers(count: number): Promise<Sleepers> {
  const script = `exec 3<&0; i=0; while [ "$i" -lt ${count} ]; do read _ <&3 & i=$((i+1)); done; echo ready; wait`;
  const sh = spawn('sh', ['-c', script], { detached: true, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => sh.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    sh.stdin.end();
    try {
      if (sh.pid !== undefined) process.kill(-sh.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
    await exited;
  };
  await new Promise<void>((resolve, reject) => {
    let out = '';
    sh.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('ready\n')) resolve();
    });
    void exited.then(() => reject(new Error(`the shell forking ${count} waiting processes exited before it was done`)));
  });
  return { count, stop };
}
