export { resealAll } from './rotation.service.js';
export type { ResealResult } from './rotation.service.js';
