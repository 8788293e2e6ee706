/**
 * A trained policy to talk to: text in, the agent's reply out, with the job's own tokenizer,
 * prompt format (the chat template for a pretrained model), stop strings and stop ids — what
 * `result.sample(prompt)`, `npm run chat -- RUN_DIR` and `npm run eval` use. It owns a device
 * and a service (acquired on first use, released by close()), or uses the service it is given.
 *
 * A reply is one action as the agent would take it in an episode: sampling stops at a closed
 * tool call or answer, an end-of-turn id, or `maxTokens`.
 */
import { Agent, EpisodeBuilder } from '../env/agent.ts';
import type { Tool } from '../env/types.ts';
import { acquireGpu, type GpuContext } from '../gpu/device.ts';
import type { LoraConfig, ModelConfig } from '../model/config.ts';
import type { CreateModelOptions, HostParams, SamplingClient, ServiceClient } from './clients.ts';
import type { AgentSettings } from './evaluate.ts';
import { LocalService } from './local_service.ts';

/** What a policy is made of: a base (params or a pretrained reference), an adapter or not, the agent's settings. */
export interface PolicyParts {
  readonly cfg: ModelConfig;
  readonly base: CreateModelOptions;
  readonly lora: LoraConfig | null;
  /** The adapter's tensors (LoRA), unused for a full model (its weights are the base). */
  readonly adapter: HostParams | null;
  readonly agent: AgentSettings;
}

export interface SampleTextOptions {
  /** Tokens of the reply (default: the job's action limit). */
  readonly maxTokens?: number;
  /** Default: the job's temperature; 0 is greedy. */
  readonly temperature?: number;
  /** u32 sampler seed (default 0: the same prompt gives the same reply). */
  readonly seed?: number;
  /** Tools the prompt declares (as an environment's would). */
  readonly tools?: readonly Tool[];
}

export class Policy {
  readonly parts: PolicyParts;
  #ctx: GpuContext | null = null;
  #service: ServiceClient | null;
  #ownsService: boolean;
  #sampler: Promise<SamplingClient> | null = null;

  constructor(parts: PolicyParts, service?: ServiceClient) {
    this.parts = parts;
    this.#service = service ?? null;
    this.#ownsService = service === undefined;
  }

  async #client(): Promise<SamplingClient> {
    this.#sampler ??= (async () => {
      if (!this.#service) {
        this.#ctx = await acquireGpu({ label: 'policy' });
        const tok = this.parts.agent.tokenizer;
        this.#service = new LocalService(this.#ctx, { decode: (ids) => tok.decode(ids) });
      }
      const modelId = await this.#service.createModel(this.parts.cfg, this.parts.base);
      return this.#service.createSamplingClient(modelId, this.parts.lora && this.parts.adapter ? { lora: this.parts.lora, tensors: this.parts.adapter } : undefined);
    })();
    return this.#sampler;
  }

  /** The policy as the agent layer's SampleFn (for evaluate() and rollouts). */
  async sampleFn(): Promise<SamplingClient['sample']> {
    return (await this.#client()).sample;
  }

  /** The prompt's tokens as an episode would start (format, BOS once). */
  promptTokens(prompt: string, tools: readonly Tool[] = []): number[] {
    return [...new EpisodeBuilder(this.#agent(), prompt, tools).tokensT];
  }

  #agent(): Agent {
    const a = this.parts.agent;
    return new Agent({
      sample: () => Promise.reject(new Error('not used')), tokenizer: a.tokenizer, maxNewTokens: a.maxNewTokens, maxSequenceTokens: a.maxSequenceTokens,
      temperature: a.temperature, ...(a.format ? { format: a.format } : {}), ...(a.eosTokenIds ? { eosTokenIds: a.eosTokenIds } : {}),
    });
  }

  /** The reply to `prompt`: one action, decoded. */
  async sample(prompt: string, opts: SampleTextOptions = {}): Promise<string> {
    const agent = this.#agent();
    const promptTokens = this.promptTokens(prompt, opts.tools ?? []);
    const room = agent.maxSequenceTokens - promptTokens.length;
    const maxTokens = Math.max(1, Math.min(opts.maxTokens ?? agent.maxNewTokens, room));
    const sampler = await this.#client();
    const [r] = await sampler.sample([{
      promptTokens, maxTokens, stopStrings: agent.stopStrings, stopTokens: agent.stopTokens,
      temperature: opts.temperature ?? agent.temperature, seed: opts.seed ?? 0,
      ...(agent.allowedTokens ? { allowedTokens: agent.allowedTokens } : {}),
    }]);
    return agent.tokenizer.decode(r.tokens);
  }

  /** Releases what the policy acquired (its device and service when it made them). */
  async close(): Promise<void> {
    const s = await this.#sampler?.catch(() => null);
    await s?.close().catch(() => {});
    if (this.#ownsService) await this.#service?.close();
    this.#ctx?.destroy();
    this.#sampler = null;
    this.#ctx = null;
    if (this.#ownsService) this.#service = null;
  }
}
