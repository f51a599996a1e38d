import { readFileSync } from 'node:fs';

/** Reads a fixture note from test/fixtures/notes/. */
export function readNote(name: string): string {
  return readFileSync(new URL(`../fixtures/notes/${name}`, import.meta.url), 'utf8');
}

/** The same text with CRLF line endings. */
export function toCrlf(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}
