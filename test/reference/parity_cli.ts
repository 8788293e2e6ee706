/**
 * `deno task parity [--json FILE] [--only NAME-SUBSTRING]`: the engine's training path against the
 * tfjs reference model on every parity case (parity.ts), printed as a table and, with --json,
 * written as `{ "families": [ { "family", "logits_rel_err", "loss_rel_err", "grads_max_rel_err",
 * "lora_grads_max_rel_err" } ], "cases": [...] }` — one entry per family, each error the largest
 * over that family's cases (logits and loss over both the 'all' and the 'lora' runs).
 * Exits 1 when any error is over the bound of 1e-4.
 */
import { acquireGpu } from '../../src/gpu/device.ts';
import { PARITY_CASES, type ParityResult, runParity } from './parity.ts';

const BOUND = 1e-4;

/** The few Deno APIs used (tsconfig type-checks this file without Deno's types). */
const Deno = (globalThis as unknown as { Deno: { args: string[]; writeTextFileSync(p: string, s: string): void; exit(code: number): never } }).Deno;

function arg(name: string): string | undefined {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Deno.args[i + 1] : undefined;
}

const jsonPath = arg('--json');
const only = arg('--only');
const ctx = await acquireGpu({ label: 'parity' });
const results: ParityResult[] = [];
for (const c of PARITY_CASES) {
  if (only && !c.name.includes(only)) continue;
  const t0 = performance.now();
  const r = await runParity(ctx, c);
  results.push(r);
  const e = (x: number) => x.toExponential(2);
  console.log(`${c.name.padEnd(44)} logits ${e(r.logitsRelErr)}/${e(r.loraLogitsRelErr)}  loss ${e(r.lossRelErr)}/${e(r.loraLossRelErr)}  ` +
    `grads ${e(r.gradsMaxRelErr)} (${r.worstGrad})  lora ${e(r.loraGradsMaxRelErr)} (${r.worstLoraGrad})  ${((performance.now() - t0) / 1000).toFixed(1)}s`);
  for (const [name, v] of Object.entries(r.zeroByMath)) console.log(`  ${name}: zero in exact arithmetic; error / gradient RMS = ${e(v)}`);
}

const families = (['gpt2', 'llama'] as const).flatMap((family) => {
  const rs = results.filter((r) => r.family === family);
  if (rs.length === 0) return [];
  const max = (f: (r: ParityResult) => number) => Math.max(...rs.map(f));
  return [{
    family,
    logits_rel_err: max((r) => Math.max(r.logitsRelErr, r.loraLogitsRelErr)),
    loss_rel_err: max((r) => Math.max(r.lossRelErr, r.loraLossRelErr)),
    grads_max_rel_err: max((r) => r.gradsMaxRelErr),
    lora_grads_max_rel_err: max((r) => r.loraGradsMaxRelErr),
  }];
});
const ok = families.every((f) => f.logits_rel_err <= BOUND && f.loss_rel_err <= BOUND && f.grads_max_rel_err <= BOUND && f.lora_grads_max_rel_err <= BOUND);
if (jsonPath) {
  const out = { adapter: ctx.adapter.description || ctx.adapter.vendor, bound: BOUND, families, cases: results };
  Deno.writeTextFileSync(jsonPath, JSON.stringify(out, null, 2) + '\n');
  console.log(`wrote ${jsonPath}`);
}
console.log(ok ? `all errors ≤ ${BOUND}` : `errors over ${BOUND}`);
ctx.destroy();
Deno.exit(ok ? 0 : 1);
