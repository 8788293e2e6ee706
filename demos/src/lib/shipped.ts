/**
 * Warm-started models shipped with the demos, so that a page shows RL improving an agent within a
 * few minutes even on a software adapter. Each is a from-scratch preset after the SFT warm start
 * that `npm run train` would run first (the environment's demonstrations, full-parameter), made by
 * `scripts/demo_models.ts` and written as safetensors with the config in its metadata. A page
 * that starts from one skips the warm start (on SwiftShader that alone takes several minutes) and
 * runs RL on it; `base=scratch` (form or URL) warm-starts in the tab instead.
 *
 * Vite turns each `new URL('./models/…', import.meta.url)` into an asset of the build, for the
 * pages and for the widget's script alike.
 */
import { ConfigError, type HostParams, type ModelConfig, openSafetensors } from '../../../src/mod.ts';

/** The shipped checkpoints, by `${env}/${model}`. */
const SHIPPED: Readonly<Record<string, URL>> = {
  'calculator/gpt2-100k': new URL('./models/calculator-gpt2-100k.safetensors', import.meta.url),
  // The arena's games: trainAgents' shared warm start (formats only).
  'bargain/gpt2-100k': new URL('./models/bargain-gpt2-100k.safetensors', import.meta.url),
  'signal/gpt2-100k': new URL('./models/signal-gpt2-100k.safetensors', import.meta.url),
};

/** Whether a warm-started checkpoint of `model` for `env` ships with the demos. */
export function hasShipped(env: string, model: string): boolean {
  return Object.hasOwn(SHIPPED, `${env}/${model}`);
}

/** What ships, for messages: "calculator on gpt2-100k, …". */
export function shippedList(): string {
  return Object.keys(SHIPPED).map((k) => k.replace('/', ' on ')).join(', ');
}

/**
 * The warm-started weights of `model` for `env`, checked against the config the job trains (the
 * preset, its context raised to the environment's), which the file's metadata must name.
 */
export async function shippedWeights(env: string, model: string, expected: ModelConfig, signal?: AbortSignal): Promise<HostParams> {
  const url = SHIPPED[`${env}/${model}`];
  if (!url) throw new ConfigError('base', `no warm-started ${model} for ${env} ships with the demos (shipped: ${shippedList()}); base "scratch" warm-starts in this tab`);
  const res = await fetch(url, signal ? { signal } : {});
  if (!res.ok) throw new ConfigError('base', `the shipped checkpoint ${url.pathname} could not be fetched (HTTP ${res.status})`);
  return await shippedFromBytes(new Uint8Array(await res.arrayBuffer()), expected, url.pathname);
}

/** A shipped checkpoint's tensors from its bytes, when its metadata names `expected` (ConfigError 'base' otherwise). */
export async function shippedFromBytes(bytes: Uint8Array, expected: ModelConfig, name: string): Promise<HostParams> {
  const f = await openSafetensors(bytes);
  try {
    const made = JSON.parse(f.metadata['webtinker.model'] ?? 'null') as ModelConfig | null;
    // Written from the job's config as jobOptions builds it: the same JSON (as runTraining compares a pretrained config).
    if (JSON.stringify(made) !== JSON.stringify(expected)) {
      throw new ConfigError('base', `the shipped checkpoint ${name} was made for another config than the job's ${expected.name ?? expected.family}: run scripts/demo_models.ts again`);
    }
    const out: HostParams = {};
    for (const n of f.names()) out[n] = await f.getF32(n);
    return out;
  } finally {
    await f.close();
  }
}
