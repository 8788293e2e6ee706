// Agents on real chat templates (Qwen3, Llama 3.2 Instruct, Gemma 3 via hfChatFormat): a tool
// call in the family's native syntax and its result make exactly the token sequence transformers
// renders for that conversation (test/fixtures/chat_templates/renders.json); BOS appears once;
// Qwen3's think blocks do not break turn diffing; Gemma's tool results go in a user turn.
import { beforeAll, describe, expect, it } from 'vitest';
import { Agent, generationEosIds } from '../../src/env/agent.ts';
import { hfChatFormat } from '../../src/env/chat_template.ts';
import { calculatorTool } from '../../src/env/envs/calculator.ts';
import { InvalidInputError } from '../../src/env/errors.ts';
import { chatFormat } from '../../src/env/format.ts';
import { rolloutGroups, rolloutMultiTurn } from '../../src/env/rollout.ts';
import { hermesToolSyntax, llamaToolSyntax, tagToolSyntax } from '../../src/env/tool_calls.ts';
import type { EnvSpec, SampleFn, StepResult } from '../../src/env/types.ts';
import { extractAnswer } from '../../src/env/actions.ts';
import { encodePair } from '../../src/algorithms/sft.ts';
import { type Family, realTokenizer, renderCase } from '../shared/real_tokenizers.ts';

const SYS = 'You are a careful assistant.';

beforeAll(() => {
  for (const f of ['qwen3', 'llama3_2', 'gemma3'] as Family[]) realTokenizer(f);
}, 120_000);

/** Asks 37*48 and offers the calculator; the answer ends the episode. */
const multiplyEnv: EnvSpec = {
  name: 'multiply',
  create: () => ({
    name: 'multiply',
    tools: [calculatorTool()],
    reset: async () => 'What is 37*48?',
    step: async (action: string): Promise<StepResult> => ({ observation: 'ok', reward: extractAnswer(action) === '1776' ? 1 : 0, done: true }),
  }),
};

/** Plays `actions` in order (each encoded, with `eos` appended when given). */
function scripted(family: Family, actions: readonly { text: string; eos?: number }[]): SampleFn {
  const tok = realTokenizer(family);
  let k = 0;
  return async (requests) => requests.map(() => {
    const a = actions[k++];
    const tokens = [...tok.encode(a.text), ...(a.eos !== undefined ? [a.eos] : [])];
    return { tokens, logprobs: tokens.map(() => -0.25) };
  });
}

async function runCalculator(agent: Agent) {
  const batch = await rolloutMultiTurn(multiplyEnv, agent, [{ seed: 1, groupId: 0 }], { seed: 0 });
  const t = batch.groups[0].trajectories[0];
  expect(t.turns.map((x) => x.kind)).toEqual(['tool', 'env']);
  expect(t.turns[0].observation).toBe('1776');
  expect(t.turns[0].info).toEqual({ tool: 'calculator', args: '37*48' });
  expect(t.reward).toBe(1);
  // Everything up to the second action is what transformers renders for the conversation so far.
  const second = t.turns[1].actionStart;
  return { t, head: t.tokensT.slice(0, second) };
}

describe('native tool calls through real chat templates', () => {
  it('Qwen3: <tool_call> JSON, a tool message, the rendered tokens exactly', async () => {
    const tok = realTokenizer('qwen3');
    const format = hfChatFormat(tok, { system: SYS });
    expect(format.toolSyntax).toBe(hermesToolSyntax);
    const agent = new Agent({ sample: scripted('qwen3', [
      { text: '<tool_call>\n{"name": "calculator", "arguments": {"expression": "37*48"}}\n</tool_call>' }, // stops at the stop string
      { text: '<answer>1776</answer>', eos: tok.eosId },
    ]), tokenizer: tok, format, eosTokenIds: generationEosIds({ eos_token_id: [151645, 151643] }) });
    expect(agent.addBos).toBe(false);
    expect(agent.stopStrings).toContain('</tool_call>');
    expect(agent.stopTokens).toEqual([151645, 151643]);
    const { head } = await runCalculator(agent);
    expect(head).toEqual(renderCase('qwen3', 'tool_result').ids);
  });

  it('Llama 3.2: JSON {"name", "parameters"} reply, an ipython message, one BOS', async () => {
    const tok = realTokenizer('llama3_2');
    const format = hfChatFormat(tok, { system: SYS, variables: { date_string: '26 Jul 2024' } });
    expect(format.rendersBos).toBe(true);
    expect(format.toolSyntax).toBe(llamaToolSyntax);
    const eot = tok.tokenToId('<|eot_id|>') as number;
    const agent = new Agent({ sample: scripted('llama3_2', [
      { text: '{"name": "calculator", "parameters": {"expression": "37*48"}}', eos: eot },
      { text: '<answer>1776</answer>', eos: eot },
    ]), tokenizer: tok, format, eosTokenIds: generationEosIds({ eos_token_id: [128001, 128008, 128009] }) });
    expect(agent.addBos).toBe(false); // the template writes <|begin_of_text|>
    const { t, head } = await runCalculator(agent);
    expect(head).toEqual(renderCase('llama3_2', 'tool_result').ids);
    expect(t.tokensT.filter((id) => id === 128000)).toEqual([128000]);
  });

  it('Gemma 3: no tool role, so the result is a user turn with a tool_output block; one BOS', async () => {
    const tok = realTokenizer('gemma3');
    const format = hfChatFormat(tok, { system: SYS, toolSyntax: tagToolSyntax });
    expect(format.rendersBos).toBe(true);
    const agent = new Agent({ sample: scripted('gemma3', [
      { text: '<tool>calculator: 37*48</tool>' },
      { text: '<answer>1776</answer>', eos: tok.eosId },
    ]), tokenizer: tok, format });
    // The prompt lists the tools in the user turn (the template declares none); compare from the call on.
    const { t, head } = await runCalculator(agent);
    const expected = renderCase('gemma3', 'tool_result_as_user');
    const callAt = t.turns[0].actionStart;
    const tail = head.slice(callAt);
    expect(tail).toEqual(expected.ids.slice(expected.ids.length - tail.length));
    expect(tok.decode(tail)).toBe('<tool>calculator: 37*48</tool>\nuser\n```tool_output\n1776\n```\nmodel\n'); // specials dropped
    expect(t.tokensT.filter((id) => id === 2)).toEqual([2]);
    expect(t.tokensT[0]).toBe(2);
  });
});

describe('turn diffing and BOS', () => {
  it('Qwen3: the history is no prefix of the longer conversation, yet the new turn is the text after the action', () => {
    const tok = realTokenizer('qwen3');
    const before = renderCase('qwen3', 'think_history');
    const after = renderCase('qwen3', 'think_history_next');
    expect(after.text.startsWith(before.text)).toBe(false); // the prefix rule the old chatFormat needed
    const action = before.messages[before.messages.length - 1].content;
    const format = hfChatFormat(tok, { enableThinking: false });
    const history = before.messages.map((m) => ({ role: m.role as 'user', content: m.content }));
    const delta = format.observation('Wrong.', { history, endedWithStopToken: true });
    // The sampled <|im_end|> is already in the sequence: the new turn starts right after it.
    const answer = '<answer>4</answer><|im_end|>';
    expect(delta).toBe(after.text.slice(after.text.lastIndexOf(answer) + answer.length));
    expect(action.endsWith('<answer>4</answer>')).toBe(true);
    expect(delta.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
  });

  it('Qwen3 enable_thinking: false writes the empty think block after the generation prompt, true does not', () => {
    const tok = realTokenizer('qwen3');
    const off = hfChatFormat(tok, { system: SYS, enableThinking: false }).initial('Hi!', []);
    const on = hfChatFormat(tok, { system: SYS, enableThinking: true }).initial('Hi!', []);
    expect(off).toBe(`${on}<think>\n\n</think>\n\n`);
    expect(on.endsWith('<|im_start|>assistant\n')).toBe(true);
  });

  it('never two BOS: a BOS-rendering format gets none from the agent; explicit addBos there is refused', async () => {
    const tok = realTokenizer('llama3_2');
    const format = hfChatFormat(tok, { variables: { date_string: '26 Jul 2024' } });
    const sample: SampleFn = async (rs) => rs.map(() => ({ tokens: [128009], logprobs: [-1] }));
    expect(() => new Agent({ sample, tokenizer: tok, format, addBos: true })).toThrow(InvalidInputError);
    // A format that does not say it renders BOS: the agent sees it in the encoded prompt.
    const silent = chatFormat({ render: (m, o) => tok.applyChatTemplate(m.map((x) => ({ role: x.role, content: x.content })), { addGenerationPrompt: o.addGenerationPrompt }) });
    const agent = new Agent({ sample, tokenizer: tok, format: silent });
    const batch = await rolloutMultiTurn(multiplyEnv, agent, [{ seed: 1, groupId: 0 }], { seed: 0 });
    const t = batch.groups[0].trajectories[0];
    expect(t.tokensT.filter((id) => id === 128000)).toEqual([128000]);
    expect(t.tokensT[0]).toBe(128000);
    await expect(rolloutMultiTurn(multiplyEnv, new Agent({ sample, tokenizer: tok, format: silent, addBos: true }), [{ seed: 1, groupId: 0 }], { seed: 0 }))
      .rejects.toThrow(/already starts with BOS/);
    // A plain prompt still gets its BOS.
    const plain = await rolloutMultiTurn(multiplyEnv, new Agent({ sample, tokenizer: tok }), [{ seed: 1, groupId: 0 }], { seed: 0 });
    expect(plain.groups[0].trajectories[0].tokensT[0]).toBe(128000);
  });

  it('tool results go where each template takes them', () => {
    const probe = (family: Family) => {
      const f = hfChatFormat(realTokenizer(family), { variables: { date_string: '26 Jul 2024' } });
      const history = [{ role: 'user' as const, content: 'Q' }, { role: 'assistant' as const, content: 'A' }];
      return f.toolResult('calculator', '42', { history, endedWithStopToken: true });
    };
    expect(probe('qwen3')).toBe('\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n');
    expect(probe('llama3_2')).toBe('<|start_header_id|>ipython<|end_header_id|>\n\n"42"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n');
    expect(probe('gemma3')).toBe('\n<start_of_turn>user\n```tool_output\n42\n```<end_of_turn>\n<start_of_turn>model\n');
  });
});

describe('generation_config eos ids', () => {
  it('reads eos_token_id as one id or a list; absent is none; anything else is refused', () => {
    expect(generationEosIds({ eos_token_id: 151645 })).toEqual([151645]);
    expect(generationEosIds({ eos_token_id: [128001, 128008, 128009] })).toEqual([128001, 128008, 128009]);
    expect(generationEosIds({})).toEqual([]);
    expect(generationEosIds(null)).toEqual([]);
    expect(() => generationEosIds({ eos_token_id: ['x'] })).toThrow(InvalidInputError);
  });
  it('the agent stops at them besides the tokenizer eos, once each; ids outside the vocabulary are refused', () => {
    const tok = realTokenizer('qwen3');
    const sample: SampleFn = async () => [];
    expect(new Agent({ sample, tokenizer: tok, eosTokenIds: [151645, 151643] }).stopTokens).toEqual([151645, 151643]);
    expect(() => new Agent({ sample, tokenizer: tok, eosTokenIds: [151935] })).toThrow(/eosTokenIds/);
    // An explicit stopTokens list wins.
    expect(new Agent({ sample, tokenizer: tok, stopTokens: [7], eosTokenIds: [151643] }).stopTokens).toEqual([7]);
  });
  it('allowedTokens: kept sorted once each and sent with every request; ids outside the vocabulary or an empty list refused', async () => {
    const tok = realTokenizer('qwen3');
    const seen: (readonly number[] | undefined)[] = [];
    const sample: SampleFn = async (reqs) => reqs.map((r) => {
      seen.push(r.allowedTokens);
      return { tokens: [r.allowedTokens![0]], logprobs: [-0.5] };
    });
    const agent = new Agent({ sample, tokenizer: tok, maxNewTokens: 1, allowedTokens: [9, 3, 9, 151668] });
    expect(agent.allowedTokens).toEqual([3, 9, 151668]);
    const spec: EnvSpec = { name: 'one', create: () => ({ name: 'one', reset: async () => 'go', step: async () => ({ observation: '', reward: 1, done: true }) }) };
    await rolloutGroups(spec, agent, { groups: 1, groupSize: 2, seed: 1 });
    expect(seen).toEqual([[3, 9, 151668], [3, 9, 151668]]);
    expect(new Agent({ sample, tokenizer: tok }).allowedTokens).toBeUndefined();
    for (const bad of [[], [151936], [-1], [2.5]]) expect(() => new Agent({ sample, tokenizer: tok, allowedTokens: bad })).toThrow(/allowedTokens/);
  });
});

describe('SFT pairs on a chat template', () => {
  it('encodePair adds BOS only when the rendered prompt lacks it; an explicit addBos on such a prompt is refused', () => {
    const tok = realTokenizer('llama3_2');
    const prompt = renderCase('llama3_2', 'one_user_gen').text; // starts with <|begin_of_text|>
    const { tokensL, maskL } = encodePair(tok, prompt, 'Hello.');
    expect(tokensL.filter((id) => id === 128000)).toEqual([128000]);
    expect(tokensL[0]).toBe(128000);
    expect(tokensL.slice(0, renderCase('llama3_2', 'one_user_gen').ids.length)).toEqual(renderCase('llama3_2', 'one_user_gen').ids);
    expect(maskL.filter((m) => m === 1).length).toBe(tok.encode('Hello.').length + 1); // completion and eos
    expect(() => encodePair(tok, prompt, 'Hello.', { addBos: true })).toThrow(InvalidInputError);
    expect(encodePair(tok, 'plain text', 'x').tokensL[0]).toBe(128000);
  });
});
