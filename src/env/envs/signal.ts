/**
 * `signal`: Lewis's signalling game for two learning agents that talk to each other. The speaker
 * (player 1) sees a target object and sends one symbol; the message reaches the listener (player
 * 2) as its observation, beside the candidates in a seeded order, and the listener names one.
 * Both get +1 when the pick is the target, 0 otherwise: the only way to score above chance (1/k)
 * is a code both agents share, which only their interaction can establish.
 *
 * The demonstrations teach the formats alone — a uniformly random symbol from the speaker, a
 * uniformly random candidate from the listener, each seat demonstrated in every other game — so
 * a warm start knows how to speak and how to pick, not what to say.
 *
 * A listener whose warm start only saw random picks has learned that the message does not matter,
 * and RL alone does not teach it to look (the measurements are in README.md, "Several agents").
 * `drills` adds reading drills to the listener's demonstrations: a game variant ('drill', played
 * only in demonstrations, never in rollouts) where the message is a candidate's name and the pick
 * copies it. They teach that the message slot decides the pick without teaching any code — real
 * messages are symbols, which no drill pairs with an object. `prompt: 'short'` drops the
 * instructions and the candidate list (the listener answers by name; the candidates are always all
 * the objects), so the message is a large share of a short context. `speakerDrills` is the same for
 * the speaker: naming drills (the drill variant again, where the speaker's prompt says "drill" and
 * its message is the target's own name), which teach that the target decides the message — again
 * without pairing any symbol with an object. `message: 'bare'` makes the speaker's action the
 * symbol alone, without the answer tags, for a speaker seat that samples one token
 * (trainAgents' per-seat `maxNewTokens: 1`): its whole update then goes to the choice of symbol, and
 * no format can break however fast it moves (a naming drill's message is then the bare name: the
 * warm start's actions are not bound by the seat's limit, and drills are never played in rollouts).
 * `pick: 'initial'` does the same for the listener: it names its pick by the candidate's first letter
 * alone (one token; the objects' first letters must differ), so a fast-moving listener cannot break
 * its format either.
 *
 * `hindsight` (the spec's): once a game is over it reveals the target, so the listener can learn
 * what it should have picked for the message it heard, from every game, won or lost (trainAgents'
 * seat `hindsight`); the speaker gets no such account — what the listener would have made of
 * another letter is not revealed — and learns from the reward alone.
 *
 * Departures from the textbook game: the symbol set may be larger than the objects (`symbols`),
 * so a code is not forced by the alphabet; an unparseable message scores 0 for both whatever the
 * listener picks (it sees "(nothing)"), and so does an unparseable pick. Scripted seats for
 * evaluation: `signalRandomSpeaker` / `signalRandomListener` (an untrained partner: success falls
 * to chance) and `signalCodeSpeaker` / `signalCodeListener` (a fixed code, for tests and as
 * partners that know one).
 */
import { extractAnswer, formatAnswer } from '../actions.ts';
import type { ScriptedPolicy } from '../multiagent.ts';
import { Rng } from '../../util/rng.ts';
import type { Counterfactual, Demonstration, Trajectory, TurnBasedEnvironment, TurnBasedEnvSpec, TurnObservation, TurnStepResult } from '../types.ts';

export interface SignalOptions {
  /** The objects a target is drawn from; every game shows them all as candidates (k = objects.length). Default 4 shapes. */
  readonly objects?: readonly string[];
  /** The symbols a message is made of (one symbol per message). Default 'abcdefgh'. */
  readonly symbols?: string;
  /** Show the listener the candidates in a seeded order per game (default true) or always in `objects` order. */
  readonly shuffle?: boolean;
  /** 'full' (default): instructions and the candidate list; 'short': the target, or the message, alone; 'minimal': it as the prompt's last word; or one per seat ({ speaker, listener }, each 'full' unless given). */
  readonly prompt?: SignalPrompt | { readonly speaker?: SignalPrompt; readonly listener?: SignalPrompt };
  /** The share of the listener's demonstrations that are reading drills, in [0, 1] (default 0; 1: the listener never sees a symbol in its demonstrations). */
  readonly drills?: number;
  /** The share of the speaker's demonstrations that are naming drills, in [0, 1] (default 0; 1: the speaker never sends a symbol in its demonstrations). */
  readonly speakerDrills?: number;
  /** The speaker's action: 'answer' (default: `<answer>f</answer>`) or 'bare' (the symbol alone: a one-token action for a byte-level model). */
  readonly message?: SignalMessage;
  /**
   * The listener's action: 'answer' (default: `<answer>NAME</answer>`) or 'initial' (the candidate's
   * first letter alone — one token for a byte-level model; the objects' first letters must differ).
   */
  readonly pick?: SignalPick;
}

/** How the speaker writes its message: in answer tags, or the symbol alone. */
export type SignalMessage = 'answer' | 'bare';
/** How the listener names its pick: the name in answer tags, or the name's first letter alone. */
export type SignalPick = 'answer' | 'initial';

/**
 * 'full': instructions (and the listener's candidate list); 'short': the target, or the message, in
 * one sentence; 'minimal': the target ("Target: ring"; a naming drill "Name: ring"), or the message
 * ("Heard: a"), as the prompt's last word — so the state the answer is read from differs most between games.
 */
export type SignalPrompt = 'full' | 'short' | 'minimal';
type Full = {
  readonly objects: readonly string[];
  readonly symbols: string;
  readonly shuffle: boolean;
  readonly prompt: { readonly speaker: SignalPrompt; readonly listener: SignalPrompt };
  readonly drills: number;
  readonly speakerDrills: number;
  readonly message: SignalMessage;
  readonly pick: SignalPick;
};
const isPrompt = (x: unknown): x is SignalPrompt => x === 'full' || x === 'short' || x === 'minimal';
const GAME_STREAM = 0x516a;

/** Every option filled in and checked (RangeError naming the option). */
export function resolveSignalOptions(o: SignalOptions = {}): Full {
  const objects = [...(o.objects ?? ['circle', 'square', 'star', 'cross'])];
  const symbols = o.symbols ?? 'abcdefgh';
  if (objects.length < 2) throw new RangeError(`signal: objects needs at least 2 names, got ${objects.length}`);
  if (new Set(objects).size !== objects.length || objects.some((x) => !/^[a-z]{1,12}$/.test(x))) {
    throw new RangeError('signal: objects must be distinct lowercase words of 1..12 letters');
  }
  const chars = [...symbols];
  if (chars.length < 2 || new Set(chars).size !== chars.length || chars.some((c) => !/^[a-z]$/.test(c))) {
    throw new RangeError(`signal: symbols must be 2 or more distinct lowercase letters, got "${symbols}"`);
  }
  if (o.shuffle !== undefined && typeof o.shuffle !== 'boolean') throw new RangeError(`signal: shuffle must be true or false, got ${String(o.shuffle)}`);
  const p = o.prompt ?? 'full';
  const prompt = typeof p === 'object' && p !== null ? { speaker: p.speaker ?? 'full', listener: p.listener ?? 'full' } : { speaker: p, listener: p };
  if (!isPrompt(prompt.speaker) || !isPrompt(prompt.listener)) {
    throw new RangeError(`signal: prompt must be 'full', 'short' or 'minimal', or { speaker, listener } of those, got ${JSON.stringify(o.prompt)}`);
  }
  for (const k of ['drills', 'speakerDrills'] as const) {
    const x = o[k];
    if (x !== undefined && !(typeof x === 'number' && x >= 0 && x <= 1)) throw new RangeError(`signal: ${k} must be a number in [0, 1], got ${String(x)}`);
  }
  const message = o.message ?? 'answer';
  if (message !== 'answer' && message !== 'bare') throw new RangeError(`signal: message must be 'answer' or 'bare', got ${JSON.stringify(o.message)}`);
  const pick = o.pick ?? 'answer';
  if (pick !== 'answer' && pick !== 'initial') throw new RangeError(`signal: pick must be 'answer' or 'initial', got ${JSON.stringify(o.pick)}`);
  if (pick === 'initial' && new Set(objects.map((x) => x[0])).size !== objects.length) {
    throw new RangeError(`signal: pick 'initial' needs objects whose first letters differ, got ${objects.join(', ')}`);
  }
  return { objects, symbols, shuffle: o.shuffle ?? true, prompt, drills: o.drills ?? 0, speakerDrills: o.speakerDrills ?? 0, message, pick };
}

/** A game's target (index into objects) and the order the listener sees the candidates in (`shuffle` false: objects order; the target is the same). */
export function signalGame(seed: number, objects: number, shuffle = true): { target: number; order: number[] } {
  const rng = new Rng(seed, GAME_STREAM);
  const target = rng.nextInt(objects);
  const order = Array.from({ length: objects }, (_, i) => i);
  for (let i = shuffle ? order.length - 1 : 0; i > 0; i--) {
    const j = rng.nextInt(i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return { target, order };
}

/** The symbol of a message (its answer tag, or the bare text), or null when it is not one symbol of `symbols`. */
export function parseSignal(action: string, symbols: string): string | null {
  const text = (extractAnswer(action) ?? action).trim().toLowerCase();
  return text.length === 1 && symbols.includes(text) ? text : null;
}

/**
 * The listener's pick: the object it names (an index into objects); null when it names none of them.
 * `pick` 'initial': the object whose first letter the action is (one letter, tags allowed).
 */
export function parsePick(action: string, objects: readonly string[], pick: SignalPick = 'answer'): number | null {
  const text = (extractAnswer(action) ?? action).trim().toLowerCase();
  const i = pick === 'initial' ? (text.length === 1 ? objects.findIndex((x) => x[0] === text) : -1) : objects.indexOf(text);
  return i < 0 ? null : i;
}

function speakerText(o: Full, target: number, drill: boolean): string {
  const t = o.objects[target];
  if (o.prompt.speaker === 'minimal') return `${drill ? 'Name' : 'Target'}: ${t}`;
  if (o.prompt.speaker === 'short') return `Speaker${drill ? ', drill' : ''}. The listener must pick the ${t}.`;
  return drill ? `Signalling game drill, you are the speaker. The listener must pick the ${t}. Send its name: <answer>NAME</answer>.` :
    `Signalling game, you are the speaker. The listener must pick the ${t}. Send one letter of ${o.symbols}${o.message === 'bare' ? '.' : ': <answer>LETTER</answer>.'}`;
}
const listenerText = (o: Full, order: readonly number[], message: string | null) =>
  o.prompt.listener === 'minimal' ? `Heard: ${message ?? '(nothing)'}` :
  o.prompt.listener === 'short' ? `Listener. Message: ${message ?? '(nothing)'}.` :
  `Signalling game, you are the listener. Candidates: ${order.map((x) => o.objects[x]).join(', ')}. ` +
  `Message: ${message ?? '(nothing)'}. ${o.pick === 'initial' ? 'Pick one by its first letter.' : 'Pick one: <answer>NAME</answer>.'}`;

class SignalEnvironment implements TurnBasedEnvironment {
  readonly name = 'signal';
  readonly numPlayers = 2;
  readonly #o: Full;
  #game = { target: 0, order: [] as number[] };
  #message: string | null = null;
  #turn = 0;
  #drill = false;

  constructor(o: Full) {
    this.#o = o;
  }

  async reset(seed: number, variant?: string): Promise<TurnObservation> {
    if (variant !== undefined && variant !== 'drill') throw new RangeError(`signal: unknown game variant "${variant}" (only 'drill')`);
    this.#drill = variant === 'drill';
    this.#game = signalGame(seed, this.#o.objects.length, this.#o.shuffle);
    this.#message = null;
    this.#turn = 0;
    return { player: 0, observation: speakerText(this.#o, this.#game.target, this.#drill) };
  }

  async step(action: string): Promise<TurnStepResult> {
    if (this.#turn === 0) {
      // The speaker's message is the listener's observation: the one channel between the agents.
      this.#turn = 1;
      // A drill's message is a candidate's name (demonstrations only); a real one is one symbol.
      this.#message = this.#drill ? (this.#o.objects[parsePick(action, this.#o.objects) ?? -1] ?? null) : parseSignal(action, this.#o.symbols);
      return { player: 1, observation: listenerText(this.#o, this.#game.order, this.#message), rewardsP: [0, 0], done: false, info: { message: this.#message } };
    }
    const picked = parsePick(action, this.#o.objects, this.#o.pick);
    const won = picked === this.#game.target && this.#message !== null;
    const r = won ? 1 : 0;
    const outcome = picked === null ? 'The listener made no valid pick.' : `The listener picked the ${this.#o.objects[picked]}: ${won ? 'right' : 'wrong'}.`;
    // The target is revealed in the game's info once it is over (a hindsight learner reads it there).
    return { player: 1, observation: outcome, rewardsP: [r, r], done: true, info: { target: this.#game.target, picked, message: this.#message, won } };
  }
}

/**
 * Whole games: in game i seat i mod 2 is demonstrated; every message and pick uniformly random (the
 * formats, no code). With `drills`, that share of the listener's games are reading drills (variant
 * 'drill': a candidate's name as the message, the pick copying it); with `speakerDrills`, that share
 * of the speaker's are naming drills (variant 'drill': the target's name as the message).
 */
export function signalDemonstrations(n: number, rng: Rng, options: SignalOptions = {}): Demonstration[] {
  const o = resolveSignalOptions(options);
  const say = sayer(o), name = picker(o);
  return Array.from({ length: n }, (_, i) => {
    const seed = rng.nextU32();
    if (o.speakerDrills > 0 && i % 2 === 0 && rng.nextFloat() < o.speakerDrills) {
      const target = o.objects[signalGame(seed, o.objects.length, o.shuffle).target];
      return { seed, actions: [say(target), name(target)], variant: 'drill' };
    }
    if (o.drills > 0 && i % 2 === 1 && rng.nextFloat() < o.drills) {
      const read = o.objects[rng.nextInt(o.objects.length)];
      return { seed, actions: [formatAnswer(read), name(read)], player: 1, variant: 'drill' };
    }
    const symbol = o.symbols[rng.nextInt(o.symbols.length)];
    const pick = o.objects[rng.nextInt(o.objects.length)];
    const player = i % 2;
    return { seed, actions: [say(symbol), name(pick)], ...(player === 0 ? {} : { player }) };
  });
}

/** The speaker's action sending `text` (a symbol, or a naming drill's name), in the message format `o` asks for. */
const sayer = (o: Full) => (text: string) => (o.message === 'bare' ? text : formatAnswer(text));

/** The listener's action picking the object `object`, in the pick format `o` asks for. */
const picker = (o: Full) => (object: string) => (o.pick === 'initial' ? object[0] : formatAnswer(object));

/** The listener's action picking `object` under `options`' pick format ('answer': the name in answer tags; 'initial': its first letter). */
export const signalListenerAction = (options: SignalOptions, object: string): string => picker(resolveSignalOptions(options))(object);

/** The speaker's action sending `text` under `options`' message format ('answer': in answer tags; 'bare': as it is). */
export const signalSpeakerAction = (options: SignalOptions, text: string): string => sayer(resolveSignalOptions(options))(text);

/** Success: the listener picked the target (both seats' trajectories end with reward 1). */
export const signalSuccess = (t: Trajectory): boolean => t.reward >= 1;

export function signalEnv(options: SignalOptions = {}): TurnBasedEnvSpec {
  const o = resolveSignalOptions(options);
  return {
    name: 'signal',
    numPlayers: 2,
    create: () => new SignalEnvironment(o),
    demonstrations: (n, rng) => signalDemonstrations(n, rng, o),
    success: signalSuccess,
    hindsight: (t) => signalHindsight(t, o),
    // The speaker's message as the listener received it (null: an unreadable one); the listener tells nobody anything.
    message: (t) => (t.player === 0 && typeof t.turns[0]?.info.message === 'string' ? t.turns[0].info.message : null),
    counterfactuals: (t) => signalCounterfactuals(t, o),
  };
}

/**
 * The speaker's game with each of its symbols as the message and the listener picking the target
 * (the game's seed says which), named by the symbol; null for the listener's trajectories.
 */
function signalCounterfactuals(t: Trajectory, o: Full): Counterfactual[] | null {
  if (t.player !== 0) return null;
  const say = sayer(o), name = picker(o)(o.objects[signalGame(t.seed, o.objects.length, o.shuffle).target]);
  return [...o.symbols].map((m) => ({ action: m, game: { seed: t.seed, actions: [say(m), name] } }));
}

/**
 * The listener's game as it should have gone, once the game has told it the target: the message it
 * heard, then the target's pick (null for the speaker's trajectories — what the listener would have
 * made of another letter is not revealed — and for games whose message did not come through).
 */
function signalHindsight(t: Trajectory, o: Full): Demonstration | null {
  const info = t.turns.at(-1)?.info;
  if (t.player !== 1 || !info || typeof info.target !== 'number' || typeof info.message !== 'string') return null;
  return { seed: t.seed, actions: [sayer(o)(info.message), picker(o)(o.objects[info.target])], player: 1 };
}

/** The target's name read back from a speaker's observation. */
function targetOf(observation: string, o: Full): number {
  const m = /must pick the ([a-z]+)\./.exec(observation) ?? /^(?:Target|Name): ([a-z]+)$/.exec(observation.trim());
  return m === null ? -1 : o.objects.indexOf(m[1]);
}

/** The message read back from a listener's observation (null: none came through). */
function heard(observation: string): string | null {
  const m = /Message: ([a-z])\./.exec(observation) ?? /^Heard: ([a-z])$/.exec(observation.trim());
  return m === null ? null : m[1];
}

/** A speaker without a code: a uniformly random symbol. */
export function signalRandomSpeaker(options: SignalOptions = {}, id = 'signal-random-speaker'): ScriptedPolicy {
  const o = resolveSignalOptions(options);
  const say = sayer(o);
  return { kind: 'scripted', id, act: (_obs, rng) => say(o.symbols[rng.nextInt(o.symbols.length)]) };
}

/** A listener without a code: a uniformly random candidate. */
export function signalRandomListener(options: SignalOptions = {}, id = 'signal-random-listener'): ScriptedPolicy {
  const o = resolveSignalOptions(options);
  const name = picker(o);
  return { kind: 'scripted', id, act: (_obs, rng) => name(o.objects[rng.nextInt(o.objects.length)]) };
}

/** A speaker that sends `code[target]` (default: object i → the i-th symbol). */
export function signalCodeSpeaker(options: SignalOptions = {}, code?: string, id = 'signal-code-speaker'): ScriptedPolicy {
  const o = resolveSignalOptions(options);
  const c = code ?? o.symbols.slice(0, o.objects.length);
  const say = sayer(o);
  return { kind: 'scripted', id, act: (obs) => say(c[targetOf(obs, o)] ?? o.symbols[0]) };
}

/** A listener that decodes `code` (default as signalCodeSpeaker's); an unknown symbol picks the first object. */
export function signalCodeListener(options: SignalOptions = {}, code?: string, id = 'signal-code-listener'): ScriptedPolicy {
  const o = resolveSignalOptions(options);
  const c = code ?? o.symbols.slice(0, o.objects.length);
  const name = picker(o);
  return {
    kind: 'scripted',
    id,
    act: (obs) => {
      const m = heard(obs);
      return name(o.objects[Math.max(0, m === null ? 0 : c.indexOf(m))]);
    },
  };
}
