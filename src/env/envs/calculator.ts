/**
 * `calculator`: arithmetic questions answered with a calculator tool and then an answer.
 *
 *   observation  "What is 37*48?"
 *   agent        <tool>calculator: 37*48</tool>        → protocol appends <result>1776</result>
 *   agent        <answer>1776</answer>                 → reward 1 − toolCost·(tool calls), done
 *
 * Difficulty is chosen for a small model trained from scratch: an `easyFraction` of tasks are
 * one-digit sums, differences and products it can learn by heart; the rest are products of a
 * 2–3-digit and a 2-digit number it cannot do in its head. Each tool call costs `toolCost`, so the
 * best policy answers easy tasks directly and calls the tool on hard ones; the demonstrations mix
 * tool calls and direct guesses on both kinds (guesses on hard tasks are rough and usually wrong),
 * so RL — not the warm start — has to learn when the tool pays off.
 *
 * Departure from tool-use benchmarks: the answer is checked numerically (|x − y| ≤ 1e-9·max(1,|y|)),
 * and text without an <answer> tag ends the episode with reward 0 instead of an error.
 */
import { extractAnswer, formatAnswer, formatToolCall } from '../actions.ts';
import { evaluateArithmetic, formatNumber } from './arith.ts';
import { ConfigError } from '../../errors.ts';
import { Rng } from '../../util/rng.ts';
import type { Demonstration, EnvSpec, Environment, StepResult, Tool } from '../types.ts';

export interface CalculatorOptions {
  /** Share of one-digit tasks. Default 0.5. */
  readonly easyFraction?: number;
  /** Reward subtracted per tool call from a correct answer. Default 0.1. */
  readonly toolCost?: number;
  /** Demonstrations: probability of calling the tool (on any task). Default 0.5. */
  readonly demoToolRate?: number;
  /** Hard tasks multiply a in [hardA[0], hardA[1]] by b in [hardB[0], hardB[1]]. Default [10, 999] × [10, 99]. */
  readonly hardA?: readonly [number, number];
  readonly hardB?: readonly [number, number];
}

const DEFAULT_HARD_A: readonly [number, number] = [10, 999];
const DEFAULT_HARD_B: readonly [number, number] = [10, 99];

function checkRange(name: string, r: readonly [number, number]): void {
  if (!Number.isInteger(r[0]) || !Number.isInteger(r[1]) || r[0] < 0 || r[1] < r[0]) {
    throw new ConfigError(`calculator.${name}`, `must be [min, max] with integers 0 <= min <= max, got ${JSON.stringify(r)}`);
  }
}

export interface CalculatorTask {
  readonly question: string;
  readonly expression: string;
  readonly answer: number;
  readonly hard: boolean;
}

const TASK_STREAM = 0xca1c;

/** The task a seed gives (pure: environments and demonstrations agree). */
export function calculatorTask(seed: number, easyFraction = 0.5, hardA = DEFAULT_HARD_A, hardB = DEFAULT_HARD_B): CalculatorTask {
  const rng = new Rng(seed, TASK_STREAM);
  const hard = rng.nextFloat() >= easyFraction;
  let expression: string;
  if (hard) {
    const a = hardA[0] + rng.nextInt(hardA[1] - hardA[0] + 1);
    const b = hardB[0] + rng.nextInt(hardB[1] - hardB[0] + 1);
    expression = `${a}*${b}`;
  } else {
    const a = rng.nextInt(10);
    const b = rng.nextInt(10);
    expression = `${a}${['+', '-', '*'][rng.nextInt(3)]}${b}`;
  }
  return { question: `What is ${expression}?`, expression, answer: evaluateArithmetic(expression), hard };
}

/** Whether `text` is a number equal to `expected` (numeric comparison, not string). */
export function answerMatches(text: string | null, expected: number): boolean {
  if (text === null || !/^[-+]?(\d+(\.\d*)?|\.\d+)$/.test(text)) return false;
  return Math.abs(Number(text) - expected) <= 1e-9 * Math.max(1, Math.abs(expected));
}

/** The calculator tool alone; `onCall` lets an environment count calls. */
export function calculatorTool(onCall: () => void = () => {}): Tool {
  return {
    name: 'calculator',
    description: 'evaluates arithmetic with + - * / and parentheses',
    // One string property: a native call's `expression` reaches `call` as the text itself.
    parameters: { type: 'object', properties: { expression: { type: 'string', description: 'e.g. 37*48' } }, required: ['expression'] },
    call(args: string) {
      onCall();
      return formatNumber(evaluateArithmetic(args)); // ArithmeticError → "error: …" for the agent
    },
  };
}

class CalculatorEnvironment implements Environment {
  readonly name = 'calculator';
  readonly tools: readonly Tool[];
  readonly #options: Required<CalculatorOptions>;
  #task: CalculatorTask | null = null;
  #toolCalls = 0;

  constructor(options: Required<CalculatorOptions>) {
    this.#options = options;
    this.tools = [calculatorTool(() => this.#toolCalls++)];
  }

  async reset(seed: number): Promise<string> {
    this.#task = calculatorTask(seed, this.#options.easyFraction, this.#options.hardA, this.#options.hardB);
    this.#toolCalls = 0;
    return this.#task.question;
  }

  async step(action: string): Promise<StepResult> {
    const task = this.#task;
    if (task === null) throw new Error('calculator: step before reset');
    const given = extractAnswer(action);
    const correct = answerMatches(given, task.answer);
    const reward = correct ? Math.max(0, 1 - this.#options.toolCost * this.#toolCalls) : 0;
    this.#task = null; // one answer per episode
    const observation = given === null ? 'No <answer> given.' : correct ? 'Correct.' : `Wrong: ${task.expression}=${formatNumber(task.answer)}.`;
    return { observation, reward, done: true, info: { correct, hard: task.hard, toolCalls: this.#toolCalls, expected: task.answer } };
  }
}

/** A rough guess at a hard product: the first factor rounded to one significant digit. */
function roughGuess(expression: string): number {
  const [a, b] = expression.split('*').map(Number);
  const scale = 10 ** (String(a).length - 1);
  return Math.round(a / scale) * scale * b;
}

/** Demonstrations: tool then answer with probability demoToolRate, else a direct guess. */
export function calculatorDemonstrations(n: number, rng: Rng, options: CalculatorOptions = {}): Demonstration[] {
  const easyFraction = options.easyFraction ?? 0.5;
  const toolRate = options.demoToolRate ?? 0.5;
  return Array.from({ length: n }, () => {
    const seed = rng.nextU32();
    const task = calculatorTask(seed, easyFraction, options.hardA ?? DEFAULT_HARD_A, options.hardB ?? DEFAULT_HARD_B);
    if (rng.nextFloat() < toolRate) {
      return { seed, actions: [formatToolCall('calculator', task.expression), formatAnswer(formatNumber(task.answer))] };
    }
    const guess = task.hard ? roughGuess(task.expression) : task.answer;
    return { seed, actions: [formatAnswer(formatNumber(guess))] };
  });
}

export function calculatorEnv(options: CalculatorOptions = {}): EnvSpec {
  const full: Required<CalculatorOptions> = { easyFraction: 0.5, toolCost: 0.1, demoToolRate: 0.5, hardA: DEFAULT_HARD_A, hardB: DEFAULT_HARD_B, ...options };
  checkRange('hardA', full.hardA);
  checkRange('hardB', full.hardB);
  return {
    name: 'calculator',
    create: () => new CalculatorEnvironment(full),
    demonstrations: (n, rng) => calculatorDemonstrations(n, rng, full),
  };
}
