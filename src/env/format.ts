/**
 * Prompt formats: how a task, observations and tool results become the text around the agent's
 * actions. A rollout's token sequence is prompt · action · observation · action · …, so a format
 * gives the *incremental* text to append after each action, never a re-rendered whole prompt:
 * the policy's sampled tokens stay in the sequence exactly as sampled (no re-tokenization drift).
 *
 * Two formats: `plainFormat` (a short text template, for byte-level models trained from scratch)
 * and `chatFormat`, a hook taking a chat-template render function (to be filled by
 * @huggingface/jinja later). Departure from the usual chat-template use: the chat format renders
 * the message history twice and appends only the difference, so that each turn's text matches
 * what the template would have produced for the whole conversation.
 */
import { RESULT_CLOSE, RESULT_OPEN, TOOL_CLOSE, TOOL_OPEN } from './actions.ts';
import { InvalidInputError } from './errors.ts';
import type { ChatMessage, Tool } from './types.ts';

/** What a format is told after an action. */
export interface FormatContext {
  /** Messages so far, ending with the assistant's action just taken. */
  readonly history: readonly ChatMessage[];
  /** Whether the action's last token was a stop token (e.g. eos / end-of-turn), already in the sequence. */
  readonly endedWithStopToken: boolean;
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
}

/** One line per tool and how to call it. */
export function describeTools(tools: readonly Tool[]): string {
  if (tools.length === 0) return '';
  const lines = tools.map((t) => `- ${t.name}: ${t.description}`);
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

/** A chat template: messages → text, optionally ending with the assistant generation prompt. */
export type ChatTemplateFn = (messages: readonly ChatMessage[], options: { addGenerationPrompt: boolean }) => string;

export interface ChatFormatOptions {
  readonly render: ChatTemplateFn;
  readonly system?: string;
  /** The template's end-of-turn text after assistant content (e.g. "<|im_end|>"); dropped from the
   * appended text when the sampler already emitted it as its stop token. */
  readonly endOfTurn?: string;
}

/** Chat-template format; tool outputs are sent as `tool` messages. */
export function chatFormat(options: ChatFormatOptions): PromptFormat {
  const { render, system, endOfTurn } = options;
  const delta = (history: readonly ChatMessage[], next: ChatMessage, endedWithStopToken: boolean): string => {
    const last = history[history.length - 1];
    if (last === undefined || last.role !== 'assistant') {
      throw new InvalidInputError('chatFormat', 'history must end with the assistant action');
    }
    const prefix = render(history, { addGenerationPrompt: false });
    const full = render([...history, next], { addGenerationPrompt: true });
    if (!full.startsWith(prefix)) {
      throw new InvalidInputError('chatFormat', 'the template does not render the history as a prefix of the longer conversation');
    }
    const contentAt = prefix.lastIndexOf(last.content);
    if (contentAt < 0) throw new InvalidInputError('chatFormat', 'the template does not render the assistant content verbatim');
    let text = full.slice(contentAt + last.content.length);
    if (endedWithStopToken && endOfTurn !== undefined && text.startsWith(endOfTurn)) text = text.slice(endOfTurn.length);
    return text;
  };
  const initialMessages = (task: string, tools: readonly Tool[]): ChatMessage[] => {
    const messages: ChatMessage[] = [];
    if (system !== undefined && system.length > 0) messages.push({ role: 'system', content: system });
    const toolText = describeTools(tools);
    messages.push({ role: 'user', content: toolText.length > 0 ? `${toolText}\n${task}` : task });
    return messages;
  };
  return {
    initial: (task, tools) => render(initialMessages(task, tools), { addGenerationPrompt: true }),
    initialMessages,
    observation: (text, ctx) => delta(ctx.history, { role: 'user', content: text }, ctx.endedWithStopToken),
    toolResult: (_name, output, ctx) => delta(ctx.history, { role: 'tool', content: output }, ctx.endedWithStopToken),
  };
}
