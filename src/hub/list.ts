/**
 * Listing and deleting cached models, in whichever cache this runtime uses (the Hugging Face cache
 * folder under Deno/Node — Python's downloads included — or Cache Storage in a browser).
 */
import type { CachedModel, HubCache } from './cache.ts';
import { checkRepoId } from './http.ts';
import { hubCacheFor } from './pretrained.ts';

/** Which cache listCachedModels and deleteCachedModel work on. */
export interface CacheOptions {
  /** Cache folder under Deno/Node (default by HF_HUB_CACHE / HF_HOME). */
  readonly cacheDir?: string;
  /** Another cache (e.g. a BrowserHubCache with its own name). */
  readonly cache?: HubCache;
}

/** Every cached repo with its snapshots, the refs pointing at them, and the bytes its blobs take. */
export async function listCachedModels(opts: CacheOptions = {}): Promise<CachedModel[]> {
  return (await hubCacheFor(opts)).list();
}

/** Deletes one repo from the cache (all revisions); false when it was not cached. */
export async function deleteCachedModel(repo: string, opts: CacheOptions = {}): Promise<boolean> {
  checkRepoId(repo);
  return (await hubCacheFor(opts)).delete(repo);
}
