import { createInterface } from 'node:readline';

/**
 * What was typed after the line a question took (two answers pasted at once, or typed ahead before the
 * second question): the next question starts with it instead of losing it.
 */
let typedAhead = '';

/** Reads a line from the terminal without echoing it. */
export function askHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    if (!stdin.isTTY) {
      reject(new Error('no terminal to ask on: pass --stdin and pipe the password'));
      return;
    }
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    let value = '';
    /** true once the line is complete (or cancelled); the characters after it are kept for the next question. */
    const take = (text: string): boolean => {
      const chars = [...text];
      for (const [i, ch] of chars.entries()) {
        if (ch === '\r' || ch === '\n') {
          // A CR LF pair is one end of line.
          const rest = chars.slice(ch === '\r' && chars[i + 1] === '\n' ? i + 2 : i + 1).join('');
          typedAhead = rest;
          done();
          resolve(value);
          return true;
        }
        if (ch === '\u0003') {
          typedAhead = '';
          done();
          reject(new Error('cancelled'));
          return true;
        }
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
      return false;
    };
    const onData = (buf: Buffer): void => void take(buf.toString('utf8'));
    const done = (): void => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    const ahead = typedAhead;
    typedAhead = '';
    if (!take(ahead)) stdin.on('data', onData);
  });
}

/** Reads the first line of standard input (for scripts). */
export async function readStdinLine(): Promise<string> {
  const rl = createInterface({ input: process.stdin });
  for await (const line of rl) {
    rl.close();
    return line;
  }
  return '';
}
