// Deno suite: a job on a pretrained checkpoint, end to end (issue 20's "Done when"). The Qwen3 tool
// twin (hub_twin.ts: the golden's weights, Qwen3's real chat template, Qwen's tool-call tokens) is
// served by the fake Hub on 127.0.0.1; train() takes the repo id, downloads it into a Hugging Face
// cache folder, warm-starts a LoRA adapter on calculator demonstrations rewritten in Qwen3's
// native <tool_call> syntax, runs 2 LoRA GRPO steps, and the run folder's PEFT export names the
// repo and commit and carries the tokenizer files. Then the Hub goes away and a second job loads
// the same checkpoint offline from the cache and takes GRPO steps that move the adapter.
// PEFT itself loading the export with matching log-probs: scripts/peft_pretrained_interop.ts.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeRunOutputs } from '../../src/cli/train.ts';
import type { SampleRequest, SampleResult } from '../../src/env/types.ts';
import { openSafetensors } from '../../src/model/safetensors.ts';
import { HfTokenizer } from '../../src/model/tokenizer/hf.ts';
import type { SamplingClient, TrainingClient, TrainingClientOptions } from '../../src/runtime/clients.ts';
import { LocalService } from '../../src/runtime/local_service.ts';
import { train } from '../../src/runtime/train.ts';
import { testGpu } from '../shared/gpu.ts';
import { qwen3ToolTwin } from '../shared/hub_twin.ts';
import { TOOL_REPO, trainToolTwin } from '../shared/pretrained_flow.ts';
import { vowelsSpec } from '../shared/vowels_env.ts';
import { FakeHub } from './fake_hub.ts';

/** A LocalService that records what its training clients' samplers were asked and gave. */
class RecordingService extends LocalService {
  readonly calls: { requests: readonly SampleRequest[]; results: readonly SampleResult[] }[] = [];
  override async createTrainingClient(opts: TrainingClientOptions): Promise<TrainingClient> {
    const c = await super.createTrainingClient(opts);
    const calls = this.calls;
    return new Proxy(c, {
      get(t, k) {
        if (k !== 'samplingClient') {
          const v = Reflect.get(t, k, t);
          return typeof v === 'function' ? v.bind(t) : v;
        }
        return async (): Promise<SamplingClient> => {
          const s = await t.samplingClient();
          const sample = (async (requests: readonly SampleRequest[]) => {
            const results = await (s.sample as (r: readonly SampleRequest[]) => Promise<readonly SampleResult[]>)(requests);
            calls.push({ requests, results });
            return results;
          }) as SamplingClient['sample'];
          return { ...s, sample, close: () => s.close() };
        };
      },
    });
  }
}

Deno.test('pretrained job: a Hub repo id → LoRA warm start in native tool syntax → 2 GRPO steps → PEFT export; then offline from the cache', async () => {
  const hub = new FakeHub();
  await hub.start();
  const cacheDir = await mkdtemp(join(tmpdir(), 'pretrained-job-'));
  const out = await mkdtemp(join(tmpdir(), 'pretrained-run-'));
  const ctx = await testGpu();
  let hubStopped = false;
  try {
    const files = await qwen3ToolTwin();
    const commit = hub.commit(TOOL_REPO, files);
    const p0 = HfTokenizer.fromJSON(new TextDecoder().decode(files['tokenizer.json']), JSON.parse(new TextDecoder().decode(files['tokenizer_config.json'])));

    // 1. Online: download, warm start, GRPO. The sampler sees the chat template's prompts.
    const recorder = new RecordingService(ctx, { maxSkippedInARow: 5 });
    const { result, steps } = await trainToolTwin(ctx, { endpoint: hub.url, cacheDir }, 0, recorder);
    const got = new Set(hub.log.filter((r) => r.method === 'GET').map((r) => r.path));
    assert.ok([...got].some((p) => p.startsWith('/cdn/')), 'the weights came from the (fake) CDN');
    assert.equal(result.model, TOOL_REPO);
    assert.equal(result.trainable, 'lora');
    assert.deepEqual(result.lora, { rank: 4, alpha: 8, targets: ['q', 'v', 'up', 'down'] });
    assert.deepEqual(result.trained.pretrained?.job, { repo: TOOL_REPO, endpoint: hub.url, cacheDir, commit });
    assert.equal(result.trained.base, undefined, 'the base is the Hub checkpoint: no host copy');
    const sft = steps.filter((m) => m.phase === 'sft').map((m) => m.loss);
    assert.equal(sft.length, 12);
    assert.ok(sft.at(-1)! < 0.7 * sft[0], `the warm start learns the native demonstrations: loss ${sft[0]} → ${sft.at(-1)}`);
    assert.equal(steps.filter((m) => m.phase === 'rl').length, 2);
    assert.equal(result.rewardCurve.length, 2);
    // The rollouts' prompts: Qwen3's template with the system message and the calculator declared
    // as a JSON-schema function, the <tool_call> instructions, no thinking; <|im_end|> (388) stops
    // an action; the sampler never emits an id the tokenizer lacks (259–379).
    const first = recorder.calls[0];
    assert.equal(first.requests.length, 8);
    const ids = first.requests[0].promptTokens;
    assert.equal(ids[0], 387, 'starts with <|im_start|>, no BOS (Qwen has none)');
    const prompt = p0.decode(ids as number[]);
    assert.match(prompt, /^system\nSolve the task\./);
    assert.ok(prompt.includes('"name": "calculator"') && prompt.includes('"expression"'), prompt);
    assert.ok(prompt.includes('<tool_call>\n{"name": <function-name>'), prompt);
    assert.match(prompt, /assistant\n<think>\n\n<\/think>\n\n$/);
    assert.ok(first.requests[0].stopTokens.includes(388));
    assert.ok(first.requests[0].stopStrings.includes('</tool_call>'));
    for (const c of recorder.calls) for (const r of c.results) for (const id of r.tokens) assert.ok(id < 259 || id >= 380, `sampled id ${id} is a hole of the vocabulary`);

    // 2. The run folder: our adapter, PEFT's files naming the repo and commit, the tokenizer files.
    await writeRunOutputs(out, result);
    const cfgJson = JSON.parse(await readFile(join(out, 'peft', 'adapter_config.json'), 'utf8'));
    assert.equal(cfgJson.base_model_name_or_path, TOOL_REPO);
    assert.equal(cfgJson.revision, commit);
    assert.deepEqual(cfgJson.target_modules, ['down_proj', 'q_proj', 'up_proj', 'v_proj']);
    assert.equal(cfgJson.r, 4);
    assert.equal(cfgJson.lora_alpha, 8);
    for (const f of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json']) {
      assert.deepEqual(new Uint8Array(await readFile(join(out, 'peft', f))), files[f], f);
    }
    const st = await openSafetensors(new Uint8Array(await readFile(join(out, 'peft', 'adapter_model.safetensors'))));
    assert.equal(st.names().length, 2 * 4 * 2); // A and B × 4 modules × 2 layers
    assert.deepEqual(st.info('base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight').shape, [4, 64]);
    assert.deepEqual(st.info('base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight').shape, [96, 4]); // 4 heads × 24
    assert.deepEqual(st.info('base_model.model.model.layers.0.mlp.down_proj.lora_B.weight').shape, [64, 4]);
    const b = await st.getF32('base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight');
    assert.ok(b.some((x) => x !== 0), 'the warm start moved B off its zero init');
    assert.equal(join(out, 'base').length > 0 && (await readFile(join(out, 'base', 'config.json')).then(() => true, () => false)), false, 'no base folder for a Hub base');

    // 3. Offline (the Hub gone): the cached snapshot serves a second job; graded rewards, so GRPO updates.
    await hub.stop();
    hubStopped = true;
    const service = new RecordingService(ctx, { maxSkippedInARow: 5 });
    const offline = await train({
      env: vowelsSpec(), maxTurns: 1, maxNewTokens: 6, model: TOOL_REPO, hub: { cacheDir, offline: true }, service,
      steps: 2, groups: 2, groupSize: 4, rows: 8, lora: { rank: 4 }, evalEpisodes: 0, seed: 1,
    }).finally(() => service.close());
    assert.equal(offline.trained.pretrained?.job.commit, commit);
    assert.ok(offline.lossCurve.some((l) => l !== 0), `GRPO trained: losses ${offline.lossCurve}`);
    assert.ok(Object.entries(offline.trained.tensors).some(([k, v]) => k.endsWith('lora_b') && v.some((x) => x !== 0)), 'GRPO moved the adapter');
    // Tokens the tokenizer lacks stay masked offline too.
    assert.equal(service.calls.length, 2);
    for (const c of service.calls) for (const r of c.results) for (const id of r.tokens) assert.ok(id < 259 || id >= 380, `sampled id ${id}`);
  } finally {
    if (!hubStopped) await hub.stop();
    ctx.destroy();
    await rm(cacheDir, { recursive: true, force: true });
    await rm(out, { recursive: true, force: true });
  }
});
