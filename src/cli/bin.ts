#!/usr/bin/env node
import { recordFailure } from './audit-hook.js';
import { buildProgram } from './program.js';
import { fail } from './output.js';

buildProgram()
  .then((program) => program.parseAsync(process.argv))
  .catch(async (err: unknown) => {
    await recordFailure(err);
    fail(err);
  });
