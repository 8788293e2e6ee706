// The demo pages' plain logic in Node: settings from a form or URL (and their errors), the job
// options they make, the adapter store of the pages over an in-memory KV (save, list, load,
// delete, PEFT zip export), and a chat reply that runs the environment's tool.
import { strFromU8, unzipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { configError } from './config_error.ts';
import { join } from 'node:path';
import { DemoStore, savedCurves } from '../../demos/src/lib/adapters.ts';
import { DEFAULT_SETTINGS, type DemoSettings, FULL_SETTINGS, jobOptions, parseSettings, QUICK_SETTINGS } from '../../demos/src/lib/job.ts';
import { hasShipped, shippedFromBytes } from '../../demos/src/lib/shipped.ts';
import { reply, sampleTask } from '../../demos/src/lib/talk.ts';
import { agentsModelConfig, bargainEnv, ByteTokenizer, engine, jobEnv, jobOptions as trainJobOptions, type JobResult, MemoryKv, type SampleFn, signalEnv } from '../../src/mod.ts';

const from = (o: Record<string, string>) => (k: string) => o[k] ?? null;

describe('demo settings', () => {
  it('fall back to the defaults and take what the URL or form gives', () => {
    expect(parseSettings(from({}))).toEqual(DEFAULT_SETTINGS);
    const s = parseSettings(from({ env: 'nim', algo: 'rloo', steps: '12', warmstart: '0', seed: '7' }));
    expect(s).toMatchObject({ env: 'nim', algo: 'rloo', steps: 12, warmstart: 0, seed: 7, model: 'gpt2-100k' });
    expect(parseSettings(from({ steps: '3' }), QUICK_SETTINGS)).toEqual({ ...QUICK_SETTINGS, steps: 3 });
  });

  it('refuse unknown names and bad numbers with a ConfigError naming the field', () => {
    const bad: [Record<string, string>, string][] = [
      [{ env: 'chess' }, 'env'], [{ algo: 'sft' }, 'algo'], [{ model: 'gpt5' }, 'model'],
      [{ steps: '0' }, 'steps'], [{ steps: '2.5' }, 'steps'], [{ warmstart: '-1' }, 'warmstart'], [{ groupSize: 'x' }, 'groupSize'],
    ];
    for (const [q, field] of bad) expect(configError(() => parseSettings(from(q))).field, JSON.stringify(q)).toBe(field);
  });

  it("make job options through the library's jobOptions: the full run is `npm run train`'s job, the defaults its RL from the shipped warm start", () => {
    const { env: { spec: _a, ...demoEnv }, ...demo } = jobOptions(FULL_SETTINGS);
    const { env: { spec: _b, ...cliEnv }, ...cli } = trainJobOptions({ env: 'calculator' });
    expect(demoEnv).toEqual(cliEnv);
    expect(demo).toEqual(cli);
    // The pages' defaults: the same model, LoRA and learning rate, no warm start in the tab, a shorter RL phase.
    const d = jobOptions(DEFAULT_SETTINGS);
    expect(DEFAULT_SETTINGS).toMatchObject({ base: 'shipped', warmstart: 0, model: FULL_SETTINGS.model, env: FULL_SETTINGS.env });
    expect(d.warmStart).toBeNull();
    expect({ model: d.model, lora: d.lora, lr: d.lr, rows: d.rows }).toEqual({ model: cli.model, lora: cli.lora, lr: cli.lr, rows: cli.rows });
    expect(d.steps * d.groups * d.groupSize).toBeLessThan(cli.steps * cli.groups * cli.groupSize);
  });

  it('start from the shipped warm start where one exists, else from scratch with a warm start in the tab', () => {
    expect(hasShipped('calculator', 'gpt2-100k')).toBe(true);
    expect(parseSettings(from({}))).toMatchObject({ base: 'shipped', warmstart: 0 });
    // No shipped nim model: scratch, with `npm run train`'s warm start unless the URL says otherwise.
    expect(parseSettings(from({ env: 'nim' }))).toMatchObject({ env: 'nim', base: 'scratch', warmstart: FULL_SETTINGS.warmstart });
    expect(parseSettings(from({ base: 'scratch' }))).toMatchObject({ base: 'scratch', warmstart: FULL_SETTINGS.warmstart });
    expect(parseSettings(from({ base: 'shipped', warmstart: '5' }))).toMatchObject({ base: 'shipped', warmstart: 5 });
    for (const q of [{ env: 'nim', base: 'shipped' }, { model: 'tiny-gpt2', base: 'shipped' }, { base: 'pretrained' }] as Record<string, string>[]) {
      expect(configError(() => parseSettings(from(q))).field, JSON.stringify(q)).toBe('base');
    }
  });

  it('the shipped checkpoint is the config the job trains, and its weights go into the job options', async () => {
    const bytes = new Uint8Array(readFileSync(join(import.meta.dirname, '..', '..', 'demos', 'src', 'lib', 'models', 'calculator-gpt2-100k.safetensors')));
    const cfg = jobOptions(DEFAULT_SETTINGS).model;
    const weights = await shippedFromBytes(bytes, cfg, 'calculator-gpt2-100k');
    expect(Object.keys(weights).sort()).toEqual(engine.parameterSpecs(cfg).map((s) => s.name).sort());
    const o = jobOptions(DEFAULT_SETTINGS, undefined, weights);
    expect(o.weights).toBe(weights);
    // Another config than the job's is refused by name, and so are weights of the wrong shapes.
    await expect(shippedFromBytes(bytes, { ...cfg, maxSeqLen: 256 }, 'x')).rejects.toThrow(/another config than the job's/);
    const { ['tok_emb.weight']: _drop, ...missing } = weights;
    expect(() => jobOptions(DEFAULT_SETTINGS, undefined, missing)).toThrow(/weights: tensor "tok_emb\.weight"/);
    expect(() => jobOptions(DEFAULT_SETTINGS, undefined, { ...weights, 'tok_emb.weight': new Float32Array(3) })).toThrow(/weights: tensor "tok_emb\.weight"/);
  });

  it("the arena's shipped warm starts are the configs its trainAgents runs build, one per game", async () => {
    const games = { bargain: bargainEnv(), signal: signalEnv({ symbols: 'abcd' }) };
    for (const [name, env] of Object.entries(games)) {
      expect(hasShipped(name, 'gpt2-100k')).toBe(true);
      const bytes = new Uint8Array(readFileSync(join(import.meta.dirname, '..', '..', 'demos', 'src', 'lib', 'models', `${name}-gpt2-100k.safetensors`)));
      const cfg = agentsModelConfig({ env, seats: [{ name: 'a' }, { name: 'b' }], model: 'gpt2-100k' });
      const weights = await shippedFromBytes(bytes, cfg, name);
      expect(Object.keys(weights).sort()).toEqual(engine.parameterSpecs(cfg).map((s) => s.name).sort());
      // The page's seats and learning settings do not change the base's config.
      expect(agentsModelConfig({ env, seats: [{ name: 'x', lr: 0.006, klBeta: 0.3 }, { name: 'y', lr: 0.006, klBeta: 0.3 }], model: 'gpt2-100k', seed: 1, steps: 12 })).toEqual(cfg);
    }
  });

  it('make job options for tiny models: a context long enough for the environment, small LoRA without gate on gpt2, no warm start at 0', () => {
    const tiny: DemoSettings = { ...QUICK_SETTINGS, model: 'tiny-gpt2', base: 'scratch', warmstart: 50 };
    const calc = jobOptions(tiny);
    const nim = jobOptions({ ...tiny, env: 'nim', warmstart: 0 });
    expect(calc.model.maxSeqLen).toBe(128);
    expect(nim.model.maxSeqLen).toBe(512);
    expect(calc.lora).toMatchObject({ rank: 4, alpha: 8 });
    expect(calc.lora?.targets).not.toContain('gate');
    expect(calc.warmStart).toMatchObject({ steps: 50, demos: 256, batchSize: 16, lr: 2e-2 });
    expect(calc.rows).toBe(8);
    expect(nim.warmStart).toBeNull();
    expect(nim.env.name).toBe('nim');
  });
});

describe('demo adapter store', () => {
  const settings: DemoSettings = { ...QUICK_SETTINGS, base: 'scratch', warmstart: 2, steps: 3 };
  const o = jobOptions(settings);
  const cfg = o.model;
  const lora = o.lora!;
  const fakeResult = (seed: number) =>
    ({
      successBefore: 0.25, successAfter: 0.5, rewardAfter: 0.4, wallSeconds: 12, rewardCurve: [0, 0.2, 0.4], lossCurve: [0.1, -0.2, 0.05],
      sftLossCurve: [2.5, 1.5], evalEpisodes: 32,
      trained: { cfg, lora, tensors: engine.initLora(cfg, lora, seed) },
    }) as unknown as JobResult;

  it('saves a run with its base, lists it, loads it back exactly, and names the next one apart', async () => {
    const store = new DemoStore(new MemoryKv());
    const base = engine.initParameters(cfg, 3);
    const r = fakeResult(5);
    const name = await store.save(settings, r, { modelId: 'm', cfg, params: base, seed: undefined });
    expect(name).toBe('calculator-grpo-1');
    const list = await store.list();
    expect(list.map((x) => x.name)).toEqual([name]);
    expect(list[0].info).toMatchObject({ successBefore: 0.25, successAfter: 0.5, settings });
    // The curves stay with the run, in curve.svg's specification.
    expect(savedCurves(list[0])).toMatchObject({
      title: name, reward: [0, 0.2, 0.4], loss: [0.1, -0.2, 0.05], sftLoss: [2.5, 1.5], evaluation: { before: 0.25, after: 0.5, episodes: 32 },
    });
    expect(list[0].meta).toMatchObject({ rank: lora.rank, alpha: lora.alpha, step: 3 });
    const loaded = await store.load(name);
    expect(Object.keys(loaded.adapter).sort()).toEqual(Object.keys(r.trained.tensors).sort());
    for (const [k, v] of Object.entries(r.trained.tensors)) expect(loaded.adapter[k]).toEqual(v);
    expect(Object.keys(loaded.base).sort()).toEqual(Object.keys(base).sort());
    for (const [k, v] of Object.entries(base)) expect(loaded.base[k]).toEqual(v);
    expect(await store.save(settings, fakeResult(6), { modelId: 'm', cfg, params: null, seed: 9 })).toBe('calculator-grpo-2');
    // A base that was not warm-started is its seeded initialization.
    const second = await store.load('calculator-grpo-2');
    const seeded = engine.initParameters(cfg, 9);
    expect(Object.keys(second.base).sort()).toEqual(Object.keys(seeded).sort());
    expect(second.base['tok_emb.weight']).toEqual(seeded['tok_emb.weight']);
    expect(second.base['tok_emb.weight']).not.toEqual(base['tok_emb.weight']);
  });

  it('deletes the adapter and its base', async () => {
    const kv = new MemoryKv();
    const store = new DemoStore(kv);
    const name = await store.save(settings, fakeResult(1), { modelId: 'm', cfg, params: engine.initParameters(cfg, 1), seed: undefined });
    await store.delete(name);
    expect(await store.list()).toEqual([]);
    expect(await kv.keys()).toEqual([]);
  });

  it('exports PEFT files and the base in Hugging Face layout as one zip', async () => {
    const store = new DemoStore(new MemoryKv());
    const name = await store.save(settings, fakeResult(2), { modelId: 'm', cfg, params: engine.initParameters(cfg, 2), seed: undefined });
    const { filename, blob } = await store.exportZip(name);
    expect(filename).toBe(`${name}-peft.zip`);
    const files = unzipSync(new Uint8Array(await blob.arrayBuffer()));
    const dir = `${name}-peft/`;
    const config = JSON.parse(strFromU8(files[`${dir}adapter_config.json`]));
    expect(config).toMatchObject({ peft_type: 'LORA', lora_alpha: lora.alpha });
    expect(JSON.parse(strFromU8(files[`${dir}base/config.json`]))).toMatchObject({ model_type: 'gpt2', n_layer: cfg.nLayer, n_positions: cfg.maxSeqLen });
    expect(files[`${dir}adapter_model.safetensors`].length).toBeGreaterThan(8);
    expect(strFromU8(files[`${dir}README.md`])).toContain('grpo on the calculator environment');
  });
});

describe('chat reply', () => {
  const tok = new ByteTokenizer();
  /** A policy that says the given actions in turn (ending each with eos), recording its prompts. */
  const scripted = (actions: string[], prompts: string[]): SampleFn => async (reqs) =>
    reqs.map((r) => {
      prompts.push(tok.decode([...r.promptTokens]));
      const tokens = [...tok.encode(actions.shift() ?? '')].slice(0, r.maxTokens);
      return { tokens, logprobs: tokens.map(() => -1) };
    });

  it('runs a tool call of the environment and asks again with its result', async () => {
    const prompts: string[] = [];
    const env = jobEnv('calculator');
    const turns = await reply(scripted(['<tool>calculator: 7*8</tool>', '<answer>56</answer>'], prompts), env, 'What is 7*8?', { maxSeqLen: 256, seed: 1 });
    expect(turns).toEqual([{ action: '<tool>calculator: 7*8</tool>', toolOutput: '56' }, { action: '<answer>56</answer>' }]);
    expect(prompts).toHaveLength(2);
    expect(prompts[0]).toContain('What is 7*8?');
    expect(prompts[1]).toContain('<result>56</result>');
  });

  it('stops at an answer, and the example task is the environment\'s own first observation', async () => {
    const env = jobEnv('nim');
    const task = await sampleTask(env, 4);
    expect(task).toMatch(/Piles: [\d ]+/);
    const turns = await reply(scripted(['<answer>1 1</answer>', 'never asked'], []), env, task, { maxSeqLen: 512, seed: 2 });
    expect(turns).toEqual([{ action: '<answer>1 1</answer>' }]);
  });
});

describe('demonstrations in a native tool syntax', () => {
  it("rewrite tag calls in the agent's syntax, leave answers and text alone, and ask for the tools once", async () => {
    const { demonstrationActions } = await import('../../src/env/demos.ts');
    const { calculatorTool } = await import('../../src/env/envs/calculator.ts');
    const { hermesToolSyntax } = await import('../../src/env/tool_calls.ts');
    const { ByteTokenizer } = await import('../../src/model/tokenizer/byte.ts');
    let asked = 0;
    const tools = () => (asked++, [calculatorTool()]);
    const opts = { tokenizer: new ByteTokenizer(), toolSyntax: hermesToolSyntax };
    expect(demonstrationActions(['<tool>calculator: 12*7</tool>', '<answer>84</answer>', 'hmm <tool>calculator: 1+1</tool>'], opts, tools)).toEqual([
      '<tool_call>\n{"name": "calculator", "arguments": {"expression": "12*7"}}\n</tool_call>',
      '<answer>84</answer>',
      '<tool_call>\n{"name": "calculator", "arguments": {"expression": "1+1"}}\n</tool_call>',
    ]);
    expect(asked).toBe(1);
    // The tag syntax (models from scratch) keeps the demonstrations as written, without asking.
    expect(demonstrationActions(['<tool>calculator: 1+1</tool>'], { tokenizer: new ByteTokenizer() }, tools)).toEqual(['<tool>calculator: 1+1</tool>']);
    expect(asked).toBe(1);
  });
});
