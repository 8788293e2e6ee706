/**
 * The tool-call syntax agents write, and its parser.
 *
 *   <tool>NAME: ARGS</tool>     call tool NAME with the text ARGS (trimmed); the protocol runs it
 *                               and appends its output to the context as <result>OUTPUT</result>
 *   <answer>TEXT</answer>       a final answer; environments read it with extractAnswer()
 *
 * Example episode (calculator):  `<tool>calculator: 37*48</tool>` → `<result>1776</result>` →
 * `<answer>1776</answer>`.
 *
 * Rules: NAME is a letter followed by letters, digits, '_' or '-'; the first *complete* tag wins
 * (a tag cut off by the token limit is not a call); if an <answer> closes before a <tool> opens,
 * the action is an answer. Text that matches neither is passed to the environment unchanged — the
 * environment decides what it is worth. Departure from JSON function calling: one flat string
 * argument, because a small byte-level model learns a short tag far sooner than JSON.
 */

export const TOOL_OPEN = '<tool>';
export const TOOL_CLOSE = '</tool>';
export const ANSWER_OPEN = '<answer>';
export const ANSWER_CLOSE = '</answer>';
export const RESULT_OPEN = '<result>';
export const RESULT_CLOSE = '</result>';

/** Stop strings that end an action: a closed tool call or a closed answer. */
export const ACTION_STOP_STRINGS: readonly string[] = [TOOL_CLOSE, ANSWER_CLOSE];

export type ParsedAction =
  | { readonly kind: 'tool'; readonly name: string; readonly args: string }
  | { readonly kind: 'text'; readonly text: string };

const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]*$/;

/** Finds the first complete `<open>…</close>` in `text`: its content and where it closed. */
function firstTag(text: string, open: string, close: string): { content: string; start: number; end: number } | null {
  const start = text.indexOf(open);
  if (start < 0) return null;
  const closeAt = text.indexOf(close, start + open.length);
  if (closeAt < 0) return null;
  return { content: text.slice(start + open.length, closeAt), start, end: closeAt + close.length };
}

/** Parses an agent's action text into a tool call or plain text (never throws). */
export function parseAction(text: string): ParsedAction {
  const tool = firstTag(text, TOOL_OPEN, TOOL_CLOSE);
  if (tool === null) return { kind: 'text', text };
  const answer = firstTag(text, ANSWER_OPEN, ANSWER_CLOSE);
  if (answer !== null && answer.end <= tool.start) return { kind: 'text', text };
  const colon = tool.content.indexOf(':');
  const name = (colon < 0 ? tool.content : tool.content.slice(0, colon)).trim();
  if (!TOOL_NAME.test(name)) return { kind: 'text', text };
  const args = colon < 0 ? '' : tool.content.slice(colon + 1).trim();
  return { kind: 'tool', name, args };
}

/** The trimmed content of the first complete <answer>…</answer>, or null when there is none. */
export function extractAnswer(text: string): string | null {
  const answer = firstTag(text, ANSWER_OPEN, ANSWER_CLOSE);
  return answer === null ? null : answer.content.trim();
}

/** Writes a tool call in the syntax above (for demonstrations and tests). */
export function formatToolCall(name: string, args: string): string {
  return `${TOOL_OPEN}${name}: ${args}${TOOL_CLOSE}`;
}

/** Writes an answer in the syntax above. */
export function formatAnswer(text: string): string {
  return `${ANSWER_OPEN}${text}${ANSWER_CLOSE}`;
}
