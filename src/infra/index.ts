export { createInfra, serviceLogger, stderrLogger } from './infra.js';
export type { Infra, InfraOptions } from './infra.js';
export type { MetricsRegistry, GaugeSample } from './instruments.js';
