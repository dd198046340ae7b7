// A route group: the routes of one capability, built with the services it uses and registered in the order the node
// lists them (the order matters where a literal path must come before a parameter: /envelopes/folder before /:zid).
import type Router from '@koa/router';
import type { HttpKit } from './kit.js';

export interface RouteGroup {
  /** What the group serves, for logs and the order list. */
  readonly name: string;
  register(router: Router, kit: HttpKit): void;
}
