import { useEffect, useState } from 'preact/hooks';
import { api, qs } from './api';
import { described, FieldMessage } from './ui';

/** The part of a JSON schema (as the API's OpenAPI document states a field) the controls read. */
export type FieldSchema = {
  type?: string | string[];
  anyOf?: FieldSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  'x-unit'?: string;
  'x-control'?: string;
  /** The default, shown (not `default`: the API's validator would fill that into requests). */
  'x-default'?: unknown;
};
export type BodySchema = { properties?: Record<string, FieldSchema> };

/** How a field is shown, read from its schema alone. */
export type ControlKind = { kind: 'switch' } | { kind: 'segmented'; values: string[] } | { kind: 'select'; values: string[] } | { kind: 'unit'; unit: string; min?: number; max?: number } | { kind: 'calendar' } | { kind: 'chips' } | { kind: 'text' };

/** The fixed values of an enum (a union of literals, `enum`, or `const`), or null. */
export function enumValues(s: FieldSchema): string[] | null {
  if (s.enum) return s.enum.map(String);
  if (s.anyOf && s.anyOf.length > 0 && s.anyOf.every((a) => a.const !== undefined || (a.enum && a.enum.length === 1))) return s.anyOf.map((a) => String(a.const ?? a.enum?.[0]));
  return null;
}

/** enum → a segmented control (up to 4 values) or a select; yes/no and boolean → a switch; x-unit → number with unit; x-control calendar/list. */
export function controlOf(s: FieldSchema): ControlKind {
  const values = enumValues(s);
  if (s.type === 'boolean' || (values && values.length === 2 && values.includes('yes') && values.includes('no'))) return { kind: 'switch' };
  if (values) return values.length <= 4 ? { kind: 'segmented', values } : { kind: 'select', values };
  if (s['x-control'] === 'calendar') return { kind: 'calendar' };
  if (s['x-control'] === 'list') return { kind: 'chips' };
  if (s['x-unit']) {
    const num = s.anyOf?.find((a) => a.type === 'integer' || a.type === 'number') ?? s;
    return { kind: 'unit', unit: s['x-unit'], ...(num.minimum !== undefined ? { min: num.minimum } : {}), ...(num.maximum !== undefined ? { max: num.maximum } : {}) };
  }
  return { kind: 'text' };
}

/** Units a size or a duration is entered in: the base unit and larger ones. */
const SCALES: Record<string, [string, number][]> = {
  bytes: [['B', 1], ['KiB', 1024], ['MiB', 1024 ** 2], ['GiB', 1024 ** 3]],
  seconds: [['s', 1], ['min', 60], ['h', 3600], ['d', 86_400]],
};

/** A base-unit number in the largest unit that keeps it whole: 52428800 bytes → 50 MiB, 14400 s → 4 h. */
export function splitUnit(value: number, unit: string): { n: number; u: string } {
  const scale = SCALES[unit];
  if (!scale) return { n: value, u: unit };
  for (const [name, f] of [...scale].reverse()) if (value !== 0 && value % f === 0) return { n: value / f, u: name };
  return { n: value, u: scale[0]![0] };
}
export const formatUnit = (value: number, unit: string): string => {
  const { n, u } = splitUnit(value, unit);
  return `${n} ${u}`;
};
const factorOf = (unit: string, u: string): number => SCALES[unit]?.find(([name]) => name === u)?.[1] ?? 1;

type ControlProps = {
  id: string;
  label: string;
  schema: FieldSchema;
  value: string;
  onChange: (v: string) => void;
  error?: string | undefined;
  /** Where the value in force comes from: stored, environment, file or default. */
  source?: string | undefined;
  /** Help beyond the schema's description. */
  note?: string;
};

const SOURCE: Record<string, string> = { stored: 'stored here (database)', environment: 'from the environment', file: 'from the settings file', default: 'the default' };

/** "Default: …; current value: stored here": under every generated control. */
function hintOf(p: ControlProps, kind: ControlKind): string {
  const d = p.schema['x-default'] ?? p.schema.default;
  const shown = d === undefined || d === '' ? '(empty)' : kind.kind === 'unit' && typeof d === 'number' ? formatUnit(d, p.schema['x-unit'] ?? '') : String(d as string | number);
  return [p.note ?? p.schema.description, `Default: ${shown}`, p.source ? `Current value: ${SOURCE[p.source] ?? p.source}` : undefined].filter(Boolean).join(' · ');
}

/** One settings field, its control chosen by its schema (controlOf), with its default, its source, and the API's message. */
export function SchemaControl(p: ControlProps) {
  const kind = controlOf(p.schema);
  const hint = hintOf(p, kind);
  const aria = described(p.id, p.error, true);
  const wrap = (control: preact.ComponentChildren, asGroup = false) =>
    asGroup ? (
      <fieldset class="field control" data-control={kind.kind} id={`${p.id}-group`}>
        <legend>{p.label}</legend>
        {control}
        <FieldMessage id={p.id} message={p.error} hint={hint} />
      </fieldset>
    ) : (
      <div class="field control" data-control={kind.kind}>
        <label for={p.id}>{p.label}</label>
        {control}
        <FieldMessage id={p.id} message={p.error} hint={hint} />
      </div>
    );
  switch (kind.kind) {
    case 'switch': {
      const on = p.value === 'yes' || p.value === 'true';
      const [yes, no] = p.schema.type === 'boolean' ? ['true', 'false'] : ['yes', 'no'];
      return (
        <div class="field control" data-control="switch">
          <label class="switch" for={p.id}>
            <input id={p.id} type="checkbox" role="switch" checked={on} {...aria} onChange={(e) => p.onChange((e.currentTarget as HTMLInputElement).checked ? yes! : no!)} />
            <span class="track" aria-hidden="true" /> {p.label} <span class="switch-state">{on ? 'on' : 'off'}</span>
          </label>
          <FieldMessage id={p.id} message={p.error} hint={hint} />
        </div>
      );
    }
    case 'segmented':
      return wrap(
        <div class="segmented">
          {kind.values.map((v, i) => (
            <label key={v}>
              <input type="radio" id={i === 0 ? p.id : `${p.id}-${v}`} name={p.id} value={v} checked={p.value === v} {...aria} onChange={() => p.onChange(v)} />
              <span>{v}</span>
            </label>
          ))}
        </div>,
        true,
      );
    case 'select':
      return wrap(
        <select id={p.id} value={p.value} {...aria} onChange={(e) => p.onChange((e.currentTarget as HTMLSelectElement).value)}>
          {kind.values.map((v) => <option key={v} value={v}>{v}</option>)}
        </select>,
      );
    case 'unit':
      return wrap(<UnitInput id={p.id} unit={kind.unit} value={p.value} onChange={p.onChange} aria={aria} min={kind.min} max={kind.max} />);
    case 'calendar':
      return wrap(<CalendarPicker id={p.id} value={p.value} onChange={p.onChange} aria={aria} />);
    case 'chips':
      return wrap(<Chips id={p.id} label={p.label} value={p.value} onChange={p.onChange} aria={aria} />, true);
    default:
      return wrap(<input id={p.id} value={p.value} autocomplete="off" {...aria} onInput={(e) => p.onChange((e.currentTarget as HTMLInputElement).value)} />);
  }
}

type Aria = ReturnType<typeof described>;

/** A number and its unit (`50` `MiB`); the value handed on is in the base unit (bytes, seconds) or the plain number (days …). */
export function UnitInput({ id, unit, value, onChange, aria, min, max }: { id: string; unit: string; value: string; onChange: (v: string) => void; aria: Aria; min?: number | undefined; max?: number | undefined }) {
  const scale = SCALES[unit];
  const base = Number(value);
  const start = scale && value.trim() !== '' && Number.isFinite(base) ? splitUnit(base, unit) : { n: value, u: scale?.[0]?.[0] ?? unit };
  const [n, setN] = useState(String(start.n));
  const [u, setU] = useState(start.u);
  // A value set from outside (a reload after saving) shows again.
  useEffect(() => {
    if (!scale) return setN(value);
    if (value.trim() !== '' && Number(n) * factorOf(unit, u) !== Number(value)) {
      const s = splitUnit(Number(value), unit);
      setN(String(s.n));
      setU(s.u);
    }
  }, [value]);
  const emit = (nn: string, uu: string) => onChange(scale && nn.trim() !== '' && Number.isFinite(Number(nn)) ? String(Math.round(Number(nn) * factorOf(unit, uu))) : nn);
  return (
    <span class="unit-input">
      <input id={id} type="number" inputMode="decimal" min={scale ? 0 : min} max={scale ? undefined : max} step="any" value={n} {...aria}
        onInput={(e) => { const v = (e.currentTarget as HTMLInputElement).value; setN(v); emit(v, u); }} />
      {scale ? (
        <select aria-label="Unit" value={u} onChange={(e) => { const v = (e.currentTarget as HTMLSelectElement).value; setU(v); emit(n, v); }}>
          {scale.map(([name]) => <option key={name} value={name}>{name}</option>)}
        </select>
      ) : <span class="unit">{unit}</span>}
    </span>
  );
}

/** A list (space-separated in the API) as chips: each with its remove button, and an input that adds one (Enter or Add). */
export function Chips({ id, label, value, onChange, aria }: { id: string; label: string; value: string; onChange: (v: string) => void; aria: Aria }) {
  const items = value.split(/\s+/).filter(Boolean);
  const [draft, setDraft] = useState('');
  const add = () => {
    const more = draft.split(/\s+/).filter(Boolean).filter((x) => !items.includes(x));
    if (more.length > 0) onChange([...items, ...more].join(' '));
    setDraft('');
  };
  return (
    <div class="chips">
      <ul aria-label={label}>
        {items.map((x) => (
          <li key={x} class="chip">
            <span>{x}</span>
            <button type="button" class="chip-remove" aria-label={`Remove ${x}`} onClick={() => onChange(items.filter((i) => i !== x).join(' '))}>×</button>
          </li>
        ))}
        {items.length === 0 && <li class="muted">none</li>}
      </ul>
      <span class="row">
        <input id={id} aria-label={`Add to ${label}`} value={draft} autocomplete="off" {...aria}
          onInput={(e) => setDraft((e.currentTarget as HTMLInputElement).value)}
          onKeyDown={(e) => { if (e.key === 'Enter') { e.preventDefault(); add(); } }} />
        <button type="button" class="secondary" onClick={add} disabled={draft.trim() === ''}>Add</button>
      </span>
    </div>
  );
}

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
type Rule = { freq: 'daily' | 'weekly' | 'monthly' | 'custom'; time: string; day: string; date: string };

/** The picker's fields for an expression it can build, else "custom". */
export function ruleOf(expr: string): Rule {
  const blank = { time: '02:30', day: 'Sun', date: '1' };
  let m = /^\*-\*-\* (\d{2}):(\d{2})(?::00)?$/.exec(expr);
  if (m) return { ...blank, freq: 'daily', time: `${m[1]}:${m[2]}` };
  m = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:\*-\*-\* )?(\d{2}):(\d{2})(?::00)?$/.exec(expr);
  if (m) return { ...blank, freq: 'weekly', day: m[1]!, time: `${m[2]}:${m[3]}` };
  m = /^\*-\*-(\d{2}) (\d{2}):(\d{2})(?::00)?$/.exec(expr);
  if (m) return { ...blank, freq: 'monthly', date: String(Number(m[1])), time: `${m[2]}:${m[3]}` };
  return { ...blank, freq: 'custom' };
}
export function exprOf(r: Rule): string {
  const t = `${r.time}:00`;
  if (r.freq === 'daily') return `*-*-* ${t}`;
  if (r.freq === 'weekly') return `${r.day} *-*-* ${t}`;
  if (r.freq === 'monthly') return `*-*-${r.date.padStart(2, '0')} ${t}`;
  return '';
}

type Preview = { expressions: { expression: string; normalized: string; next: string[] }[] };

/**
 * OnCalendar: daily, weekly or monthly at a time (the expression is built), or
 * any expression typed; below, the next runs as systemd computes them
 * (GET /admin/backups/calendar), or why it cannot.
 */
export function CalendarPicker({ id, value, onChange, aria }: { id: string; value: string; onChange: (v: string) => void; aria: Aria }) {
  const lines = value.split(/\r?\n|;/).map((l) => l.trim()).filter(Boolean);
  const single = lines.length <= 1;
  const [rule, setRule] = useState<Rule>(() => (single ? ruleOf(lines[0] ?? '') : { freq: 'custom', time: '02:30', day: 'Sun', date: '1' }));
  const [preview, setPreview] = useState<Preview | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    setProblem(null);
    if (lines.length === 0) return setPreview(null);
    let live = true;
    const t = setTimeout(() => {
      api<Preview>('GET', `/admin/backups/calendar${qs({ expression: lines.join(';'), iterations: 5 })}`).then(
        (p) => live && (setPreview(p), setProblem(null)),
        (e: unknown) => live && (setPreview(null), setProblem(e instanceof Error ? e.message : String(e))),
      );
    }, 250);
    return () => ((live = false), clearTimeout(t));
  }, [lines.join(';')]);
  const pick = (r: Rule) => {
    setRule(r);
    if (r.freq !== 'custom') onChange(exprOf(r));
  };
  return (
    <div class="calendar">
      <div class="segmented" role="radiogroup" aria-label="How often">
        {(['daily', 'weekly', 'monthly', 'custom'] as const).map((f) => (
          <label key={f}><input type="radio" name={`${id}-freq`} value={f} checked={rule.freq === f} onChange={() => pick({ ...rule, freq: f })} /> <span>{f}</span></label>
        ))}
      </div>
      {rule.freq !== 'custom' && (
        <span class="row">
          {rule.freq === 'weekly' && (
            <label>On <select value={rule.day} onChange={(e) => pick({ ...rule, day: (e.currentTarget as HTMLSelectElement).value })}>{WEEKDAYS.map((d) => <option key={d} value={d}>{d}</option>)}</select></label>
          )}
          {rule.freq === 'monthly' && (
            <label>Day <input type="number" min={1} max={28} value={rule.date} onInput={(e) => pick({ ...rule, date: (e.currentTarget as HTMLInputElement).value || '1' })} /></label>
          )}
          <label>At (UTC) <input type="time" value={rule.time} onInput={(e) => pick({ ...rule, time: (e.currentTarget as HTMLInputElement).value || '00:00' })} /></label>
        </span>
      )}
      <textarea id={id} rows={Math.max(1, lines.length)} value={lines.join('\n')} spellcheck={false} {...aria}
        onInput={(e) => { setRule({ ...rule, freq: 'custom' }); onChange((e.currentTarget as HTMLTextAreaElement).value); }} />
      <div class="calendar-preview" role="status" aria-live="polite" data-testid={`${id}-preview`}>
        {problem ? <p class="muted">Next runs: {problem}</p> : preview && preview.expressions.map((x) => (
          <p key={x.expression}>
            <small>{x.normalized}: next</small>{' '}
            {x.next.map((at) => <time key={at} dateTime={at} class="run">{new Date(at).toLocaleString(undefined, { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZone: 'UTC', timeZoneName: 'short' })}</time>)}
          </p>
        ))}
      </div>
    </div>
  );
}

/** The body schema of an API route, from the API's OpenAPI document (GET /panel/schema). */
export async function bodySchema(method: 'post' | 'put' | 'patch', path: string): Promise<BodySchema> {
  const res = await fetch(`/panel/schema${qs({ method, path })}`, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
  if (!res.ok) throw new Error(`the form's schema could not be read (HTTP ${res.status})`);
  return ((await res.json()) as { body: BodySchema }).body;
}
