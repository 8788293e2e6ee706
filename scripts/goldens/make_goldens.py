#!/usr/bin/env python3
"""
Writes test/goldens/<case>/: tiny random twins of published checkpoints in the exact Hugging Face
layout, and what transformers computes on them, for the engine's tests to compare against
(llm.c's train_gpt2.py writing the state test_gpt2.c checks). CI never runs this; the outputs are
committed. See README.md beside this file for what each file holds and how to rerun.

Per case:
  1. config.json in the published layout (cases.py); transformers reads it back (AutoConfig) and
     builds the model from what it read, so the reference is transformers' reading of that file.
  2. Random weights (fixed seed): matrices and embeddings ~ N(0, std), biases ~ N(0, 0.05),
     norm weights 1 + N(0, 0.1) ((1+w) norms: w ~ N(0, 0.1)), so outputs are far from uniform.
  3. save_pretrained in the published dtype (bf16, GPT-2 f32); config.json is then written back
     in the published layout (transformers 5 would write its own layout, kept in meta.json).
  4. The model is reloaded from those files in float64 (eager attention), so the reference runs on
     exactly the rounded weights a user downloads. transformers itself computes a few things in
     f32 even then (norm statistics, RoPE tables, the attention softmax): relative ~1e-7.
  5. logits, next-token cross entropy and its gradient for every parameter, per-token log-probs,
     greedy tokens; then a PEFT LoRA adapter (saved f32) and its logits, loss and gradients.
"""
import json
import math
import os
import shutil
import sys

import peft
import safetensors
import torch
import transformers
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

sys.dont_write_bytecode = True  # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import CASES  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "test", "goldens")
B, T = 2, 14  # batch rows, tokens per row
PROMPT, G = 5, 8  # greedy: the first PROMPT tokens of each row, G new tokens
LORA_R, LORA_ALPHA = 4, 8
WEIGHT_STD = 0.1
MIN_GREEDY_GAP = 1e-2  # top-1 minus top-2 logit at every greedy step (f32 engines must agree)


def is_norm(module):
    return isinstance(module, torch.nn.LayerNorm) or "RMSNorm" in type(module).__name__


def init_weights(model, seed, one_plus_norm):
    """Seeded random weights in named_parameters order (tied weights once)."""
    g = torch.Generator().manual_seed(seed)
    norm_params = {f"{mn}.{pn}" if mn else pn for mn, m in model.named_modules() if is_norm(m) for pn, _ in m.named_parameters(recurse=False)}
    with torch.no_grad():
        for name, p in model.named_parameters():
            z = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if name in norm_params and name.endswith("weight"):
                p.copy_(z * 0.1 + (0.0 if one_plus_norm else 1.0))
            elif p.dim() == 1:
                p.copy_(z * 0.05)
            else:
                p.copy_(z * WEIGHT_STD)


def special_ids(cfg):
    ids = set()
    for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
        v = cfg.get(k)
        for x in v if isinstance(v, list) else [v]:
            if x is not None:
                ids.add(int(x))
    return ids


def draw_inputs(V, specials, seed):
    """Random ids without special tokens: transformers' embeddings skip the gradient of padding_idx rows."""
    g = torch.Generator().manual_seed(seed)
    allowed = torch.tensor([i for i in range(V) if i not in specials])
    return allowed[torch.randint(len(allowed), (B, T), generator=g)]


def next_token_loss(logits, ids):
    """mean over b < B, t < T-1 of -log softmax(logits[b, t])[ids[b, t+1]] (HF's labels=input_ids loss)."""
    V = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1), reduction="mean")


def next_token_logprobs(logits, ids):
    lp = torch.log_softmax(logits[:, :-1], dim=-1)
    return lp.gather(-1, ids[:, 1:, None])[..., 0]


def greedy(model, ids, gen_cfg):
    """model.generate greedy, checked against argmax of full forwards, with the smallest top-2 gap."""
    prompt = ids[:, :PROMPT]
    # generate fills unset fields from the model's generation_config (its eos ids, which would stop
    # or, with min_new_tokens, mask tokens): replace that too, so decoding is plain argmax.
    model.generation_config = gen_cfg
    out = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), generation_config=gen_cfg)
    new = out[:, PROMPT:]
    assert new.shape == (B, G), new.shape
    seq, gap = prompt, math.inf
    with torch.no_grad():
        for _ in range(G):
            last = model(input_ids=seq, attention_mask=torch.ones_like(seq)).logits[:, -1]
            top = torch.topk(last, 2, dim=-1).values
            gap = min(gap, float((top[:, 0] - top[:, 1]).min()))
            seq = torch.cat([seq, last.argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(seq[:, PROMPT:], new), f"generate {new.tolist()} != argmax loop {seq[:, PROMPT:].tolist()}"
    return new, gap


def llama3_rope_check(model, cfg):
    """Counts the llama3-scaled inverse frequencies that equal / differ from plain RoPE's."""
    D = cfg["head_dim"]
    plain = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    got = model.model.rotary_emb.inv_freq.to(torch.float64)
    rel = ((got - plain).abs() / plain).tolist()
    factor = cfg["rope_scaling"]["factor"]
    kept = sum(r < 1e-6 for r in rel)
    divided = sum(abs(g * factor / p - 1) < 1e-6 for g, p in zip(got.tolist(), plain.tolist()))
    smoothed = len(rel) - kept - divided
    assert kept > 0 and divided > 0 and smoothed > 0, f"llama3 bands kept/smoothed/divided = {kept}/{smoothed}/{divided}"
    return {"frequencies": len(rel), "kept": kept, "smoothed": smoothed, "divided_by_factor": divided, "inv_freq": got.tolist(), "plain_inv_freq": plain.tolist()}


def config_dict(d):
    c = AutoConfig.from_pretrained(d).to_dict()
    # dtype: GPT-2's published config has none (read as None), transformers 5 writes float32; the
    # checkpoint's own dtypes are recorded apart.
    for k in ("transformers_version", "_name_or_path", "dtype"):
        c.pop(k, None)
    return c


def config_dict_of(obj):
    """transformers' reading of a config.json object (written to a scratch folder)."""
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        with open(os.path.join(t, "config.json"), "w") as f:
            json.dump(obj, f)
        return config_dict(t)


def f32(t):
    return t.detach().to(torch.float32).contiguous()


def write_case(name, hf_id, published, targets, seed):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg_path = os.path.join(d, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(published, f, indent=2)
    config = AutoConfig.from_pretrained(d)
    is_gemma = published["model_type"] == "gemma3_text"
    dtype = torch.bfloat16 if published.get("torch_dtype") == "bfloat16" else torch.float32

    # 1-3: build, randomise, save in the published dtype, restore the published config.json.
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    init_weights(model, seed, one_plus_norm=is_gemma)
    model.to(dtype).save_pretrained(d)
    with open(cfg_path) as f:
        saved_config = json.load(f)
    with open(cfg_path, "w") as f:
        json.dump(published, f, indent=2)
        f.write("\n")
    if not os.path.exists(os.path.join(d, "generation_config.json")):
        raise SystemExit(f"{name}: save_pretrained wrote no generation_config.json")

    # 4: reload in f64 from the files (the published config.json).
    ref = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64, attn_implementation="eager")
    ref.eval()  # no dropout (GPT-2's *_pdrop): the reference is the deterministic function
    same_config = config_dict(d) == config_dict_of(saved_config)
    V = config.vocab_size
    extra = {}
    if published.get("rope_scaling") and published["rope_scaling"].get("rope_type") == "llama3":
        extra["llama3_rope"] = llama3_rope_check(ref, published)
    if is_gemma:
        lt = ref.config.layer_types
        assert "sliding_attention" in lt and "full_attention" in lt and T > ref.config.sliding_window, lt
        extra["gemma3"] = {"layer_types": lt, "sliding_window": ref.config.sliding_window,
                           "sliding_mask": "query i attends keys j with i - sliding_window < j <= i (the window counts the query itself)",
                           "rope_parameters": ref.config.rope_parameters, "embed_scale": float(ref.model.embed_tokens.embed_scale)}

    # Inputs: retried with the next data seed until greedy decoding has no near-tie.
    gen_cfg = GenerationConfig(do_sample=False, max_new_tokens=G, eos_token_id=None, pad_token_id=0, bos_token_id=None, use_cache=True)
    for tries in range(20):
        data_seed = seed * 1000 + tries
        ids = draw_inputs(V, special_ids(published), data_seed)
        greedy_ids, gap = greedy(ref, ids, gen_cfg)
        if gap >= MIN_GREEDY_GAP:
            break
    else:
        raise SystemExit(f"{name}: no data seed without a greedy near-tie")

    # 5: base forward / backward.
    out = ref(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids)
    logits = out.logits
    loss = next_token_loss(logits, ids)
    assert abs(float(loss) - float(out.loss)) <= 1e-6 * abs(float(loss)), (float(loss), float(out.loss))
    ref.zero_grad()
    loss.backward()
    tensors = {"input_ids": ids.to(torch.int32).contiguous(), "logits": f32(logits), "loss": f32(loss.reshape(1)),
               "logprobs": f32(next_token_logprobs(logits, ids)), "greedy": greedy_ids.to(torch.int32).contiguous()}
    with safetensors.safe_open(os.path.join(d, "model.safetensors"), "pt") as f:
        ckpt_names = sorted(f.keys())
        ckpt_dtypes = sorted({str(f.get_slice(k).get_dtype()) for k in ckpt_names})
    params = dict(ref.named_parameters())
    assert sorted(params) == ckpt_names, (sorted(params), ckpt_names)
    for n, p in params.items():
        tensors[f"grad.{n}"] = f32(p.grad)

    # LoRA: PEFT on the f32 reload (saved f32), then the same model in f64.
    lora_dir = os.path.join(d, "lora")
    base32 = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")
    torch.manual_seed(seed + 1)
    lcfg = peft.LoraConfig(r=LORA_R, lora_alpha=LORA_ALPHA, target_modules=targets, lora_dropout=0.0, bias="none",
                           init_lora_weights=False, fan_in_fan_out=published["model_type"] == "gpt2", task_type="CAUSAL_LM")
    pm = peft.get_peft_model(base32, lcfg)
    pm.peft_config["default"].base_model_name_or_path = f"test/goldens/{name}"  # not this machine's path
    pm.save_pretrained(lora_dir)
    # PEFT keeps target_modules as a set, so their order follows Python's string hashing: sorted,
    # reruns write the same bytes.
    ac_path = os.path.join(lora_dir, "adapter_config.json")
    with open(ac_path) as f:
        ac = json.load(f)
    ac["target_modules"] = sorted(ac["target_modules"])
    with open(ac_path, "w") as f:
        f.write(json.dumps(ac, indent=2, sort_keys=True))
    for extra_file in ("README.md",):  # PEFT's model card: not needed by anyone
        p = os.path.join(lora_dir, extra_file)
        if os.path.exists(p):
            os.remove(p)
    pm = pm.to(torch.float64)
    pm.eval()
    lout = pm(input_ids=ids, attention_mask=torch.ones_like(ids))
    lloss = next_token_loss(lout.logits, ids)
    lloss.backward()
    tensors["lora.logits"] = f32(lout.logits)
    tensors["lora.loss"] = f32(lloss.reshape(1))
    tensors["lora.logprobs"] = f32(next_token_logprobs(lout.logits, ids))
    with safetensors.safe_open(os.path.join(lora_dir, "adapter_model.safetensors"), "pt") as f:
        lora_names = sorted(f.keys())
        lora_dtypes = sorted({str(f.get_slice(k).get_dtype()) for k in lora_names})
    trainable = {n.replace(".default.", "."): p for n, p in pm.named_parameters() if p.requires_grad}
    assert sorted(trainable) == lora_names, (sorted(trainable), lora_names)
    for n, p in trainable.items():
        tensors[f"lora.grad.{n}"] = f32(p.grad)
    # The saved adapter reproduces the logits (PEFT's loader, on the f64 base).
    again = peft.PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64, attn_implementation="eager"), lora_dir).eval()
    with torch.no_grad():
        d_again = float((again(input_ids=ids).logits - lout.logits).abs().max() / lout.logits.abs().max())
    assert d_again < 1e-5, d_again  # PEFT's loader keeps the adapter in f32: f32 rounding

    save_file(tensors, os.path.join(d, "golden.safetensors"), metadata={"format": "pt"})
    files = {}
    for root, _, fs in os.walk(d):
        for fn in fs:
            p = os.path.join(root, fn)
            files[os.path.relpath(p, d)] = os.path.getsize(p)
    probs = torch.softmax(logits.detach(), -1)
    meta = {
        "case": name, "mimics": hf_id, "model_type": published["model_type"], "seed": seed, "data_seed": data_seed,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__, "safetensors": safetensors.__version__},
        "checkpoint_dtype": ckpt_dtypes, "reference_dtype": "float64 (transformers upcasts norm statistics, RoPE tables and the attention softmax to float32)",
        "attn_implementation": "eager", "mode": "eval (no dropout)",
        "init": {"matrices_and_embeddings_std": WEIGHT_STD, "bias_std": 0.05, "norm_weight": "0 + N(0, 0.1) ((1+w) norms)" if is_gemma else "1 + N(0, 0.1)"},
        "inputs": {"B": B, "T": T, "excluded_ids": sorted(special_ids(published)), "attention_mask": "all ones"},
        "loss": "mean over b < B, t < T-1 of -log softmax(logits[b, t])[input_ids[b, t+1]] (labels = input_ids; HF's ForCausalLMLoss), computed in f64",
        "logprobs": "[B, T-1]: log softmax(logits[b, t])[input_ids[b, t+1]]",
        "grads": "d loss / d parameter for every named parameter (checkpoint names; tied embedding once: input and output-head parts summed)",
        "greedy": {"prompt": f"input_ids[:, :{PROMPT}]", "prompt_tokens": PROMPT, "new_tokens": G, "generate": gen_cfg.to_diff_dict(),
                   "check": "equal to argmax of full (uncached) forwards", "min_top2_logit_gap": gap, "data_seed_tries": tries + 1},
        "lora": {"r": LORA_R, "lora_alpha": LORA_ALPHA, "scale": LORA_ALPHA / LORA_R, "target_modules": targets, "init_lora_weights": False,
                 "torch_seed": seed + 1, "adapter_dtype": lora_dtypes, "base": "frozen", "loss": "as above, with the adapter",
                 "grads": "lora.grad.<name in adapter_model.safetensors>"},
        "stats": {"logit_std": float(logits.std()), "max_prob_mean": float(probs.max(-1).values.mean()),
                  "entropy_mean": float(-(probs * probs.clamp_min(1e-300).log()).sum(-1).mean()), "log_V": math.log(V),
                  "loss": float(loss), "lora_loss": float(lloss)},
        "tensors": {k: {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")} for k, v in tensors.items()},
        "files": files,
        "transformers_saved_config": saved_config,
        "transformers_saved_config_reads_as_published": same_config,
        **extra,
    }
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    total = sum(files.values()) + os.path.getsize(os.path.join(d, "meta.json"))
    print(f"{name}: {total / 1024:.0f} KiB  loss {float(loss):.4f} (log V {math.log(V):.3f})  lora loss {float(lloss):.4f}  "
          f"greedy gap {gap:.3g}  ckpt {ckpt_dtypes}  {extra.get('llama3_rope', {}).get('smoothed', '')}")
    return total


def main():
    torch.use_deterministic_algorithms(True)
    names = sys.argv[1:] or list(CASES)
    total = 0
    for name in names:
        hf_id, published, targets, seed = CASES[name]
        total += write_case(name, hf_id, published, targets, seed)
    print(f"total {total / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
