/**
 * Prompt formats: how a task, observations and tool results become the text around the agent's
 * actions. A rollout's token sequence is prompt · action · observation · action · …, so a format
 * gives the *incremental* text to append after each action, never a re-rendered whole prompt:
 * the policy's sampled tokens stay in the sequence exactly as sampled (no re-tokenization drift).
 *
 * Two formats: `plainFormat` (a short text template, for byte-level models trained from scratch)
 * and `chatFormat`, over a chat-template render function (chat_template.ts builds one from a
 * Hugging Face tokenizer's template).
 *
 * How chatFormat finds the text after an action: it renders the conversation with the new
 * message appended, the last assistant message's content replaced by a marker, and takes what
 * follows the marker. Departure from the usual "render the history, render the longer history,
 * take the difference" rule: that rule needs each rendering to be a prefix of the next, which
 * templates break on purpose (Qwen3 writes an empty `<think>` block on the final assistant turn
 * only); what follows the last assistant content does not depend on how earlier turns render.
 */
import { RESULT_CLOSE, RESULT_OPEN, TOOL_CLOSE, TOOL_OPEN } from './actions.ts';
import { InvalidInputError } from './errors.ts';
import type { ToolCallSyntax } from './tool_calls.ts';
import type { ChatMessage, Tool } from './types.ts';

/** What a format is told after an action. */
export interface FormatContext {
  /** Messages so far, ending with the assistant's action just taken. */
  readonly history: readonly ChatMessage[];
  /** Whether the action's last token was a stop token (e.g. eos / end-of-turn), already in the sequence. */
  readonly endedWithStopToken: boolean;
  /** The episode's tools (as given to `initial`). */
  readonly tools?: readonly Tool[];
}

export interface PromptFormat {
  /** The initial prompt, ending where the first action begins. */
  initial(task: string, tools: readonly Tool[]): string;
  /** The messages `initial` renders (the start of the history later calls receive). Default: one user message. */
  initialMessages?(task: string, tools: readonly Tool[]): ChatMessage[];
  /** Text appended after an action to carry the environment's observation. */
  observation(text: string, ctx: FormatContext): string;
  /** Text appended after a tool call to carry the tool's output. */
  toolResult(name: string, output: string, ctx: FormatContext): string;
  /** Whether `initial` already starts with the BOS token's text (the agent then adds none). */
  readonly rendersBos?: boolean;
  /** The tool-call syntax this format teaches (the agent parses actions with it). Default: tag syntax. */
  readonly toolSyntax?: ToolCallSyntax;
}

/** One line per tool and how to call it. */
export function describeTools(tools: readonly Tool[]): string {
  if (tools.length === 0) return '';
  // A description that already starts with the tool's name ("lookup: WORD → …") is not prefixed again.
  const lines = tools.map((t) => (t.description.startsWith(`${t.name}:`) ? `- ${t.description}` : `- ${t.name}: ${t.description}`));
  return `Tools:\n${lines.join('\n')}\nCall a tool with ${TOOL_OPEN}name: input${TOOL_CLOSE}.`;
}

export interface PlainFormatOptions {
  /** A first line before everything else (omitted when empty). */
  readonly system?: string;
  /**
   * List the tools and their call syntax in the prompt (default true). A byte-level model trained
   * from scratch learns the syntax from its demonstrations and gains nothing from a constant
   * preamble but a longer context to pay for at every step; such jobs turn it off.
   */
  readonly describeTools?: boolean;
}

/**
 * Plain text template:
 *   [system]\n[Tools: …]\n<task>\n  action  \n<observation>\n  action  \n<result>out</result>\n  action …
 */
export function plainFormat(options: PlainFormatOptions = {}): PromptFormat {
  return {
    initial(task, tools) {
      const parts = [options.system ?? '', options.describeTools === false ? '' : describeTools(tools), task].filter((s) => s.length > 0);
      return `${parts.join('\n')}\n`;
    },
    observation: (text) => `\n${text}\n`,
    toolResult: (_name, output) => `\n${RESULT_OPEN}${output}${RESULT_CLOSE}\n`,
  };
}

/** Options a chat template renders with besides the messages. */
export interface ChatRenderOptions {
  readonly addGenerationPrompt: boolean;
  /** The episode's tools, for templates that list them (absent: no tools). */
  readonly tools?: readonly Tool[];
}

/** A chat template: messages → text, optionally ending with the assistant generation prompt. */
export type ChatTemplateFn = (messages: readonly ChatMessage[], options: ChatRenderOptions) => string;

export interface ChatFormatOptions {
  readonly render: ChatTemplateFn;
  readonly system?: string;
  /** The template's end-of-turn text after assistant content (e.g. "<|im_end|>"); dropped from the
   * appended text when the sampler already emitted it as its stop token. */
  readonly endOfTurn?: string;
  /**
   * How tool results reach the template: 'tool' messages (default), or 'user' messages whose
   * content is `toolResultText(name, output)` — for templates without a tool role (Gemma 3).
   */
  readonly toolResults?: 'tool' | 'user';
  /** The user-turn text of a tool result when toolResults is 'user'. Default: a ```tool_output fenced block. */
  readonly toolResultText?: (name: string, output: string) => string;
  /** List the tools (tag syntax) in the first user message. Default true; off when the template renders `tools` itself. */
  readonly describeTools?: boolean;
  /** Whether the template's output starts with the BOS text (see PromptFormat). */
  readonly rendersBos?: boolean;
  readonly toolSyntax?: ToolCallSyntax;
}

/**
 * The form Gemma's documentation shows for a function's result sent back in a user turn (Gemma
 * has no tool role): the output in a fenced block labelled tool_output.
 */
export function fencedToolOutput(_name: string, output: string): string {
  return `\`\`\`tool_output\n${output}\n\`\`\``;
}

/** Stands in for the last action while rendering; no template output contains it. */
const ACTION_MARKER = '\u{E000}webtinker-action\u{E001}';

/** Chat-template format; tool outputs are sent as `tool` messages (or user turns, see toolResults). */
export function chatFormat(options: ChatFormatOptions): PromptFormat {
  const { render, system, endOfTurn } = options;
  const asUser = options.toolResults === 'user';
  const toolText = options.toolResultText ?? fencedToolOutput;
  // History keeps tool results as tool messages; a template without a tool role sees user turns.
  const templateMessages = (msgs: readonly ChatMessage[]): ChatMessage[] =>
    msgs.map((m) => (asUser && m.role === 'tool' ? { role: 'user', content: toolText(m.name ?? '', m.content) } : m));
  const delta = (ctx: FormatContext, next: ChatMessage): string => {
    const { history } = ctx;
    const last = history[history.length - 1];
    if (last === undefined || last.role !== 'assistant') {
      throw new InvalidInputError('chatFormat', 'history must end with the assistant action');
    }
    const msgs = [...history.slice(0, -1), { role: 'assistant' as const, content: ACTION_MARKER }, next];
    const full = render(templateMessages(msgs), { addGenerationPrompt: true, ...(ctx.tools ? { tools: ctx.tools } : {}) });
    const at = full.indexOf(ACTION_MARKER);
    if (at < 0) throw new InvalidInputError('chatFormat', 'the template does not render the assistant content verbatim');
    if (full.indexOf(ACTION_MARKER, at + 1) >= 0) throw new InvalidInputError('chatFormat', 'the template renders the assistant content twice');
    let text = full.slice(at + ACTION_MARKER.length);
    if (ctx.endedWithStopToken && endOfTurn !== undefined && text.startsWith(endOfTurn)) text = text.slice(endOfTurn.length);
    return text;
  };
  const initialMessages = (task: string, tools: readonly Tool[]): ChatMessage[] => {
    const messages: ChatMessage[] = [];
    if (system !== undefined && system.length > 0) messages.push({ role: 'system', content: system });
    const text = options.describeTools === false ? '' : describeTools(tools);
    messages.push({ role: 'user', content: text.length > 0 ? `${text}\n${task}` : task });
    return messages;
  };
  return {
    initial: (task, tools) => render(initialMessages(task, tools), { addGenerationPrompt: true, tools }),
    initialMessages,
    observation: (text, ctx) => delta(ctx, { role: 'user', content: text }),
    toolResult: (name, output, ctx) => delta(ctx, { role: 'tool', content: output, name }),
    ...(options.rendersBos !== undefined ? { rendersBos: options.rendersBos } : {}),
    ...(options.toolSyntax ? { toolSyntax: options.toolSyntax } : {}),
  };
}
