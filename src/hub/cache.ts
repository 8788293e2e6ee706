/**
 * The storage behind the loader: one interface, two implementations — the Hugging Face cache
 * folder under Deno and Node (fs_cache.ts, shared with Python's huggingface_hub) and Cache Storage
 * in browsers (browser_cache.ts, survives reloads). Both keep the Hub's model: a revision (branch,
 * tag) points at a commit; a commit's snapshot holds files; a file's bytes are a blob named by
 * its etag (sha256 for LFS files, git sha1 otherwise), checked against that name when stored.
 *
 * Also the hash check both use: the expected digest is the etag itself, so nothing has to be
 * trusted beyond the Hub's HEAD answer.
 */
import type { ByteSource } from '../model/bytes.ts';
import type { FetchIntoOptions, FileMetadata, HubRequest } from './http.ts';

/** A repo in a cache, as listCachedModels reports it. */
export interface CachedModel {
  readonly repo: string;
  /** Commits with a snapshot, and the revisions (refs) pointing at each. */
  readonly snapshots: readonly { readonly commit: string; readonly refs: readonly string[]; readonly files: readonly string[] }[];
  /** Bytes the repo's blobs take (each blob once, however many snapshots share it). */
  readonly sizeBytes: number;
  /** Where it lives: a folder, or the Cache Storage name and key prefix. */
  readonly location: string;
}

/** Where loadPretrained keeps what it downloads (the HF cache folder, or Cache Storage). */
export interface HubCache {
  /** For messages: the cache folder, or the Cache Storage name. */
  readonly location: string;
  /** The commit a revision points at (a commit sha is itself), or undefined when unknown here. */
  commitOf(repo: string, revision: string): Promise<string | undefined>;
  /** Records that `revision` points at `commit` (nothing to do when they are equal). */
  setRef(repo: string, revision: string, commit: string): Promise<void>;
  /** A snapshot file, or undefined when not cached. */
  open(repo: string, commit: string, file: string): Promise<ByteSource | undefined>;
  /** Remembers that a file does not exist at a commit (so offline loads skip optional files). */
  markMissing(repo: string, commit: string, file: string): Promise<void>;
  /** Whether markMissing recorded this file as absent at this commit. */
  isMissing(repo: string, commit: string, file: string): Promise<boolean>;
  /** Makes the snapshot file present: from a blob already held, else downloaded (resumed, verified). */
  fetchFile(req: HubRequest, file: string, meta: FileMetadata, opts?: FetchIntoOptions): Promise<void>;
  /** The snapshot folder of a commit, where files are plain paths (undefined in browsers). */
  snapshotFolder(repo: string, commit: string): string | undefined;
  list(): Promise<CachedModel[]>;
  /** Deletes a repo's blobs, snapshots and refs; false when nothing was cached. */
  delete(repo: string): Promise<boolean>;
}

/** How an etag names its blob's content: 'sha256' (LFS), 'git-sha1' (regular files), or not a hash we know. */
export function etagHashKind(etag: string): 'sha256' | 'git-sha1' | undefined {
  if (/^[0-9a-f]{64}$/.test(etag)) return 'sha256';
  if (/^[0-9a-f]{40}$/.test(etag)) return 'git-sha1';
  return undefined;
}

/** The git blob header hashed before a regular file's bytes ("blob <size>\0"). */
export function gitBlobHeader(size: number): Uint8Array {
  return new TextEncoder().encode(`blob ${size}\0`);
}

export function hex(bytes: ArrayBuffer | Uint8Array): string {
  return Array.from(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** Digest of in-memory bytes by WebCrypto (browsers, Deno, Node), as the etag names it. */
export async function digestFor(etag: string, bytes: Uint8Array): Promise<string | undefined> {
  const kind = etagHashKind(etag);
  if (!kind) return undefined;
  if (kind === 'sha256') return hex(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  const head = gitBlobHeader(bytes.byteLength);
  const all = new Uint8Array(head.byteLength + bytes.byteLength);
  all.set(head, 0);
  all.set(bytes, head.byteLength);
  return hex(await crypto.subtle.digest('SHA-1', all));
}
