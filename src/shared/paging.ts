export type Page = { limit: number; offset: number };
export type Paged<T> = { items: T[]; total: number; limit: number; offset: number };

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;
