/**
 * trainAgents' opponent pool (opt-in `pool: { every, size, share?, rotate? }`): self-play against
 * earlier versions of the other agents, the way fictitious self-play and AlphaStar's league keep a
 * learner from chasing only its partner's latest policy.
 *
 * At step 0 and every `every` steps after, each seat's current adapter is copied (its tensors) into
 * a frozen sampling client on the shared base; each seat keeps its `size` latest copies (the
 * oldest is closed when a new one comes). In every step each learner also plays `poolGroups` groups
 * of games against copies: per group, every other seat is filled by one copy of that seat's agent
 * drawn (seeded) from its pool, the same copy for the group's `groupSize` attempts, so a group
 * still compares attempts at one board against one opponent while different groups meet different
 * opponents. With `rotate` (symmetric games such as nim) the learner moves from seat to seat over
 * its pool groups — seat (t·n + g) mod P for its g-th pool group of step t of n per step — and the
 * other agents' copies take the remaining seats in seat order, so every position is trained.
 * Only the learner's own trajectories from those games train it; a copy never trains.
 */
import { Agent } from '../env/agent.ts';
import { groupEpisodes } from '../env/batch.ts';
import { rolloutTurnBased, type Seat } from '../env/multiagent.ts';
import type { EpisodeSpec } from '../env/batch.ts';
import type { TrajectoryGroup, TurnBasedEnvSpec } from '../env/types.ts';
import { ConfigError } from '../errors.ts';
import type { LoraConfig } from '../model/config.ts';
import { Rng } from '../util/rng.ts';
import type { SamplingClient, ServiceClient } from './clients.ts';
import { int } from './train.ts';

export interface PoolSettings {
  /** Copy every seat's adapter at step 0 and every `every` steps after. */
  readonly every: number;
  /** Copies kept per seat, the latest (the oldest leaves first). */
  readonly size: number;
  /** Share of each step's `groups` that each learner plays against copies instead of the live agents (default 0.5; at least one group). */
  readonly share?: number;
  /** true: the learner moves from seat to seat over its pool groups (symmetric games); default false: its own seat. */
  readonly rotate?: boolean;
}

const POOL_KEYS = ['every', 'size', 'share', 'rotate'];
const POOL_BOARDS = 0x9001;
const POOL_PICKS = 0x9101;
const POOL_SAMPLING = 0x9201;

/** ConfigError naming the field (`pool`, `pool.every`, ...). */
export function checkPoolSettings(p: unknown): void {
  if (typeof p !== 'object' || p === null) throw new ConfigError('pool', 'expected { every, size, share?, rotate? }');
  for (const k of Object.keys(p)) if (!POOL_KEYS.includes(k)) throw new ConfigError(`pool.${k}`, `unknown setting (known: ${POOL_KEYS.join(', ')})`);
  const s = p as PoolSettings;
  int('pool.every', s.every, 1);
  int('pool.size', s.size, 1);
  if (s.share !== undefined && (typeof s.share !== 'number' || !(s.share > 0 && s.share <= 1))) throw new ConfigError('pool.share', `expected a share in (0, 1], got ${s.share}`);
  if (s.rotate !== undefined && typeof s.rotate !== 'boolean') throw new ConfigError('pool.rotate', `expected a boolean, got ${typeof s.rotate}`);
}

/** Groups per step each learner plays against copies: share · groups, rounded, at least 1. */
export function poolGroups(p: PoolSettings, groups: number): number {
  return Math.min(groups, Math.max(1, Math.round((p.share ?? 0.5) * groups)));
}

interface Snapshot {
  readonly step: number;
  readonly client: SamplingClient;
}

/** Each seat's frozen copies; `close()` closes every client still held. */
export class OpponentPool {
  readonly #service: ServiceClient;
  readonly #modelId: string;
  readonly #size: number;
  readonly #pools: Snapshot[][];

  constructor(service: ServiceClient, modelId: string, seats: number, size: number) {
    this.#service = service;
    this.#modelId = modelId;
    this.#size = size;
    this.#pools = Array.from({ length: seats }, () => []);
  }

  /** Adds seat k's adapter (its tensors at `step`) as a frozen copy; the oldest past `size` is closed. */
  async add(k: number, step: number, lora: LoraConfig, tensors: Record<string, Float32Array>, name: string): Promise<void> {
    const client = await this.#service.createSamplingClient(this.#modelId, { lora, tensors, id: `agents/${name}@${step}` });
    this.#pools[k].push({ step, client });
    while (this.#pools[k].length > this.#size) await this.#pools[k].shift()!.client.close();
  }

  /** Per seat, the steps its copies were taken at, oldest first. */
  steps(): number[][] {
    return this.#pools.map((p) => p.map((x) => x.step));
  }

  copies(k: number): readonly Snapshot[] {
    return this.#pools[k];
  }

  async close(): Promise<void> {
    for (const p of this.#pools) {
      for (const x of p.splice(0)) await x.client.close().catch(() => {});
    }
  }
}

export interface PoolPlay {
  /** Per learner: its groups from the pool games (group ids from `firstGroupId` on). */
  readonly groupsP: readonly (readonly TrajectoryGroup[])[];
  /** Per learner: games played, and its mean reward in them. */
  readonly games: readonly number[];
  readonly reward: readonly number[];
}

export interface PoolPlayOptions {
  readonly spec: TurnBasedEnvSpec;
  readonly pool: OpponentPool;
  readonly rotate: boolean;
  /** The learning agent of seat k, and an agent sampling from a copy. */
  readonly learner: (k: number) => Agent;
  readonly copy: (k: number, client: SamplingClient) => Agent;
  readonly step: number;
  readonly groups: number;
  readonly groupSize: number;
  /** Group ids and episode ids start past the step's other games. */
  readonly firstGroupId: number;
  readonly firstEpisode: number;
  readonly seed: number;
  readonly maxSteps: number;
}

/**
 * Each learner's pool games of one step: its groups against copies drawn from the other seats'
 * pools (seeded by `seed` and the learner), games with the same seating played in one rollout.
 */
export async function playPoolGames(o: PoolPlayOptions): Promise<PoolPlay> {
  const P = o.spec.numPlayers;
  const groupsP: TrajectoryGroup[][] = [], games: number[] = [], reward: number[] = [];
  for (let k = 0; k < P; k++) {
    const boards = groupEpisodes(o.groups, o.groupSize, new Rng(o.seed, POOL_BOARDS + k).nextU32());
    const picks = new Rng(o.seed, POOL_PICKS + k);
    // Per group: the learner's seat and the copy in every other seat; groups seated alike share a rollout.
    const buckets = new Map<string, { seats: Seat[]; learnerSeat: number; specs: EpisodeSpec[]; indices: number[] }>();
    for (let g = 0; g < o.groups; g++) {
      const q = o.rotate ? (o.step * o.groups + g) % P : k;
      const others = Array.from({ length: P }, (_, j) => j).filter((j) => j !== k);
      const seats: Seat[] = [];
      const key: string[] = [String(q)];
      for (let pos = 0, next = 0; pos < P; pos++) {
        if (pos === q) {
          seats.push(o.learner(k));
          continue;
        }
        const from = o.rotate ? others[next++] : pos;
        const copies = o.pool.copies(from);
        const pick = picks.nextInt(copies.length);
        key.push(`${from}@${copies[pick].step}`);
        seats.push(o.copy(from, copies[pick].client));
      }
      const b = buckets.get(key.join(' ')) ?? { seats, learnerSeat: q, specs: [], indices: [] };
      buckets.set(key.join(' '), b);
      for (let i = 0; i < o.groupSize; i++) {
        b.specs.push({ seed: boards[g * o.groupSize + i].seed, groupId: o.firstGroupId + g });
        b.indices.push(o.firstEpisode + g * o.groupSize + i);
      }
    }
    const mine: TrajectoryGroup[] = [];
    let played = 0;
    for (const b of buckets.values()) {
      const batch = await rolloutTurnBased(o.spec, b.seats, b.specs, {
        seed: new Rng(o.seed, POOL_SAMPLING + k).nextU32(), indices: b.indices, maxSteps: o.maxSteps,
      });
      played += batch.games.length;
      mine.push(...(batch.seats[b.learnerSeat]?.groups ?? []));
    }
    mine.sort((a, b) => a.groupId - b.groupId);
    const rs = mine.flatMap((g) => g.trajectories.map((t) => t.reward));
    groupsP.push(mine);
    games.push(played);
    reward.push(rs.length === 0 ? 0 : rs.reduce((a, b) => a + b, 0) / rs.length);
  }
  return { groupsP, games, reward };
}
