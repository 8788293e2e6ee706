import { describe, expect, it } from 'vitest';
import { Agent } from '../../src/env/agent.ts';
import { chatFormat, type ChatTemplateFn, plainFormat } from '../../src/env/format.ts';
import { rolloutMultiTurn } from '../../src/env/rollout.ts';
import type { ChatMessage, SampleFn } from '../../src/env/types.ts';
import { isPlainData } from '../../src/util/freeze.ts';
import { scriptedEnv, tok } from './env_fakes.ts';

// A ChatML-like template, as @huggingface/jinja would render it.
const chatml: ChatTemplateFn = (messages, { addGenerationPrompt }) =>
  messages.map((m) => `<|${m.role}|>${m.content}<|end|>\n`).join('') + (addGenerationPrompt ? '<|assistant|>' : '');

describe('prompt formats', () => {
  it('plain: system line, tools, task; observations and tool results on their own lines', () => {
    const f = plainFormat({ system: 'Be brief.' });
    const tools = [{ name: 'calculator', description: 'does math', call: () => '' }];
    expect(f.initial('What is 2+2?', tools)).toBe('Be brief.\nTools:\n- calculator: does math\nCall a tool with <tool>name: input</tool>.\nWhat is 2+2?\n');
    expect(plainFormat().initial('Q', [])).toBe('Q\n');
    expect(plainFormat({ describeTools: false }).initial('What is 2+2?', tools)).toBe('What is 2+2?\n');
    const ctx = { history: [], endedWithStopToken: false };
    expect(f.observation('Higher.', ctx)).toBe('\nHigher.\n');
    expect(f.toolResult('calculator', '4', ctx)).toBe('\n<result>4</result>\n');
  });

  it('chat: appends exactly the text the template adds for the next message', () => {
    const f = chatFormat({ render: chatml, system: 'sys', endOfTurn: '<|end|>' });
    expect(f.initial('Q', [])).toBe('<|system|>sys<|end|>\n<|user|>Q<|end|>\n<|assistant|>');
    const history: ChatMessage[] = [{ role: 'user', content: 'Q' }, { role: 'assistant', content: 'A' }];
    expect(f.observation('O', { history, endedWithStopToken: false })).toBe('<|end|>\n<|user|>O<|end|>\n<|assistant|>');
    expect(f.observation('O', { history, endedWithStopToken: true })).toBe('\n<|user|>O<|end|>\n<|assistant|>');
    expect(f.toolResult('calc', '4', { history, endedWithStopToken: false })).toBe('<|end|>\n<|tool|>4<|end|>\n<|assistant|>');
  });

  it('chat: the whole rollout sequence equals the template rendering of the conversation', async () => {
    // The history the format receives starts with the messages the initial prompt rendered (system included).
    const f = chatFormat({ render: chatml, system: 'S' });
    const sample: SampleFn = async (rs) => rs.map(() => ({ tokens: tok.encode('A'), logprobs: [-1] }));
    const env = scriptedEnv([{ observation: 'O1', reward: 0, done: false }, { observation: 'end', reward: 1, done: true }]);
    const batch = await rolloutMultiTurn({ name: 's', create: () => env }, new Agent({ sample, tokenizer: tok, format: f, addBos: false }), [{ seed: 1, groupId: 0 }], { seed: 0 });
    const t = batch.groups[0].trajectories[0];
    const convo: ChatMessage[] = [{ role: 'system', content: 'S' }, { role: 'user', content: 'task 1' }, { role: 'assistant', content: 'A' }, { role: 'user', content: 'O1' }];
    expect(tok.decode(t.tokensT)).toBe(chatml(convo, { addGenerationPrompt: true }) + 'A');
  });

  it('chat: takes the text after the last assistant content, however earlier turns re-render', () => {
    // Like Qwen3: the final assistant turn gets a think block, earlier ones do not — no prefix rule holds.
    const thinkLast: ChatTemplateFn = (messages, { addGenerationPrompt }) =>
      messages.map((m, i) => `<|${m.role}|>${m.role === 'assistant' && i === messages.length - 1 ? '<think></think>' : ''}${m.content}<|end|>\n`).join('') +
      (addGenerationPrompt ? '<|assistant|>' : '');
    const history: ChatMessage[] = [{ role: 'user', content: 'Q' }, { role: 'assistant', content: 'A' }];
    expect(chatFormat({ render: thinkLast }).observation('O', { history, endedWithStopToken: false })).toBe('<|end|>\n<|user|>O<|end|>\n<|assistant|>');
  });

  it('chat: rejects templates that drop or repeat the assistant content, and histories not ending with an action', () => {
    const history: ChatMessage[] = [{ role: 'user', content: 'Q' }, { role: 'assistant', content: 'A' }];
    const drops: ChatTemplateFn = (messages) => messages.filter((m) => m.role !== 'assistant').map((m) => m.content).join('|');
    const twice: ChatTemplateFn = (messages) => messages.map((m) => (m.role === 'assistant' ? m.content + m.content : m.content)).join('|');
    expect(() => chatFormat({ render: drops }).observation('O', { history, endedWithStopToken: false })).toThrow(/verbatim/);
    expect(() => chatFormat({ render: twice }).observation('O', { history, endedWithStopToken: false })).toThrow(/twice/);
    expect(() => chatFormat({ render: chatml }).observation('O', { history: [history[0]], endedWithStopToken: false })).toThrow(/must end with the assistant action/);
  });

  it('chat: tool results as user turns for templates without a tool role', () => {
    const f = chatFormat({ render: chatml, toolResults: 'user' });
    const history: ChatMessage[] = [{ role: 'user', content: 'Q' }, { role: 'assistant', content: 'A' }];
    expect(f.toolResult('calc', '4', { history, endedWithStopToken: false })).toBe('<|end|>\n<|user|>```tool_output\n4\n```<|end|>\n<|assistant|>');
    // Earlier tool messages of the history reach the template as the same user turns.
    const seen: ChatMessage[][] = [];
    const spy: ChatTemplateFn = (messages, o) => (seen.push([...messages]), chatml(messages, o));
    const later: ChatMessage[] = [...history, { role: 'tool', content: '4', name: 'calc' }, { role: 'assistant', content: 'B' }];
    expect(chatFormat({ render: spy, toolResults: 'user', endOfTurn: '<|end|>' }).observation('O', { history: later, endedWithStopToken: true }))
      .toBe('\n<|user|>O<|end|>\n<|assistant|>');
    expect(seen[0].map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(seen[0][2].content).toBe('```tool_output\n4\n```');
  });
});

describe('plain-data checks', () => {
  it('accepts arrays, typed arrays and plain objects; rejects class instances, functions, maps and cycles', () => {
    expect(isPlainData({ a: [1, 'x', null, true], b: new Float32Array(2), c: { d: undefined } })).toBe(true);
    expect(isPlainData({ f: () => 1 })).toBe(false);
    expect(isPlainData(new Map())).toBe(false);
    expect(isPlainData({ r: new Agent({ sample: async () => [], tokenizer: tok }) })).toBe(false);
    const cyc: Record<string, unknown> = {};
    cyc.self = cyc;
    expect(isPlainData(cyc)).toBe(false);
    const shared = [1];
    expect(isPlainData({ a: shared, b: shared })).toBe(true);
  });
});
