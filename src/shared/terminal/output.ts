/** A CLI failure: its message is printed as one `mailsvc: …` line and the process exits with `exitCode`. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
  }
}

/** Prints data as JSON with --json, else as the given human text. */
export function output(json: boolean | undefined, data: unknown, human: () => string): void {
  process.stdout.write(json ? JSON.stringify(data, null, 2) + '\n' : human() + '\n');
}
