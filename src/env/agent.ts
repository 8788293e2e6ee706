/**
 * The agent: a policy reached through an injected sampling function (no GPU types), a tokenizer,
 * a prompt format, action limits — and the per-episode builder that records the token-level
 * trajectory while a protocol runs.
 *
 * Departure from agent frameworks that keep a chat transcript and re-tokenize it each turn: the
 * builder appends to one token sequence, keeping the sampled ids exactly as sampled, so the
 * training sequence is byte-for-byte the context the policy saw. Observation and template tokens
 * are in the sequence with policy mask 0.
 */
import type { Tokenizer } from '../model/tokenizer/tokenizer.ts';
import { deepFreeze } from '../util/freeze.ts';
import { philox4x32 } from '../util/rng.ts';
import { tagToolSyntax, type ToolCallSyntax } from './tool_calls.ts';
import { InvalidInputError, SampleContractError } from './errors.ts';
import { type FormatContext, plainFormat, type PromptFormat } from './format.ts';
import type { ChatMessage, JsonValue, KeptEndReason, SampleFn, SampleRequest, SampleResult, Tool, Trajectory, Turn } from './types.ts';

export interface AgentOptions {
  readonly sample: SampleFn;
  readonly tokenizer: Tokenizer;
  /** Recorded in trajectories; distinguishes agents in multi-agent games. Default 'agent'. */
  readonly id?: string;
  /** LoRA adapter (policy) id passed with every request. */
  readonly adapterId?: string;
  readonly format?: PromptFormat;
  /** Actions per episode (tool calls included). Default 8. */
  readonly maxTurns?: number;
  /** Tokens per action. Default 64. */
  readonly maxNewTokens?: number;
  /** Context length: the whole sequence never exceeds it. Default 1024. */
  readonly maxSequenceTokens?: number;
  readonly temperature?: number;
  /** Default: the tool syntax's stop strings (tag syntax: ['</tool>', '</answer>']). */
  readonly stopStrings?: readonly string[];
  /** Default: [tokenizer.eosId] plus `eosTokenIds`. */
  readonly stopTokens?: readonly number[];
  /**
   * End-of-sequence ids of the model's generation_config.json (`eos_token_id`, one id or a list:
   * Llama 3.2 Instruct stops at <|end_of_text|>, <|eom_id|> and <|eot_id|>); added to the default
   * stop tokens. `generationEosIds` reads them from the parsed file.
   */
  readonly eosTokenIds?: readonly number[];
  /**
   * The only ids the agent's actions may use (every request's `allowedTokens`; the sampler
   * renormalises over them): a restricted action vocabulary, such as a signalling game's letters.
   * Stop tokens are not added: list one when actions should be able to end before maxNewTokens.
   * Default: every id. A sampler returning another id breaks the contract (SampleContractError).
   */
  readonly allowedTokens?: readonly number[];
  /**
   * Prepend tokenizer.bosId to the prompt. Default: when the tokenizer has one and the format does
   * not render it itself (`format.rendersBos`, e.g. a chat template writing `bos_token`), nor does
   * the encoded prompt start with it. Set with such a format or prompt, it is refused: the prompt
   * would start with two BOS.
   */
  readonly addBos?: boolean;
  /** How actions call tools. Default: the format's (`format.toolSyntax`), else `<tool>name: args</tool>`. */
  readonly toolSyntax?: ToolCallSyntax;
}

/** generation_config.json's `eos_token_id` (a number or a list) as a list; [] when absent. */
export function generationEosIds(generationConfig: unknown): number[] {
  const v = typeof generationConfig === 'object' && generationConfig !== null ? (generationConfig as { eos_token_id?: unknown }).eos_token_id : undefined;
  if (v === undefined || v === null) return [];
  const ids = Array.isArray(v) ? v : [v];
  for (const id of ids) if (!Number.isInteger(id) || id < 0) throw new InvalidInputError('generationEosIds', `eos_token_id holds ${JSON.stringify(id)}, not a token id`);
  return ids as number[];
}

function positiveInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v <= 0) throw new InvalidInputError('Agent', `${name} must be a positive integer, got ${v}`);
  return v;
}

export class Agent {
  readonly id: string;
  readonly adapterId: string | undefined;
  readonly tokenizer: Tokenizer;
  readonly format: PromptFormat;
  readonly maxTurns: number;
  readonly maxNewTokens: number;
  readonly maxSequenceTokens: number;
  readonly temperature: number;
  readonly stopStrings: readonly string[];
  readonly stopTokens: readonly number[];
  readonly allowedTokens: readonly number[] | undefined;
  readonly #allowed: ReadonlySet<number> | null;
  readonly addBos: boolean;
  readonly toolSyntax: ToolCallSyntax;
  /** Whether addBos was given (then a prompt already starting with BOS is an error, not skipped). */
  readonly addBosExplicit: boolean;
  readonly #sample: SampleFn;

  constructor(options: AgentOptions) {
    this.#sample = options.sample;
    this.tokenizer = options.tokenizer;
    this.id = options.id ?? 'agent';
    this.adapterId = options.adapterId;
    this.format = options.format ?? plainFormat();
    this.maxTurns = positiveInt('maxTurns', options.maxTurns ?? 8);
    this.maxNewTokens = positiveInt('maxNewTokens', options.maxNewTokens ?? 64);
    this.maxSequenceTokens = positiveInt('maxSequenceTokens', options.maxSequenceTokens ?? 1024);
    this.temperature = options.temperature ?? 1;
    if (!(this.temperature >= 0)) throw new InvalidInputError('Agent', `temperature must be >= 0, got ${this.temperature}`);
    this.toolSyntax = options.toolSyntax ?? this.format.toolSyntax ?? tagToolSyntax;
    this.stopStrings = Object.freeze([...(options.stopStrings ?? this.toolSyntax.stopStrings)]);
    const eos = options.eosTokenIds ?? [];
    for (const id of eos) {
      if (!Number.isInteger(id) || id < 0 || id >= options.tokenizer.vocabSize) throw new InvalidInputError('Agent', `eosTokenIds: ${id} is not a token id in [0, ${options.tokenizer.vocabSize})`);
    }
    this.stopTokens = Object.freeze([...new Set(options.stopTokens ?? [options.tokenizer.eosId, ...eos])]);
    const allowed = options.allowedTokens;
    if (allowed !== undefined) {
      if (!Array.isArray(allowed) || allowed.length === 0) throw new InvalidInputError('Agent', 'allowedTokens must be a non-empty array of token ids (leave it out to allow every id)');
      for (const id of allowed) {
        if (!Number.isInteger(id) || id < 0 || id >= options.tokenizer.vocabSize) throw new InvalidInputError('Agent', `allowedTokens: ${id} is not a token id in [0, ${options.tokenizer.vocabSize})`);
      }
    }
    this.allowedTokens = allowed === undefined ? undefined : Object.freeze([...new Set(allowed)].sort((a, b) => a - b));
    this.#allowed = this.allowedTokens ? new Set(this.allowedTokens) : null;
    const rendersBos = this.format.rendersBos === true;
    this.addBosExplicit = options.addBos !== undefined;
    this.addBos = options.addBos ?? (options.tokenizer.bosId !== undefined && !rendersBos);
    if (this.addBos && options.tokenizer.bosId === undefined) throw new InvalidInputError('Agent', 'addBos is set but the tokenizer has no bosId');
    if (this.addBos && rendersBos) throw new InvalidInputError('Agent', 'addBos is set but the format already renders the BOS token: the prompt would start with two');
  }

  /** Samples a batch and checks the results against the contract (counts, lengths, ids, log-probs). */
  async sampleBatch(requests: readonly SampleRequest[]): Promise<readonly SampleResult[]> {
    if (requests.length === 0) return [];
    const results = await this.#sample(requests);
    if (!Array.isArray(results) || results.length !== requests.length) {
      throw new SampleContractError(`returned ${Array.isArray(results) ? results.length : typeof results} results for ${requests.length} requests`);
    }
    results.forEach((r, i) => {
      const { tokens, logprobs } = r ?? ({} as SampleResult);
      if (!Array.isArray(tokens) || !Array.isArray(logprobs) || tokens.length !== logprobs.length) {
        throw new SampleContractError(`result ${i}: tokens and logprobs must be arrays of equal length`);
      }
      if (tokens.length > requests[i].maxTokens) throw new SampleContractError(`result ${i}: ${tokens.length} tokens exceed maxTokens ${requests[i].maxTokens}`);
      for (let t = 0; t < tokens.length; t++) {
        const id = tokens[t];
        if (!Number.isInteger(id) || id < 0 || id >= this.tokenizer.vocabSize) throw new SampleContractError(`result ${i}: token ${id} at ${t} is outside the vocabulary`);
        const only = requests[i].allowedTokens;
        if (only !== undefined && !(only === this.allowedTokens ? this.#allowed!.has(id) : only.includes(id))) {
          throw new SampleContractError(`result ${i}: token ${id} at ${t} is not among the request's allowedTokens`);
        }
        if (!Number.isFinite(logprobs[t]) || logprobs[t] > 1e-4) throw new SampleContractError(`result ${i}: log-prob ${logprobs[t]} at ${t} is not a finite value <= 0`);
      }
    });
    return results;
  }
}

/** The u32 sampler seed for one request, fixed by (rollout seed, episode, player, turn) alone. */
export function requestSeed(rolloutSeed: number, episodeId: number, player: number, turn: number): number {
  return philox4x32(episodeId, turn, player, 0x5a3d1e, rolloutSeed, 0x0ac7)[0];
}

/** An action appended to the sequence. */
export interface AppendedAction {
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

/** Records one agent's token sequence during one episode (mutable; `finish` freezes a copy). */
export class EpisodeBuilder {
  readonly agent: Agent;
  readonly tokensT: number[] = [];
  readonly policyMaskT: number[] = [];
  readonly logprobsT: number[] = [];
  readonly turns: Turn[] = [];
  readonly history: ChatMessage[] = [];
  readonly promptLength: number;
  readonly tools: readonly Tool[];
  /** Reward received before this agent's first action (multi-agent games). */
  preActionReward = 0;
  #lastEndedWithStop = false;

  constructor(agent: Agent, task: string, tools: readonly Tool[]) {
    this.agent = agent;
    this.tools = tools;
    const prompt = agent.tokenizer.encode(agent.format.initial(task, tools));
    const bos = agent.tokenizer.bosId;
    // Never two BOS: a prompt that starts with it (a template rendering bos_token) gets none more;
    // an explicit addBos there is refused rather than obeyed.
    const startsWithBos = bos !== undefined && prompt[0] === bos;
    if (agent.addBos && startsWithBos && agent.addBosExplicit) throw new InvalidInputError('Agent', `addBos is set but the prompt already starts with BOS (${bos})`);
    if (agent.addBos && !startsWithBos) this.#push([bos as number], null);
    this.#push(prompt, null);
    this.promptLength = this.tokensT.length;
    this.history.push(...(agent.format.initialMessages?.(task, tools) ?? [{ role: 'user', content: task }]));
  }

  #push(ids: readonly number[], logprobs: readonly number[] | null): void {
    for (let i = 0; i < ids.length; i++) {
      this.tokensT.push(ids[i]);
      this.policyMaskT.push(logprobs === null ? 0 : 1);
      this.logprobsT.push(logprobs === null ? 0 : logprobs[i]);
    }
  }

  /** Tokens the next action may use (0: the context is full). */
  room(): number {
    return Math.min(this.agent.maxNewTokens, this.agent.maxSequenceTokens - this.tokensT.length);
  }

  request(seed: number): SampleRequest {
    const a = this.agent;
    return {
      promptTokens: this.tokensT.slice(),
      maxTokens: this.room(),
      stopStrings: a.stopStrings,
      stopTokens: a.stopTokens,
      temperature: a.temperature,
      seed,
      ...(a.adapterId === undefined ? {} : { adapterId: a.adapterId }),
      ...(a.allowedTokens === undefined ? {} : { allowedTokens: a.allowedTokens }),
    };
  }

  /** Appends sampled ids as policy tokens; the action text omits a trailing stop token. */
  appendAction(result: SampleResult): AppendedAction {
    const start = this.tokensT.length;
    this.#push(result.tokens, result.logprobs);
    const ids = result.tokens;
    const endsWithStop = ids.length > 0 && this.agent.stopTokens.includes(ids[ids.length - 1]);
    const text = this.agent.tokenizer.decode(endsWithStop ? ids.slice(0, -1) : ids);
    this.#lastEndedWithStop = endsWithStop;
    this.history.push({ role: 'assistant', content: text });
    return { text, start, end: this.tokensT.length };
  }

  recordTurn(kind: Turn['kind'], action: AppendedAction, observation: string, reward: number, info: { readonly [k: string]: JsonValue }): void {
    this.turns.push({ kind, actionStart: action.start, actionEnd: action.end, action: action.text, observation, reward, info });
  }

  /** Adds a reward to the latest turn (or before the first action when there is none). */
  addReward(r: number): void {
    const last = this.turns.length - 1;
    if (last < 0) this.preActionReward += r;
    else this.turns[last] = { ...this.turns[last], reward: this.turns[last].reward + r };
  }

  /** Text to append for an observation or tool result; false when it would leave no room for an action. */
  appendFeedback(kind: 'observation' | 'tool', text: string, toolName = ''): boolean {
    const ctx: FormatContext = { history: this.history, endedWithStopToken: this.#lastEndedWithStop, tools: this.tools };
    const f = this.agent.format;
    const rendered = kind === 'tool' ? f.toolResult(toolName, text, ctx) : f.observation(text, ctx);
    const ids = this.agent.tokenizer.encode(rendered);
    if (this.tokensT.length + ids.length >= this.agent.maxSequenceTokens) return false;
    this.#push(ids, null);
    const last = this.turns.length - 1;
    // Turn-based games learn a player's next observation only when its turn comes round again.
    if (last >= 0 && this.turns[last].observation === '') this.turns[last] = { ...this.turns[last], observation: text };
    this.history.push(kind === 'tool' ? { role: 'tool', content: text, name: toolName } : { role: 'user', content: text });
    return true;
  }

  get reward(): number {
    return this.turns.reduce((s, t) => s + t.reward, this.preActionReward);
  }

  finish(meta: { envName: string; seed: number; groupId: number; episodeId: number; player: number; endReason: KeptEndReason }): Trajectory {
    const a = this.agent;
    return deepFreeze({
      envName: meta.envName,
      agentId: a.id,
      ...(a.adapterId === undefined ? {} : { adapterId: a.adapterId }),
      seed: meta.seed,
      groupId: meta.groupId,
      episodeId: meta.episodeId,
      player: meta.player,
      tokensT: this.tokensT.slice(),
      promptLength: this.promptLength,
      policyMaskT: this.policyMaskT.slice(),
      logprobsT: this.logprobsT.slice(),
      turns: this.turns.map((t) => ({ ...t })),
      reward: this.reward,
      endReason: meta.endReason,
    });
  }
}
