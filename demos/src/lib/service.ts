/**
 * The page's one WorkerService — one GPU worker and one scheduler per page, started on first use
 * and shared by every job and widget on the page — and error text for people.
 */
import { WebtinkerError, WorkerService } from '../../../src/mod.ts';

let service: Promise<WorkerService> | null = null;

/**
 * The page's service, started on the first call. `memoryBudgetBytes` (admission's budget: what the
 * page lets its jobs reserve; the WorkerService default otherwise) counts only on that first call.
 */
export function pageService(opts: { memoryBudgetBytes?: number } = {}): Promise<WorkerService> {
  if (!service) {
    service = WorkerService.start({ tokenizer: { kind: 'byte' }, ...(opts.memoryBudgetBytes !== undefined ? { memoryBudgetBytes: opts.memoryBudgetBytes } : {}) });
    service.catch(() => (service = null));
  }
  return service;
}

export function errorText(e: unknown): string {
  if (e instanceof WebtinkerError) return e.message;
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}
