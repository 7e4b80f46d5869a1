import { createConnection } from 'node:net';
import type { Socket } from 'node:net';
import { readdirSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

/** Latency of `GET /health`, sampled every `everyMs` while a load runs. */
export class HealthProbe {
  readonly latencies: number[] = [];
  readonly failures: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = false;

  constructor(private readonly url: string, private readonly everyMs = 50) {}

  start(): void {
    this.timer = setInterval(() => void this.once(), this.everyMs);
  }

  private async once(): Promise<void> {
    if (this.inFlight) return;
    this.inFlight = true;
    const t0 = performance.now();
    try {
      const r = await fetch(this.url, { signal: AbortSignal.timeout(5000) });
      await r.arrayBuffer();
      if (r.status !== 200) this.failures.push(`status ${r.status}`);
    } catch (err) {
      this.failures.push(err instanceof Error ? err.message : String(err));
    }
    this.latencies.push(performance.now() - t0);
    this.inFlight = false;
  }

  stop(): { p50: number; max: number; n: number } {
    clearInterval(this.timer);
    const sorted = [...this.latencies].sort((a, b) => a - b);
    return { p50: sorted[Math.floor(sorted.length / 2)] ?? NaN, max: sorted[sorted.length - 1] ?? NaN, n: sorted.length };
  }
}

/** The bytes V8 has reserved for its young generation now (new_space; it grows to its own cap, whatever the load). */
const youngBytes = (): number => getHeapSpaceStatistics().filter((s) => s.space_name === 'new_space' || s.space_name === 'new_large_object_space').reduce((n, s) => n + s.space_size, 0);

/**
 * The process's RSS, sampled every 50 ms: `growthMb()` is the peak over the first sample. `heldMb()` leaves out what V8's young generation
 * grew by meanwhile: that space grows to a cap of its own (V8's default semi-space is larger on Node 24 than on
 * Node 20; the installed service caps it at 1 MiB with --max-semi-space-size=1), so it is not memory a flood
 * makes the process hold.
 */
export class RssProbe {
  private readonly base = process.memoryUsage().rss;
  private readonly youngBase = youngBytes();
  peak = this.base;
  private youngPeak = this.youngBase;
  private readonly timer = setInterval(() => this.sample(), 50);
  private sample(): void {
    this.peak = Math.max(this.peak, process.memoryUsage().rss);
    this.youngPeak = Math.max(this.youngPeak, youngBytes());
  }
  growthMb(): number {
    this.sample();
    return (this.peak - this.base) / 2 ** 20;
  }
  /** The peak RSS growth less the young generation's growth. */
  heldMb(): number {
    return this.growthMb() - (this.youngPeak - this.youngBase) / 2 ** 20;
  }
  stop(): number {
    clearInterval(this.timer);
    return this.growthMb();
  }
}

/**
 * A peer that writes `unit` over and over as fast as the socket takes it and
 * never reads an answer, until `stop()` or `maxBytes` written.
 */
export function floodWriter(connect: () => Socket, unit: Buffer, maxBytes: number): { stop(): void; written(): number; closedByPeer(): boolean } {
  const chunk = Buffer.concat(Array(Math.max(1, Math.floor(65536 / unit.length))).fill(unit));
  const socket = connect();
  let written = 0;
  let stopped = false;
  let closed = false;
  socket.pause(); // never read: answers pile up on the server's side
  socket.on('error', () => undefined);
  socket.on('close', () => (closed = true));
  const pump = (): void => {
    while (!stopped && !socket.destroyed && written < maxBytes) {
      written += chunk.length;
      if (!socket.write(chunk)) {
        socket.once('drain', pump);
        return;
      }
    }
  };
  socket.once('connect', pump);
  return {
    stop: () => {
      stopped = true;
      socket.destroy();
    },
    written: () => written,
    closedByPeer: () => closed && !stopped,
  };
}

export const tcp = (port: number) => (): Socket => createConnection(port, '127.0.0.1');
export const unix = (path: string) => (): Socket => createConnection(path);

/** Descriptors this process holds open now. */
export function openDescriptors(): number {
  return readdirSync('/proc/self/fd').length;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
