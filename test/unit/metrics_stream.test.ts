// The metrics stream: token-weighted loss statistics, reward spread, listeners, JSONL sinks (memory store).
import { describe, expect, it } from 'vitest';
import { jsonLine, kvMetricsSink, MetricsStream, readKvMetrics, spread, stepLossStats } from '../../src/runtime/metrics.ts';
import { MemoryKv } from '../../src/runtime/store/kv.ts';

const stats = (clipFraction: number, approxKl: number, entropy: number) => ({ clipFraction, approxKl, refKl: 0, entropy });

describe('metrics stream', () => {
  it('weighs micro-batch statistics by their tokens', () => {
    const s = stepLossStats([{ tokens: 30, stats: stats(0.1, 0.02, 2) }, { tokens: 10, stats: stats(0.5, -0.02, 4) }]);
    expect(s.clipFraction).toBeCloseTo(0.2, 12);
    expect(s.approxKl).toBeCloseTo(0.01, 12);
    expect(s.entropy).toBeCloseTo(2.5, 12);
    expect(stepLossStats([])).toEqual({ clipFraction: 0, approxKl: 0, refKl: 0, entropy: 0 });
  });

  it('spread is the population standard deviation', () => {
    expect(spread([1, 3])).toBe(1);
    expect(spread([2, 2, 2])).toBe(0);
    expect(spread([5])).toBe(0);
  });

  it('hands steps to listeners at once and their lines to the sink in order; NaN survives as text', async () => {
    const lines: string[] = [];
    const stream = new MetricsStream<{ step: number; loss: number }>(async (l) => {
      await new Promise((r) => setTimeout(r, 2 - lines.length)); // a slower first write must not reorder
      lines.push(l);
    });
    const seen: number[] = [];
    const off = stream.on((m) => seen.push(m.step));
    stream.push({ step: 0, loss: 1.5 });
    stream.push({ step: 1, loss: NaN });
    off();
    stream.push({ step: 2, loss: 0.5 });
    expect(seen).toEqual([0, 1]);
    await stream.flushed();
    expect(lines).toEqual([jsonLine({ step: 0, loss: 1.5 }), '{"step":1,"loss":"NaN"}', '{"step":2,"loss":0.5}']);
    expect(stream.all().map((m) => m.step)).toEqual([0, 1, 2]);
  });

  it('keeps a run as JSONL lines in a key-value store, continuing after an earlier session', async () => {
    const kv = new MemoryKv();
    const first = new MetricsStream<{ step: number }>(kvMetricsSink(kv, 'run-1'));
    for (let i = 0; i < 3; i++) first.push({ step: i });
    await first.flushed();
    const second = new MetricsStream<{ step: number }>(kvMetricsSink(kv, 'run-1'));
    second.push({ step: 3 });
    await second.flushed();
    expect(await readKvMetrics(kv, 'run-1')).toEqual([{ step: 0 }, { step: 1 }, { step: 2 }, { step: 3 }]);
    expect(await readKvMetrics(kv, 'other')).toEqual([]);
  });
});
