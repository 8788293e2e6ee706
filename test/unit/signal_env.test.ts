// The signalling game (src/env/envs/signal.ts) played by scripted seats through the multi-agent
// protocol: the speaker's message reaches the listener as its observation; a shared code wins
// every game, a partner without one falls to chance (1/k); the demonstrations teach formats, no code.
import { describe, expect, it } from 'vitest';
import { groupEpisodes } from '../../src/env/batch.ts';
import {
  parsePick, parseSignal, signalCodeListener, signalCodeSpeaker, signalDemonstrations, signalEnv, signalGame, signalRandomListener, signalRandomSpeaker, signalListenerAction, signalSpeakerAction,
} from '../../src/env/envs/signal.ts';
import { replayTurnBasedDemonstrations } from '../../src/env/demos.ts';
import { rolloutTurnBased, type Seat } from '../../src/env/multiagent.ts';
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import { JOB_FORMAT } from '../../src/runtime/job_envs.ts';
import { Rng } from '../../src/util/rng.ts';

const GAMES = 400;
const successRate = async (seats: Seat[], opts = {}) => {
  const b = await rolloutTurnBased(signalEnv(opts), seats, groupEpisodes(GAMES, 1, 7), { seed: 3 });
  expect(b.games.length).toBe(GAMES);
  expect(b.games.every((g) => g.endReason === 'done' && g.steps === 2)).toBe(true);
  return b.games.filter((g) => g.rewardsP[0] === 1 && g.rewardsP[1] === 1).length / GAMES;
};

describe('signalling game', () => {
  it('passes the message to the listener as its observation, and pays both the same', async () => {
    const env = signalEnv().create();
    const first = await env.reset(42);
    const { target, order } = signalGame(42, 4);
    expect([...order].sort()).toEqual([0, 1, 2, 3]);
    expect(first.player).toBe(0);
    expect(first.observation).toContain(`must pick the ${['circle', 'square', 'star', 'cross'][target]}.`);
    const heard = await env.step('<answer>f</answer>');
    expect(heard).toMatchObject({ player: 1, done: false, rewardsP: [0, 0] });
    expect(heard.observation).toMatch(/Message: f\. Pick one/);
    const names = ['circle', 'square', 'star', 'cross'];
    expect(heard.observation).toContain(`Candidates: ${order.map((i) => names[i]).join(', ')}.`);
    const right = names[target];
    expect(await env.step(`<answer>${right}</answer>`)).toMatchObject({ done: true, rewardsP: [1, 1], info: { won: true, message: 'f' } });
    // A wrong pick, and a message that is no symbol (the listener hears nothing and a right guess scores 0).
    await env.reset(42);
    await env.step('<answer>b</answer>');
    expect((await env.step(`<answer>${names[(target + 1) % 4]}</answer>`)).rewardsP).toEqual([0, 0]);
    await env.reset(42);
    expect((await env.step('<answer>zz</answer>')).observation).toContain('Message: (nothing).');
    expect((await env.step(`<answer>${right}</answer>`)).rewardsP).toEqual([0, 0]);
  });

  it('a shared code wins every game; a partner without one falls to chance', async () => {
    expect(await successRate([signalCodeSpeaker(), signalCodeListener()])).toBe(1);
    // Two different codes: the listener decodes another mapping, so it is right only by coincidence.
    expect(await successRate([signalCodeSpeaker({}, 'abcd'), signalCodeListener({}, 'dcba')])).toBe(0);
    for (const seats of [[signalCodeSpeaker(), signalRandomListener()], [signalRandomSpeaker(), signalCodeListener()]]) {
      const s = await successRate(seats);
      // Chance is 1/4; over 400 games its sd is 0.022 — ±4 sd.
      expect(Math.abs(s - 0.25)).toBeLessThan(0.09);
    }
    // Six objects: chance 1/6.
    const six = { objects: ['red', 'green', 'blue', 'black', 'white', 'pink'], symbols: 'abcdefgh' };
    expect(await successRate([signalCodeSpeaker(six), signalCodeListener(six)], six)).toBe(1);
    expect(Math.abs((await successRate([signalCodeSpeaker(six), signalRandomListener(six)], six)) - 1 / 6)).toBeLessThan(0.08);
  });

  it('demonstrates the formats of both seats and no code', () => {
    const demos = signalDemonstrations(GAMES, new Rng(5));
    expect(demos.filter((d) => (d.player ?? 0) === 0).length).toBe(GAMES / 2);
    for (const d of demos) {
      expect(parseSignal(d.actions[0], 'abcdefgh')).not.toBeNull();
      expect(parsePick(d.actions[1], ['circle', 'square', 'star', 'cross'])).not.toBeNull();
    }
    // The demonstrated messages carry nothing about the target: the best decoder of them (the most
    // frequent target per symbol) does little better than always guessing the most frequent target.
    const counts = new Map<string, number[]>();
    for (const d of demos) {
      const sym = parseSignal(d.actions[0], 'abcdefgh')!;
      const row = counts.get(sym) ?? [0, 0, 0, 0];
      row[signalGame(d.seed, 4).target]++;
      counts.set(sym, row);
    }
    const decoded = [...counts.values()].reduce((s, row) => s + Math.max(...row), 0) / GAMES;
    expect(decoded).toBeLessThan(0.4); // a code would reach 1; chance is 0.25 (0.3–0.35 from overfitting 8 small cells)
  });

  it('parses messages and picks strictly, and refuses bad options', () => {
    expect(parseSignal('<answer> C </answer>', 'abc')).toBe('c');
    expect(parseSignal('<answer>ab</answer>', 'abc')).toBeNull();
    expect(parseSignal('<answer>z</answer>', 'abc')).toBeNull();
    expect(parsePick('<answer> Star</answer>', ['circle', 'star'])).toBe(1);
    expect(parsePick('<answer>stars</answer>', ['circle', 'star'])).toBeNull();
    expect(parsePick('<answer>2</answer>', ['circle', 'star'])).toBeNull();
    expect(parsePick('circle', ['circle', 'star'])).toBe(0);
    expect(() => signalEnv({ objects: ['one'] })).toThrow(RangeError);
    expect(() => signalEnv({ objects: ['a', 'a'] })).toThrow(/distinct/);
    expect(() => signalEnv({ symbols: 'aa' })).toThrow(/symbols/);
    expect(() => signalEnv({ symbols: 'A1' })).toThrow(/symbols/);
    expect(() => signalEnv({ shuffle: 'no' as unknown as boolean })).toThrow(/shuffle/);
    expect(() => signalEnv({ prompt: 'long' as 'full' })).toThrow(/prompt/);
    for (const drills of [1.5, -0.1, Number.NaN, '0.5' as unknown as number]) expect(() => signalEnv({ drills })).toThrow(/drills/);
    for (const speakerDrills of [2, -1, Number.NaN]) expect(() => signalEnv({ speakerDrills })).toThrow(/speakerDrills must be a number in \[0, 1\]/);
  });

  it('shows the candidates in objects order when shuffle is false; the target is drawn as before', async () => {
    const env = signalEnv({ shuffle: false }).create();
    for (const seed of [1, 42, 99]) {
      await env.reset(seed);
      const heard = await env.step('<answer>a</answer>');
      expect(heard.observation).toContain('Candidates: circle, square, star, cross.');
      const right = ['circle', 'square', 'star', 'cross'][signalGame(seed, 4).target];
      expect((await env.step(`<answer>${right}</answer>`)).rewardsP).toEqual([1, 1]);
    }
  });

  it('short prompts: the target, or the message, alone; the scripted seats read them', async () => {
    const o = { prompt: 'short' as const };
    const env = signalEnv(o).create();
    const first = await env.reset(42);
    const names = ['circle', 'square', 'star', 'cross'];
    const { target } = signalGame(42, 4);
    expect(first.observation).toBe(`Speaker. The listener must pick the ${names[target]}.`);
    expect((await env.step('<answer>c</answer>')).observation).toBe('Listener. Message: c.');
    await env.reset(42);
    expect((await env.step('<answer>zz</answer>')).observation).toBe('Listener. Message: (nothing).');
    expect(await successRate([signalCodeSpeaker(o), signalCodeListener(o)], o)).toBe(1);
    expect(Math.abs((await successRate([signalCodeSpeaker(o), signalRandomListener(o)], o)) - 0.25)).toBeLessThan(0.09);
  });

  it('minimal prompts: the target, a drill\'s name, or the message as the last word; the scripted seats read them', async () => {
    const o = { prompt: 'minimal' as const, symbols: 'aeio', objects: ['ring', 'box', 'star', 'cross'], message: 'bare' as const, speakerDrills: 0.5 };
    const env = signalEnv(o).create();
    const name = o.objects[signalGame(11, 4).target];
    expect((await env.reset(11)).observation).toBe(`Target: ${name}`);
    expect((await env.step('e')).observation).toBe('Heard: e');
    expect((await env.reset(11, 'drill')).observation).toBe(`Name: ${name}`);
    expect((await env.step(name)).observation).toBe(`Heard: ${name}`);
    await env.reset(11);
    expect((await env.step('x')).observation).toBe('Heard: (nothing)');
    expect(signalCodeSpeaker(o).act(`Target: ${name}`, new Rng(1))).toBe('aeio'[o.objects.indexOf(name)]);
    expect(await successRate([signalCodeSpeaker(o), signalCodeListener(o)], o)).toBe(1);
    expect(Math.abs((await successRate([signalCodeSpeaker(o), signalRandomListener(o)], o)) - 0.25)).toBeLessThan(0.09);
  });

  it('prompts chosen per seat: a full speaker prompt beside a short listener one', async () => {
    const o = { prompt: { speaker: 'full', listener: 'short' } as const };
    const env = signalEnv(o).create();
    const names = ['circle', 'square', 'star', 'cross'];
    const first = await env.reset(42);
    expect(first.observation).toMatch(new RegExp(`^Signalling game, you are the speaker\\. The listener must pick the ${names[signalGame(42, 4).target]}\\. Send one letter`));
    expect((await env.step('<answer>c</answer>')).observation).toBe('Listener. Message: c.');
    // A seat left out is 'full'.
    await signalEnv({ prompt: { listener: 'short' } }).create().reset(42).then((r) => expect(r.observation).toMatch(/^Signalling game/));
    expect((await (async () => {
      const e = signalEnv({ prompt: { speaker: 'short' } }).create();
      await e.reset(42);
      return e.step('<answer>c</answer>');
    })()).observation).toMatch(/^Signalling game, you are the listener\. Candidates: /);
    expect(await successRate([signalCodeSpeaker(o), signalCodeListener(o)], o)).toBe(1);
    for (const prompt of [{ speaker: 'long' }, { listener: 3 }, 'tiny']) {
      expect(() => signalEnv({ prompt: prompt as 'full' })).toThrow(/prompt must be 'full', 'short' or 'minimal', or \{ speaker, listener \}/);
    }
  });

  it("bare messages: the speaker's action is the symbol alone, one byte token, in its demonstrations and from the scripts", async () => {
    const o = { message: 'bare' as const, symbols: 'fjqv', objects: ['ring', 'box', 'star', 'cross'] };
    const env = signalEnv(o).create();
    const name = o.objects[signalGame(11, 4).target];
    expect((await env.reset(11)).observation).toBe(`Signalling game, you are the speaker. The listener must pick the ${name}. Send one letter of fjqv.`);
    expect((await env.step('q')).observation).toContain('Message: q.');
    await env.reset(11);
    expect((await env.step('x')).observation).toContain('Message: (nothing).');
    const code = 'fjqv'[signalGame(11, 4).target];
    expect(signalCodeSpeaker(o).act((await env.reset(11)).observation, new Rng(1))).toBe(code);
    expect(signalRandomSpeaker(o).act('', new Rng(1))).toMatch(/^[fjqv]$/);
    expect([signalSpeakerAction(o, 'q'), signalSpeakerAction({ ...o, message: 'answer' }, 'q')]).toEqual(['q', '<answer>q</answer>']);
    expect(await successRate([signalCodeSpeaker(o), signalCodeListener(o)], o)).toBe(1);
    // The demonstrations: the same draws as with answer tags, the speaker's message bare, the pick tagged.
    const tagged = signalDemonstrations(64, new Rng(5), { ...o, message: 'answer' });
    const bare = signalDemonstrations(64, new Rng(5), o);
    expect(bare.map((d) => d.actions)).toEqual(tagged.map((d) => [parseSignal(d.actions[0], o.symbols), d.actions[1]]));
    // Replayed, the speaker's action is one token in every game (demonstrated or not).
    const tok = new ByteTokenizer();
    const r = await replayTurnBasedDemonstrations(signalEnv(o), bare.slice(0, 4), { tokenizer: tok, maxNewTokens: 24, maxSequenceTokens: 256, format: JOB_FORMAT });
    const speakers = r.trajectories.filter((t) => t.player === 0);
    expect(speakers.length).toBe(4);
    for (const t of speakers) {
      expect(t.turns.map((x) => x.action)).toHaveLength(1);
      expect(t.turns[0].action).toMatch(/^[fjqv]$/);
      expect(t.policyMaskT.filter((m) => m > 0)).toHaveLength(1);
    }
    expect(() => signalEnv({ message: 'tagged' as 'bare' })).toThrow(/message must be 'answer' or 'bare'/);
    // Naming drills with bare messages: the drill's message is the bare name.
    const drills = signalDemonstrations(GAMES, new Rng(5), { ...o, speakerDrills: 0.5 }).filter((d) => d.variant === 'drill');
    expect(drills.length).toBeGreaterThan(0);
    for (const d of drills) expect(d.actions).toEqual([o.objects[signalGame(d.seed, 4).target], `<answer>${o.objects[signalGame(d.seed, 4).target]}</answer>`]);
    await env.reset(11, 'drill');
    expect((await env.step(name)).observation).toContain(`Message: ${name}.`);
  });

  it("initial picks: the listener's action is the candidate's first letter alone, one byte token, in its demonstrations, drills and scripts", async () => {
    const o = { pick: 'initial' as const, message: 'bare' as const, drills: 0.5, symbols: 'aeio', objects: ['ring', 'box', 'star', 'cross'] };
    const env = signalEnv(o).create();
    const g = signalGame(11, 4);
    await env.reset(11);
    expect((await env.step('e')).observation).toBe(`Signalling game, you are the listener. Candidates: ${g.order.map((x) => o.objects[x]).join(', ')}. Message: e. Pick one by its first letter.`);
    const right = o.objects[g.target][0];
    expect((await env.step(right)).info).toMatchObject({ picked: g.target, won: true });
    await env.reset(11);
    await env.step('e');
    // A whole name is not a pick in this format, nor a letter no candidate starts with.
    expect((await env.step(o.objects[g.target])).info).toMatchObject({ picked: null, won: false });
    expect([parsePick(' S', o.objects, 'initial'), parsePick('<answer>c</answer>', o.objects, 'initial'), parsePick('x', o.objects, 'initial'), parsePick('rb', o.objects, 'initial')]).toEqual([2, 3, null, null]);
    expect(parsePick('r', o.objects)).toBeNull(); // the default format wants the name
    expect([signalListenerAction(o, 'star'), signalListenerAction({}, 'star')]).toEqual(['s', '<answer>star</answer>']);
    expect(await successRate([signalCodeSpeaker(o), signalCodeListener(o)], o)).toBe(1);
    expect(Math.abs((await successRate([signalCodeSpeaker(o), signalRandomListener(o)], o)) - 0.25)).toBeLessThan(0.09);
    expect(signalRandomListener(o).act('', new Rng(1))).toMatch(/^[rbsc]$/);
    // The demonstrations: the same draws as with tagged names, every pick (drills too) the initial.
    const tagged = signalDemonstrations(GAMES, new Rng(5), { ...o, pick: 'answer' });
    const initial = signalDemonstrations(GAMES, new Rng(5), o);
    expect(initial.map((d) => d.actions)).toEqual(tagged.map((d) => [d.actions[0], o.objects[parsePick(d.actions[1], o.objects)!][0]]));
    const drills = initial.filter((d) => d.variant === 'drill');
    expect(drills.length).toBeGreaterThan(0);
    for (const d of drills) expect(d.actions[1]).toBe(o.objects[parsePick(d.actions[0], o.objects)!][0]);
    // Replayed, the listener's action is one token in every game.
    const tok = new ByteTokenizer();
    const r = await replayTurnBasedDemonstrations(signalEnv(o), initial.slice(0, 8), { tokenizer: tok, maxNewTokens: 24, maxSequenceTokens: 256, format: JOB_FORMAT });
    const listeners = r.trajectories.filter((t) => t.player === 1);
    expect(listeners.length).toBe(8) // one per game, its seat demonstrated or not;
    for (const t of listeners) expect(t.policyMaskT.filter((m) => m > 0)).toHaveLength(1);
    expect(() => signalEnv({ pick: 'name' as 'initial' })).toThrow(/pick must be 'answer' or 'initial'/);
    expect(() => signalEnv({ pick: 'initial', objects: ['star', 'square'] })).toThrow(/first letters differ, got star, square/);
  });

  it("hindsight and message: the listener's game as it should have gone once the target is told; the speaker's symbol as received", async () => {
    for (const o of [{ symbols: 'aeio', objects: ['ring', 'box', 'star', 'cross'] }, { symbols: 'aeio', objects: ['ring', 'box', 'star', 'cross'], message: 'bare' as const, pick: 'initial' as const }]) {
      const spec = signalEnv(o);
      const listen = (x: string) => signalListenerAction(o, x);
      // Games as they went: every message, each picked wrong (the next object) or unparseable.
      const played = [0, 1, 2, 3].map((i) => {
        const seed = 100 + i;
        const t = signalGame(seed, 4).target;
        return { seed, actions: [signalSpeakerAction(o, 'aeio'[i]), i === 3 ? 'nothing' : listen(o.objects[(t + 1) % 4])], player: 1 };
      });
      const tok = new ByteTokenizer();
      const replay = { tokenizer: tok, maxNewTokens: 24, maxSequenceTokens: 256, format: JOB_FORMAT };
      const r = await replayTurnBasedDemonstrations(spec, played, replay);
      expect(r.trajectories.filter((t) => t.player === 1).map((t) => t.reward)).toEqual([0, 0, 0, 0]);
      for (const t of r.trajectories) {
        const d = spec.hindsight!(t);
        if (t.player === 0) {
          expect(d).toBeNull();
          continue;
        }
        const target = signalGame(t.seed, 4).target;
        expect(d).toEqual({ seed: t.seed, actions: [played[t.episodeId].actions[0], listen(o.objects[target])], player: 1 });
        // Replayed, the game as it should have gone wins.
        const again = await replayTurnBasedDemonstrations(spec, [d!], replay);
        expect(again.trajectories.find((x) => x.player === 1)!.reward).toBe(1);
      }
      // A message that did not come through teaches nothing.
      const lost = await replayTurnBasedDemonstrations(spec, [{ seed: 7, actions: ['zz', listen('box')], player: 1 }], replay);
      expect(spec.hindsight!(lost.trajectories.find((t) => t.player === 1)!)).toBeNull();
      // The message as the listener got it: the speaker's symbol (null when unreadable); the listener tells nobody.
      expect(r.trajectories.map((t) => spec.message!(t))).toEqual(r.trajectories.map((t) => (t.player === 0 ? 'aeio'[t.episodeId] : null)));
      expect(lost.trajectories.map((t) => spec.message!(t))).toEqual([null, null]);
    }
  });

  it("counterfactuals: the speaker's game with each symbol, the listener picking the target — each one replayed wins exactly when the listener reads it so", async () => {
    for (const o of [{ symbols: 'aeio', objects: ['ring', 'box', 'star', 'cross'] }, { symbols: 'aeiou', objects: ['ring', 'box', 'star', 'cross'], message: 'bare' as const, pick: 'initial' as const }]) {
      const spec = signalEnv(o);
      const tok = new ByteTokenizer();
      const replay = { tokenizer: tok, maxNewTokens: 24, maxSequenceTokens: 256, format: JOB_FORMAT };
      // Games as they went (the speaker's letter and the listener's pick whatever they were).
      const played = [0, 1, 2].map((i) => ({ seed: 40 + i, actions: [signalSpeakerAction(o, o.symbols[i]), signalListenerAction(o, o.objects[i])] }));
      const r = await replayTurnBasedDemonstrations(spec, played, replay);
      for (const t of r.trajectories) {
        const cf = spec.counterfactuals!(t);
        if (t.player === 1) {
          expect(cf).toBeNull();
          continue;
        }
        const target = o.objects[signalGame(t.seed, 4).target];
        expect(cf!.map((c) => c.action)).toEqual([...o.symbols]);
        expect(cf!.map((c) => c.game)).toEqual([...o.symbols].map((m) => ({ seed: t.seed, actions: [signalSpeakerAction(o, m), signalListenerAction(o, target)] })));
        // Replayed, each is the game with that message heard, and won.
        const again = await replayTurnBasedDemonstrations(spec, cf!.map((c) => c.game), replay);
        expect(again.trajectories.map((x) => [x.player, x.reward, spec.message!(x)])).toEqual([...o.symbols].flatMap((m) => [[0, 1, m], [1, 1, null]]));
      }
    }
  });

  it('reading drills: a name as the message in demonstrations only, no code taught, replayed as the variant', async () => {
    const o = { drills: 0.5, symbols: 'fjqv', objects: ['ring', 'box', 'star', 'cross'] };
    // The drill variant carries a candidate's name; a real game hears no name, and no other variant exists.
    const env = signalEnv(o).create();
    await env.reset(7, 'drill');
    expect((await env.step('<answer>box</answer>')).observation).toContain('Message: box.');
    await env.reset(7, 'drill');
    expect((await env.step('<answer>f</answer>')).observation).toContain('Message: (nothing).');
    await env.reset(7);
    expect((await env.step('<answer>box</answer>')).observation).toContain('Message: (nothing).');
    await expect(env.reset(7, 'copy')).rejects.toThrow(/variant "copy"/);
    // Without drills the demonstrations are drawn exactly as before the option existed.
    expect(signalDemonstrations(64, new Rng(5), { ...o, drills: 0 })).toEqual(signalDemonstrations(64, new Rng(5), { symbols: 'fjqv', objects: o.objects }));
    const demos = signalDemonstrations(GAMES, new Rng(5), o);
    const drills = demos.filter((d) => d.variant !== undefined);
    // Half the listener's games (GAMES / 2 of them) are drills: sd of the count 7, ±4 sd.
    expect(Math.abs(drills.length - GAMES / 4)).toBeLessThan(28);
    for (const d of drills) {
      expect(d).toMatchObject({ player: 1, variant: 'drill' });
      expect(d.actions[0]).toBe(d.actions[1]); // the pick copies the message
      expect(parsePick(d.actions[0], o.objects)).not.toBeNull();
      expect(parseSignal(d.actions[0], o.symbols)).toBeNull(); // no drill pairs a symbol with an object
    }
    expect(demos.filter((d) => d.variant === undefined).every((d) => parseSignal(d.actions[0], o.symbols) !== null)).toBe(true);
    // drills 1: every listener demonstration is a drill (it never sees a symbol); the speaker's are kept.
    const all = signalDemonstrations(64, new Rng(5), { ...o, drills: 1 });
    expect(all.filter((d) => d.player === 1).every((d) => d.variant === 'drill')).toBe(true);
    expect(all.filter((d) => d.player === undefined).length).toBe(32);
    // Replayed, a drill reaches the listener as its name (the variant goes through to reset).
    const tok = new ByteTokenizer();
    const r = await replayTurnBasedDemonstrations(signalEnv(o), drills.slice(0, 3), { tokenizer: tok, maxNewTokens: 256, maxSequenceTokens: 256, format: JOB_FORMAT });
    const listeners = r.trajectories.filter((t) => t.player === 1);
    expect(listeners.length).toBe(3);
    listeners.forEach((t, i) => expect(tok.decode(t.tokensT)).toContain(`Message: ${o.objects[parsePick(drills[i].actions[0], o.objects)!]}.`));
  });

  it("naming drills: the speaker's drill prompt says so and its message is the target's name; no symbol paired with an object", async () => {
    const o = { speakerDrills: 0.5, prompt: 'short' as const, symbols: 'fjqv', objects: ['ring', 'box', 'star', 'cross'] };
    const env = signalEnv(o).create();
    const name = o.objects[signalGame(11, 4).target];
    expect((await env.reset(11, 'drill')).observation).toBe(`Speaker, drill. The listener must pick the ${name}.`);
    expect((await env.reset(11)).observation).toBe(`Speaker. The listener must pick the ${name}.`);
    // The full prompt's drill asks for the name.
    expect((await signalEnv({ ...o, prompt: 'full' }).create().reset(11, 'drill')).observation).toMatch(new RegExp(`drill, you are the speaker\\. The listener must pick the ${name}\\. Send its name`));
    // The scripted code seats read the drill prompt's target like a real one's.
    expect(signalCodeSpeaker(o).act((await env.reset(11, 'drill')).observation, new Rng(1))).toBe(`<answer>${'fjqv'[signalGame(11, 4).target]}</answer>`);
    // Without naming drills the demonstrations are drawn exactly as before the option existed.
    expect(signalDemonstrations(64, new Rng(5), { ...o, speakerDrills: 0 })).toEqual(signalDemonstrations(64, new Rng(5), { ...o, speakerDrills: undefined }));
    const demos = signalDemonstrations(GAMES, new Rng(5), o);
    const drills = demos.filter((d) => d.variant !== undefined);
    // Half the speaker's games (GAMES / 2 of them) are drills: sd of the count 7, ±4 sd.
    expect(Math.abs(drills.length - GAMES / 4)).toBeLessThan(28);
    for (const d of drills) {
      expect(d.player ?? 0).toBe(0);
      expect(d.variant).toBe('drill');
      expect(d.actions).toEqual([`<answer>${o.objects[signalGame(d.seed, 4).target]}</answer>`, d.actions[0]]); // the target's own name
    }
    expect(demos.filter((d) => d.variant === undefined).every((d) => parseSignal(d.actions[0], o.symbols) !== null)).toBe(true);
    // speakerDrills 1 with drills 1: no demonstration of either seat holds a symbol.
    const none = signalDemonstrations(64, new Rng(5), { ...o, speakerDrills: 1, drills: 1 });
    expect(none.every((d) => d.variant === 'drill' && parseSignal(d.actions[0], o.symbols) === null)).toBe(true);
    // Replayed, the speaker's drill is trained on its drill prompt and its name.
    const tok = new ByteTokenizer();
    const r = await replayTurnBasedDemonstrations(signalEnv(o), drills.slice(0, 3), { tokenizer: tok, maxNewTokens: 256, maxSequenceTokens: 256, format: JOB_FORMAT });
    const speakers = r.trajectories.filter((t) => t.player === 0);
    expect(speakers.length).toBe(3);
    speakers.forEach((t, i) => {
      const text = tok.decode(t.tokensT);
      expect(text).toContain('Speaker, drill.');
      expect(text).toContain(drills[i].actions[0]);
    });
  });
});
