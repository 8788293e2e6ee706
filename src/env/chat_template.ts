/**
 * hfChatFormat — a PromptFormat from a Hugging Face tokenizer's chat template (tokenizer_config.json,
 * rendered by @huggingface/jinja through HfTokenizer.applyChatTemplate): the prompts, tool
 * declarations and tool-call syntax an instruct model was trained on.
 *
 * What it works out from the template itself (each overridable):
 *   - whether it renders `bos_token` (Llama 3.x, Gemma 3 do; Qwen has none): the agent then adds
 *     no BOS of its own, so a prompt starts with exactly one;
 *   - whether it renders `tools` (Qwen2.5/3, Llama 3.1+): tools go to the template as JSON-schema
 *     function declarations and the agent parses the family's native call syntax
 *     (tool_calls.ts); otherwise tools are listed in the first user message with the tag syntax;
 *   - whether it has a tool role: probed by rendering a user/assistant/tool conversation. Without
 *     one (Gemma 3: "Conversation roles must alternate"), a tool result is sent as a user turn
 *     holding a ```tool_output block — Gemma's documentation leaves detection and result
 *     formatting to the framework and shows results returned in the user turn.
 * Qwen3's `enable_thinking` is an option (passed as the template variable of that name).
 */
import { InvalidInputError } from './errors.ts';
import { chatFormat, type ChatFormatOptions, type PromptFormat } from './format.ts';
import { nativeToolSyntax, tagToolSyntax, type ToolCallSyntax, toolSchemas } from './tool_calls.ts';
import type { ChatMessage as HfChatMessage } from '../model/tokenizer/hf.ts';
import type { ChatMessage } from './types.ts';

/** What hfChatFormat needs of a tokenizer (HfTokenizer has it). */
export interface ChatTemplateTokenizer {
  chatTemplate(name?: string): string | undefined;
  applyChatTemplate(messages: readonly HfChatMessage[], opts: { addGenerationPrompt?: boolean; tools?: readonly unknown[]; templateName?: string; variables?: Readonly<Record<string, unknown>> }): string;
  readonly specialTokens: Readonly<{ bos?: string; eos: string }>;
}

export interface HfChatFormatOptions {
  /** A system message first (omitted when empty). */
  readonly system?: string;
  /** Qwen3: false writes the empty think block after each generation prompt (no reasoning); true lets the model think. Unset: the template's default. */
  readonly enableThinking?: boolean;
  /** Further template variables (e.g. Llama's `date_string`). */
  readonly variables?: Readonly<Record<string, unknown>>;
  /** Which named template when tokenizer_config.json holds several. */
  readonly templateName?: string;
  /** Tool-call syntax. Default: the template's native one when it renders tools, else the tag syntax. */
  readonly toolSyntax?: ToolCallSyntax;
  /** How tool results are sent. Default: 'tool' when the template has a tool role, else 'user'. */
  readonly toolResults?: 'tool' | 'user';
  readonly toolResultText?: ChatFormatOptions['toolResultText'];
  /** Text after assistant content dropped when the action ended with a stop token. Default: the eos token's text. */
  readonly endOfTurn?: string;
}

/** Whether the template renders a tool message after an assistant turn (false when it throws or drops it). */
function hasToolRole(render: (m: readonly ChatMessage[]) => string): boolean {
  const probe = '\u{E000}tool-probe\u{E001}';
  try {
    return render([{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }, { role: 'tool', content: probe }]).includes(probe);
  } catch {
    return false;
  }
}

/** Whether the template's source uses the `tools` variable (it then declares tools itself). */
function rendersTools(src: string): boolean {
  return /\btools\b/.test(src);
}

export function hfChatFormat(tokenizer: ChatTemplateTokenizer, options: HfChatFormatOptions = {}): PromptFormat {
  const src = tokenizer.chatTemplate(options.templateName);
  if (src === undefined) throw new InvalidInputError('hfChatFormat', 'the tokenizer has no chat template (tokenizer_config.json: chat_template)');
  const variables = { ...options.variables, ...(options.enableThinking !== undefined ? { enable_thinking: options.enableThinking } : {}) };
  const native = rendersTools(src) ? nativeToolSyntax(src) : null;
  const toolSyntax = options.toolSyntax ?? native ?? tagToolSyntax;
  // The template declares the tools when it can and the syntax is the one it teaches.
  const templateTools = native !== null && toolSyntax === native;
  const base = { variables, ...(options.templateName ? { templateName: options.templateName } : {}) };
  const render: ChatFormatOptions['render'] = (messages, o) =>
    tokenizer.applyChatTemplate(messages.map(({ role, content, name }) => ({ role, content, ...(name !== undefined ? { name } : {}) })), {
      ...base,
      addGenerationPrompt: o.addGenerationPrompt,
      ...(templateTools && o.tools && o.tools.length > 0 ? { tools: toolSchemas(o.tools) } : {}),
    });
  const bos = tokenizer.specialTokens.bos;
  const rendersBos = bos !== undefined && render([{ role: 'user', content: 'q' }], { addGenerationPrompt: true }).startsWith(bos);
  const toolResults = options.toolResults ?? (hasToolRole((m) => render(m, { addGenerationPrompt: false })) ? 'tool' : 'user');
  return chatFormat({
    render,
    ...(options.system !== undefined ? { system: options.system } : {}),
    endOfTurn: options.endOfTurn ?? tokenizer.specialTokens.eos,
    toolResults,
    ...(options.toolResultText ? { toolResultText: options.toolResultText } : {}),
    describeTools: !templateTools,
    rendersBos,
    toolSyntax,
  });
}
