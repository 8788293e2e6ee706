/**
 * Hugging Face tokenizers behind our Tokenizer contract (tokenizer.ts): `tokenizer.json` through
 * @huggingface/tokenizers, chat templates from `tokenizer_config.json` through @huggingface/jinja.
 *
 * Special ids come from tokenizer_config.json (eos_token, bos_token, pad_token; strings or
 * {content} objects) and are looked up in the vocabulary; pad falls back to eos. vocabSize is one
 * more than the largest id, added tokens included (a model's embedding may have more rows).
 *
 * Departures from transformers' defaults, each because callers here need text to round-trip:
 * `encode` adds no special tokens (no BOS from the post-processor; `encodeWithSpecials` does);
 * `decode` drops special tokens and does not "clean up tokenization spaces" unless
 * tokenizer_config.json asks for it explicitly. Special-token text inside the input (for example
 * `<|im_start|>` in a rendered chat template) still becomes its single id, as in transformers.
 */
import { Template } from '@huggingface/jinja';
import { Tokenizer as HfTokenizerImpl } from '@huggingface/tokenizers';
import { type ByteInput, type OpenOptions, readText } from '../bytes.ts';
import { type Tokenizer, TokenizerError } from './tokenizer.ts';

/** A chat message as chat templates expect it (extra fields such as tool_calls pass through). */
export interface ChatMessage {
  readonly role: string;
  readonly content: string;
  readonly [key: string]: unknown;
}

export interface ChatTemplateOptions {
  /** Append the assistant-turn opener, so the model writes the reply next. Default true. */
  readonly addGenerationPrompt?: boolean;
  /** Tool schemas for templates that render them. */
  readonly tools?: readonly unknown[];
  /** Which named template when tokenizer_config.json holds several (default "default"). */
  readonly templateName?: string;
  /** Extra variables for the template. */
  readonly variables?: Readonly<Record<string, unknown>>;
}

function tokenContent(x: unknown): string | undefined {
  if (typeof x === 'string') return x;
  if (typeof x === 'object' && x !== null && typeof (x as { content?: unknown }).content === 'string') return (x as { content: string }).content;
  return undefined;
}

function pickTemplate(raw: unknown, name: string): string | undefined {
  if (typeof raw === 'string') return raw;
  if (Array.isArray(raw)) {
    const byName = new Map<string, string>();
    for (const t of raw) if (typeof t?.name === 'string' && typeof t?.template === 'string') byName.set(t.name, t.template);
    return byName.get(name);
  }
  if (typeof raw === 'object' && raw !== null && Object.hasOwn(raw, name)) {
    const t = (raw as Record<string, unknown>)[name];
    return typeof t === 'string' ? t : undefined;
  }
  return undefined;
}

/** Placeholder specials that tokenizers reserve for later use (never trained). */
const UNUSED_TOKEN = /^(<unused\d+>|<\|reserved_special_token_\d+\|>)$/;

/** A Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) behind the Tokenizer contract (loadHfTokenizer). */
export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly bosId?: number;
  readonly eosId: number;
  readonly padId: number;
  /** The special tokens' text (for templates and logs). */
  readonly specialTokens: Readonly<{ bos?: string; eos: string; pad: string }>;
  readonly #impl: HfTokenizerImpl;
  readonly #config: Record<string, unknown>;
  readonly #cleanUp: boolean;
  readonly #templates = new Map<string, Template>();

  private constructor(impl: HfTokenizerImpl, config: Record<string, unknown>) {
    this.#impl = impl;
    this.#config = config;
    this.#cleanUp = config.clean_up_tokenization_spaces === true;
    let max = -1;
    for (const id of impl.get_vocab(true).values()) max = Math.max(max, id);
    this.vocabSize = max + 1;
    const id = (field: string): [string, number] | undefined => {
      const text = tokenContent(config[field]);
      if (text === undefined) return undefined;
      const tid = impl.token_to_id(text);
      if (tid === undefined) throw new TokenizerError(`tokenizer_config.json: ${field} ${JSON.stringify(text)} is not in the vocabulary`);
      return [text, tid];
    };
    const eos = id('eos_token');
    if (!eos) throw new TokenizerError('tokenizer_config.json: eos_token is missing (generation needs a stop token)');
    const bos = id('bos_token');
    const pad = id('pad_token') ?? eos;
    this.eosId = eos[1];
    this.padId = pad[1];
    if (bos) this.bosId = bos[1];
    this.specialTokens = Object.freeze({ ...(bos ? { bos: bos[0] } : {}), eos: eos[0], pad: pad[0] });
  }

  /** From parsed (or text) tokenizer.json and tokenizer_config.json. */
  static fromJSON(tokenizerJson: unknown, tokenizerConfig: unknown = {}): HfTokenizer {
    const parse = (x: unknown, file: string): Record<string, unknown> => {
      let v = x;
      if (typeof v === 'string') {
        try {
          v = JSON.parse(v);
        } catch (e) {
          throw new TokenizerError(`${file}: invalid JSON (${(e as Error).message})`);
        }
      }
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new TokenizerError(`${file}: expected a JSON object`);
      return v as Record<string, unknown>;
    };
    const tj = parse(tokenizerJson, 'tokenizer.json');
    const tc = parse(tokenizerConfig, 'tokenizer_config.json');
    if (typeof tj.model !== 'object' || tj.model === null) throw new TokenizerError('tokenizer.json: "model" is missing');
    // The library wants these keys present (null is fine); HF files always have them.
    const full = { normalizer: null, pre_tokenizer: null, post_processor: null, decoder: null, ...tj, added_tokens: Array.isArray(tj.added_tokens) ? tj.added_tokens : [] };
    let impl: HfTokenizerImpl;
    try {
      impl = new HfTokenizerImpl(full, tc);
    } catch (e) {
      throw new TokenizerError(`tokenizer.json: ${(e as Error)?.message ?? String(e)}`);
    }
    return new HfTokenizer(impl, tc);
  }

  encode(text: string): number[] {
    return this.#encode(text, false);
  }

  /** As `encode`, plus what the post-processor adds (e.g. BOS). */
  encodeWithSpecials(text: string): number[] {
    return this.#encode(text, true);
  }

  #encode(text: string, specials: boolean): number[] {
    if (typeof text !== 'string') throw new TokenizerError(`HfTokenizer.encode: expected a string, got ${typeof text}`);
    if (text === '') return [];
    const ids = this.#impl.encode(text, { add_special_tokens: specials }).ids;
    for (const id of ids) if (id === undefined || id === null) throw new TokenizerError(`HfTokenizer.encode: ${JSON.stringify(text.slice(0, 40))} has characters the vocabulary cannot encode (no unk token)`);
    return ids;
  }

  decode(ids: readonly number[]): string {
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize || this.#impl.id_to_token(id) === undefined) {
        throw new TokenizerError(`HfTokenizer.decode: id ${id} is not in the vocabulary (size ${this.vocabSize})`);
      }
    }
    if (ids.length === 0) return '';
    return this.#impl.decode([...ids], { skip_special_tokens: true, clean_up_tokenization_spaces: this.#cleanUp });
  }

  /**
   * Ids a policy should never sample: holes in [0, vocabSize) (no token) and the placeholder
   * specials tokenizers reserve without training them — Gemma's `<unusedN>`, Llama 3's
   * `<|reserved_special_token_N|>`. Sampling one would emit text the model never saw (and that
   * `decode` drops). See tokenizerVocabMask (model/sample_fn.ts).
   */
  unusedIds(): number[] {
    const out: number[] = [];
    for (let id = 0; id < this.vocabSize; id++) {
      const t = this.#impl.id_to_token(id);
      if (t === undefined || UNUSED_TOKEN.test(t)) out.push(id);
    }
    return out;
  }

  tokenToId(token: string): number | undefined {
    return this.#impl.token_to_id(token);
  }

  idToToken(id: number): string | undefined {
    return this.#impl.id_to_token(id);
  }

  /** The chat template's source, if tokenizer_config.json has one. */
  chatTemplate(name = 'default'): string | undefined {
    return pickTemplate(this.#config.chat_template, name);
  }

  /** Renders `messages` with the chat template (jinja), as transformers' apply_chat_template(tokenize=False). */
  applyChatTemplate(messages: readonly ChatMessage[], opts: ChatTemplateOptions = {}): string {
    const name = opts.templateName ?? 'default';
    let tpl = this.#templates.get(name);
    if (!tpl) {
      const src = this.chatTemplate(name);
      if (src === undefined) throw new TokenizerError(`tokenizer_config.json: no chat template${name === 'default' ? '' : ` named "${name}"`}`);
      try {
        tpl = new Template(src);
      } catch (e) {
        throw new TokenizerError(`chat template does not parse: ${(e as Error)?.message ?? String(e)}`);
      }
      this.#templates.set(name, tpl);
    }
    const specials: Record<string, unknown> = {};
    for (const f of ['bos_token', 'eos_token', 'pad_token', 'unk_token']) {
      const t = tokenContent(this.#config[f]);
      if (t !== undefined) specials[f] = t;
    }
    try {
      return tpl.render({
        ...specials,
        ...opts.variables,
        messages: messages.map((m) => ({ ...m })),
        add_generation_prompt: opts.addGenerationPrompt ?? true,
        ...(opts.tools ? { tools: opts.tools } : {}),
      });
    } catch (e) {
      throw new TokenizerError(`chat template failed: ${(e as Error)?.message ?? String(e)}`);
    }
  }

  /** The rendered chat as ids (special-token text in the template becomes its ids). */
  encodeChat(messages: readonly ChatMessage[], opts: ChatTemplateOptions = {}): number[] {
    return this.encode(this.applyChatTemplate(messages, opts));
  }
}

/** Loads tokenizer.json (and tokenizer_config.json) from bytes, a Blob, a URL or a path. */
export async function loadHfTokenizer(tokenizerJson: ByteInput, tokenizerConfig?: ByteInput, opts: OpenOptions = {}): Promise<HfTokenizer> {
  const read = async (x: ByteInput, file: string) => {
    try {
      return (await readText(x, opts)).text;
    } catch (e) {
      throw new TokenizerError(`${file}: cannot read (${(e as Error)?.message ?? String(e)})`);
    }
  };
  const tj = await read(tokenizerJson, 'tokenizer.json');
  const tc = tokenizerConfig === undefined ? '{}' : await read(tokenizerConfig, 'tokenizer_config.json');
  return HfTokenizer.fromJSON(tj, tc);
}
