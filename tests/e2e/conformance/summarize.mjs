// One conformance run in a few lines: each scenario passed, failed, or failed as its baseline
// expects, judged as the suite's CLI judges (a FAILURE or WARNING check fails its scenario; a
// `scenario:check` entry excuses that check only; an entry that passes is stale, so a failure).
// Usage: node summarize.mjs NODE_MODULES RESULTS_DIR BASELINE.yml LABEL  (writes RESULTS_DIR/summary.json)
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [modules, dir, baselineFile, label] = process.argv.slice(2);
const { parse } = createRequire(path.join(path.resolve(modules), 'index.js'))('yaml');  // the suite's own
const entries = parse(fs.readFileSync(baselineFile, 'utf8'))?.server ?? [];
const whole = new Set(entries.filter((e) => !e.includes(':')));
const perCheck = new Map();
for (const entry of entries.filter((e) => e.includes(':'))) {
  const [scenario, check] = entry.split(':');
  perCheck.set(scenario, new Set([...(perCheck.get(scenario) ?? []), check]));
}

const SEVERITY = { FAILURE: 3, WARNING: 2, SUCCESS: 1 };
const bad = (check) => check.status === 'FAILURE' || check.status === 'WARNING';

function verdict(scenario, checks) {
  const worst = new Map();  // a check id that repeats counts once, at its most severe
  for (const check of checks) {
    const seen = worst.get(check.id);
    if (!seen || (SEVERITY[check.status] ?? 0) > (SEVERITY[seen.status] ?? 0)) worst.set(check.id, check);
  }
  const failing = [...worst.values()].filter(bad);
  const reason = (check) => `${check.id}: ${check.errorMessage ?? check.status}`.slice(0, 240);
  if (whole.has(scenario)) {
    return failing.length ? ['expected', reason(failing[0])] : ['failed', 'passes but is in the baseline: remove it'];
  }
  const excused = perCheck.get(scenario) ?? new Set();
  const unexpected = failing.filter((c) => !excused.has(c.id));
  if (unexpected.length) return ['failed', reason(unexpected[0])];
  const stale = [...excused].filter((id) => worst.get(id)?.status === 'SUCCESS');
  if (stale.length) return ['failed', `${scenario}:${stale[0]} passes but is in the baseline: remove it`];
  return failing.length ? ['expected', reason(failing[0])] : ['passed', ''];
}

const scenarios = {};
for (const run of fs.readdirSync(dir).sort()) {
  const file = path.join(dir, run, 'checks.json');
  if (!fs.existsSync(file)) continue;
  const scenario = run.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
  const [status, detail] = verdict(scenario, JSON.parse(fs.readFileSync(file, 'utf8')));
  scenarios[scenario] = { status, detail };
}
const count = (status) => Object.values(scenarios).filter((s) => s.status === status).length;
const totals = { passed: count('passed'), failed: count('failed'), expected: count('expected') };
fs.writeFileSync(path.join(dir, 'summary.json'), JSON.stringify({ label, totals, scenarios }, null, 2));
console.log(`conformance ${label}: ${totals.passed} passed, ${totals.failed} failed, ${totals.expected} expected failures`);
for (const [name, s] of Object.entries(scenarios)) if (s.status === 'failed') console.log(`  ✗ ${name}: ${s.detail}`);
