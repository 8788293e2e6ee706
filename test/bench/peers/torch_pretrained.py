#!/usr/bin/env python3
"""torch CPU beside the `pretrained` bench part: the tool a user without a GPU would pick.

For each model given on the command line (a JSON list), on this machine's cores:
  - builds it: from the checkpoint folder the bench wrote (`folder`: config.json + bf16
    model.safetensors, random weights; timed as load_s) or else from its config.json (`config`,
    random init) — nothing is downloaded; f32 on the CPU (bf16 matmuls are slower there);
  - decode: greedy `generate` with the KV cache (use_cache), B prompts of P random tokens, exactly
    n new tokens (min_new_tokens = max_new_tokens), one warm-up then `iters` timed generations;
    tokens/s = B * n / median seconds (prefill of the P prompt tokens included, as in ours);
  - LoRA step: PEFT LoRA (rank, alpha, targets as given, no dropout) on the same model, AdamW
    (lr 1e-3, betas 0.9/0.999, eps 1e-8, no weight decay) over the adapter's parameters, a
    token-mean cross-entropy on B rows of T random tokens: forward, backward, step, zero_grad;
    one warm-up then `iters` timed steps, median seconds.
Prints one JSON object: {"torch": version, "transformers": ..., "peft": ..., "threads": n,
"models": {name: {...figures}}}. Without torch, transformers or peft it prints
{"unavailable": "<why>"} and exits 0, so the bench can say why the column is empty.

Run: python3 test/bench/peers/torch_pretrained.py '[{"name": "m", "config": {...}, "lora": {...}, ...}]'
"""
import json
import os
import statistics
import sys
import time


def main() -> None:
    try:
        import peft
        import torch
        import transformers
    except ImportError as e:  # the bench reports the column as not run, with this reason
        print(json.dumps({"unavailable": f"python3 lacks {e.name or e}"}))
        return
    specs = json.loads(sys.argv[1])
    torch.manual_seed(0)
    torch.set_num_threads(os.cpu_count() or 1)
    out = {
        "torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
        "threads": torch.get_num_threads(), "models": {},
    }
    for spec in specs:
        out["models"][spec["name"]] = run_model(spec, torch, transformers, peft)
        print(f"torch_pretrained: {spec['name']} {json.dumps(out['models'][spec['name']])}", file=sys.stderr)
    print(json.dumps(out))


def median_seconds(fn, iters: int) -> float:
    fn()  # warm-up: allocations, thread pools, kernel choice
    samples = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def run_model(spec, torch, transformers, peft) -> dict:
    iters = int(spec.get("iters", 3))
    res = {}
    # transformers 4.56 renamed torch_dtype to dtype (5.x warns on the old name).
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    f32 = {"dtype": torch.float32} if (major, minor) >= (4, 56) else {"torch_dtype": torch.float32}
    t0 = time.perf_counter()
    if spec.get("folder"):
        model = transformers.AutoModelForCausalLM.from_pretrained(spec["folder"], **f32)
        res["load_s"] = time.perf_counter() - t0
    else:
        config = transformers.AutoConfig.for_model(**spec["config"])
        model = transformers.AutoModelForCausalLM.from_config(config, **f32)
        res["init_s"] = time.perf_counter() - t0
    model.eval()
    vocab = model.config.vocab_size
    gen = torch.Generator().manual_seed(17)

    dec = spec["decode"]
    for B in dec["batches"]:
        prompts = torch.randint(0, min(256, vocab), (B, dec["P"]), generator=gen)
        mask = torch.ones_like(prompts)

        def generate():
            with torch.no_grad():
                y = model.generate(input_ids=prompts, attention_mask=mask, max_new_tokens=dec["n"], min_new_tokens=dec["n"],
                                   do_sample=False, use_cache=True, pad_token_id=0)
            assert y.shape == (B, dec["P"] + dec["n"]), y.shape

        res[f"decode_b{B}_tok_s"] = B * dec["n"] / median_seconds(generate, iters)

    lo = spec["lora"]
    cfg = peft.LoraConfig(r=lo["rank"], lora_alpha=lo["alpha"], target_modules=lo["targets"], lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
    pm = peft.get_peft_model(model, cfg)
    pm.train()
    opt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    ids = torch.randint(0, vocab, (lo["B"], lo["T"]), generator=gen)
    targets = torch.randint(0, vocab, (lo["B"], lo["T"]), generator=gen)

    def step():
        logits = pm(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab).float(), targets.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    res["lora_step_s"] = median_seconds(step, iters)
    res["trainable_params"] = sum(p.numel() for p in pm.parameters() if p.requires_grad)
    return res


if __name__ == "__main__":
    main()
