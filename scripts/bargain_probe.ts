/**
 * A diagnostic of the sale game (bargainEnv): how far each side learns its best response. One seat
 * (or both) learns with trainAgents from a fresh formats-only warm start; the buyer alone plays
 * sellers asking uniformly random prices (where accepting exactly p ≤ v is best), the seller alone a
 * truthful buyer (where bargainBestPrice is best). `--prompt short` is bargainEnv's option; `--teach`
 * makes the buyer's demonstrations truthful, a supervised check that the model can learn the
 * comparison with these prompts at all (use `--steps 1`). `--model` names a from-scratch preset (default gpt2-100k).
 * `--answers bare` is bargainEnv's option (the price as the digit alone, the buyer's answer y or n): a learning seat then
 * samples one token among its own answers (trainAgents' seat `maxNewTokens: 1` and `vocabulary`: digits, or y and n).
 *
 * Prints the per-step mean return of each seat, the learner's held-out return before and after
 * beside the fixed strategies' exact returns (bargainReferences), and its choices over the held-out
 * games after: the buyer's accept share by value (rows) and price (columns), the seller's price
 * counts by cost.
 *
 *   npx deno run -A --config deno.json scripts/bargain_probe.ts --learn buyer --prompt short --kl 0.3 --schedule cosine --groups 32 --group-size 4 --steps 200
 *
 * What it measured is in README.md ("Several agents"); not a test and not part of the bench.
 */
import { parseArgs } from 'node:util';
import { bargainEnv, bargainReferences, bargainTruthfulBuyer, bargainRandomSeller, type SeatSettings, trainAgents } from '../src/mod.ts';
import { bargainAnswer, type BargainAnswers, bargainBestBuyer, bargainGame, parsePrice, resolveBargainOptions, type BargainOptions } from '../src/env/envs/bargain.ts';
import type { Demonstration } from '../src/env/types.ts';
import { numberFlag, watchGames } from './probe_games.ts';

const { values: v } = parseArgs({
  options: {
    learn: { type: 'string', default: 'buyer' }, prompt: { type: 'string', default: 'full' }, answers: { type: 'string', default: 'tagged' }, teach: { type: 'boolean', default: false },
    algo: { type: 'string', default: 'grpo' }, lr: { type: 'string', default: '0.01' }, schedule: { type: 'string', default: 'constant' }, kl: { type: 'string', default: '0.3' },
    steps: { type: 'string', default: '60' }, groups: { type: 'string', default: '8' }, 'group-size': { type: 'string', default: '8' },
    seed: { type: 'string', default: '1' }, model: { type: 'string', default: 'gpt2-100k' }, eval: { type: 'string', default: '256' }, 'warm-steps': { type: 'string', default: '200' },
  },
});
if (!['buyer', 'seller', 'both'].includes(v.learn!)) throw new RangeError(`--learn must be buyer, seller or both, got ${v.learn}`);
const num = numberFlag(v);
const o: BargainOptions = { prompt: v.prompt as 'full' | 'short', answers: v.answers as BargainAnswers };
const { costs, values, answers } = resolveBargainOptions(o);
const bare = answers === 'bare';
const steps = num('steps'), evalGames = num('eval');

// The tables over the held-out games after the last step: buyer [value][price] = (accepted, asked);
// seller [cost][price] = count (last column: no price).
const buyerTable = values.map(() => Array.from({ length: 10 }, () => [0, 0]));
const sellerTable = costs.map(() => new Array<number>(11).fill(0));
let counting = false, counted = 0;
// --teach: the buyer's demonstrations answer truthfully.
const teach = (d: Demonstration) => {
  if (!v.teach || d.player !== 1) return d;
  const price = parsePrice(d.actions[0])!;
  return { ...d, actions: [d.actions[0], bargainAnswer(o, bargainBestBuyer(bargainGame(d.seed, o).value, price) ? 'accept' : 'reject')] };
};
const env = watchGames(bargainEnv(o), (game) => {
  if (!counting || counted++ >= evalGames) return;
  const { cost, value, price, accepted } = game as { cost: number; value: number; price: number | null; accepted: boolean };
  sellerTable[costs.indexOf(cost)][price ?? 10]++;
  if (price !== null) {
    const cell = buyerTable[values.indexOf(value)][price];
    cell[0] += accepted ? 1 : 0;
    cell[1]++;
  }
}, teach);
// A bare answer is one token of the seat's own: digits for the seller, y or n for the buyer.
const ownAnswers = (name: string) => (name === 'seller' ? [...'0123456789'] : ['y', 'n']);
const learner = (name: string): SeatSettings => ({
  name, algo: v.algo as SeatSettings['algo'], lr: num('lr'), schedule: v.schedule as SeatSettings['schedule'], ...(v.algo === 'grpo' ? { klBeta: num('kl') } : {}),
  ...(bare ? { maxNewTokens: 1, vocabulary: ownAnswers(name) } : {}),
});
const seats = v.learn === 'both' ? [learner('seller'), learner('buyer')]
  : v.learn === 'buyer' ? [{ name: 'seller', script: bargainRandomSeller() }, learner('buyer')]
  : [learner('seller'), { name: 'buyer', script: bargainTruthfulBuyer() }];
const r = await trainAgents({
  env, seats, partners: [bargainRandomSeller(), bargainTruthfulBuyer()], model: v.model!, warmStart: { steps: num('warm-steps') },
  steps, groups: num('groups'), groupSize: num('group-size'), seed: num('seed'), evalGames,
  onStep: (m) => {
    if (m.step === steps - 1) [counting, counted] = [true, 0];
    console.log(`step ${m.step} return ${m.reward.map((x) => x.toFixed(3)).join(',')} loss ${m.loss.map((x) => x.toFixed(4)).join(',')} ${m.seconds.toFixed(1)} s ${JSON.stringify(m.transcript)}`);
  },
});
const refs = bargainReferences(o);
const fmt = (e: typeof r.before) => e.returns.map((x) => x.toFixed(3)).join(', ');
console.log(`held-out returns (seller, buyer): ${fmt(r.before)} → ${fmt(r.after)}; ${r.wallSeconds.toFixed(0)} s`);
console.log(`references: seller vs truthful buyer random ${refs.sellerRandom.toFixed(3)} best ${refs.sellerBest.toFixed(3)}; buyer vs random prices coin ${refs.buyerCoin.toFixed(3)} truthful ${refs.buyerTruthful.toFixed(3)}`);
if (v.learn === 'both') console.log(`after, against the fixed opponents: seller vs truthful buyer ${r.after.swappedReturns[1]?.[0].toFixed(3)}, buyer vs random prices ${r.after.swappedReturns[0]?.[1].toFixed(3)}`);
console.log('buyer accept share after, value × price 0..9:');
buyerTable.forEach((row, i) => console.log(`  ${values[i]}: ${row.map(([a, n]) => (n === 0 ? '  - ' : (a / n).toFixed(2))).join(' ')}`));
console.log(`seller prices after, cost × price 0..9 (last: none): ${JSON.stringify(sellerTable)}`);
