/**
 * train()'s default progress report: a line on stderr when a phase starts and every tenth of its
 * steps (and its last), warnings as they come. What a line says is what tells on an RL step —
 * the reward and success of the rollout, KL to the sampling policy, the clip fraction, the
 * entropy, the gradient norm, tokens trained, dropped and turn-limited episodes — not the
 * on-policy surrogate loss, which GRPO keeps near 0 by construction. SFT lines give the loss.
 */
import { dropsText } from './env_failures.ts';
import type { JobOptions, StepMetrics } from './rl_job.ts';

const fmt = (x: number | undefined, digits: number) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits));
const exp = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '-' : x.toExponential(1));

/** One progress line for a step (`total`: the phase's steps). */
export function progressLine(m: StepMetrics, total: number): string {
  const head = `${m.phase === 'sft' ? 'sft' : 'rl'} ${m.step + 1}/${total}`;
  if (m.phase === 'sft') return `${head}  loss ${fmt(m.loss, 4)}  |g| ${fmt(m.gradNorm, 3)}  tokens ${m.trainTokens}${m.skipped ? '  (skipped: non-finite)' : ''}`;
  const parts = [
    head,
    `reward ${fmt(m.reward, 3)}`,
    `success ${m.success === undefined ? '-' : `${(100 * m.success).toFixed(0)}%`}`,
    `kl ${exp(m.approxKl)}`,
    `clip ${fmt(m.clipFraction, 3)}`,
    `entropy ${fmt(m.entropy, 3)}`,
    `|g| ${fmt(m.gradNorm, 3)}`,
    `tokens ${m.trainTokens}`,
  ];
  if (m.datums === 0) parts.push('(no update: every group tied)');
  if ((m.turnLimited ?? 0) > 0) parts.push(`turn-limited ${m.turnLimited}`);
  if (m.dropped > 0) parts.push(`dropped ${m.dropped}${m.droppedBy ? `: ${dropsText(m.droppedBy, 120)}` : ''}`);
  return parts.join('  ');
}

/** Under Deno and Node stderr (stdout may carry data); in a page the console's log level (an error there means a failure). */
function defaultWrite(line: string): void {
  const g = globalThis as { Deno?: unknown; process?: { versions?: { node?: string } } };
  if (g.Deno !== undefined || g.process?.versions?.node !== undefined) console.error(line);
  else console.log(line);
}

/** `o` with progress lines and warnings on `write` (stderr) added beside its own callbacks; `o` itself when `on` is false. */
export function withProgress<T extends Pick<JobOptions, 'onStep' | 'onPhase' | 'onWarning'>>(o: T, on: boolean, write: (line: string) => void = defaultWrite): T {
  if (!on) return o;
  let total = 0;
  return {
    ...o,
    onPhase: (phase, d) => {
      if (phase === 'warmstart' || phase === 'rl') {
        total = d.steps ?? 0;
        write(`${phase === 'warmstart' ? 'SFT warm start' : 'RL'}: ${total} steps`);
      } else {
        write(phase === 'eval-before' ? 'evaluating before RL…' : 'evaluating…');
      }
      o.onPhase?.(phase, d);
    },
    onStep: (m) => {
      const every = Math.max(1, Math.round(total / 10));
      if ((m.step + 1) % every === 0 || m.step + 1 === total || m.step === 0) write(progressLine(m, total));
      o.onStep?.(m);
    },
    onWarning: (message) => {
      write(`warning: ${message}`);
      o.onWarning?.(message);
    },
  };
}
