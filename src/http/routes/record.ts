// The record of published results (spec 4.6 `GET /api/tally/record`, architecture.md §6) and the publish setting
// that decides what goes in it (`/api/tally/settings/publish-default`, spec 4.8). The setting is kept at the
// identity's home (forward.ts). A published result is listed in one record, its owner's home's (where it was
// sealed); no node merges the mesh's records. Asked anywhere, the record is read at a home: the caller's own home
// (its published results and the others sealed there), or with ?owner=<zid> that identity's home, listing that
// identity's published results only; a node that is not the home forwards the request once (forward.ts). The mesh
// read route answers other nodes' lookups of a result homed here (consensus/result-lookup.ts), signed by this node.
import { callerAddress } from '../caller-address.js';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import type { Caller } from '../../records/types.js';
import { PUBLISH_DEFAULT, type PublishSettings } from '../../tally/publish-settings.js';
import { RESULT_ID_PATTERN, RESULT_LOOKUP } from '../../consensus/result-lookup.js';
import { RECORD_PAGE_MAX, type RecordRow, type ResultRecords } from '../../tally/record.js';
import type { VerdictMark } from '../../consensus/slashing.js';
import type { HttpKit } from '../kit.js';
import { publishSettingResponse, recordResponse, signedMeshEventResponse } from '../responses.js';
import type { RouteGroup } from '../route-group.js';
import type { IdentityService } from '../../identity/service.js';
import type { MeshService } from '../../mesh/service.js';
import { requireIdentityKey, requireKey } from '../auth.js';
import { forwardToHome, relayToHome } from '../forward.js';
import { body, query, responds, validate } from '../validate.js';

const publishBody = z.object({ publish_default: z.boolean() }).strict();
const RECORD_OFFSET_MAX = 100_000;
const recordQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(RECORD_PAGE_MAX).default(20),
    offset: z.coerce.number().int().min(0).max(RECORD_OFFSET_MAX).default(0),
    // The key may travel as ?key= (spec 5.2).
    key: z.string().optional(),
    owner: z
      .string()
      .regex(/^zid_[0-9a-f]{32}$/, 'a zid: zid_ and 32 hex characters')
      .optional(),
  })
  .strict();

export interface RecordRouteServices {
  identity: IdentityService;
  mesh: MeshService | null;
  results: ResultRecords;
  publish: PublishSettings;
  /** Each row's verdict mark: upheld with the challenge id when its bond is slashed (consensus/slashing.ts). */
  verdictOf: (executedBy: RecordRow['executed_by']) => VerdictMark;
}

export function recordRoutes(s: RecordRouteServices): RouteGroup {
  return { name: 'record', register: (router, kit) => registerRecordRoutes(router, kit, s) };
}

function registerRecordRoutes(router: Router, kit: HttpKit, s: RecordRouteServices): void {
  const auth = kit.auth;
  const home = forwardToHome(kit);
  const zidOf = (ctx: Context): string => {
    const c = ctx.state.caller as Caller;
    if (c.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'the publish setting belongs to an identity: use a key of one');
    return c.zid;
  };
  const show = async (zid: string) => {
    const setting = await s.publish.of(zid);
    return {
      zid,
      publish_default: setting.publish_default,
      source: setting.svcond === null ? 'default' : 'set',
      since_svcond: setting.svcond,
      node_default: PUBLISH_DEFAULT,
      applies_to: 'results sealed from now on; a result is published or not by the setting at its sealing',
    };
  };

  router.get('/api/tally/settings/publish-default', responds(publishSettingResponse), requireKey(auth), home, async (ctx) => {
    ctx.body = await show(zidOf(ctx));
  });

  router.post('/api/tally/settings/publish-default', responds(publishSettingResponse), requireIdentityKey(auth), home, body(publishBody), async (ctx) => {
    const zid = zidOf(ctx);
    const body = validate(publishBody, ctx.request.body);
    await s.publish.set(zid, body.publish_default, kit.time.nowSvcond());
    ctx.body = await show(zid);
  });

  const marked = <T extends { results: RecordRow[] }>(page: T): T => ({
    ...page,
    results: page.results.map((row) => ({ ...row, ...s.verdictOf(row.executed_by) })),
  });

  // Keyed (spec part 5: not among the keyless routes): any identity's key reads the published record.
  router.get('/api/tally/record', responds(recordResponse), requireKey(auth), query(recordQuery), async (ctx) => {
    const q = validate(recordQuery, ctx.query);
    if (q.owner === undefined) {
      await home(ctx, async () => {
        ctx.body = { node: kit.nodeId(), owner: null, ...marked(await s.results.list(q.limit, q.offset)) };
      });
      return;
    }
    const owner = await s.identity.findIdentity(q.owner, callerAddress(ctx));
    if (!owner) throw new ServiceError(404, 'SVC_NOT_FOUND', `no identity ${q.owner} is known to this node or its peers`, { zid: q.owner });
    if (owner.home && owner.home !== kit.nodeId() && s.mesh) return relayToHome(ctx, kit, owner.home, 'identity', { zid: q.owner });
    ctx.body = { node: kit.nodeId(), owner: q.owner, ...marked(await s.results.listOf(q.owner, q.limit, q.offset)) };
  });

  router.get('/api/mesh/results/:result_id', responds(signedMeshEventResponse), async (ctx) => {
    const id = String(ctx.params.result_id);
    if (!RESULT_ID_PATTERN.test(id))
      throw new ServiceError(400, 'SVC_INVALID_INPUT', 'result_id must look like res_<svcond>_<16 hex>', {
        field: 'result_id',
        reason: 'format',
        allowed: null,
      });
    const found = await s.results.lookup(id);
    if (found.status === 'unknown') throw new ServiceError(404, 'SVC_NOT_FOUND', 'no result with this id was sealed here');
    ctx.body = await kit.signMeshEvent(RESULT_LOOKUP, found);
  });
}
