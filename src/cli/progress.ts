/**
 * The progress bar on stderr (cli-progress): phase, step, reward, loss, tokens/s and ETA. Off
 * when --quiet, and a plain line per step when stderr is not a terminal (logs stay readable).
 */
import cliProgress from 'cli-progress';
import { dropsText } from '../runtime/env_failures.ts';
import type { StepMetrics } from '../runtime/rl_job.ts';
import { progressLine } from '../runtime/train_progress.ts';

export interface Progress {
  phase(name: string, total: number): void;
  step(m: StepMetrics): void;
  note(text: string): void;
  stop(): void;
}

/** ` | dropped N: env_error ×N (first: …)` for a step that dropped episodes, else ''. */
export function dropsPart(m: Pick<StepMetrics, 'dropped' | 'droppedBy'>, maxMessage: number): string {
  if (m.dropped === 0) return '';
  return ` | dropped ${m.dropped}${m.droppedBy ? `: ${dropsText(m.droppedBy, maxMessage)}` : ''}`;
}

export function quietProgress(): Progress {
  return { phase() {}, step() {}, note() {}, stop() {} };
}

/** A progress reporter writing to `stream` (process.stderr). */
export function progressBar(stream: NodeJS.WriteStream): Progress {
  const tty = Boolean(stream.isTTY);
  let bar: cliProgress.SingleBar | null = null;
  let total = 0;
  let trainTok = 0, trainSec = 0, sampleTok = 0, sampleSec = 0;
  const stop = () => {
    bar?.stop();
    bar = null;
  };
  return {
    phase(name, steps) {
      stop();
      total = steps;
      trainTok = trainSec = sampleTok = sampleSec = 0;
      if (!tty) {
        stream.write(`${name}: ${steps} steps\n`);
        return;
      }
      bar = new cliProgress.SingleBar(
        {
          stream,
          // RL: what tells on a step (KL to the sampling policy, entropy, gradient norm), not GRPO's ~0 surrogate loss.
          format: name === 'sft'
            ? `${name.padEnd(9)} [{bar}] {value}/{total} | loss {loss} | {tps} | ETA {eta_formatted}{drops}`
            : `${name.padEnd(9)} [{bar}] {value}/{total} | reward {reward} | success {success} | kl {kl} | entropy {entropy} | |g| {grad} | {tps} | ETA {eta_formatted}{drops}`,
          barsize: 24,
          hideCursor: true,
          etaBuffer: 8,
          fps: 5,
        },
        cliProgress.Presets.shades_classic,
      );
      bar.start(steps, 0, { reward: '-', loss: '-', success: '-', kl: '-', entropy: '-', grad: '-', tps: '', drops: '' });
    },
    step(m) {
      trainTok += m.trainTokens;
      trainSec += m.trainSeconds;
      sampleTok += m.sampledTokens;
      sampleSec += m.sampleSeconds;
      const tps = `train ${trainSec > 0 ? (trainTok / trainSec).toFixed(0) : '-'} tok/s${sampleSec > 0 ? `, sample ${(sampleTok / sampleSec).toFixed(0)} tok/s` : ''}`;
      const reward = m.reward === undefined ? '-' : m.reward.toFixed(3);
      if (bar) {
        bar.update(m.step + 1, {
          reward, loss: m.loss.toFixed(4), success: m.success === undefined ? '-' : `${(100 * m.success).toFixed(0)}%`,
          kl: m.approxKl === undefined ? '-' : m.approxKl.toExponential(1), entropy: m.entropy?.toFixed(3) ?? '-', grad: m.gradNorm.toFixed(3),
          tps, drops: dropsPart(m, 60),
        });
      } else stream.write(`${progressLine(m, total)}  ${tps}\n`);
    },
    note(text) {
      if (bar) stop();
      stream.write(`${text}\n`);
    },
    stop,
  };
}
