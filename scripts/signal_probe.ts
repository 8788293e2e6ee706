/**
 * A diagnostic of the signalling game: which side of a code the agents learn, and how far. One seat
 * (or both) learns with trainAgents from a fresh formats-only warm start; a learning seat's partner
 * is either the other learner (`--learn both`) or a script that knows the code (symbol i ↔ object i),
 * so one side is measured alone. `--warm-seed N` runs the warm start with seed N instead of `--seed`'s
 * (the bench runs seed 0's and shares it between its seeds). `--weights FILE` starts from a shipped warm start (e.g.
 * demos/src/lib/models/signal-gpt2-100k.safetensors, made for the default objects and letters a–d).
 * `--prompt short` (or one per seat: `--prompt full,short`), `--drills F`, `--speaker-drills F` and `--message bare` are signalEnv's options (short prompts;
 * reading drills in the listener's warm start, naming drills in the speaker's; the speaker's message as the bare symbol, which the
 * probe samples as one token: a learning speaker seat gets `maxNewTokens: 1`), `--pick initial` (the listener's pick as the candidate's
 * first letter, likewise one token for a learning listener); `--teach-code` (`--teach-speaker`) makes the listener's (speaker's) demonstrations follow the code, a
 * supervised check that the model can learn the mapping with these prompts at all (use `--steps 1`).
 * `--hindsight` makes a learning listener learn from the target each game reveals after its pick (trainAgents' seat
 * `hindsight`: supervised on what it should have picked) instead of from the reward; the speaker still learns from the reward alone;
 * `--hindsight-steps N` makes that listener train on its last N steps' hindsight plays (trainAgents' seat `hindsightSteps`);
 * `--vocabulary speaker|listener|both` restricts a one-token seat's sampling to the game's own tokens (trainAgents' seat
 * `vocabulary`: the speaker's letters, the listener's initials of the objects), so no message or pick is unreadable;
 * `--listener-temperature T` is that listener's sampling temperature (0: greedy, its best guess); `--info-bonus C` gives a learning
 * speaker trainAgents' `informationBonus` (paid for messages that differ between targets, whatever the mapping; `M,C` weighs its
 * rarity and sureness parts apart, `M,C,P` adds its posterior part, `M,C,P,N` counts its shares over the speaker's last N steps); `--expected-reward`
 * pays a learning speaker the listener's probability of picking the target on its message (trainAgents' `expectedReward`) rather than
 * whether the listener's one sample did (with `--learn both`); `--best-response W` gives a learning speaker trainAgents'
 * `bestResponse` (a supervised step towards the letters the listener reads best, one per target; with `--learn both`;
 * W > 0 weighs the speaker's own log-probabilities in by W: `{ own: W }`; `--best-response W,K` adds `keep: K`, the nats a
 * target's last letter is kept by). `--table-every N` prints the training games' target × message
 * shares every N steps.
 * `--algo` picks the learners' algorithm (GRPO's `--kl` / `--entropy` apply to 'grpo' alone), `--schedule` their
 * rate's schedule ('constant' or 'cosine'); `--lr`, `--kl` and `--rank` (the seats' LoRA rank) take one value or two (speaker,listener).
 * Prints the per-step success and loss, the held-out success before and after, the output ceilings of the
 * warm-started base (how likely any adapter can make each of the speaker's letters against the others, and each
 * of the listener's names by its first letter: src/model/output_ceiling.ts), and the tables of the learner's choices over the held-out games before and after training:
 * speaker rows = target, columns = message; listener rows = message, columns = pick (last column:
 * none / unparseable).
 *
 *   npx deno run -A --config deno.json scripts/signal_probe.ts --learn listener --objects ring,box,star,cross --symbols fjqv
 *   npx deno run -A --config deno.json scripts/signal_probe.ts --learn listener --objects ring,box,star,cross --symbols fjqv --prompt short --drills 0.5 --kl 0.3 --schedule cosine --groups 32 --group-size 4 --steps 250
 *
 * What it measured is in README.md ("Several agents"); not a test and not part of the bench.
 */
import { parseArgs } from 'node:util';
import { openSafetensors, signalCodeListener, signalCodeSpeaker, signalEnv, signalRandomListener, signalRandomSpeaker, type SeatSettings, type SignalOptions, trainAgents } from '../src/mod.ts';
import type { Demonstration } from '../src/env/types.ts';
import { numberFlag, watchGames } from './probe_games.ts';
import { outputCeiling } from '../src/model/output_ceiling.ts';
import { resolveSignalOptions, signalGame, signalListenerAction, type SignalMessage, type SignalPick, type SignalPrompt, signalSpeakerAction } from '../src/env/envs/signal.ts';

const { values: v } = parseArgs({
  options: {
    learn: { type: 'string', default: 'both' }, objects: { type: 'string' }, symbols: { type: 'string', default: 'abcd' }, shuffle: { type: 'string', default: 'true' },
    prompt: { type: 'string', default: 'full' }, message: { type: 'string', default: 'answer' }, pick: { type: 'string', default: 'answer' }, drills: { type: 'string', default: '0' }, 'speaker-drills': { type: 'string', default: '0' }, 'teach-code': { type: 'boolean', default: false }, 'teach-speaker': { type: 'boolean', default: false }, hindsight: { type: 'boolean', default: false }, 'hindsight-steps': { type: 'string', default: '1' }, 'info-bonus': { type: 'string', default: '0' }, 'expected-reward': { type: 'boolean', default: false }, 'best-response': { type: 'string' }, 'table-every': { type: 'string', default: '0' }, 'listener-temperature': { type: 'string' }, vocabulary: { type: 'string', default: 'none' },
    algo: { type: 'string', default: 'grpo' }, lr: { type: 'string', default: '0.01' }, schedule: { type: 'string', default: 'constant' }, kl: { type: 'string', default: '0.05' }, rank: { type: 'string', default: '8' }, entropy: { type: 'string', default: '0' },
    steps: { type: 'string', default: '60' }, groups: { type: 'string', default: '8' }, 'group-size': { type: 'string', default: '8' },
    seed: { type: 'string', default: '1' }, weights: { type: 'string' }, 'warm-seed': { type: 'string' }, eval: { type: 'string', default: '128' }, 'warm-steps': { type: 'string', default: '200' },
  },
});
if (!['none', 'speaker', 'listener', 'both'].includes(v.vocabulary!)) throw new RangeError(`--vocabulary must be none, speaker, listener or both, got ${v.vocabulary}`);
if (!['speaker', 'listener', 'both'].includes(v.learn!)) throw new RangeError(`--learn must be speaker, listener or both, got ${v.learn}`);
const num = numberFlag(v);
// `--best-response W[,K]`: W the own weight, K the keep bonus (both 0: true).
const bestResponseFlag = (text: string) => {
  const [own, keep = 0] = text.split(',').map(Number);
  if (![own, keep].every((x) => Number.isFinite(x) && x >= 0)) throw new RangeError(`--best-response takes W or W,K (numbers ≥ 0), got ${text}`);
  return own > 0 || keep > 0 ? { own, keep } : true;
};
// `--prompt full|short`, or two: speaker,listener (e.g. full,short).
const prompts = v.prompt!.split(',') as SignalPrompt[];
const o: SignalOptions = { symbols: v.symbols!, shuffle: v.shuffle !== 'false', prompt: prompts.length === 2 ? { speaker: prompts[0], listener: prompts[1] } : prompts[0], drills: num('drills'), speakerDrills: num('speaker-drills'), message: v.message as SignalMessage, pick: v.pick as SignalPick, ...(v.objects ? { objects: v.objects.split(',') } : {}) };
const { objects, symbols, shuffle } = resolveSignalOptions(o);
const k = objects.length;
const steps = num('steps'), evalGames = num('eval');

// The tables: the environment reports the message and the pick in its last step's info; the first
// `evalGames` games of the run are the held-out games before training (played together first),
// the first `evalGames` after the last step those after it.
const cols = v.learn === 'listener' ? k : symbols.length;
const rows = v.learn === 'listener' ? symbols.length : k;
const tables = [0, 1].map(() => Array.from({ length: rows }, () => new Array<number>(cols + 1).fill(0)));
// The table games are counted into (null: none), and how many so far.
let counting: number[][] | null = tables[0], counted = 0;
// --teach-code: the listener's demonstrations follow the code (symbol i ↔ object i) — a supervised
// check of whether the model can learn the mapping at all with these prompts (run it with --steps 1);
// --teach-speaker: the speaker's do (drills stay drills).
const code = symbols.slice(0, k);
const taught = (d: Demonstration) => ((d.player ?? 0) === 1 ? v['teach-code'] : v['teach-speaker']) && d.variant === undefined;
const teach = (d: Demonstration) => {
  if (!taught(d)) return d;
  const t = signalGame(d.seed, k, shuffle).target;
  return { ...d, actions: [signalSpeakerAction(o, code[t]), signalListenerAction(o, objects[t])] };
};
// The training games' target × message counts (the replays of hindsight and expected rewards repeat
// each game's target and message, so the shares are the games'), printed and reset every `--table-every` steps.
const trainTable = Array.from({ length: k }, () => new Array<number>(symbols.length + 1).fill(0));
const env = watchGames(signalEnv(o), (game) => {
  if (!counting) {
    const { message, target } = game as { message: string | null; target: number };
    if (target >= 0 && target < k) trainTable[target][message === null ? symbols.length : symbols.indexOf(message)]++;
  }
  if (!counting || counted++ >= evalGames) return;
  const { message, target, picked } = game as { message: string | null; target: number; picked: number | null };
  if (v.learn === 'listener') { if (message !== null) counting[symbols.indexOf(message)][picked ?? cols]++; }
  else counting[target][message === null ? cols : symbols.indexOf(message)]++;
}, teach);
// `--kl`, `--lr` and `--rank` (LoRA): one value for both seats, or "speaker,listener".
const perSeat = (k: 'kl' | 'lr' | 'rank', seat: number) => {
  const xs = v[k]!.split(',').map(Number);
  const x = xs.length === 2 ? xs[seat] : xs[0];
  if (xs.length > 2 || !Number.isFinite(x)) throw new RangeError(`--${k} must be a number or two (speaker,listener), got ${v[k]}`);
  return x;
};
// `--message bare`: the speaker's action is the symbol alone, one token (a byte); `--pick initial`:
// the listener's is the candidate's first letter alone.
const oneToken = (seat: number) => (seat === 0 ? v.message === 'bare' : v.pick === 'initial');
// `--info-bonus C` (rarity and sureness alike) or `--info-bonus M,C[,P[,N]]` (rarity, sureness and posterior apart; shares over N steps).
const bonusParts = v['info-bonus']!.split(',').map(Number);
if (bonusParts.length > 4 || bonusParts.some((x) => !Number.isFinite(x))) throw new RangeError(`--info-bonus must be a number, or two to four (marginal,conditional[,posterior[,steps]]), got ${v['info-bonus']}`);
const infoBonus = bonusParts.length >= 2 ? { marginal: bonusParts[0], conditional: bonusParts[1], posterior: bonusParts[2] ?? 0, ...(bonusParts.length === 4 ? { steps: bonusParts[3] } : {}) }
  : bonusParts[0] > 0 ? bonusParts[0] : null;
// `--hindsight`: the listener learns from the target the game reveals after its pick (supervised) instead of the reward.
// `--vocabulary`: a one-token seat samples among its game's tokens alone (the letters; the objects' initials).
const restricted = (seat: number) => v.vocabulary === 'both' || v.vocabulary === (seat === 0 ? 'speaker' : 'listener');
const vocabulary = (seat: number): string[] => {
  if (!oneToken(seat)) throw new RangeError(`--vocabulary: the ${seat === 0 ? 'speaker' : 'listener'}'s action is not one token (use --${seat === 0 ? 'message bare' : 'pick initial'})`);
  return seat === 0 ? [...symbols] : objects.map((x) => x[0]);
};
const learner = (name: string, seat: number): SeatSettings => ({
  name, ...(oneToken(seat) ? { maxNewTokens: 1 } : {}), ...(restricted(seat) ? { vocabulary: vocabulary(seat) } : {}), lr: perSeat('lr', seat), loraRank: perSeat('rank', seat), schedule: v.schedule as SeatSettings['schedule'],
  ...(seat === 1 && v.hindsight ? { hindsight: true, hindsightSteps: num('hindsight-steps'), ...(v['listener-temperature'] ? { temperature: num('listener-temperature') } : {}) } : { algo: v.algo as SeatSettings['algo'], ...(v.algo === 'grpo' ? { klBeta: perSeat('kl', seat), entropyCoef: num('entropy') } : {}), ...(seat === 0 && infoBonus !== null ? { informationBonus: infoBonus } : {}), ...(seat === 0 && v['expected-reward'] ? { expectedReward: true } : {}) }),
  ...(seat === 0 && v['best-response'] !== undefined ? { bestResponse: bestResponseFlag(v['best-response']) } : {}),
});
const seats = v.learn === 'both' ? [learner('speaker', 0), learner('listener', 1)]
  : v.learn === 'speaker' ? [learner('speaker', 0), { name: 'listener', script: signalCodeListener(o) }]
  : [{ name: 'speaker', script: signalCodeSpeaker(o) }, learner('listener', 1)];
// `--warm-seed N`: the warm start run first with seed N and shared (as the bench shares seed 0's between its seeds).
const warmOnce = async () => (await trainAgents({ env, seats, model: 'gpt2-100k', warmStart: { steps: num('warm-steps') }, steps: 0, evalGames: 0, seed: num('warm-seed') })).base;
const weights = v.weights ? await (await openSafetensors(await Deno.readFile(v.weights))).allF32() : v['warm-seed'] !== undefined ? await warmOnce() : undefined;
const r = await trainAgents({
  env, seats, partners: [signalRandomSpeaker(o), signalRandomListener(o)], model: 'gpt2-100k', ...(weights ? { weights } : { warmStart: { steps: num('warm-steps') } }),
  steps, groups: num('groups'), groupSize: num('group-size'), seed: num('seed'), evalGames,
  onStep: (m) => {
    if (m.step === 0) counting = null;
    if (m.step === steps - 1) [counting, counted] = [tables[1], 0];
    const expected = (m.expected[0] === null ? '' : ` expected ${m.expected[0].toFixed(3)}`) +
      (m.bestResponse[0] === null ? '' : ` best response ${objects.flatMap((o) => m.bestResponse[0]!.filter((x) => x.situation.includes(o)).map((x) => `${o}→${x.action} ${x.expected.toFixed(2)}`)).join(', ')}`);
    const every = num('table-every');
    if (every > 0 && m.step % every === every - 1) {
      const shares = trainTable.map((row) => row.map((x) => (x / Math.max(1, row.reduce((a, b) => a + b, 0))).toFixed(2)).join(' '));
      console.log(`steps ${m.step + 1 - every}–${m.step} target × message shares (${[...symbols].join(' ')} none): ${objects.map((x, i) => `${x} [${shares[i]}]`).join(', ')}`);
      for (const row of trainTable) row.fill(0);
    }
    console.log(`step ${m.step} success ${m.success.toFixed(3)}${expected} loss ${m.loss.map((x) => x.toFixed(4)).join(',')} ${m.seconds.toFixed(1)} s ${JSON.stringify(m.transcript)}`);
  },
});
console.log(`held out: ${r.before.together.toFixed(3)} → ${r.after.together.toFixed(3)}; swapped after ${JSON.stringify(r.after.swapped)}; ${r.wallSeconds.toFixed(0)} s`);
// How sure an adapter can make the warm-started base of each choice at all (src/model/output_ceiling.ts):
// the speaker's letters against each other, the listener's names by their first letter.
const ceiling = (chars: string[]) => outputCeiling(r.base, r.cfg, chars.map((ch) => ch.charCodeAt(0))).map((x, i) => `${chars[i]} ${x.toFixed(3)}`).join(', ');
console.log(`ceilings: letters ${ceiling([...symbols])}; names ${new Set(objects.map((x) => x[0])).size === k ? ceiling(objects.map((x) => x[0])) : '(first letters not distinct)'}`);
console.log(`${v.learn === 'listener' ? 'message × pick' : 'target × message'} before: ${JSON.stringify(tables[0])}; after: ${JSON.stringify(tables[1])}`);
