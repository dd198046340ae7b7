// What a log line says of a request's path: the path, with any segment that is a credential cut to its prefix. The
// query string (where `?key=` and `?sig=` travel) is never logged; a key can still land in the path itself (a DELETE
// of /api/auth/keys/<the key> instead of its key id), and a log is read by more people than the key's owner.
import { KEY_PREFIX } from '../identity/keys.js';
import { SECRET_PREFIX } from '../webhooks/signing.js';

const PREFIXES = [...Object.values(KEY_PREFIX), 'stk_', SECRET_PREFIX].sort((a, b) => b.length - a.length);
const CREDENTIAL = new RegExp(`(^|/)(${PREFIXES.map((p) => p.replace(/[^A-Za-z0-9_]/g, '\\$&')).join('|')})[A-Za-z0-9_+=%-]{16,}`, 'g');

export function loggedPath(path: string): string {
  return path.replace(CREDENTIAL, '$1$2…');
}
