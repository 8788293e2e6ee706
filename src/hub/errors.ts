/**
 * Typed errors of the Hub loader. One class, `HubError`, with a `kind` a caller can switch on and
 * the repo, file and cache folder involved, so a message never leaves the user guessing where to
 * look (which file was missing, which folder was searched offline, how to pass a token).
 */
import { WebtinkerError } from '../errors.ts';

/** What went wrong loading from the Hub or a folder (HubError.kind). */
export type HubErrorKind =
  /** The repo id is malformed. */
  | 'bad-repo-id'
  /** The revision is not a branch, tag or commit name (e.g. it has a '..' segment). */
  | 'bad-revision'
  /** 401/403: the repo is gated or private and no (or a refused) token was sent. */
  | 'gated'
  /** 404: no such repo, revision or file. */
  | 'not-found'
  /** Offline (HF_HUB_OFFLINE=1 or `offline: true`) and the file is not in the cache. */
  | 'offline-not-cached'
  /** The downloaded bytes do not match the hash (or size) the Hub advertised. */
  | 'integrity'
  /** The connection failed, and retries from where it stopped failed too. */
  | 'network'
  /** Another HTTP status, or a response missing what the Hub always sends. */
  | 'http'
  /** The caller's AbortSignal fired. */
  | 'aborted'
  /** A file in the repo or folder is malformed (e.g. model.safetensors.index.json). */
  | 'bad-file'
  /** The cache folder could not be read or written. */
  | 'cache';

/** Loading a checkpoint failed; `kind` says how, `repo` (and the message) which repo and file. */
export class HubError extends WebtinkerError {
  readonly kind: HubErrorKind;
  /** Repo id (or local folder) the error is about. */
  readonly repo: string;
  /** File within the repo, when one is involved. */
  readonly file: string | undefined;
  /** HTTP status, when the error came from a response. */
  readonly status: number | undefined;
  /** Cache folder searched or written, when one is involved. */
  readonly cacheDir: string | undefined;
  constructor(
    kind: HubErrorKind,
    repo: string,
    message: string,
    extra: { file?: string; status?: number; cacheDir?: string; cause?: unknown } = {},
  ) {
    super(`hub-${kind}`, `${repo}${extra.file ? `/${extra.file}` : ''}: ${message}`, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.kind = kind;
    this.repo = repo;
    this.file = extra.file;
    this.status = extra.status;
    this.cacheDir = extra.cacheDir;
  }
}
