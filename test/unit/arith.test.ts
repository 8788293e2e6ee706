import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { evaluateArithmetic, formatNumber, MAX_DEPTH, MAX_EXPRESSION_LENGTH } from '../../src/env/envs/arith.ts';
import { ArithmeticError } from '../../src/env/errors.ts';
import { WebtinkerError } from '../../src/errors.ts';

function errorOf(src: string): ArithmeticError {
  try {
    evaluateArithmetic(src);
  } catch (e) {
    if (e instanceof ArithmeticError) return e;
    throw e;
  }
  throw new Error(`"${src}" evaluated without error`);
}

describe('evaluateArithmetic', () => {
  it('respects precedence and left associativity', () => {
    expect(evaluateArithmetic('2+3*4')).toBe(14);
    expect(evaluateArithmetic('2*3+4')).toBe(10);
    expect(evaluateArithmetic('10-4-3')).toBe(3); // (10-4)-3, not 10-(4-3)=9
    expect(evaluateArithmetic('64/4/2')).toBe(8); // (64/4)/2
    expect(evaluateArithmetic('7-2*3+8/4')).toBe(3); // 7-6+2
  });
  it('handles parentheses, decimals, whitespace and × ÷', () => {
    expect(evaluateArithmetic('(2+3)*4')).toBe(20);
    expect(evaluateArithmetic(' ( ( 1 ) ) ')).toBe(1);
    expect(evaluateArithmetic('1.5*4')).toBe(6);
    expect(evaluateArithmetic('.5+.25')).toBe(0.75);
    expect(evaluateArithmetic('6×7÷2')).toBe(21);
    expect(evaluateArithmetic('37*48')).toBe(1776);
  });
  it('handles unary minus and plus, binding tighter than * and /', () => {
    expect(evaluateArithmetic('-3')).toBe(-3);
    expect(evaluateArithmetic('--3')).toBe(3);
    expect(evaluateArithmetic('3--2')).toBe(5);
    expect(evaluateArithmetic('-2*-3')).toBe(6);
    expect(evaluateArithmetic('-(2+3)*2')).toBe(-10);
    expect(evaluateArithmetic('+4-+1')).toBe(3);
    expect(Object.is(evaluateArithmetic('-0'), 0)).toBe(true); // no negative zero
  });
  it('reports division by zero at the operator', () => {
    const e = errorOf('1+6/(3-3)');
    expect(e.kind).toBe('division_by_zero');
    expect(e.position).toBe(3);
    expect(e.code).toBe('arithmetic-division-by-zero');
    expect(e).toBeInstanceOf(WebtinkerError);
  });
  it('gives clear syntax errors with positions', () => {
    expect(errorOf('').message).toMatch(/empty expression/);
    expect(errorOf('   ').kind).toBe('syntax');
    expect(errorOf('2+').message).toMatch(/expected a number or '\(', found the end of the expression/);
    const open = errorOf('(1+2');
    expect(open.message).toMatch(/expected '\)' to close the '\(' at 0/);
    expect(errorOf('1+2)').message).toMatch(/unexpected '\)' after a complete expression/);
    const letter = errorOf('3*x');
    expect([letter.kind, letter.position]).toEqual(['syntax', 2]);
    expect(errorOf('1.2.3').message).toMatch(/malformed number/);
    expect(errorOf('12 34').kind).toBe('syntax');
    expect(errorOf('alert(1)').kind).toBe('syntax');
    expect(errorOf('2**3').kind).toBe('syntax');
  });
  it('limits length, depth and magnitude', () => {
    expect(errorOf('1+'.repeat(MAX_EXPRESSION_LENGTH)).kind).toBe('too_long');
    expect(errorOf('('.repeat(MAX_DEPTH + 1) + '1' + ')'.repeat(MAX_DEPTH + 1)).kind).toBe('too_deep');
    expect(errorOf('-'.repeat(MAX_DEPTH + 1) + '1').kind).toBe('too_deep');
    expect(evaluateArithmetic('('.repeat(MAX_DEPTH) + '1' + ')'.repeat(MAX_DEPTH))).toBe(1);
    // Without an exponent operator, 256 characters cannot overflow f64: the non_finite check is a
    // guard for future limits, and the largest products stay finite.
    const big = '9'.repeat(127);
    expect(evaluateArithmetic(`${big}*${big}`)).toBeCloseTo(1e254, -240);
  });
  it('formats integers exactly and fractions to 12 significant digits', () => {
    expect(formatNumber(1776)).toBe('1776');
    expect(formatNumber(-0)).toBe('0');
    expect(formatNumber(1 / 3)).toBe('0.333333333333');
    expect(formatNumber(0.1 + 0.2)).toBe('0.3');
  });
});

// Reference: expression trees evaluated directly in JavaScript, printed with the fewest parentheses
// the grammar needs (plus random redundant ones), then parsed back.
type Node = { n: number } | { neg: Node } | { op: '+' | '-' | '*' | '/'; l: Node; r: Node } | { paren: Node };
const prec = (x: Node): number => ('op' in x ? (x.op === '+' || x.op === '-' ? 1 : 2) : 3);

function refEval(x: Node): number {
  if ('n' in x) return x.n;
  if ('neg' in x) return -refEval(x.neg);
  if ('paren' in x) return refEval(x.paren);
  const a = refEval(x.l);
  const b = refEval(x.r);
  if (x.op === '/' && b === 0) throw new RangeError('div0');
  return x.op === '+' ? a + b : x.op === '-' ? a - b : x.op === '*' ? a * b : a / b;
}

function print(x: Node): string {
  if ('n' in x) return String(x.n);
  if ('paren' in x) return `(${print(x.paren)})`;
  if ('neg' in x) return `-${prec(x.neg) < 3 ? `(${print(x.neg)})` : print(x.neg)}`;
  const p = prec(x);
  const l = prec(x.l) < p ? `(${print(x.l)})` : print(x.l);
  const r = prec(x.r) <= p ? `(${print(x.r)})` : print(x.r); // equal precedence on the right needs parentheses
  return `${l} ${x.op} ${r}`;
}

const { node } = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.integer({ min: 0, max: 999 }).map((n) => ({ n })),
    tie('node').map((x) => ({ neg: x })),
    tie('node').map((x) => ({ paren: x })),
    fc.record({ op: fc.constantFrom('+', '-', '*', '/'), l: tie('node'), r: tie('node') }) as fc.Arbitrary<Node>,
  ),
}));

describe('evaluateArithmetic fuzzing (fast-check)', () => {
  it('agrees with the reference evaluation of generated expressions', () => {
    fc.assert(
      fc.property(node, (tree) => {
        const src = print(tree);
        fc.pre(src.length <= MAX_EXPRESSION_LENGTH);
        let want: number | 'div0' | 'nonfinite';
        try {
          want = refEval(tree);
          if (!Number.isFinite(want)) want = 'nonfinite';
        } catch {
          want = 'div0';
        }
        if (want === 'div0') return errorOf(src).kind === 'division_by_zero';
        if (want === 'nonfinite') return errorOf(src).kind === 'non_finite';
        return Object.is(evaluateArithmetic(src), want === 0 ? 0 : want);
      }),
      { numRuns: 500 },
    );
  });
  it('never throws anything but ArithmeticError on arbitrary input', () => {
    const chars = fc.constantFrom(...'0123456789.+-*/()× ÷ x'.split(''));
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.array(chars, { maxLength: 40 }).map((a) => a.join(''))), (src) => {
        try {
          const v = evaluateArithmetic(src);
          return Number.isFinite(v);
        } catch (e) {
          return e instanceof ArithmeticError;
        }
      }),
      { numRuns: 2000 },
    );
  });
});
