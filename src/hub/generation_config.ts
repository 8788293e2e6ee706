/**
 * generation_config.json as a small typed object: the ids that end a reply and the sampling
 * defaults the model's authors chose. eos_token_id may be one id or a list (Llama 3.x lists
 * <|end_of_text|>, <|eom_id|>, <|eot_id|>); where generation_config.json lacks it, config.json's is
 * used, then the tokenizer's eos token — the order transformers' GenerationConfig.from_model_config
 * follows. Every id must be a non-negative integer; a wrong one is refused naming the field.
 */
import type { HfTokenizer } from '../model/tokenizer/hf.ts';
import { HubError } from './errors.ts';

/** A checkpoint's generation_config.json, as the agent and sampler use it. */
export interface GenerationConfig {
  /** Ids that end generation (at least one). */
  readonly eosTokenIds: readonly number[];
  readonly bosTokenId: number | undefined;
  readonly padTokenId: number | undefined;
  /** Sampling defaults, when the file sets them. */
  readonly doSample: boolean | undefined;
  readonly temperature: number | undefined;
  readonly topP: number | undefined;
  readonly topK: number | undefined;
  readonly maxNewTokens: number | undefined;
  readonly repetitionPenalty: number | undefined;
}

function ids(v: unknown, where: string, repo: string): number[] | undefined {
  if (v === undefined || v === null) return undefined;
  const list = Array.isArray(v) ? v : [v];
  for (const x of list) {
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) {
      throw new HubError('bad-file', repo, `${where} must be a token id or a list of them, got ${JSON.stringify(v)}`, { file: where.split(':')[0] });
    }
  }
  return list as number[];
}

function num(v: unknown, field: string, repo: string, int = false): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (int && !Number.isSafeInteger(v))) {
    throw new HubError('bad-file', repo, `${field} must be a non-negative ${int ? 'integer' : 'number'}, got ${JSON.stringify(v)}`, { file: 'generation_config.json' });
  }
  return v;
}

export function parseGenerationConfig(
  gen: Readonly<Record<string, unknown>> | undefined, config: Readonly<Record<string, unknown>>, tokenizer: HfTokenizer, repo: string,
): GenerationConfig {
  const g = gen ?? {};
  const eos = ids(g.eos_token_id, 'generation_config.json: eos_token_id', repo) ?? ids(config.eos_token_id, 'config.json: eos_token_id', repo) ?? [tokenizer.eosId];
  if (eos.length === 0) throw new HubError('bad-file', repo, 'eos_token_id is an empty list: nothing would end a reply', { file: gen ? 'generation_config.json' : 'config.json' });
  const one = (field: string) => ids(g[field], `generation_config.json: ${field}`, repo)?.[0] ?? ids(config[field], `config.json: ${field}`, repo)?.[0];
  if (g.do_sample !== undefined && typeof g.do_sample !== 'boolean') {
    throw new HubError('bad-file', repo, `do_sample must be true or false, got ${JSON.stringify(g.do_sample)}`, { file: 'generation_config.json' });
  }
  return Object.freeze({
    eosTokenIds: Object.freeze([...new Set(eos)]),
    bosTokenId: one('bos_token_id'),
    padTokenId: one('pad_token_id'),
    doSample: g.do_sample as boolean | undefined,
    temperature: num(g.temperature, 'temperature', repo),
    topP: num(g.top_p, 'top_p', repo),
    topK: num(g.top_k, 'top_k', repo, true),
    maxNewTokens: num(g.max_new_tokens, 'max_new_tokens', repo, true),
    repetitionPenalty: num(g.repetition_penalty, 'repetition_penalty', repo),
  });
}
