// Chat templates of real tokenizers (Qwen3, Llama 3.2 Instruct, Gemma 3) rendered by
// HfTokenizer.applyChatTemplate (@huggingface/jinja) and encoded, against transformers'
// apply_chat_template on the same files (test/fixtures/chat_templates/renders.json, from gen.py).
// Special-token ids are also checked against published values: <|im_start|> 151644,
// <|im_end|> 151645, <tool_call> 151657 (Qwen2.5/3); <|begin_of_text|> 128000, <|start_header_id|>
// 128006, <|end_header_id|> 128007, <|eot_id|> 128009 (Llama 3); <bos> 2, <start_of_turn> 105,
// <end_of_turn> 106 (Gemma 3).
import { beforeAll, describe, expect, it } from 'vitest';
import { type Family, RENDERS, realTokenizer, renderCase } from '../shared/real_tokenizers.ts';

const FAMILIES: Family[] = ['qwen3', 'llama3_2', 'gemma3'];

// Parsing the three files takes seconds (Gemma's tokenizer.json is 33 MB): once, up front.
beforeAll(() => {
  for (const f of FAMILIES) realTokenizer(f);
}, 120_000);

describe('published special-token ids', () => {
  it.each([
    ['qwen3', '<|im_start|>', 151644], ['qwen3', '<|im_end|>', 151645], ['qwen3', '<tool_call>', 151657], ['qwen3', '</tool_call>', 151658],
    ['llama3_2', '<|begin_of_text|>', 128000], ['llama3_2', '<|end_of_text|>', 128001], ['llama3_2', '<|start_header_id|>', 128006],
    ['llama3_2', '<|end_header_id|>', 128007], ['llama3_2', '<|eot_id|>', 128009],
    ['gemma3', '<bos>', 2], ['gemma3', '<start_of_turn>', 105], ['gemma3', '<end_of_turn>', 106],
  ] as [Family, string, number][])('%s %s = %d', (family, token, id) => {
    const tok = realTokenizer(family);
    expect(tok.tokenToId(token)).toBe(id);
    expect(tok.encode(token)).toEqual([id]);
  });

  it('bos/eos from tokenizer_config.json', () => {
    expect(realTokenizer('qwen3').bosId).toBeUndefined();
    expect(realTokenizer('qwen3').eosId).toBe(151645);
    expect(realTokenizer('llama3_2').bosId).toBe(128000);
    expect(realTokenizer('llama3_2').eosId).toBe(128009);
    expect(realTokenizer('gemma3').bosId).toBe(2);
    expect(realTokenizer('gemma3').eosId).toBe(106);
  });
});

describe.each(FAMILIES)('%s chat template vs transformers', (family) => {
  it.each(RENDERS[family].cases.map((c) => [c.name]))('%s: same text and ids', (name) => {
    const c = renderCase(family, name);
    const tok = realTokenizer(family);
    const { add_generation_prompt, tools, ...variables } = c.kwargs;
    const text = tok.applyChatTemplate(c.messages, { addGenerationPrompt: add_generation_prompt, ...(tools ? { tools } : {}), variables });
    expect(text).toBe(c.text);
    expect(tok.encode(text)).toEqual(c.ids);
    // Exactly one BOS where the family has one: the template renders it, encode adds none.
    const bos = tok.bosId;
    if (bos !== undefined) expect(c.ids.filter((id) => id === bos)).toEqual([bos]);
  });
});
