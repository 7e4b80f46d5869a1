import type { Registry } from 'prom-client';

/** Label values of one sample of a gauge read at scrape time. */
export type GaugeSample = { labels?: Record<string, string>; value: number };

/**
 * What later features may add to GET /metrics without knowing prom-client:
 * a gauge whose samples are read when Prometheus scrapes (the last backup's
 * result, a deliverability score …). `read` gets its own time limit; a read
 * that fails or hangs leaves the gauge empty for that scrape.
 */
export type MetricsRegistry = {
  addGauge(def: { name: string; help: string; labelNames?: readonly string[]; read: () => Promise<GaugeSample[]> | GaugeSample[] }): void;
};

type Loaded = {
  prom: typeof import('prom-client');
  registry: Registry;
  http: import('prom-client').Histogram<'route' | 'method' | 'status'>;
  authFailures: import('prom-client').Counter;
  authBlocked: import('prom-client').Counter<'route'>;
  hook: import('prom-client').Histogram<'result'>;
  policy: import('prom-client').Histogram<'action'>;
};

const GAUGE_READ_MS = 3000;
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_r, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * The process's metrics. Observations are dropped until `enable()` loads
 * prom-client (only the service does, when it serves GET /metrics), so a CLI
 * command never loads it and code may observe unconditionally.
 */
export class Instruments implements MetricsRegistry {
  private m: Loaded | undefined;
  private readonly gauges: Parameters<MetricsRegistry['addGauge']>[0][] = [];

  async enable(): Promise<void> {
    if (this.m) return;
    const prom = await import('prom-client');
    const registry = new prom.Registry();
    // No prom-client default (Node process) metrics: a node exporter covers the host, and some of their names fail promtool's lint.
    const m: Loaded = {
      prom,
      registry,
      http: new prom.Histogram({ name: 'mailsvc_http_request_duration_seconds', help: 'HTTP requests by route template, method and status, with their latency', labelNames: ['route', 'method', 'status'], buckets: LATENCY_BUCKETS, registers: [registry] }),
      authFailures: new prom.Counter({ name: 'mailsvc_auth_failures_total', help: 'Authentication failures counted by the lockout (each is a line in the auth log)', registers: [registry] }),
      authBlocked: new prom.Counter({ name: 'mailsvc_auth_blocked_total', help: 'Requests refused with 429 (an address blocked after too many failures, or a send limit)', labelNames: ['route'], registers: [registry] }),
      hook: new prom.Histogram({ name: 'mailsvc_mail_auth_hook_duration_seconds', help: 'Mail authentication hook decisions (ok, fail, error) and their latency', labelNames: ['result'], buckets: LATENCY_BUCKETS, registers: [registry] }),
      policy: new prom.Histogram({ name: 'mailsvc_policy_duration_seconds', help: 'Postfix policy service decisions by action and their latency', labelNames: ['action'], buckets: LATENCY_BUCKETS, registers: [registry] }),
    };
    this.m = m;
    for (const g of this.gauges) this.register(g);
  }

  addGauge(def: Parameters<MetricsRegistry['addGauge']>[0]): void {
    this.gauges.push(def);
    if (this.m) this.register(def);
  }

  private register(def: Parameters<MetricsRegistry['addGauge']>[0]): void {
    const m = this.m;
    if (!m) return;
    new m.prom.Gauge({
      name: def.name, help: def.help, labelNames: def.labelNames ?? [], registers: [m.registry],
      async collect() {
        this.reset();
        const samples = await withTimeout(Promise.resolve(def.read()), GAUGE_READ_MS).catch(() => [] as GaugeSample[]);
        for (const s of samples) {
          if (s.labels) this.set(s.labels, s.value);
          else this.set(s.value);
        }
      },
    });
  }

  httpRequest(route: string, method: string, status: number, seconds: number): void {
    this.m?.http.observe({ route, method, status: String(status) }, seconds);
    if (status === 429) this.m?.authBlocked.inc({ route });
  }
  authFailure(): void {
    this.m?.authFailures.inc();
  }
  mailAuthDecision(result: 'ok' | 'fail' | 'error', seconds: number): void {
    this.m?.hook.observe({ result }, seconds);
  }
  policyDecision(action: string, seconds: number): void {
    // The action's first word only (DUNNO, DEFER_IF_PERMIT …): the rest is free text.
    this.m?.policy.observe({ action: action.split(/\s/)[0] ?? action }, seconds);
  }

  /** The Prometheus text exposition, or null before `enable()`. */
  async render(): Promise<{ contentType: string; text: string } | null> {
    if (!this.m) return null;
    return { contentType: this.m.registry.contentType, text: await this.m.registry.metrics() };
  }
}
