/// <reference types="vite/client" />

// Deno's flag for the entry module (demos/own_env.ts runs under Deno; the pages never read it).
interface ImportMeta {
  readonly main?: boolean;
}
