/**
 * Tool-call syntaxes: how an agent's action text names a tool and its arguments.
 *
 *   tagToolSyntax     `<tool>NAME: ARGS</tool>` (actions.ts) — for models trained from scratch
 *   hermesToolSyntax  `<tool_call>{"name": …, "arguments": {…}}</tool_call>` — what Qwen2.5 and
 *                     Qwen3 chat templates teach (the "Hermes" format)
 *   llamaToolSyntax   the whole reply is one JSON object `{"name": …, "parameters": {…}}` — what
 *                     the Llama 3.1/3.2 chat templates ask for ("Respond in the format {"name":
 *                     function name, "parameters": dictionary of argument name and its value}");
 *                     a leading `<|python_tag|>` is decoded away as a special token
 *
 * Every syntax keeps actions.ts's answer rule: an `<answer>` that closes before the call opens
 * makes the action an answer. Text that is no well-formed call (bad JSON, a name that is not a
 * string, arguments that are not an object) is plain text, passed to the environment.
 * A call's arguments reach `Tool.call` as one string (see `toolArgs`).
 */
import { ANSWER_CLOSE, ANSWER_OPEN, formatToolCall, parseAction, type ParsedAction, TOOL_CLOSE } from './actions.ts';
import { InvalidInputError } from './errors.ts';
import type { JsonValue, Tool } from './types.ts';

export interface ToolCallSyntax {
  readonly name: 'tag' | 'hermes' | 'llama_json';
  /** Stop strings that end an action: a closed call or a closed answer. */
  readonly stopStrings: readonly string[];
  /** Parses an action (never throws); `tools` resolves arguments for the tool's `call`. */
  parse(text: string, tools: ReadonlyMap<string, Tool>): ParsedAction;
  /**
   * Writes a call of `name` with the `args` string `tool.call` receives, as the model writes it
   * (the inverse of `parse`): demonstrations written in the tag syntax are replayed in a native one.
   */
  format(name: string, args: string, tool?: Tool): string;
}

const DEFAULT_PARAMETERS = { type: 'object', properties: { input: { type: 'string', description: 'the input' } }, required: ['input'] } as const;

/** A tool's argument schema (the default when it declares none). */
export function toolParameters(tool: Tool): { readonly [k: string]: JsonValue } {
  return tool.parameters ?? DEFAULT_PARAMETERS;
}

/** Tools as chat templates expect them: OpenAI-style JSON-schema function declarations. */
export function toolSchemas(tools: readonly Tool[]): JsonValue[] {
  return tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: toolParameters(t) } }));
}

/** The one string property of an object schema, when it declares exactly one. */
function singleStringProperty(schema: { readonly [k: string]: JsonValue }): string | null {
  const props = schema.properties;
  if (typeof props !== 'object' || props === null || Array.isArray(props)) return null;
  const keys = Object.keys(props);
  if (keys.length !== 1) return null;
  const p = (props as { readonly [k: string]: JsonValue })[keys[0]];
  return typeof p === 'object' && p !== null && !Array.isArray(p) && (p as { type?: JsonValue }).type === 'string' ? keys[0] : null;
}

/** The `args` string a native call passes to `tool.call`: the single string property's value, else the arguments' JSON. */
export function toolArgs(tool: Tool | undefined, args: { readonly [k: string]: unknown }): string {
  const key = tool === undefined ? null : singleStringProperty(toolParameters(tool));
  if (key !== null && typeof args[key] === 'string') return args[key] as string;
  return JSON.stringify(args);
}

/**
 * The arguments object of a native call whose `tool.call` gets `args` (the inverse of toolArgs):
 * `{ <the one string property>: args }`, else `args` parsed as a JSON object.
 */
export function toolArgsObject(tool: Tool | undefined, args: string): { readonly [k: string]: JsonValue } {
  const key = singleStringProperty(tool === undefined ? DEFAULT_PARAMETERS : toolParameters(tool));
  if (key !== null) return { [key]: args };
  let v: unknown;
  try {
    v = JSON.parse(args);
  } catch {
    v = undefined;
  }
  if (!isObject(v)) throw new InvalidInputError('toolArgsObject', `tool "${tool?.name}" takes a JSON object of arguments, got ${JSON.stringify(args)}`);
  return v as { readonly [k: string]: JsonValue };
}

/** JSON as Python's json.dumps writes it (", " and ": "): what chat templates' tojson renders. */
export function pyJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(pyJson).join(', ')}]`;
  if (isObject(v)) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pyJson(x)}`).join(', ')}}`;
  return JSON.stringify(v);
}

function isObject(x: unknown): x is { readonly [k: string]: unknown } {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** A parsed JSON call `{name, <argsKey> | arguments}` as a tool action, or null. */
function jsonCall(json: string, argsKeys: readonly string[], tools: ReadonlyMap<string, Tool>): ParsedAction | null {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    return null;
  }
  if (!isObject(v) || typeof v.name !== 'string' || v.name.length === 0) return null;
  const key = argsKeys.find((k) => Object.hasOwn(v as object, k));
  let args: unknown = key === undefined ? {} : v[key];
  // Some models write the arguments as a JSON string (the templates accept both).
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return null;
    }
  }
  if (!isObject(args)) return null;
  return { kind: 'tool', name: v.name, args: toolArgs(tools.get(v.name), args) };
}

/** Whether a complete <answer>…</answer> closes before `at`. */
function answerBefore(text: string, at: number): boolean {
  const open = text.indexOf(ANSWER_OPEN);
  if (open < 0 || open >= at) return false;
  const close = text.indexOf(ANSWER_CLOSE, open + ANSWER_OPEN.length);
  return close >= 0 && close + ANSWER_CLOSE.length <= at;
}

export const tagToolSyntax: ToolCallSyntax = {
  name: 'tag',
  stopStrings: [TOOL_CLOSE, ANSWER_CLOSE],
  parse: (text) => parseAction(text),
  format: (name, args) => formatToolCall(name, args),
};

export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';

export const hermesToolSyntax: ToolCallSyntax = {
  name: 'hermes',
  stopStrings: [TOOL_CALL_CLOSE, ANSWER_CLOSE],
  parse(text, tools) {
    const start = text.indexOf(TOOL_CALL_OPEN);
    const close = start < 0 ? -1 : text.indexOf(TOOL_CALL_CLOSE, start + TOOL_CALL_OPEN.length);
    if (close < 0 || answerBefore(text, start)) return { kind: 'text', text };
    return jsonCall(text.slice(start + TOOL_CALL_OPEN.length, close).trim(), ['arguments', 'parameters'], tools) ?? { kind: 'text', text };
  },
  // As Qwen's templates render an assistant's tool call.
  format: (name, args, tool) => `${TOOL_CALL_OPEN}\n${pyJson({ name, arguments: toolArgsObject(tool, args) })}\n${TOOL_CALL_CLOSE}`,
};

/** The end of the balanced JSON object starting at `start` (string-aware), or -1. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i + 1;
  }
  return -1;
}

export const llamaToolSyntax: ToolCallSyntax = {
  name: 'llama_json',
  // The call is the whole reply and ends at <|eot_id|> / <|eom_id|> (stop tokens), not a string.
  stopStrings: [ANSWER_CLOSE],
  parse(text, tools) {
    const start = text.search(/\S/);
    if (start < 0 || text[start] !== '{') return { kind: 'text', text };
    const end = objectEnd(text, start);
    if (end < 0 || text.slice(end).trim() !== '') return { kind: 'text', text };
    return jsonCall(text.slice(start, end), ['parameters', 'arguments'], tools) ?? { kind: 'text', text };
  },
  // As Llama 3.x templates render an assistant's tool call (the reply ends at <|eot_id|>).
  format: (name, args, tool) => pyJson({ name, parameters: toolArgsObject(tool, args) }),
};

/** The syntax an instruct model's chat template teaches, from the template's source; null: none recognised. */
export function nativeToolSyntax(chatTemplate: string): ToolCallSyntax | null {
  if (chatTemplate.includes(TOOL_CALL_OPEN)) return hermesToolSyntax;
  if (chatTemplate.includes('"parameters": ') && chatTemplate.includes('<|start_header_id|>')) return llamaToolSyntax;
  return null;
}
