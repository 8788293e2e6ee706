// Chromium suite: kill-and-resume of the job runner through IndexedDB checkpoints (bitwise the same metrics).
import { it } from 'vitest';
import { IdbKv } from '../../src/runtime/store/idb_kv.ts';
import { jobResumeCases } from '../shared/cases/job_resume.ts';
import { registerCases } from '../shared/register.ts';

registerCases(jobResumeCases(async () => {
  const db = `wt-resume-${Date.now()}`;
  return () => new IdbKv(db);
}), it);
