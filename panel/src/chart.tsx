/** Traffic over time, drawn here as SVG: no chart library, nothing from another origin. */

type Figures = { messages: number; bytes: number };
export type TimelineItem = { time: string; inbound: Figures; outbound: Figures; local: Figures };
export type Timeline = { from: string; to: string; bucket: 'hour' | 'day'; items: TimelineItem[] };

const DIRECTIONS = ['inbound', 'outbound', 'local'] as const;
const COLOR = { inbound: '#0b5cad', outbound: '#a34a00', local: '#1d6b2f' } as const;
const W = 640;
const H = 200;
const PAD = { left: 36, right: 8, top: 10, bottom: 24 };

/** Every bucket of the range, the empty ones (which the API leaves out) as zero. */
export function buckets(t: Timeline): { start: number; values: Record<(typeof DIRECTIONS)[number], number> }[] {
  const step = t.bucket === 'hour' ? 3_600_000 : 86_400_000;
  const from = Date.parse(t.from);
  const first = from - (from % step);
  const to = Date.parse(t.to);
  const byStart = new Map(t.items.map((i) => [Date.parse(i.time), i]));
  const out = [];
  // At most 400 bars: a longer range would not be readable anyway (the API picks days past 2 days).
  for (let s = first; s < to && out.length < 400; s += step) {
    const item = byStart.get(s);
    out.push({ start: s, values: { inbound: item?.inbound.messages ?? 0, outbound: item?.outbound.messages ?? 0, local: item?.local.messages ?? 0 } });
  }
  return out;
}

const label = (ms: number, bucket: 'hour' | 'day'): string => {
  const d = new Date(ms);
  const day = `${d.getUTCMonth() + 1}/${d.getUTCDate()}`;
  return bucket === 'hour' ? `${day} ${String(d.getUTCHours()).padStart(2, '0')}h` : day;
};

/** Stacked bars of messages per bucket and direction, with a legend; the figures are in its accessible name too. */
export function TrafficChart({ timeline, title }: { timeline: Timeline; title: string }) {
  const bars = buckets(timeline);
  const totals = { inbound: 0, outbound: 0, local: 0 };
  for (const b of bars) for (const d of DIRECTIONS) totals[d] += b.values[d];
  const max = Math.max(1, ...bars.map((b) => b.values.inbound + b.values.outbound + b.values.local));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const bw = plotW / Math.max(1, bars.length);
  const y = (v: number) => (v / max) * plotH;
  const summary = `${title}: ${totals.inbound} inbound, ${totals.outbound} outbound, ${totals.local} local messages, per ${timeline.bucket} (UTC), at most ${max} in one ${timeline.bucket}`;
  const ticks = bars.length > 1 ? [0, Math.floor((bars.length - 1) / 2), bars.length - 1] : [0];
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary} data-testid="traffic-chart" data-total={totals.inbound + totals.outbound + totals.local}>
        <line x1={PAD.left} y1={PAD.top + plotH} x2={W - PAD.right} y2={PAD.top + plotH} stroke="currentColor" />
        <text x={PAD.left - 4} y={PAD.top + 8} text-anchor="end" font-size="11" fill="currentColor">{max}</text>
        <text x={PAD.left - 4} y={PAD.top + plotH} text-anchor="end" font-size="11" fill="currentColor">0</text>
        {bars.map((b, i) => {
          let base = PAD.top + plotH;
          return (
            <g key={b.start}>
              {DIRECTIONS.map((d) => {
                const h = y(b.values[d]);
                base -= h;
                return h > 0 ? <rect key={d} x={PAD.left + i * bw + bw * 0.1} y={base} width={Math.max(1, bw * 0.8)} height={h} fill={COLOR[d]} data-direction={d} data-value={b.values[d]} /> : null;
              })}
            </g>
          );
        })}
        {ticks.map((i) => (
          <text key={i} x={PAD.left + i * bw + bw / 2} y={H - 6} text-anchor={i === 0 && bars.length > 1 ? 'start' : i === bars.length - 1 && bars.length > 1 ? 'end' : 'middle'} font-size="11" fill="currentColor">
            {label(bars[i]?.start ?? 0, timeline.bucket)}
          </text>
        ))}
      </svg>
      <figcaption>
        {DIRECTIONS.map((d) => (
          <span key={d} class="legend"><span class={`swatch ${d}`} aria-hidden="true" /> {d}: <strong data-testid={`chart-${d}`}>{totals[d]}</strong></span>
        ))}
      </figcaption>
    </figure>
  );
}
