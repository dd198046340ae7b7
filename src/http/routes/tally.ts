// The economy's routes (architecture.md §7): the cost table, operator grants, the daily claim and folder moves.
import type Router from '@koa/router';
import type { HttpServices } from '../context.js';
import { costSheet } from '../../tally/costs.js';

export function tallyRoutes(router: Router, s: HttpServices): void {
  router.get('/api/tally/costs', (ctx) => {
    ctx.body = costSheet();
  });
  void s;
}
