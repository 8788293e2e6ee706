"""PEFT's own reading of a few adapter_config.json files: per config, every module PEFT puts a
LoRA layer on, with its rank and its scale (what multiplies B·A). Written to
test/goldens/peft/peft_scales.json, which test/unit/peft_semantics.test.ts compares with our
importer (missing lora_alpha or r, regex rank_pattern / alpha_pattern keys in order, a key that
matches nothing, rsLoRA, target_modules as a regex string, layers_to_transform,
exclude_modules with "all-linear", default target modules). Not run by CI:

    python3 scripts/goldens/peft_check.py

The configs go through PEFT's real loading path: written as adapter_config.json, read back with
PeftConfig.from_pretrained, applied with get_peft_model to tiny random twins of our test models
(2 layers; only module names matter here).
"""
import json
import os
import tempfile
import warnings

import peft
import torch
import transformers
from peft import PeftConfig, get_peft_model
from peft.tuners.lora import LoraLayer
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

OUT = os.path.join(os.path.dirname(__file__), '..', '..', 'test', 'goldens', 'peft', 'peft_scales.json')


def tiny(family):
    torch.manual_seed(0)
    if family == 'gpt2':
        return GPT2LMHeadModel(GPT2Config(vocab_size=37, n_layer=2, n_embd=12, n_head=3, n_inner=20, n_positions=16))
    return LlamaForCausalLM(LlamaConfig(vocab_size=41, num_hidden_layers=2, hidden_size=12, num_attention_heads=4,
                                        num_key_value_heads=2, head_dim=4, intermediate_size=18, max_position_embeddings=16))


CONFIGS = [
    ('missing lora_alpha means 8', 'llama', {'peft_type': 'LORA', 'r': 4, 'target_modules': ['q_proj', 'v_proj']}),
    ('missing r and lora_alpha mean 8 and 8', 'llama', {'peft_type': 'LORA', 'target_modules': ['k_proj']}),
    ('regex pattern keys, first match wins, unmatched key ignored', 'llama', {
        'peft_type': 'LORA', 'r': 4, 'lora_alpha': 8, 'target_modules': ['q_proj', 'v_proj', 'down_proj', 'o_proj'],
        'rank_pattern': {'layers\\.1\\.self_attn\\.q_proj': 2, 'down_proj': 6, 'nothing_matches_this': 7, 'o_proj|v_proj': 3},
        'alpha_pattern': {'model\\.layers\\.0\\..*': 3, 'v_pr.j': 5, 'proj': 11, 'self_attn\\.[qo]_proj': 12},
    }),
    ('rsLoRA with a rank pattern', 'gpt2', {
        'peft_type': 'LORA', 'r': 4, 'lora_alpha': 8, 'use_rslora': True, 'fan_in_fan_out': True,
        'target_modules': ['c_attn', 'c_fc'], 'rank_pattern': {'h\\.1\\.mlp\\.c_fc': 2},
    }),
    ('target_modules as a regex string', 'llama', {'peft_type': 'LORA', 'r': 2, 'lora_alpha': 4, 'target_modules': '.*\\.1\\.self_attn\\.(q|v)_proj'}),
    ('layers_to_transform', 'gpt2', {'peft_type': 'LORA', 'r': 2, 'lora_alpha': 3, 'fan_in_fan_out': True, 'target_modules': ['c_attn', 'attn.c_proj'], 'layers_to_transform': [0]}),
    ('all-linear minus exclude_modules', 'llama', {'peft_type': 'LORA', 'r': 2, 'lora_alpha': 2, 'target_modules': 'all-linear', 'exclude_modules': ['down_proj', 'gate_proj']}),
    ('default target modules (gpt2: c_attn)', 'gpt2', {'peft_type': 'LORA', 'r': 2, 'lora_alpha': 5, 'fan_in_fan_out': True}),
]


# Adapters saved by PEFT itself (save_pretrained), with random lora_B (init_lora_weights=False) so
# the update is not zero, and PEFT's own update per module (get_delta_weight, as [out, in]).
SAVED = [
    ('saved-llama', 'llama', dict(r=2, lora_alpha=5, target_modules=['q_proj', 'v_proj', 'down_proj'], rank_pattern={'down_proj': 3}, init_lora_weights=False)),
    ('saved-gpt2', 'gpt2', dict(r=2, lora_alpha=3, target_modules=['c_attn', 'mlp.c_proj'], fan_in_fan_out=True, use_rslora=True, init_lora_weights=False)),
]


def save_adapter(name, family, kwargs):
    from peft import LoraConfig
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        model = get_peft_model(tiny(family), LoraConfig(task_type='CAUSAL_LM', **kwargs))
    folder = os.path.join(os.path.dirname(OUT), name)
    model.save_pretrained(folder)
    deltas = {}
    for mname, m in model.named_modules():
        if isinstance(m, LoraLayer) and 'default' in m.r:
            d = m.get_delta_weight('default').detach().double()
            if getattr(m, 'fan_in_fan_out', False):
                d = d.T  # Conv1D keeps [in, out]; ours is [out, in]
            deltas[mname.removeprefix('base_model.model.')] = {'shape': list(d.shape), 'data': [round(x, 9) for x in d.flatten().tolist()]}
    with open(os.path.join(folder, 'peft_deltas.json'), 'w') as f:
        json.dump(deltas, f)
        f.write('\n')
    for extra in ('README.md',):
        if os.path.exists(os.path.join(folder, extra)):
            os.remove(os.path.join(folder, extra))
    print(name, sorted(os.listdir(folder)))


def peft_modules(family, ac):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, 'adapter_config.json'), 'w') as f:
            json.dump(ac, f)
        config = PeftConfig.from_pretrained(d)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        model = get_peft_model(tiny(family), config)
    out = {}
    for name, m in model.named_modules():
        if isinstance(m, LoraLayer) and 'default' in m.r:
            out[name.removeprefix('base_model.model.')] = {'r': m.r['default'], 'scale': float(m.scaling['default'])}
    warns = sorted(str(w.message).splitlines()[0] for w in caught if 'did not match' in str(w.message))
    return out, warns


if __name__ == '__main__':
    result = {'peft': peft.__version__, 'transformers': transformers.__version__, 'configs': []}
    for label, family, ac in CONFIGS:
        modules, warns = peft_modules(family, ac)
        result['configs'].append({'label': label, 'family': family, 'adapterConfig': ac, 'modules': modules, 'peftWarnings': warns})
        print(label, json.dumps(modules))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    for name, family, kwargs in SAVED:
        save_adapter(name, family, kwargs)
    with open(OUT, 'w') as f:
        json.dump(result, f, indent=1, sort_keys=False)
        f.write('\n')
