/**
 * `npm run bench -- --only agents --from-json FILE`: the agents section (and its figures) rendered
 * again from a run's saved JSON (`--json FILE`), without measuring — for when the report's wording or
 * verdicts change after a long run. The figures are the run's; the "measured" line is the run's own
 * (saved in the JSON as `run`; for a JSON written before it was, the markdown's agents section must
 * already carry that run's line, with its date).
 */
import { GAMES } from './agents_settings.ts';
import type { AgentsBenchReport, GameReport } from './agents.ts';
import { agentsFigures, agentsMarkdown } from './agents_report.ts';
import { HEADER_END, measuredLine, parseSections, type RunInfo, updateMarkdown } from './markdown.ts';
import { PARTS } from './args.ts';

/** The agents report a `--json` run saved (its `agents` object). */
export function agentsReportFromJson(j: Record<string, unknown>): AgentsBenchReport {
  const settings = j.settings as AgentsBenchReport['settings'] | undefined;
  if (!settings?.games) throw new Error('the JSON has no agents settings (write it with --only agents --json FILE)');
  const games: GameReport[] = GAMES.filter((g) => j[g] !== undefined).map((game) => {
    const x = j[game] as { seats: string[]; warm_start: string; runs: GameReport['runs'] };
    return { game, run: settings.games[game], seats: x.seats, warmStart: x.warm_start, runs: x.runs };
  });
  return { settings, games, seconds: j.seconds as number };
}

/**
 * The markdown with the agents section rendered from `json` (a --json run), and the figures to write
 * beside it (by suffix). `figure` names a figure file from its suffix.
 */
export function rerenderAgents(json: Record<string, unknown>, existing: string | null, figure: (suffix: string) => string): { markdown: string; figures: Map<string, string> } {
  if (typeof json.agents !== 'object' || json.agents === null) throw new Error('the JSON has no agents results (write them with --only agents --json FILE)');
  const run = json.run as RunInfo | undefined;
  let measured: string;
  if (run) measured = measuredLine(run);
  else {
    const line = existing ? parseSections(existing).get('agents')?.split('\n').find((l) => l.startsWith(`_Measured ${json.date} `)) : undefined;
    if (!line) throw new Error(`the JSON does not name its run (written before --from-json) and the markdown's agents section is not that run's (${json.date})`);
    measured = line;
  }
  if (existing === null) throw new Error('no markdown to update: --from-json rewrites a section of an existing file');
  const header = existing.slice(0, existing.indexOf(HEADER_END) + HEADER_END.length);
  const rep = agentsReportFromJson(json.agents as Record<string, unknown>);
  const sections = new Map([['agents', agentsMarkdown(rep, measured, json.quick === true, figure)]]);
  return { markdown: updateMarkdown(existing, header, sections, PARTS), figures: new Map(agentsFigures(rep)) };
}
