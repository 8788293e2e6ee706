/**
 * Admission against the adapter's per-buffer limit. The scheduler's budget bounds a job's total
 * bytes; a device also caps every single buffer (maxBufferSize: 2 GiB on llvmpipe, often 256 MiB
 * to 4 GiB on real GPUs). A job whose largest buffer passes it would fail in the middle of its
 * allocations (the pool's LimitError), so it is refused first, from the estimate alone, with the
 * buffer and the numbers — before the scheduler reserves anything or the worker allocates.
 */
import type { AdapterSummary } from '../gpu/device.ts';
import type { BufferNeed } from '../model/memory.ts';
import { AdmissionError } from './errors.ts';

/** Throws AdmissionError naming `need` when it is over the adapter's maxBufferSize (no limit reported: no check). */
export function checkBufferFits(jobId: string, need: BufferNeed, adapter: Pick<AdapterSummary, 'limits'>, remedy: string): void {
  const limit = adapter.limits.maxBufferSize;
  if (limit === undefined || need.bytes <= limit) return;
  throw new AdmissionError(
    jobId,
    `its largest buffer, ${need.name}, needs ${need.bytes} bytes, more than this device's maxBufferSize of ${limit} bytes — ${remedy}`,
    { neededBytes: need.bytes, limitBytes: limit, limit: 'maxBufferSize', buffer: need.name },
  );
}
