import { parseFirewallState } from '../shared/firewall-rules.js';
import { isRecord, parseJsonOr } from '../shared/json-value.js';
import { HELPER_LIST_ARG_MAX } from '../shared/dkim-names.js';
import type { Param } from './action-types.js';

/**
 * `firewall-apply <state>`: the firewall as data, never as an nftables file.
 * The state is `{"firewall-enabled":"yes"|"no","firewall-rules-json":[{ports,
 * protocol,source,enabled}]}`, checked with the parser the API uses (any other
 * key is refused); the helper renders mailsvc's table (MAILSVC_NFT_TABLE) from
 * it itself, so no caller can put a statement of its own into what nft reads.
 */

/** 256 rules of up to 64 port items each, JSON-escaped in the request line: the same 60 KiB the DKIM and SRS lists get. */
export const FIREWALL_STATE_MAX = HELPER_LIST_ARG_MAX;

export const firewallState: Param = {
  name: 'state',
  // Its messages name the failing field; a value they quote is the caller's own.
  validate(raw) {
    const given = parseJsonOr(raw, 'state must be a JSON object');
    if (!isRecord(given)) throw new Error('state must be a JSON object');
    return JSON.stringify(parseFirewallState(given));
  },
};

