// --help for the scripts run by hand: each prints its opening comment (what it does, its usage and options) and
// starts nothing. A module of its own, light to import: a script that needs nothing else of the bench's lib.ts does
// not load the node for it.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** A script's opening comment (its leading `//` lines), without the slashes. */
export function headerComment(source: string): string {
  const lines: string[] = [];
  for (const line of source.split('\n')) {
    if (!line.startsWith('//')) break;
    lines.push(line.replace(/^\/\/ ?/, ''));
  }
  return lines.join('\n');
}

/**
 * With --help or -h, print the running script's opening comment and exit before it starts anything: each script run by
 * hand calls this first, with its import.meta.url.
 */
export function helpFromHeader(scriptUrl: string): void {
  if (!process.argv.includes('--help') && !process.argv.includes('-h')) return;
  console.log(headerComment(readFileSync(fileURLToPath(scriptUrl), 'utf8')));
  process.exit(0);
}
