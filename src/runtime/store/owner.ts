/**
 * Who is writing (file backend, Deno and Node): a tag of this process — its pid and a hash of the
 * host (hostname and pid namespace, so two containers sharing a volume do not take each other's
 * pids for their own) — and whether the process a tag names still runs. A sweep removes what a
 * writer left only when that writer has certainly ended, or, where that cannot be known (another
 * host, no /proc, no permission), when the leftover is old.
 *
 * Under Deno nothing here may prompt for a permission: each probe first asks
 * `Deno.permissions.querySync` and is skipped unless already granted. Deno refuses /proc without
 * --allow-all, so there the host is /etc/hostname (or Deno.hostname() with --allow-sys) and a pid
 * is checked with a signal-0 kill only when --allow-run is granted; otherwise age decides.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import process from 'node:process';

interface DenoLike {
  pid: number;
  hostname(): string;
  permissions: { querySync(d: { name: string; path?: string; kind?: string }): { state: string } };
}
const deno = (globalThis as { Deno?: DenoLike }).Deno;

function granted(d: { name: string; path?: string; kind?: string }): boolean {
  if (!deno) return true; // Node: no permission model in the default mode
  try {
    return deno.permissions.querySync(d).state === 'granted';
  } catch {
    return false;
  }
}

function fnv(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function hostId(): string {
  const parts: string[] = [];
  try {
    if (!deno) parts.push(hostname());
    else if (granted({ name: 'sys', kind: 'hostname' })) parts.push(deno.hostname());
    else if (granted({ name: 'read', path: '/etc/hostname' })) parts.push(readFileSync('/etc/hostname', 'utf8').trim());
  } catch { /* unknown host */ }
  try {
    if (!deno) parts.push(readlinkSync('/proc/self/ns/pid'));
  } catch { /* no pid namespaces here */ }
  return parts.some((p) => p) ? fnv(parts.join('|')).toString(36) : '';
}

const HOST = hostId();
const PID = deno?.pid ?? process.pid;

/** This process's tag: `<pid base 36>.<host hash>` (the hash empty when the host is unknown). */
export const OWNER_TAG = `${PID.toString(36)}.${HOST}`;

/** Whether the process with this pid on this host has ended; undefined when it cannot be known. */
async function pidGone(pid: number): Promise<boolean | undefined> {
  if (!deno) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      // "pid (comm) S ...": a zombie (Z) or dead (X) process no longer writes anything.
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      return state === 'Z' || state === 'X';
    } catch { /* no /proc (not Linux), or no such process: ask with a signal */ }
  } else if (!granted({ name: 'run' })) {
    return undefined; // Deno without --allow-run cannot signal (and must not prompt)
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    const code = (e as { code?: string }).code;
    return code === 'ESRCH' ? true : code === 'EPERM' ? false : undefined;
  }
}

/** Whether the writer `tag` names has certainly ended (see the header); our own tag is alive. */
export function ownerGone(tag: string): Promise<boolean | undefined> {
  const m = /^([0-9a-z]+)\.([0-9a-z]*)$/.exec(tag);
  if (!m || !m[2] || m[2] !== HOST) return Promise.resolve(undefined);
  const pid = parseInt(m[1], 36);
  if (pid === PID) return Promise.resolve(false);
  return pidGone(pid);
}
