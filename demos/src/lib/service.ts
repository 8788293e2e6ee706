/**
 * The page's one WorkerService — one GPU worker and one scheduler per page, started on first use
 * and shared by every job and widget on the page — and error text for people.
 */
import { WebtinkerError, WorkerService } from '../../../src/mod.ts';

let service: Promise<WorkerService> | null = null;

export function pageService(): Promise<WorkerService> {
  if (!service) {
    service = WorkerService.start({ tokenizer: { kind: 'byte' } });
    service.catch(() => (service = null));
  }
  return service;
}

export function errorText(e: unknown): string {
  if (e instanceof WebtinkerError) return e.message;
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  return String(e);
}
