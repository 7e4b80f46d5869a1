import type { Command } from 'commander';

export function secretsCommands(program: Command): void {
  program
    .command('secrets')
    .description('the key that encrypts stored secrets')
    .command('rotate-key')
    .description('make a new key and re-encrypt every stored secret under it (with MAILSVC_SECRET_KEY set: re-encrypt under that key)')
    .option('--drop-old', 'after a rotation and a service restart: re-encrypt what was written meanwhile and remove the old keys from the key file')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean; dropOld?: boolean }) => (await import('./secrets-rotate.js')).rotateKey(opts));
}
