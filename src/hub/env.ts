/**
 * The environment variables Python's `huggingface_hub` reads, read the same way here so one
 * shell setup serves both: HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE, and the cache folder
 * (HF_HUB_CACHE, else HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub). In a browser there is no environment: every lookup is undefined.
 * Under Deno a variable the process may not read (no --allow-env) counts as unset.
 */
import { DEFAULT_ENDPOINT } from './http.ts';

interface DenoEnv {
  env: { get(name: string): string | undefined };
}
interface NodeProcess {
  env: Record<string, string | undefined>;
  versions?: { node?: string };
}

export function envVar(name: string): string | undefined {
  const deno = (globalThis as { Deno?: DenoEnv }).Deno;
  try {
    if (deno) return deno.env.get(name) || undefined;
  } catch {
    return undefined; // no permission to read it
  }
  const proc = (globalThis as { process?: NodeProcess }).process;
  return proc?.env?.[name] || undefined;
}

/** True under Deno and Node, where the Hugging Face cache lives in files. */
export function hasFileSystem(): boolean {
  if ((globalThis as { Deno?: unknown }).Deno !== undefined) return true;
  return typeof (globalThis as { process?: NodeProcess }).process?.versions?.node === 'string';
}

export function hubEndpoint(): string {
  return envVar('HF_ENDPOINT') ?? DEFAULT_ENDPOINT;
}

export function hubToken(): string | undefined {
  return envVar('HF_TOKEN') ?? envVar('HUGGING_FACE_HUB_TOKEN');
}

/** HF_HUB_OFFLINE as Python reads it: 1, ON, YES, TRUE (any case) mean offline. */
export function hubOffline(): boolean {
  return ['1', 'on', 'yes', 'true'].includes((envVar('HF_HUB_OFFLINE') ?? '').toLowerCase());
}

/** The cache folder by Python's rules; `home()` gives the user's home folder (asked only when needed). */
export function hubCacheDirFromEnv(home: () => string, join: (...parts: string[]) => string): string {
  const hubCache = envVar('HF_HUB_CACHE') ?? envVar('HUGGINGFACE_HUB_CACHE');
  if (hubCache) return hubCache;
  const hfHome = envVar('HF_HOME') ?? join(envVar('XDG_CACHE_HOME') ?? join(envVar('HOME') ?? envVar('USERPROFILE') ?? home(), '.cache'), 'huggingface');
  return join(hfHome, 'hub');
}
