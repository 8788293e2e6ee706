import { describe, expect, it } from 'vitest';
import { validateLora } from '../../src/model/config.ts';
import { INIT_STD, initLora, initParameters } from '../../src/model/init.ts';
import { loraSpecs, numel, parameterSpecs } from '../../src/model/params.ts';
import { preset } from '../../src/model/presets.ts';
import { checkParams } from '../../src/model/weight_names.ts';

/** Bitwise equality (vitest's toEqual walks typed arrays element by element, slowly). */
function same(a: Float32Array, b: Float32Array): boolean {
  if (a.length !== b.length) return false;
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

function moments(a: Float32Array): { mean: number; std: number } {
  let s = 0;
  for (const x of a) s += x;
  const mean = s / a.length;
  let v = 0;
  for (const x of a) v += (x - mean) ** 2;
  return { mean, std: Math.sqrt(v / a.length) };
}

describe('initParameters', () => {
  const cfg = preset('gpt2-1m');
  const p = initParameters(cfg, 7);

  it('fills every canonical parameter with the right length', () => {
    checkParams(cfg, p);
    expect(Object.keys(p).sort()).toEqual(parameterSpecs(cfg).map((s) => s.name).sort());
  });

  it('follows the GPT-2 scheme: N(0, 0.02), residual projections scaled by 1/sqrt(2L), zero biases, unit norms', () => {
    const emb = moments(p['tok_emb.weight']);
    expect(Math.abs(emb.mean)).toBeLessThan(1e-3);
    expect(emb.std).toBeGreaterThan(INIT_STD * 0.97);
    expect(emb.std).toBeLessThan(INIT_STD * 1.03);
    const q = moments(p['layers.2.attn.q.weight']);
    expect(q.std / INIT_STD).toBeCloseTo(1, 1);
    const o = moments(p['layers.2.attn.o.weight']);
    expect(o.std / (INIT_STD / Math.sqrt(2 * cfg.nLayer))).toBeCloseTo(1, 1);
    const down = moments(p['layers.4.mlp.down.weight']);
    expect(down.std / (INIT_STD / Math.sqrt(2 * cfg.nLayer))).toBeCloseTo(1, 1);
    expect(p['layers.0.attn.q.bias'].every((x) => x === 0)).toBe(true);
    expect(p['layers.0.attn_norm.weight'].every((x) => x === 1)).toBe(true);
    expect(p['final_norm.bias'].every((x) => x === 0)).toBe(true);
  });

  it('is reproducible from the seed; each tensor has its own stream', () => {
    const t = preset('tiny-gpt2');
    const tp = initParameters(t, 7);
    const again = initParameters(t, 7);
    for (const k of Object.keys(tp)) expect(same(again[k], tp[k]), k).toBe(true);
    expect(same(initParameters(t, 8)['tok_emb.weight'], tp['tok_emb.weight'])).toBe(false);
    // Distinct tensors do not share draws.
    expect(same(tp['layers.0.attn.q.weight'], tp['layers.0.attn.k.weight'])).toBe(false);
    // Adding the value head (at the end) leaves every other tensor as it was.
    const withHead = initParameters(t, 7, { valueHead: true });
    for (const k of Object.keys(tp)) expect(same(withHead[k], tp[k]), k).toBe(true);
    expect(withHead['value_head.weight'].length).toBe(t.dModel);
    expect(withHead['value_head.bias'][0]).toBe(0);
  });

  it('initializes the Llama family (RMSNorm weights 1, no biases where the config has none)', () => {
    const l = preset('llama-1m');
    const lp = initParameters(l, 3);
    checkParams(l, lp);
    expect(lp['layers.0.mlp_norm.weight'].every((x) => x === 1)).toBe(true);
    expect('layers.0.attn.q.bias' in lp).toBe(false);
    expect(moments(lp['layers.1.mlp.gate.weight']).std / INIT_STD).toBeCloseTo(1, 1);
  });
});

describe('initLora', () => {
  it('draws A ~ U(-1/sqrt(in), 1/sqrt(in)) and sets B = 0, for exactly the adapter tensors', () => {
    const cfg = preset('llama-1m');
    const lora = validateLora(cfg, { rank: 8, alpha: 16, targets: ['q', 'v', 'down'] });
    const t = initLora(cfg, lora, 11);
    expect(Object.keys(t).sort()).toEqual(loraSpecs(cfg, lora).map((s) => s.name).sort());
    for (const s of loraSpecs(cfg, lora)) {
      const a = t[s.name];
      expect(a.length).toBe(numel(s.shape));
      if (s.kind === 'lora-b') expect(a.every((x) => x === 0)).toBe(true);
      else {
        const bound = 1 / Math.sqrt(s.shape[1]);
        expect(a.every((x) => Math.abs(x) <= bound)).toBe(true);
        const m = moments(a);
        expect(m.std / (bound / Math.sqrt(3))).toBeCloseTo(1, 1);
      }
    }
    expect(same(initLora(cfg, lora, 11)['layers.0.attn.q.lora_a'], t['layers.0.attn.q.lora_a'])).toBe(true);
    expect(same(initLora(cfg, lora, 12)['layers.0.attn.q.lora_a'], t['layers.0.attn.q.lora_a'])).toBe(false);
  });
});
