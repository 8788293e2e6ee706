/**
 * A JSON parser that keeps what JSON.parse throws away, for headers whose validation must match
 * a reference implementation built on serde_json (safetensors): numbers keep their spelling (so
 * `2.0`, `2e0` and `-0` can be refused where an integer is expected, as serde refuses them for a
 * usize), objects keep every entry in order (so duplicate keys can be refused), and nothing
 * else is accepted that RFC 8259 forbids — no byte order mark, no lone surrogate escapes (serde
 * refuses both; JSON.parse accepts the second, and TextDecoder silently drops the first).
 *
 * Keys named `__proto__`, `constructor` or `prototype` are refused at any depth, as in json.ts.
 * Nesting deeper than 128 levels is refused (serde_json's recursion limit), so a hostile header
 * cannot exhaust the stack.
 */
import { FORBIDDEN_KEYS, UntrustedJsonError } from './json.ts';

/** A number as written. */
export class JsonNumber {
  constructor(readonly text: string) {}
  get value(): number {
    return Number(this.text);
  }
  /** Spelled as a non-negative integer (what serde accepts for an unsigned field): digits only. */
  get isUnsignedInteger(): boolean {
    return /^(0|[1-9][0-9]*)$/.test(this.text);
  }
}

/** An object with every entry, duplicates included, in order. */
export class JsonObject {
  constructor(readonly entries: readonly (readonly [string, StrictJson])[]) {}
}

export type StrictJson = null | boolean | string | JsonNumber | StrictJson[] | JsonObject;

const MAX_DEPTH = 128;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const PLAIN = /[^"\\\u0000-\u001f]+/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** Parses `text` as one JSON value with optional surrounding whitespace; throws UntrustedJsonError. */
export function parseStrictJson(text: string): StrictJson {
  let i = 0;
  const fail = (what: string): never => {
    throw new UntrustedJsonError(`invalid JSON: ${what} at character ${i}`);
  };
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const hex4 = (): number => {
    const h = text.slice(i, i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(h)) fail('bad \\u escape');
    i += 4;
    return parseInt(h, 16);
  };
  const string = (): string => {
    i++; // opening quote
    let out = '';
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const c = text[i];
      if (c === '"') {
        i++;
        return out;
      }
      if (c < ' ') fail('control character in a string');
      if (c !== '\\') {
        PLAIN.lastIndex = i;
        const run = PLAIN.exec(text)![0]; // at least c: runs of plain characters at once
        out += run;
        i += run.length;
        continue;
      }
      const e = text[i + 1];
      i += 2;
      if (e in ESCAPES) out += ESCAPES[e];
      else if (e === 'u') {
        const u = hex4();
        if (u >= 0xdc00 && u <= 0xdfff) fail('lone trailing surrogate in a \\u escape');
        if (u >= 0xd800 && u <= 0xdbff) {
          if (text[i] !== '\\' || text[i + 1] !== 'u') fail('lone leading surrogate in a \\u escape');
          i += 2;
          const lo = hex4();
          if (lo < 0xdc00 || lo > 0xdfff) fail('lone leading surrogate in a \\u escape');
          out += String.fromCharCode(u, lo);
        } else out += String.fromCharCode(u);
      } else fail('bad escape');
    }
  };
  const value = (depth: number): StrictJson => {
    if (depth > MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH}`);
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const entries: [string, StrictJson][] = [];
      ws();
      if (text[i] === '}') {
        i++;
        return new JsonObject(entries);
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const key = string();
        if (FORBIDDEN_KEYS.has(key)) throw new UntrustedJsonError(`forbidden key "${key}"`, key);
        ws();
        if (text[i] !== ':') fail('expected ":"');
        i++;
        entries.push([key, value(depth + 1)]);
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          return new JsonObject(entries);
        } else fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      i++;
      const items: StrictJson[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return items;
      }
      for (;;) {
        items.push(value(depth + 1));
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') {
          i++;
          return items;
        } else fail('expected "," or "]"');
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [['true', true], ['false', false], ['null', null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) return fail('expected a value');
    i += m[0].length;
    return new JsonNumber(m[0]);
  };
  if (text.startsWith('\uFEFF')) fail('a byte order mark before the JSON');
  const v = value(0);
  ws();
  if (i !== text.length) fail('trailing characters');
  return v;
}
