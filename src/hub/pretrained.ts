/**
 * loadPretrained: a Hub repo id (or, under Deno/Node, a local folder in the same layout) → what the
 * engine needs to build a model: the ModelConfig (configFromHf), the weights as a TensorSource
 * over the safetensors file(s) — one file or shards from model.safetensors.index.json — already
 * checked against the config by planHfImport (names, shapes, dtypes; headers only), the tokenizer
 * (tokenizer.json + tokenizer_config.json; chat_template.jinja replaces the config's template
 * where a repo has one), the generation config's ids, and the resolved commit.
 *
 * Nothing goes to the GPU here and no tensor data is read: the weights stay in files (the cache's
 * blobs) and are read one tensor at a time by whoever imports them, e.g.
 * `BaseModel.upload(ctx, p.config, await importHfWeights(p.config, p.weights))`.
 *
 * Order of requests, as Python's snapshot_download: config.json resolves the revision to a commit;
 * every later file is asked for at that commit, so a branch moving mid-load cannot mix two
 * versions. Offline (HF_HUB_OFFLINE=1 or `offline: true`) the commit comes from refs/<revision>.
 * Online, a network failure on a file the cache holds for the ref's commit falls back to the cache.
 */
import { type ByteSource } from '../model/bytes.ts';
import type { ModelConfig } from '../model/config.ts';
import { configFromHf } from '../model/hf_config.ts';
import { isJsonObject, parseUntrustedJson } from '../model/json.ts';
import { openSafetensors, type SafetensorsFile } from '../model/safetensors.ts';
import { HfTokenizer } from '../model/tokenizer/hf.ts';
import { type HfImportPlan, planHfImport, shardedSource, type TensorSource } from '../model/weight_names.ts';
import { BrowserHubCache } from './browser_cache.ts';
import type { HubCache } from './cache.ts';
import { envVar, hasFileSystem, hubEndpoint, hubOffline, hubToken } from './env.ts';
import { HubError } from './errors.ts';
import { checkRepoFile, checkRepoId, checkRevision, fileMetadata, type HubRequest } from './http.ts';
import { parseGenerationConfig, type GenerationConfig } from './generation_config.ts';

/** Download progress of one file (LoadPretrainedOptions.onProgress). */
export interface HubProgress {
  /** File within the repo. */
  readonly file: string;
  readonly loaded: number;
  readonly total: number;
}

/** Settings of loadPretrained. */
export interface LoadPretrainedOptions {
  /** Branch, tag or commit sha (default 'main'). Ignored for a folder. */
  readonly revision?: string;
  /** Access token for gated or private repos (default HF_TOKEN). */
  readonly token?: string;
  /** Download progress per file (called with loaded = total for files already cached). */
  readonly onProgress?: (p: HubProgress) => void;
  readonly signal?: AbortSignal;
  /** Cache folder under Deno/Node (default HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub). */
  readonly cacheDir?: string;
  /** The storage to use instead (default: the folder above under Deno/Node, Cache Storage in browsers). */
  readonly cache?: HubCache;
  /** Use the cache only (default HF_HUB_OFFLINE). */
  readonly offline?: boolean;
  /** Hub origin (default HF_ENDPOINT, else https://huggingface.co). */
  readonly endpoint?: string;
  readonly fetch?: typeof fetch;
}

/** What loadPretrained returns: config, weights (read tensor by tensor), tokenizer, chat template, generation settings. */
export interface Pretrained {
  readonly config: ModelConfig;
  /** The checkpoint's tensors by their HF names (safetensors, single or sharded); files stay open until close(). */
  readonly weights: TensorSource;
  /** planHfImport(config, weights): checked, in import order (readHfImport reads it). */
  readonly plan: HfImportPlan;
  readonly tokenizer: HfTokenizer;
  readonly generation: GenerationConfig;
  /** The chat template's text (chat_template.jinja, else tokenizer_config.json's), if any. */
  readonly chatTemplate: string | undefined;
  /** The repo id, or the folder as given. */
  readonly repo: string;
  /** Where it was loaded from, as loadPretrained's arguments (no token): enough to load it again. */
  readonly source: { readonly repo: string; readonly revision?: string; readonly endpoint?: string; readonly cacheDir?: string; readonly offline?: boolean };
  /** The revision asked for (undefined for a folder). */
  readonly revision: string | undefined;
  /** The commit the revision resolved to (undefined for a folder). */
  readonly commit: string | undefined;
  /** The local folder holding the files: the snapshot folder, or the folder given; undefined in browsers. */
  readonly folder: string | undefined;
  /** Files read, relative to the repo. */
  readonly files: readonly string[];
  /** The text files read (config, generation config, tokenizer files, chat template) by name: what an exported adapter carries. */
  readonly texts: Readonly<Record<string, string>>;
  /** Closes the weight files. Idempotent. */
  close(): Promise<void>;
}

/** Opens one file of the repo or folder; `optional` ones give undefined when absent. */
interface Opener {
  (file: string, optional: boolean): Promise<ByteSource | undefined>;
  /** The error for a needed file found absent after optional lookups (offline: not cached). */
  absent(file: string, message: string): HubError;
}

async function text(open: Opener, file: string, optional: boolean, repo: string): Promise<string | undefined> {
  const src = await open(file, optional);
  if (!src) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(await src.read(0, src.size));
  } catch (e) {
    throw new HubError('bad-file', repo, `is not UTF-8 text: ${(e as Error)?.message ?? e}`, { file, cause: e });
  } finally {
    await src.close();
  }
}

function json(t: string, repo: string, file: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = parseUntrustedJson(t);
  } catch (e) {
    throw new HubError('bad-file', repo, `invalid JSON: ${(e as Error)?.message ?? e}`, { file, cause: e });
  }
  if (!isJsonObject(v)) throw new HubError('bad-file', repo, 'expected a JSON object', { file });
  return v;
}

/** The cache for these options: the given one, else the folder under Deno/Node, else Cache Storage. */
export async function hubCacheFor(opts: { cache?: HubCache; cacheDir?: string } = {}): Promise<HubCache> {
  if (opts.cache) return opts.cache;
  if (hasFileSystem()) {
    const { FsHubCache } = await import('./fs_cache.ts');
    return new FsHubCache(opts.cacheDir);
  }
  return new BrowserHubCache();
}

/** Is `x` an existing folder (Deno/Node only)? */
async function isFolder(x: string): Promise<boolean> {
  if (!hasFileSystem()) return false;
  return (await import('./fs_cache.ts')).isFolder(x);
}

/** Loads config, tokenizer, generation config and (checked, unread) weights from a Hub repo or a folder. */
export async function loadPretrained(repoOrDir: string, opts: LoadPretrainedOptions = {}): Promise<Pretrained> {
  if (await isFolder(repoOrDir)) return fromOpener({ repo: repoOrDir }, undefined, undefined, repoOrDir, await folderOpener(repoOrDir));
  checkRepoId(repoOrDir);
  const hub = await hubOpener(repoOrDir, opts);
  const source = {
    repo: repoOrDir, revision: hub.revision, ...(opts.endpoint !== undefined ? { endpoint: opts.endpoint } : {}),
    ...(opts.cacheDir !== undefined ? { cacheDir: opts.cacheDir } : {}), ...(opts.offline !== undefined ? { offline: opts.offline } : {}),
  };
  return fromOpener(source, hub.revision, hub.commit, undefined, hub.open, hub.folder);
}

/**
 * Some small text files of a repo or folder, without the weights: `required` ones (a HubError when
 * absent) and `optional` ones (left out when absent), and the commit the revision resolved to
 * (undefined for a folder). What a fleet submitter needs (config.json, for the memory estimate and
 * to pin the commit) and what an exported adapter carries (the tokenizer files).
 */
export async function readRepoTexts(repoOrDir: string, required: readonly string[], optional: readonly string[], opts: LoadPretrainedOptions = {}): Promise<{ texts: Record<string, string>; commit: string | undefined }> {
  let open: Opener;
  let commit = () => undefined as string | undefined;
  if (await isFolder(repoOrDir)) {
    open = await folderOpener(repoOrDir);
  } else {
    checkRepoId(repoOrDir);
    const hub = await hubOpener(repoOrDir, opts);
    open = hub.open;
    commit = hub.commit;
  }
  const texts: Record<string, string> = {};
  for (const [files, opt] of [[required, false], [optional, true]] as const) {
    for (const f of files) {
      const t = await text(open, f, opt, repoOrDir);
      if (t !== undefined) texts[f] = t;
    }
  }
  return { texts, commit: commit() };
}

async function folderOpener(dir: string): Promise<Opener> {
  const { openFolderFile } = await import('./fs_cache.ts');
  const open = async (file: string, optional: boolean) => {
    checkRepoFile(dir, file);
    const src = await openFolderFile(dir, file);
    if (!src && !optional) throw new HubError('not-found', dir, `no file "${file}" in the folder`, { file });
    return src;
  };
  return Object.assign(open, { absent: (file: string, message: string) => new HubError('not-found', dir, message, { file }) });
}

interface HubOpener {
  readonly revision: string;
  /** Resolved once config.json was asked for. */
  readonly commit: () => string | undefined;
  readonly folder: () => string | undefined;
  readonly open: Opener;
}

async function hubOpener(repo: string, opts: LoadPretrainedOptions): Promise<HubOpener> {
  const revision = opts.revision ?? 'main';
  checkRevision(repo, revision);
  const cache = await hubCacheFor(opts);
  const offline = opts.offline ?? hubOffline();
  const base: HubRequest = {
    repo, revision, endpoint: opts.endpoint ?? hubEndpoint(), token: opts.token ?? hubToken(), fetch: opts.fetch, signal: opts.signal,
  };
  let commit: string | undefined;
  const notCached = (file?: string) =>
    new HubError('offline-not-cached', repo, `offline${envVar('HF_HUB_OFFLINE') ? ' (HF_HUB_OFFLINE is set)' : ''} and ${file ? 'this file' : `revision "${revision}"`} is not in the cache at ${cache.location}; run once online to download it`, { file, cacheDir: cache.location });
  const fromCache = async (file: string, optional: boolean) => {
    commit ??= await cache.commitOf(repo, revision);
    if (!commit) throw notCached();
    const src = await cache.open(repo, commit, file);
    if (!src && !optional) throw notCached(file);
    if (src) opts.onProgress?.({ file, loaded: src.size, total: src.size });
    return src;
  };
  const get = async (file: string, optional: boolean) => {
    if (offline) return fromCache(file, optional);
    const req = { ...base, revision: commit ?? revision };
    let meta;
    try {
      meta = await fileMetadata(req, file);
    } catch (e) {
      if (e instanceof HubError && e.kind === 'not-found' && e.file === file && optional && commit) {
        await cache.markMissing(repo, commit, file);
        return undefined;
      }
      // As Python: unreachable Hub, but the file is cached for the ref's commit → use it.
      if (e instanceof HubError && e.kind === 'network') {
        const cached = await fromCache(file, optional).catch(() => undefined);
        if (cached) return cached;
        if (optional && commit && (await cache.isMissing(repo, commit, file))) return undefined;
      }
      throw e;
    }
    if (commit === undefined) {
      commit = meta.commit;
      await cache.setRef(repo, revision, commit);
    }
    await cache.fetchFile(req, file, meta, { onProgress: (loaded, total) => opts.onProgress?.({ file, loaded, total }) });
    const src = await cache.open(repo, commit, file);
    if (!src) throw new HubError('cache', repo, `downloaded, but not found in ${cache.location} afterwards`, { file, cacheDir: cache.location });
    opts.onProgress?.({ file, loaded: src.size, total: src.size }); // also for a file the cache already held
    return src;
  };
  const absent = (file: string, message: string) => (offline ? notCached(file) : new HubError('not-found', repo, message, { file }));
  const open: Opener = Object.assign(get, { absent });
  return { revision, commit: () => commit, folder: () => (commit ? cache.snapshotFolder(repo, commit) : undefined), open };
}

async function fromOpener(
  source: Pretrained['source'], revision: string | undefined, commit: (() => string | undefined) | undefined, dir: string | undefined, open: Opener,
  folder?: () => string | undefined,
): Promise<Pretrained> {
  const repo = source.repo;
  const files: string[] = [];
  const texts: Record<string, string> = {};
  const read = async (file: string, optional: boolean) => {
    const t = await text(open, file, optional, repo);
    if (t !== undefined) {
      files.push(file);
      texts[file] = t;
    }
    return t;
  };
  const configText = (await read('config.json', false)) as string;
  const config = configFromHf(configText, { name: repo, file: `${repo}/config.json` });
  const configJson = json(configText, repo, 'config.json');
  const genText = await read('generation_config.json', true);
  const tokText = (await read('tokenizer.json', false)) as string;
  const tokConfigText = await read('tokenizer_config.json', true);
  const jinja = await read('chat_template.jinja', true);
  await read('special_tokens_map.json', true); // not needed to load; kept for exported adapters
  const tokConfig = tokConfigText === undefined ? {} : json(tokConfigText, repo, 'tokenizer_config.json');
  if (jinja !== undefined) tokConfig.chat_template = jinja; // transformers ≥ 4.43 saves the template beside the config
  const tokenizer = HfTokenizer.fromJSON(json(tokText, repo, 'tokenizer.json'), tokConfig);
  const generation = parseGenerationConfig(genText === undefined ? undefined : json(genText, repo, 'generation_config.json'), configJson, tokenizer, repo);
  const opened: SafetensorsFile[] = [];
  const close = async () => {
    await Promise.all(opened.splice(0).map((f) => f.close()));
  };
  try {
    const weights = await openWeights(open, repo, files, opened);
    const plan = planHfImport(config, weights);
    return {
      config, weights, plan, tokenizer, generation, chatTemplate: tokenizer.chatTemplate(), repo, source, revision, commit: commit?.(),
      folder: dir ?? folder?.(), files, texts, close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/** model.safetensors, else model.safetensors.index.json and its shards. */
async function openWeights(open: Opener, repo: string, files: string[], opened: SafetensorsFile[]): Promise<TensorSource> {
  const st = async (file: string) => {
    const src = (await open(file, false)) as ByteSource;
    const f = await openSafetensors(src);
    opened.push(f);
    files.push(file);
    return f;
  };
  const single = await open('model.safetensors', true);
  if (single) {
    const f = await openSafetensors(single);
    opened.push(f);
    files.push('model.safetensors');
    return f;
  }
  const indexFile = 'model.safetensors.index.json';
  const indexText = await text(open, indexFile, true, repo);
  if (indexText === undefined) {
    throw open.absent('model.safetensors', 'has neither model.safetensors nor model.safetensors.index.json (only safetensors checkpoints are read)');
  }
  files.push(indexFile);
  const map = json(indexText, repo, indexFile).weight_map;
  if (!isJsonObject(map)) throw new HubError('bad-file', repo, '"weight_map" must be an object of tensor name → shard file', { file: indexFile });
  const shardOf = new Map<string, string>();
  for (const [name, shard] of Object.entries(map)) {
    if (typeof shard !== 'string') throw new HubError('bad-file', repo, `weight_map["${name}"] must be a file name`, { file: indexFile });
    checkRepoFile(repo, shard);
    shardOf.set(name, shard);
  }
  const shards = [...new Set(shardOf.values())].sort();
  if (shards.length === 0) throw new HubError('bad-file', repo, 'weight_map is empty', { file: indexFile });
  const sources: SafetensorsFile[] = [];
  for (const s of shards) sources.push(await st(s));
  const source = shardedSource(sources, `${repo}/${shards.length === 1 ? shards[0] : `{${shards.join(', ')}}`}`);
  for (const [name, shard] of shardOf) {
    const holder = sources.find((s) => s.has(name));
    if (!holder || holder !== sources[shards.indexOf(shard)]) {
      throw new HubError('bad-file', repo, `weight_map puts "${name}" in ${shard}, but ${holder ? `it is in ${holder.name}` : 'no shard has it'}`, { file: indexFile });
    }
  }
  return source;
}
