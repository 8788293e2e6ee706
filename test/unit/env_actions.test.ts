import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { extractAnswer, formatAnswer, formatToolCall, parseAction } from '../../src/env/actions.ts';

describe('tool-call syntax', () => {
  it('parses a tool call with name and trimmed args', () => {
    expect(parseAction('<tool>calculator: 12*7</tool>')).toEqual({ kind: 'tool', name: 'calculator', args: '12*7' });
    expect(parseAction('let me see <tool> calculator :  (1+2) </tool> ok')).toEqual({ kind: 'tool', name: 'calculator', args: '(1+2)' });
    expect(parseAction('<tool>clock</tool>')).toEqual({ kind: 'tool', name: 'clock', args: '' });
  });
  it('keeps everything after the first colon as args', () => {
    expect(parseAction('<tool>search: a: b</tool>')).toEqual({ kind: 'tool', name: 'search', args: 'a: b' });
  });
  it('treats incomplete tags, bad names and plain text as text', () => {
    for (const t of ['<tool>calculator: 12*7', 'calculator: 12*7</tool>', '<tool>12: 3</tool>', '<tool>a b: 1</tool>', '84', '']) {
      expect(parseAction(t)).toEqual({ kind: 'text', text: t });
    }
  });
  it('an answer closed before the tool call makes the action an answer', () => {
    const t = '<answer>5</answer><tool>calculator: 1</tool>';
    expect(parseAction(t)).toEqual({ kind: 'text', text: t });
    expect(parseAction('<tool>calculator: 1</tool><answer>5</answer>').kind).toBe('tool');
  });
  it('extracts the first complete answer, trimmed', () => {
    expect(extractAnswer('so <answer> 84 </answer>')).toBe('84');
    expect(extractAnswer('<answer>1</answer><answer>2</answer>')).toBe('1');
    expect(extractAnswer('<answer>84')).toBeNull();
    expect(extractAnswer('84')).toBeNull();
  });
  it('formats what it parses', () => {
    expect(parseAction(formatToolCall('calculator', '3*4'))).toEqual({ kind: 'tool', name: 'calculator', args: '3*4' });
    expect(extractAnswer(formatAnswer('12'))).toBe('12');
  });
  it('never throws on arbitrary text (fast-check)', () => {
    const pieces = fc.constantFrom('<tool>', '</tool>', '<answer>', '</answer>', ':', 'calc', ' ', 'x1', '7*8');
    fc.assert(
      fc.property(fc.array(fc.oneof(pieces, fc.string()), { maxLength: 12 }), (parts) => {
        const text = parts.join('');
        const p = parseAction(text);
        extractAnswer(text);
        return p.kind === 'text' ? p.text === text : /^[A-Za-z][A-Za-z0-9_-]*$/.test(p.name);
      }),
    );
  });
});
