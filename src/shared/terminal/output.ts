import { isControlChar as isControl } from '../mail-names.js';

/** A CLI failure: its message is printed as one `mailsvc: …` line and the process exits with `exitCode`. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
  }
}

/**
 * Text for a terminal: control characters (an escape sequence could rewrite
 * the screen, a carriage return hide a line) are printed as `\uXXXX`. The
 * layout's own line breaks and tabs stay unless `oneLine`.
 */
export function escapeControl(text: string, oneLine = false): string {
  let out = '';
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    const layout = !oneLine && (c === 0x0a || c === 0x09);
    out += isControl(c) && !layout ? `\\u${c.toString(16).padStart(4, '0')}` : text[i];
  }
  return out;
}

/** Prints data as JSON with --json (control characters come out as JSON escapes), else the human text, escaped. */
export function output(json: boolean | undefined, data: unknown, human: () => string): void {
  process.stdout.write(json ? JSON.stringify(data, null, 2) + '\n' : escapeControl(human()) + '\n');
}
