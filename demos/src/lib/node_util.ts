/**
 * `node:util` for the pages (vite.config.ts aliases it here): its `parseArgs` alone, as strict as
 * Node's for what the library's flag parsers use — long flags (`--k v`, `--k=v`), short flags,
 * string and boolean options, `--` and positionals — so the fleet page checks a job's flags with
 * the very parsers `npm run train` and `npm run fleet -- submit` use (src/cli/args.ts,
 * src/fleet/cli_args.ts). Errors read as Node's do and quote the flag, which those parsers name in
 * their ConfigError.
 */

interface OptionConfig {
  type: 'string' | 'boolean';
  short?: string;
}

interface ParseArgsConfig {
  args?: string[];
  options?: Record<string, OptionConfig>;
  strict?: boolean;
  allowPositionals?: boolean;
}

export function parseArgs(config: ParseArgsConfig): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  const args = config.args ?? [];
  const options = config.options ?? {};
  const strict = config.strict ?? true;
  const allowPositionals = config.allowPositionals ?? !strict;
  const values: Record<string, string | boolean | undefined> = Object.create(null);
  const positionals: string[] = [];
  const byShort = new Map(Object.entries(options).filter(([, o]) => o.short).map(([k, o]) => [o.short!, k]));
  const optionLike = (v: string | undefined) => v !== undefined && v.startsWith('-') && v !== '-';

  const store = (name: string, shown: string, inline: string | undefined, next: () => string | undefined) => {
    const o = options[name];
    if (!o) {
      if (strict) throw new TypeError(`Unknown option '${shown}'`);
      values[name] = inline ?? true;
      return;
    }
    // Node names an option with a short form as both ('-n, --name') when its value is wrong.
    const both = `${o.short ? `-${o.short}, ` : ''}--${name}`;
    if (o.type === 'boolean') {
      if (inline !== undefined && strict) throw new TypeError(`Option '${both}' does not take an argument`);
      values[name] = true;
      return;
    }
    const v = inline ?? next();
    if (v === undefined) throw new TypeError(`Option '${both} <value>' argument missing`);
    if (inline === undefined && strict && optionLike(v)) {
      throw new TypeError(`Option '${shown}' argument is ambiguous.\nDid you forget to specify the option argument for '${shown}'?\nTo specify an option argument starting with a dash use '${shown}=-XYZ'.`);
    }
    values[name] = v;
  };
  const positional = (a: string) => {
    if (!allowPositionals) throw new TypeError(`Unexpected argument '${a}'. This command does not take positional arguments`);
    positionals.push(a);
  };

  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const next = () => (i + 1 < args.length ? args[++i] : undefined);
    if (a === '--') {
      for (const p of args.slice(i + 1)) positional(p);
      break;
    }
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq < 0 ? a.slice(2) : a.slice(2, eq);
      store(name, `--${name}`, eq < 0 ? undefined : a.slice(eq + 1), next);
    } else if (a.startsWith('-') && a !== '-') {
      // -abc: a group of short flags; a short string option takes the rest (or the next argument).
      for (let j = 1; j < a.length; j++) {
        const s = a[j];
        const name = byShort.get(s);
        if (name === undefined) {
          if (strict) throw new TypeError(`Unknown option '-${s}'`);
          values[s] = true;
          continue;
        }
        if (options[name].type === 'string') {
          const rest = a.slice(j + 1);
          store(name, `-${s}`, rest === '' ? undefined : rest, next);
          break;
        }
        store(name, `-${s}`, undefined, next);
      }
    } else {
      positional(a);
    }
  }
  return { values, positionals };
}
