// Deno suite: kill-and-resume of the job runner through file checkpoints (bitwise the same metrics).
import { FileKv } from '../../src/runtime/store/fs_kv.ts';
import { jobResumeCases } from '../shared/cases/job_resume.ts';
import { registerCases } from '../shared/register.ts';

registerCases(jobResumeCases(async () => {
  const dir = await Deno.makeTempDir({ prefix: 'wt-resume-' });
  return () => new FileKv(dir);
}));
