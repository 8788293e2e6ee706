// Deno suite: kill-and-resume of the job runner through file checkpoints (bitwise the same metrics).
import { jobResumeCases } from '../shared/cases/job_resume.ts';
import { registerCases } from '../shared/register.ts';

registerCases(jobResumeCases);
