/**
 * Checks a pretrained job's PEFT export with PEFT itself (issue 20's "Done when", Python side):
 *   1. the Qwen3 tool twin on the tests' fake Hub (127.0.0.1) → train() by repo id: download into
 *      a fresh Hugging Face cache, a LoRA warm start in Qwen3's native tool syntax, 2 GRPO steps
 *      (test/shared/pretrained_flow.ts), then the run folder (writeRunOutputs);
 *   2. our log-probs of a few token sequences under the trained adapter (the engine, on the base
 *      loaded offline from the cache);
 *   3. Python, offline on the same cache: AutoModelForCausalLM.from_pretrained(repo, revision=commit)
 *      — the base the adapter names — then PeftModel.from_pretrained(base, run/peft) and
 *      AutoTokenizer.from_pretrained(run/peft); the same sequences' log-probs; the largest
 *      difference is printed and must be below 1e-4.
 * Needs python3 with torch, transformers and peft; not part of `npm test` (CI runs no Python). Run:
 *   npx deno run --allow-read --allow-write --allow-env --allow-net=127.0.0.1 --allow-run=python3 scripts/peft_pretrained_interop.ts
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PackedBatch } from '../src/algorithms/pack.ts';
import { writeRunOutputs } from '../src/cli/train.ts';
import { LocalService } from '../src/runtime/local_service.ts';
import { FakeHub } from '../test/deno/fake_hub.ts';
import { nextTokenBatch } from '../test/shared/cases/goldens.ts';
import { testGpu } from '../test/shared/gpu.ts';
import { qwen3ToolTwin } from '../test/shared/hub_twin.ts';
import { TOOL_REPO, trainToolTwin } from '../test/shared/pretrained_flow.ts';
import { Rng } from '../src/util/rng.ts';

const PY = `
import json, sys, torch, transformers, peft
from transformers import AutoModelForCausalLM, AutoTokenizer
from peft import PeftModel
repo, commit, peft_dir, ids_file = sys.argv[1:5]
ids = torch.tensor(json.load(open(ids_file)))
base = AutoModelForCausalLM.from_pretrained(repo, revision=commit, torch_dtype=torch.float32)
model = PeftModel.from_pretrained(base, peft_dir).eval()
tok = AutoTokenizer.from_pretrained(peft_dir)
with torch.no_grad():
    logits = model(input_ids=ids).logits.float()
lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None])[..., 0]
print(json.dumps({"logprobs": lp.tolist(), "transformers": transformers.__version__, "peft": peft.__version__,
                  "base": model.peft_config["default"].base_model_name_or_path, "revision": model.peft_config["default"].revision,
                  "tokenizer": type(tok).__name__}))
`;

const hub = new FakeHub();
await hub.start();
const cacheDir = await mkdtemp(join(tmpdir(), 'peft-interop-cache-'));
const out = await mkdtemp(join(tmpdir(), 'peft-interop-run-'));
const ctx = await testGpu();
try {
  const commit = hub.commit(TOOL_REPO, await qwen3ToolTwin());
  const { result } = await trainToolTwin(ctx, { endpoint: hub.url, cacheDir });
  await writeRunOutputs(out, result);
  await hub.stop();

  // Our log-probs: the base offline from the cache, the trained adapter on it.
  const B = 3, T = 40;
  const rng = new Rng(7);
  const inputIds = Int32Array.from({ length: B * T }, () => rng.nextInt(256));
  const batch: PackedBatch = nextTokenBatch({ B, T, inputIds } as never);
  const service = new LocalService(ctx);
  let ours: Float32Array;
  try {
    const modelId = await service.createModel(result.trained.cfg, { pretrained: { repo: TOOL_REPO, revision: commit, cacheDir, offline: true } });
    const client = await service.createTrainingClient({ modelId, trainable: 'lora', lora: result.trained.lora!, adapter: result.trained.tensors });
    ours = (await client.computeLogprobs(batch)).logprobsBT;
    await client.close();
  } finally {
    await service.close();
  }
  const idsFile = join(out, 'ids.json');
  await writeFile(idsFile, JSON.stringify(Array.from({ length: B }, (_, b) => Array.from(inputIds.subarray(b * T, (b + 1) * T)))));
  const py = await new Deno.Command('python3', {
    args: ['-c', PY, TOOL_REPO, commit, join(out, 'peft'), idsFile],
    env: { HF_HUB_CACHE: cacheDir, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1' }, stdout: 'piped', stderr: 'piped',
  }).output();
  if (!py.success) throw new Error(`python3 failed:\n${new TextDecoder().decode(py.stderr)}`);
  const theirs = JSON.parse(new TextDecoder().decode(py.stdout));
  let worst = 0;
  for (let b = 0; b < B; b++) for (let t = 0; t < T - 1; t++) worst = Math.max(worst, Math.abs(theirs.logprobs[b][t] - ours[b * T + t]));
  console.log(JSON.stringify({ transformers: theirs.transformers, peft: theirs.peft, base: theirs.base, revision: theirs.revision, commit, tokenizer: theirs.tokenizer, sequences: B, tokens: B * (T - 1), maxAbsLogprobDiff: worst }));
  if (theirs.base !== TOOL_REPO || theirs.revision !== commit) throw new Error('PEFT read another base or revision');
  if (!(worst < 1e-4)) throw new Error(`log-probs differ by ${worst}`);
  console.log('ok: PEFT loads the export on the Hub base at its commit, with matching log-probs');
} finally {
  ctx.destroy();
  await hub.stop().catch(() => {});
  await rm(cacheDir, { recursive: true, force: true });
  await rm(out, { recursive: true, force: true });
}
