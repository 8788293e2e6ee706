// The Hugging Face tokenizer adapter on a tiny byte-level BPE tokenizer.json written here (GPT-2's
// byte-to-unicode alphabet, five merges, three special tokens) and a ChatML chat template.
import { byteAlphabet } from '../shared/hub_twin.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HfTokenizer, loadHfTokenizer } from '../../src/model/tokenizer/hf.ts';
import { TokenizerError } from '../../src/model/tokenizer/tokenizer.ts';


const alphabet = byteAlphabet();
const vocab: Record<string, number> = {};
alphabet.forEach((ch, b) => (vocab[ch] = b)); // id of a byte = its value
const merges = ['h e', 'l l', 'he ll', 'hell o', 'Ġ w'];
for (const m of merges) vocab[m.replace(' ', '')] = Object.keys(vocab).length; // he 256, ll 257, hell 258, hello 259, Ġw 260
const special = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });

const tokenizerJson = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [special(261, '<|endoftext|>'), special(262, '<|im_start|>'), special(263, '<|im_end|>')],
  normalizer: null,
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '<|endoftext|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
    pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
    special_tokens: { '<|endoftext|>': { id: '<|endoftext|>', ids: [261], tokens: ['<|endoftext|>'] } },
  },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
};

const CHATML = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const tokenizerConfig = { eos_token: '<|im_end|>', pad_token: { content: '<|endoftext|>', special: true }, bos_token: null, chat_template: CHATML, clean_up_tokenization_spaces: false };

const tok = HfTokenizer.fromJSON(tokenizerJson, tokenizerConfig);
const b = (s: string) => [...new TextEncoder().encode(s)];

describe('HfTokenizer', () => {
  it('reads special ids and the vocabulary size from the two files', () => {
    expect(tok.vocabSize).toBe(264);
    expect(tok.eosId).toBe(263);
    expect(tok.padId).toBe(261);
    expect(tok.bosId).toBeUndefined();
    expect(tok.specialTokens).toEqual({ eos: '<|im_end|>', pad: '<|endoftext|>' });
    expect(tok.tokenToId('hello')).toBe(259);
    expect(tok.idToToken(260)).toBe('Ġw');
  });

  it('applies the merges on byte-level pre-tokens and adds no special tokens by default', () => {
    expect(tok.encode('hello world')).toEqual([259, 260, ...b('orld')]);
    expect(tok.encode('hell')).toEqual([258]);
    expect(tok.encode('she')).toEqual([...b('s'), 256]);
    expect(tok.encode('é\n')).toEqual([...b('é'), 10]);
    expect(tok.encode('')).toEqual([]);
    expect(tok.encodeWithSpecials('hello')).toEqual([261, 259]);
  });

  it('round-trips any text exactly (no clean-up of spaces before punctuation)', () => {
    for (const s of ["don't stop .", '  two  spaces\t', 'emoji 🎉 и 漢字', 'hello\n\nworld']) expect(tok.decode(tok.encode(s))).toBe(s);
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (s) => tok.decode(tok.encode(s)) === s), { numRuns: 300, seed: 1 });
  });

  it('decode drops special tokens and rejects ids outside the vocabulary', () => {
    expect(tok.decode([262, 259, 263])).toBe('hello');
    expect(tok.decode([])).toBe('');
    expect(() => tok.decode([264])).toThrow(TokenizerError);
    expect(() => tok.decode([1.5])).toThrow(TokenizerError);
    expect(() => tok.encode(3 as unknown as string)).toThrow(TokenizerError);
  });

  it('renders the chat template with add_generation_prompt; special-token text becomes single ids', () => {
    const messages = [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }];
    const text = tok.applyChatTemplate(messages);
    expect(text).toBe('<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n');
    expect(tok.applyChatTemplate(messages, { addGenerationPrompt: false })).toBe('<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n');
    const ids = tok.encodeChat(messages);
    expect(ids.filter((i) => i === 262)).toHaveLength(3);
    expect(ids.filter((i) => i === 263)).toHaveLength(2);
    const tail = [262, ...tok.encode('assistant\n')];
    expect(ids.slice(-tail.length)).toEqual(tail);
    expect(tok.decode(ids)).toBe('system\nbe brief\nuser\nhello\nassistant\n');
  });

  it('picks named templates, passes variables, and turns template failures into TokenizerError', () => {
    const named = HfTokenizer.fromJSON(tokenizerJson, {
      ...tokenizerConfig,
      chat_template: [
        { name: 'default', template: '{{ messages[0].content }}{{ eos_token }}' },
        { name: 'tool_use', template: '{{ tools | length }} tools, {{ greeting }}' },
        { name: 'strict', template: "{{ raise_exception('no system messages') }}" },
        { name: 'broken', template: '{% for %}' },
      ],
    });
    expect(named.applyChatTemplate([{ role: 'user', content: 'x' }])).toBe('x<|im_end|>');
    expect(named.applyChatTemplate([], { templateName: 'tool_use', tools: [{}, {}], variables: { greeting: 'hi' } })).toBe('2 tools, hi');
    expect(() => named.applyChatTemplate([], { templateName: 'strict' })).toThrow(/no system messages/);
    expect(() => named.applyChatTemplate([], { templateName: 'broken' })).toThrow(TokenizerError);
    expect(() => named.applyChatTemplate([], { templateName: 'absent' })).toThrow(TokenizerError);
    expect(() => HfTokenizer.fromJSON(tokenizerJson, { eos_token: '<|im_end|>' }).applyChatTemplate([])).toThrow(/no chat template/);
  });

  it('refuses configs without a usable eos token and broken tokenizer.json', () => {
    expect(() => HfTokenizer.fromJSON(tokenizerJson, {})).toThrow(/eos_token/);
    expect(() => HfTokenizer.fromJSON(tokenizerJson, { eos_token: '<|nope|>' })).toThrow(TokenizerError);
    expect(() => HfTokenizer.fromJSON({ version: '1.0' }, tokenizerConfig)).toThrow(TokenizerError);
    expect(() => HfTokenizer.fromJSON('{not json', tokenizerConfig)).toThrow(TokenizerError);
  });

  it('loads from bytes and from paths', async () => {
    const enc = new TextEncoder();
    const fromBytes = await loadHfTokenizer(enc.encode(JSON.stringify(tokenizerJson)), enc.encode(JSON.stringify(tokenizerConfig)));
    expect(fromBytes.encode('hello world')).toEqual(tok.encode('hello world'));
    const dir = mkdtempSync(join(tmpdir(), 'wt-tok-'));
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
    const fromPath = await loadHfTokenizer(join(dir, 'tokenizer.json'), join(dir, 'tokenizer_config.json'));
    expect(fromPath.eosId).toBe(263);
    await expect(loadHfTokenizer(join(dir, 'absent.json'))).rejects.toBeInstanceOf(TokenizerError);
  });
});
