// `node scripts/deno.mjs ARGS...` — run Deno (from the `deno` npm package) with ARGS, after
// installing dependencies if needed, in the environment WebGPU wants. Used by `npm run train`.
import { spawnSync } from 'node:child_process';
import { denoBin, denoEnv, ensureInstalled, root } from './env.mjs';

ensureInstalled();
const r = spawnSync(denoBin(), process.argv.slice(2), { cwd: root, stdio: 'inherit', env: denoEnv() });
process.exit(r.status ?? 1);
