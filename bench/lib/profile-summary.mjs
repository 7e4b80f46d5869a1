// Reads a V8 .cpuprofile and says where the time went: self time by function
// and by package, and the inclusive time of a few named mailsvc functions.

function packageOf(url) {
  if (url === '') return '(native / V8)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return 'node core';
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return `mailsvc ${url.slice(dist + 1).split('/').slice(0, 3).join('/')}`;
  if (url.includes('/bench/')) return 'bench';
  return url;
}

function short(url) {
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + '/node_modules/'.length);
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return url.slice(dist + 1);
  return url;
}

/**
 * @param {{ nodes: Array<{ id: number, callFrame: { functionName: string, url: string, lineNumber: number }, children?: number[] }>, samples: number[], timeDeltas: number[] }} profile
 * @param {Array<{ label: string, match: (fn: string, url: string) => boolean }>} probes inclusive-time probes
 */
export function summarize(profile, probes = []) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const self = new Map(); // node id -> µs
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(id, (self.get(id) ?? 0) + dt);
    total += dt;
  });

  const idle = [...self].filter(([id]) => byId.get(id).callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;

  const fnSelf = new Map();
  const pkgSelf = new Map();
  for (const [id, t] of self) {
    const { functionName, url, lineNumber } = byId.get(id).callFrame;
    if (functionName === '(idle)') continue;
    const key = `${functionName || '(anonymous)'} ${short(url)}${url ? `:${lineNumber + 1}` : ''}`;
    fnSelf.set(key, (fnSelf.get(key) ?? 0) + t);
    const pkg = ['(garbage collector)', '(program)'].includes(functionName) ? functionName : packageOf(url);
    pkgSelf.set(pkg, (pkgSelf.get(pkg) ?? 0) + t);
  }

  // Inclusive: a sample counts for a probe when any frame on its stack matches (once per sample).
  const inclusive = new Map(probes.map((p) => [p.label, 0]));
  const memo = new Map();
  const matchesOf = (id) => {
    if (memo.has(id)) return memo.get(id);
    const { functionName, url } = byId.get(id).callFrame;
    const up = parent.has(id) ? matchesOf(parent.get(id)) : new Set();
    const mine = new Set(up);
    for (const p of probes) if (p.match(functionName, url)) mine.add(p.label);
    memo.set(id, mine);
    return mine;
  };
  for (const [id, t] of self) for (const label of matchesOf(id)) inclusive.set(label, inclusive.get(label) + t);

  const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  return { totalUs: total, busyUs: busy, topFunctions: top(fnSelf, 25), packages: top(pkgSelf, 20), inclusive: [...inclusive] };
}
