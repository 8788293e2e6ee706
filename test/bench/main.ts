/**
 * `npm run bench [-- --only PART] [--quick] [--json FILE]` — the benchmarks, under Deno's WebGPU.
 *
 * Parts: kernels (ours beside tfjs-backend-webgpu and jax-js), model (training steps, decoding and
 * LoRA vs full memory of the whole engine beside the tfjs reference model and jax-js), pretrained
 * (opt-in: SmolLM2-135M and Qwen2.5-0.5B shapes beside torch CPU), scheduler (the runtime's scheduler
 * with the engine in the GPU worker), algorithms (issue 5's guess-number run of grpo, ppo, rloo and
 * dpo from one warm start), and paper (issue 8: LoRA vs full-parameter RL, reproducibility across
 * runs, resumes and adapters), agents (issue 25: trainAgents on the
 * signalling, sale and nim games over three seeds), and fleet (issue 21: jobs on NATS
 * JetStream — failover after a SIGKILL, checkpoint MB/s, queue overhead, 1 vs 2 workers).
 * Prints a table per part, writes the JSON when asked, and regenerates the sections of the parts
 * that ran in BENCHMARKS.md (a `--quick` smoke run writes it only when `--markdown` names a file),
 * with a part's figures beside it (BENCHMARKS.<figure>.svg).
 * Exit status: 0; 1 when a part failed or implementations disagree numerically; 2 on bad flags.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { cpus, loadavg, release } from 'node:os';
import { type BenchArgs, BenchArgsError, benchHelp, DEFAULT_MARKDOWN, IMPLEMENTED_PARTS, PARTS, parseBenchArgs } from './args.ts';
import type { Impl, ImplName } from './impl.ts';
import { ALGORITHMS_QUICK, ALGORITHMS_RUN, algorithmsMarkdown, runAlgorithms } from './algorithms.ts';
import { kernelsMarkdown, runKernels } from './kernels.ts';
import { modelMarkdown, runModel } from './model.ts';
import { pretrainedMarkdown, runPretrained } from './pretrained.ts';
import { type AdapterInfo, type MachineInfo, measuredLine, renderHeader, type RunInfo, updateMarkdown } from './markdown.ts';
import { Ours } from './ours.ts';
import { runPaper } from './paper.ts';
import { paperFigures, paperJson, paperMarkdown } from './paper_report.ts';
import { PAPER_QUICK, PAPER_RUN } from './paper_settings.ts';
import { runAgentsBench } from './agents.ts';
import { rerenderAgents } from './rerender.ts';
import { agentsFigures, agentsJson, agentsMarkdown } from './agents_report.ts';
import { AGENTS_QUICK, AGENTS_RUN } from './agents_settings.ts';
import { runScheduler, schedulerMarkdown } from './scheduler.ts';
import { FLEET_QUICK, FLEET_RUN, fleetMarkdown, runFleet } from './fleet.ts';
import { JaxPeer } from './peers/jax.ts';
import { TfjsPeer } from './peers/tfjs.ts';

const log = (s: string) => console.log(s);

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** Whether a sys permission was granted (asking would prompt on a terminal, so query first). */
function sysAllowed(kind: 'cpus' | 'osRelease' | 'loadavg'): boolean {
  return Deno.permissions.querySync({ name: 'sys', kind }).state === 'granted';
}

/**
 * The machine: CPU model and count, OS, Deno. Deno reads /proc only with --allow-all, so the CPU
 * model, kernel release and load average come through node:os under `--allow-sys=cpus,osRelease,loadavg`
 * (the bench script grants exactly those); without them they are reported as unknown.
 */
function machineInfo(): MachineInfo {
  const cpuList = sysAllowed('cpus') ? cpus() : [];
  const pretty = readText('/etc/os-release')?.match(/^PRETTY_NAME="?([^"\n]+)"?$/m)?.[1];
  const kernel = sysAllowed('osRelease') ? `${Deno.build.os} ${release()}` : Deno.build.os;
  const load = sysAllowed('loadavg') ? loadavg() : null;
  return {
    cpu: cpuList[0]?.model?.trim() || 'unknown CPU',
    cores: navigator.hardwareConcurrency ?? cpuList.length,
    os: [pretty, kernel, Deno.build.arch].filter((s) => s).join(', '),
    deno: Deno.version.deno,
    loadavg: load && load.length === 3 && load.every((x) => Number.isFinite(x)) ? load : null,
  };
}

async function main(args: BenchArgs): Promise<number> {
  /** A figure's file beside the markdown file, from its suffix (BENCHMARKS.md → BENCHMARKS.<suffix>). */
  const figureName = (suffix: string) => `${basename(args.markdown ?? DEFAULT_MARKDOWN).replace(/\.md$/, '')}.${suffix}`;
  if (args.fromJson) {
    // Nothing measured: the section rendered again from the saved run (test/bench/rerender.ts).
    const markdown = args.markdown!;
    const r = rerenderAgents(JSON.parse(readFileSync(args.fromJson, 'utf8')), readText(markdown), figureName);
    writeFileSync(markdown, r.markdown);
    log(`wrote ${markdown} (sections: agents, from ${args.fromJson})`);
    for (const [suffix, svg] of r.figures) {
      const path = join(dirname(markdown), figureName(suffix));
      writeFileSync(path, svg);
      log(`wrote ${path}`);
    }
    return 0;
  }
  const ours = new Ours();
  try {
    await ours.init();
  } catch (e) {
    console.error(`bench: WebGPU is not available: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
  const a = ours.ctx.adapter;
  const adapter: AdapterInfo = {
    vendor: a.vendor, architecture: a.architecture, device: a.device, description: a.description,
    isFallbackAdapter: a.isFallbackAdapter, features: a.features,
    ...(Deno.env.get('DENO_WEBGPU_BACKEND') ? { backend: Deno.env.get('DENO_WEBGPU_BACKEND') } : {}),
  };
  const run: RunInfo = {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    adapter,
    machine: machineInfo(),
    command: `npm run bench${args.argv.length ? ` -- ${args.argv.join(' ')}` : ''}`,
  };
  log(`bench: ${run.command}`);
  const notYet = PARTS.filter((p) => !IMPLEMENTED_PARTS.includes(p));
  if (notYet.length) log(`bench: parts not implemented yet (skipped): ${notYet.join(', ')}`);
  log(`adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.description}; machine: ${run.machine.cpu}, ${run.machine.cores} cores`);

  const json: Record<string, unknown> = { adapter: { ...a }, machine: run.machine, date: run.date, quick: args.quick, run };
  const sectionMakers = new Map<string, () => string>();
  /** Figures written beside the markdown file, by suffix (BENCHMARKS.md → BENCHMARKS.<suffix>). */
  const figures = new Map<string, string>();
  let failed = false;
  for (const part of args.parts) {
    log(`\n=== ${part}`);
    try {
      if (part === 'kernels') {
        const impls: Impl[] = [ours];
        const down: Partial<Record<ImplName, string>> = {};
        for (const peer of [new TfjsPeer(), new JaxPeer()]) {
          try {
            await peer.init();
            impls.push(peer);
          } catch (e) {
            down[peer.name] = e instanceof Error ? e.message : String(e);
            log(`${peer.name}: unavailable, its columns will be null: ${down[peer.name]}`);
          }
        }
        const rep = await runKernels(impls, down, { quick: args.quick, filter: args.filter, log, device: ours.ctx.device });
        json.results = rep.results;
        json.checks = rep.checks;
        json.device_peak = rep.peak && { ...rep.peak, tflops: rep.peak.gflops / 1000 };
        sectionMakers.set('kernels', () => kernelsMarkdown(rep, measuredLine(run), args.quick));
        if (rep.failures.length) {
          failed = true;
          for (const f of rep.failures) console.error(`bench: ${f}`);
        }
      } else if (part === 'model') {
        const rep = await runModel({ quick: args.quick, log, ctx: ours.ctx });
        json.model_results = rep.results;
        json.model_checks = rep.checks;
        json.memory = rep.memory;
        sectionMakers.set('model', () => modelMarkdown(rep, measuredLine(run), args.quick));
        if (rep.failures.length) {
          failed = true;
          for (const f of rep.failures) console.error(`bench: ${f}`);
        }
      } else if (part === 'pretrained') {
        const rep = await runPretrained({ ctx: ours.ctx, quick: args.quick, log });
        json.pretrained = rep;
        sectionMakers.set('pretrained', () => pretrainedMarkdown(rep, measuredLine(run), args.quick));
        if (rep.failures.length) {
          failed = true;
          for (const f of rep.failures) console.error(`bench: ${f}`);
        }
      } else if (part === 'scheduler') {
        const rep = await runScheduler({ quick: args.quick, log });
        json.scheduler = rep.scheduler;
        json.scheduler_details = rep.details;
        json.scheduler_targets = rep.targets;
        json.scheduler_load = rep.load;
        sectionMakers.set('scheduler', () => schedulerMarkdown(rep, measuredLine(run), args.quick));
      } else if (part === 'algorithms') {
        const rep = await runAlgorithms(args.quick ? ALGORITHMS_QUICK : ALGORITHMS_RUN, log);
        json.algorithms = {
          env: rep.settings.env, model: rep.settings.model, seed: rep.settings.seed, steps: rep.settings.steps, met: rep.met,
          results: Object.fromEntries(rep.results.map((r) => [r.algo, { first: r.first, last: r.last, gain: r.gain, met: r.met, rewardCurve: r.rewardCurve, successBefore: r.successBefore, successAfter: r.successAfter, seconds: r.seconds }])),
        };
        sectionMakers.set('algorithms', () => algorithmsMarkdown(rep, measuredLine(run), args.quick));
      } else if (part === 'paper') {
        const rep = await runPaper(args.quick ? PAPER_QUICK : PAPER_RUN, log);
        Object.assign(json, paperJson(rep));
        for (const [suffix, svg] of paperFigures(rep)) figures.set(suffix, svg);
        sectionMakers.set('paper', () => paperMarkdown(rep, measuredLine(run), args.quick, figureName));
      } else if (part === 'agents') {
        const rep = await runAgentsBench(args.quick ? AGENTS_QUICK : AGENTS_RUN, log);
        Object.assign(json, agentsJson(rep));
        for (const [suffix, svg] of agentsFigures(rep)) figures.set(suffix, svg);
        sectionMakers.set('agents', () => agentsMarkdown(rep, measuredLine(run), args.quick, figureName));
      } else if (part === 'fleet') {
        const rep = await runFleet(args.quick ? FLEET_QUICK : FLEET_RUN, log);
        json.fleet = rep.figures;
        json.fleet_settings = rep.settings;
        json.fleet_targets = rep.targets;
        sectionMakers.set('fleet', () => fleetMarkdown(rep, measuredLine(run), args.quick));
      } else {
        throw new Error(`part ${part} is not implemented yet`);
      }
    } catch (e) {
      failed = true;
      console.error(`bench: part ${part} failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    }
  }

  // The load at the end too: on a shared machine it says how far to trust the numbers.
  run.machine.loadavgEnd = machineInfo().loadavg;
  if (run.machine.loadavgEnd) log(`load average at start ${run.machine.loadavg?.join(' ')}, at end ${run.machine.loadavgEnd.join(' ')}`);
  const sections = new Map([...sectionMakers].map(([k, f]) => [k, f()]));
  if (args.json) {
    writeFileSync(args.json, `${JSON.stringify(json, null, 2)}\n`);
    log(`\nwrote ${args.json}`);
  }
  if (args.markdown && sections.size) {
    const old = existsSync(args.markdown) ? readFileSync(args.markdown, 'utf8') : null;
    writeFileSync(args.markdown, updateMarkdown(old, renderHeader(run), sections, PARTS));
    log(`wrote ${args.markdown} (sections: ${[...sections.keys()].join(', ')})`);
    for (const [suffix, svg] of figures) {
      const path = join(dirname(args.markdown), figureName(suffix));
      writeFileSync(path, svg);
      log(`wrote ${path}`);
    }
  }
  return failed ? 1 : 0;
}

let args: BenchArgs;
try {
  args = parseBenchArgs(Deno.args);
} catch (e) {
  if (!(e instanceof BenchArgsError)) throw e;
  console.error(`bench: ${e.message}\n\n${benchHelp()}`);
  Deno.exit(2);
}
if (args.help) {
  console.log(benchHelp());
  Deno.exit(0);
}
Deno.exit(await main(args));
