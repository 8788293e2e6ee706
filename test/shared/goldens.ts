/**
 * Loads a golden case written by scripts/goldens/make_goldens.py (Hugging Face transformers) from
 * test/goldens/<case>/: config.json, the checkpoint model.safetensors, the PEFT adapter under
 * lora/, golden.safetensors (what transformers computed) and meta.json.
 *
 * Both GPU suites read the same files through one path: each file is a URL relative to this
 * module (`new URL(…, import.meta.url)`), opened with the library's own readers
 * (src/model/bytes.ts). Under Deno the URL is a file: URL, read through node:fs; in the Chromium
 * suite Vite resolves the same expression to the dev server's URL of the file (its asset handling
 * of `new URL` with import.meta.url), which the readers download with fetch. No existing browser
 * test read fixture files (they build their inputs in code), so this is the first such path.
 *
 * golden.safetensors (f32 unless noted; B rows, T tokens, V vocab, G greedy tokens):
 *   input_ids [B, T] i32 · logits [B, T, V] · loss [1] · logprobs [B, T-1] · greedy [B, G] i32
 *   grad.<checkpoint tensor name> for every parameter (tied embedding once)
 *   lora.logits [B, T, V] · lora.loss [1] · lora.logprobs [B, T-1]
 *   lora.grad.<adapter_model.safetensors tensor name> for every lora_A / lora_B
 */
import { readText } from '../../src/model/bytes.ts';
import { parseUntrustedJson } from '../../src/model/json.ts';
import { openSafetensors, type SafetensorsFile } from '../../src/model/safetensors.ts';

/** Every case the script writes (the fixtures of all of them are committed). */
export const GOLDEN_NAMES = ['gpt2', 'smollm2', 'llama32', 'qwen2', 'qwen3', 'gemma3'] as const;
export type GoldenName = (typeof GOLDEN_NAMES)[number];

/**
 * The cases the engine runs (test/shared/cases/goldens.ts, and the config check of
 * test/unit/goldens.test.ts): the families it supports. Add 'llama32', 'qwen3', 'gemma3' here as
 * it learns them — one entry each, nothing else to change.
 */
export const GOLDEN_ROWS: readonly GoldenName[] = ['gpt2', 'smollm2', 'qwen2', 'llama32', 'qwen3', 'gemma3'];

export interface GoldenMeta {
  readonly case: string;
  readonly mimics: string;
  readonly model_type: string;
  readonly seed: number;
  readonly inputs: { readonly B: number; readonly T: number };
  readonly greedy: { readonly prompt_tokens: number; readonly new_tokens: number; readonly min_top2_logit_gap: number };
  readonly lora: { readonly r: number; readonly lora_alpha: number };
  readonly versions: Readonly<Record<string, string>>;
  /** The config.json transformers 5 writes for this model (rope_parameters, dtype, …). */
  readonly transformers_saved_config: Record<string, unknown>;
}

export interface Golden {
  readonly name: GoldenName;
  /** config.json as parsed JSON (what configFromHf takes). */
  readonly config: unknown;
  readonly meta: GoldenMeta;
  /** model.safetensors: the checkpoint, in the published dtype. */
  readonly checkpoint: SafetensorsFile;
  /** lora/adapter_config.json as text, lora/adapter_model.safetensors. */
  readonly adapterConfig: string;
  readonly adapter: SafetensorsFile;
  /** golden.safetensors. */
  readonly golden: SafetensorsFile;
  readonly B: number;
  readonly T: number;
  /** input_ids [B, T], row-major. */
  readonly inputIds: Int32Array;
  /** greedy [B, G]. */
  readonly greedy: Int32Array;
  /** An f32 tensor of golden.safetensors. */
  f32(name: string): Promise<Float32Array>;
  /** Closes the three safetensors files (file handles under Deno). */
  close(): Promise<void>;
}

/** URL of a file of a case (e.g. 'config.json', 'lora/adapter_config.json'), relative to this module. */
export function goldenUrl(name: GoldenName, file: string): URL {
  // Vite (the Chromium suite) rewrites new URL(<template literal>, import.meta.url) into a lookup in
  // a glob of the files the template matches, each placeholder matching within one path segment: the
  // adapter's files, one folder deeper, need a template of their own (else the URL is "undefined").
  const lora = /^lora\/([^/]+)$/.exec(file);
  if (lora) return new URL(`../goldens/${name}/lora/${lora[1]}`, import.meta.url);
  return new URL(`../goldens/${name}/${file}`, import.meta.url);
}

async function readJson(url: URL): Promise<unknown> {
  return parseUntrustedJson((await readText(url)).text);
}

async function i32(f: SafetensorsFile, name: string): Promise<Int32Array> {
  const info = f.info(name);
  if (info.dtype !== 'I32') throw new Error(`golden.safetensors: ${name} is ${info.dtype}, expected I32`);
  const bytes = await f.bytes(name);
  return new Int32Array(bytes.slice().buffer); // copy: the view may not be 4-byte aligned
}

/** Opens a case (both GPU suites; see the file header). */
export async function loadGolden(name: GoldenName): Promise<Golden> {
  const [config, meta, adapterConfig] = await Promise.all([
    readJson(goldenUrl(name, 'config.json')),
    readJson(goldenUrl(name, 'meta.json')) as Promise<GoldenMeta>,
    readText(goldenUrl(name, 'lora/adapter_config.json')).then((r) => r.text),
  ]);
  const opened: SafetensorsFile[] = [];
  const open = async (file: string) => {
    const f = await openSafetensors(goldenUrl(name, file), { name: `${name}/${file}` });
    opened.push(f);
    return f;
  };
  try {
    const checkpoint = await open('model.safetensors');
    const adapter = await open('lora/adapter_model.safetensors');
    const golden = await open('golden.safetensors');
    const ids = golden.info('input_ids').shape;
    const inputIds = await i32(golden, 'input_ids');
    const greedy = await i32(golden, 'greedy');
    return {
      name, config, meta, checkpoint, adapterConfig, adapter, golden, B: ids[0], T: ids[1], inputIds, greedy,
      f32: (n) => golden.getF32(n),
      close: async () => {
        await Promise.all(opened.map((f) => f.close()));
      },
    };
  } catch (e) {
    await Promise.all(opened.map((f) => f.close()));
    throw e;
  }
}
