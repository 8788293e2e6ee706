/**
 * The settings that define a run (what run.json keeps, and what a fleet job carries), split out of
 * resume.ts so that browser code (the fleet page, through src/fleet/jobs.ts) can use them without
 * resume.ts's file-system imports.
 */
import type { TrainOptions } from './args.ts';

/** What run.json keeps: the settings that define the run (not where its outputs go). */
export type RunSettings = Omit<TrainOptions, 'help' | 'json' | 'out' | 'quiet' | 'selfCheck' | 'resume' | 'overwrite'>;

export function settingsOf(o: TrainOptions): RunSettings {
  const { help: _h, json: _j, out: _o, quiet: _q, selfCheck: _s, resume: _r, overwrite: _w, ...settings } = o;
  return settings;
}
