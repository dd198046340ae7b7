// A channel id names the node that holds the channel (its owner's home): `str_<peer id>_<24 hex>`. Any node can then
// send a request made with only the channel key or a signed link, which name no identity, to the channel's home.
// Ids made before this format (`str_<24 hex>`) name no home: they are served where the channel is.
import { randomHex } from '../util/random-hex.js';

const WITH_HOME = /^str_([1-9A-HJ-NP-Za-km-z]{32,64})_[0-9a-f]{24}$/;

export function newChannelId(home: string): string {
  return `str_${home}_${randomHex(24)}`;
}

/** The node that holds channel `id`, or null when the id names none. */
export function homeOfChannel(id: string): string | null {
  return WITH_HOME.exec(id)?.[1] ?? null;
}
