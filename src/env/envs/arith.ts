/**
 * The calculator tool's arithmetic: a small recursive-descent parser and evaluator for
 * + - * / ( ) and unary minus/plus over decimal numbers — never eval or Function.
 *
 * Grammar (usual precedence, left-associative binary operators):
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '×' | '/' | '÷') unary)*
 *   unary   := ('-' | '+') unary | primary
 *   primary := NUMBER | '(' expr ')'          NUMBER := digits ['.' digits] | '.' digits
 *
 * Every failure is an ArithmeticError (syntax, division by zero, a non-finite result, input over
 * MAX_EXPRESSION_LENGTH characters or nested over MAX_DEPTH levels) with the character position.
 * Departure from a textbook evaluator: the length and depth limits keep a hostile agent from
 * exhausting the stack, and results are f64 like JavaScript's own arithmetic.
 */
import { ArithmeticError } from '../errors.ts';

export const MAX_EXPRESSION_LENGTH = 256;
export const MAX_DEPTH = 64;

class Parser {
  readonly src: string;
  pos = 0;
  depth = 0;
  constructor(src: string) {
    this.src = src;
  }

  fail(kind: ArithmeticError['kind'], message: string, at = this.pos): never {
    throw new ArithmeticError(kind, message, at);
  }

  skipSpace(): void {
    while (this.pos < this.src.length && /\s/.test(this.src[this.pos])) this.pos++;
  }

  peek(): string {
    this.skipSpace();
    return this.pos < this.src.length ? this.src[this.pos] : '';
  }

  describe(): string {
    const c = this.peek();
    return c === '' ? 'the end of the expression' : `'${c}'`;
  }

  /** Within MAX_EXPRESSION_LENGTH nothing overflows f64 (there is no exponent operator); this
   * guard keeps the contract if the limits ever grow. */
  checked(x: number, at: number): number {
    if (!Number.isFinite(x)) this.fail('non_finite', 'result is not a finite number', at);
    return x;
  }

  expr(): number {
    let value = this.term();
    for (let op = this.peek(); op === '+' || op === '-'; op = this.peek()) {
      const at = this.pos++;
      const rhs = this.term();
      value = this.checked(op === '+' ? value + rhs : value - rhs, at);
    }
    return value;
  }

  term(): number {
    let value = this.unary();
    for (let op = this.peek(); op === '*' || op === '×' || op === '/' || op === '÷'; op = this.peek()) {
      const at = this.pos++;
      const rhs = this.unary();
      if (op === '*' || op === '×') value = this.checked(value * rhs, at);
      else {
        if (rhs === 0) this.fail('division_by_zero', 'division by zero', at);
        value = this.checked(value / rhs, at);
      }
    }
    return value;
  }

  unary(): number {
    const c = this.peek();
    if (c === '-' || c === '+') {
      if (++this.depth > MAX_DEPTH) this.fail('too_deep', `nested deeper than ${MAX_DEPTH} levels`);
      this.pos++;
      const v = this.unary();
      this.depth--;
      return c === '-' ? -v : v;
    }
    return this.primary();
  }

  primary(): number {
    const c = this.peek();
    if (c === '(') {
      if (++this.depth > MAX_DEPTH) this.fail('too_deep', `nested deeper than ${MAX_DEPTH} levels`);
      const open = this.pos++;
      const v = this.expr();
      if (this.peek() !== ')') this.fail('syntax', `expected ')' to close the '(' at ${open}, found ${this.describe()}`);
      this.pos++;
      this.depth--;
      return v;
    }
    const m = /^(?:\d+(?:\.\d+)?|\.\d+)/.exec(this.src.slice(this.pos));
    if (m === null) this.fail('syntax', `expected a number or '(', found ${this.describe()}`);
    this.pos += m[0].length;
    if (this.pos < this.src.length && /[\d.]/.test(this.src[this.pos])) this.fail('syntax', `malformed number '${m[0]}${this.src[this.pos]}'`);
    return Number(m[0]);
  }
}

/** Evaluates an arithmetic expression; throws ArithmeticError (only) on bad input. */
export function evaluateArithmetic(src: string): number {
  if (typeof src !== 'string') throw new ArithmeticError('syntax', `expected a string, got ${typeof src}`, 0);
  if (src.length > MAX_EXPRESSION_LENGTH) throw new ArithmeticError('too_long', `expression is ${src.length} characters, over ${MAX_EXPRESSION_LENGTH}`, MAX_EXPRESSION_LENGTH);
  const p = new Parser(src);
  if (p.peek() === '') p.fail('syntax', 'empty expression');
  const v = p.expr();
  if (p.peek() !== '') p.fail('syntax', `unexpected ${p.describe()} after a complete expression`);
  return v === 0 ? 0 : v; // no -0 in results
}

/** A result as the tool prints it: integers exactly, others to 12 significant digits. */
export function formatNumber(x: number): string {
  if (Number.isInteger(x)) return String(x === 0 ? 0 : x);
  return String(Number(x.toPrecision(12)));
}
