/**
 * The train page's model picker and Hub cache panel. The picker lists the Hub models of
 * hub_models.ts (their committed configs) and, on request, a custom repo id — whose config.json
 * alone is read (from this origin's Cache Storage when it holds it, else from the Hub) — each
 * with its download size and whether a LoRA job on it fits this adapter, before anything large is
 * downloaded. The cache panel lists what Cache Storage holds (listCachedModels) and deletes it.
 *
 * The page's memory budget — admission's limit for its GPU worker — is not something a browser
 * reports: 1 GiB on a software adapter (SwiftShader), 4 GiB on a hardware one, or `?budget=MiB`.
 */
import { html, type TemplateResult } from 'lit';
import type { AdapterSummary } from '../../../src/gpu/device.ts';
import { HubError, type CachedModel, deleteCachedModel, listCachedModels } from '../../../src/hub/mod.ts';
import { readRepoTexts } from '../../../src/hub/pretrained.ts';
import type { ModelConfig } from '../../../src/model/config.ts';
import { configFromHf } from '../../../src/model/hf_config.ts';
import { type Fit, fmtBytes, HUB_MODELS, hubModelConfig, hubModelFit } from './hub_models.ts';
import { errorText } from './service.ts';

export interface PickerRow {
  readonly repo: string;
  /** Listed by the page (committed config), or asked for by id (its config.json read). */
  readonly custom: boolean;
  readonly cfg?: ModelConfig;
  readonly fit?: Fit;
  /** Why the row cannot be judged (its config could not be read or is not a family we run). */
  readonly error?: string;
}

/** The page's memory budget in bytes (see the header). */
export function pageBudgetBytes(software: boolean, budgetMiB: string | null): number {
  const n = budgetMiB === null ? NaN : Number(budgetMiB);
  if (Number.isFinite(n) && n > 0) return Math.round(n * 2 ** 20);
  return software ? 2 ** 30 : 4 * 2 ** 30;
}

/** Reads a repo's config.json: from the cache alone when it holds it (no request), else from the Hub. */
async function readConfig(repo: string, endpoint: string): Promise<ModelConfig> {
  const at = endpoint === '' ? {} : { endpoint };
  let texts: Record<string, string>;
  try {
    texts = (await readRepoTexts(repo, ['config.json'], [], { ...at, offline: true })).texts;
  } catch (e) {
    if (!(e instanceof HubError) || e.kind !== 'offline-not-cached') throw e;
    texts = (await readRepoTexts(repo, ['config.json'], [], at)).texts;
  }
  return configFromHf(texts['config.json'], { name: repo, file: `${repo}/config.json` });
}

export class ModelPicker {
  readonly rows: PickerRow[];
  custom: PickerRow | null = null;
  cached: CachedModel[] = [];
  cacheError: string | null = null;
  checking = false;
  readonly #adapter: AdapterSummary | null;

  constructor(adapter: AdapterSummary | null, readonly budgetBytes: number, private readonly changed: () => void) {
    this.#adapter = adapter;
    this.rows = HUB_MODELS.map((m) => this.#judge(m.repo, false, () => hubModelConfig(m)));
  }

  #judge(repo: string, custom: boolean, cfg: () => ModelConfig): PickerRow {
    try {
      const c = cfg();
      return { repo, custom, cfg: c, ...(this.#adapter ? { fit: hubModelFit(c, this.#adapter, this.budgetBytes) } : {}) };
    } catch (e) {
      return { repo, custom, error: errorText(e) };
    }
  }

  /** The row of a repo id, listed or custom (undefined when neither). */
  row(repo: string): PickerRow | undefined {
    return this.rows.find((r) => r.repo === repo) ?? (this.custom?.repo === repo ? this.custom : undefined);
  }

  /** Reads a custom repo's config.json and judges it. */
  async check(repo: string, endpoint: string): Promise<PickerRow> {
    const listed = this.rows.find((r) => r.repo === repo);
    if (listed) return listed;
    this.checking = true;
    this.changed();
    try {
      let cfg: ModelConfig | undefined;
      let error: string | undefined;
      try {
        cfg = await readConfig(repo, endpoint);
      } catch (e) {
        error = errorText(e);
      }
      this.custom = cfg ? this.#judge(repo, true, () => cfg) : { repo, custom: true, error };
      await this.refreshCache(); // config.json is in the cache now
      return this.custom;
    } finally {
      this.checking = false;
      this.changed();
    }
  }

  async refreshCache(): Promise<void> {
    try {
      this.cached = await listCachedModels();
      this.cacheError = null;
    } catch (e) {
      this.cacheError = `Could not read the Hub cache: ${errorText(e)}`;
    }
    this.changed();
  }

  async deleteCached(repo: string): Promise<void> {
    await deleteCachedModel(repo);
    await this.refreshCache();
  }

  /** The picker's table: every listed model (and the custom one), with a button to pick each that fits. */
  view(selected: string, disabled: boolean, pick: (repo: string) => void): TemplateResult {
    const all = this.custom && !this.rows.some((r) => r.repo === this.custom!.repo) ? [...this.rows, this.custom] : this.rows;
    const cachedBytes = (repo: string) => this.cached.find((c) => c.repo === repo)?.sizeBytes;
    return html`<table id="hub-models">
      <thead><tr><th>Hub model</th><th>parameters</th><th>download</th><th>LoRA job needs</th><th>on this adapter</th><th></th></tr></thead>
      <tbody>${all.map((r) => {
        const f = r.fit;
        const inCache = cachedBytes(r.repo);
        const state = r.error ? 'error' : !f ? 'unknown' : f.ok ? 'fits' : 'refused';
        return html`<tr data-repo=${r.repo} data-fit=${state} class=${selected === r.repo ? 'picked' : ''}>
          <td>${r.repo}${r.custom ? html` <span class="pill">custom</span>` : ''}</td>
          <td>${f ? `${(f.parameters / 1e6).toFixed(f.parameters < 1e7 ? 2 : 0)} M` : '–'}</td>
          <td>${f ? `≈ ${fmtBytes(f.downloadBytes)}` : '–'}${inCache !== undefined ? html` <span class="pill">${fmtBytes(inCache)} cached</span>` : ''}</td>
          <td>${f ? `${fmtBytes(f.reservedBytes)} of ${fmtBytes(f.budgetBytes)}` : '–'}</td>
          <td class="fit">${r.error ? html`<span class="error">${r.error}</span>` : !f ? 'no adapter' : f.ok ? html`<span class="info">fits</span>` : html`<span class="error">refused: ${f.reason}</span>`}</td>
          <td><button class="pick" ?disabled=${disabled || state !== 'fits' || selected === r.repo} @click=${() => pick(r.repo)}>${selected === r.repo ? 'picked' : 'Use'}</button></td>
        </tr>`;
      })}</tbody>
    </table>`;
  }

  /** The cache panel: each cached repo, its size and commits, and a delete button. */
  cacheView(disabled: boolean, remove: (repo: string) => void): TemplateResult {
    if (this.cacheError) return html`<p class="error">${this.cacheError}</p>`;
    if (this.cached.length === 0) return html`<p id="no-cached">No Hub model in this browser's cache yet: a download is kept here for the next visit.</p>`;
    return html`<table id="hub-cache">
      <thead><tr><th>repo</th><th>size</th><th>commits</th><th></th></tr></thead>
      <tbody>${this.cached.map((c) => html`<tr data-cached=${c.repo}>
        <td>${c.repo}</td><td class="size">${fmtBytes(c.sizeBytes)}</td>
        <td>${c.snapshots.map((s) => html`<code title=${s.files.join(', ')}>${s.commit.slice(0, 10)}</code>${s.refs.length ? ` (${s.refs.join(', ')}) ` : ' '}`)}</td>
        <td class="actions"><button class="delete-cached" ?disabled=${disabled} @click=${() => remove(c.repo)}>Delete</button></td>
      </tr>`)}</tbody>
    </table>`;
  }
}
