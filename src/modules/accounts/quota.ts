/** The largest quota an account may have (1 PiB); kept free of imports so the CLI can load it cheaply. */
export const MAX_QUOTA_BYTES = 2 ** 50;
