// Agents (spec 4.8, 6): spawn, read, list, kill, and GET /api/svc/agent/stream, the SSE stream of the caller's agent
// events (spawn, tick, derive, kill, stop) with Last-Event-ID resume and heartbeats. Thin: validate, call the runtime.
import type Router from '@koa/router';
import type { Context } from 'koa';
import { createSession } from 'better-sse';
import { z } from 'zod';
import { ServiceError } from '../../kernel/errors.js';
import type { HttpKit } from '../kit.js';
import { agentListResponse, agentResponse } from '../responses.js';
import type { RouteGroup } from '../route-group.js';
import { presentedKey, requireKey } from '../auth.js';
import { forwardToHome, relayEventStream } from '../forward.js';
import { answersHealth } from '../home-health.js';
import { droppedWhenBehind, readByClient } from '../sse-bound.js';
import { body, describes, query, responds, validate } from '../validate.js';
import type { Caller } from '../../records/types.js';
import type { AgentRecord, AgentRuntime } from '../../agents/runtime.js';
import type { AgentEvent } from '../../agents/events.js';

const spawnBody = z.object({ slug: z.string().min(3).max(48).optional(), program: z.unknown() }).strict();
const listQuery = z
  .object({
    status: z.enum(['running', 'killed', 'stopped']).optional(),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
    limit: z.coerce.number().int().min(1).max(500).default(100),
    key: z.string().optional(),
  })
  .strict();
const streamQuery = z
  .object({ agent: z.string().max(64).optional(), last_event_id: z.coerce.number().int().min(0).optional(), key: z.string().optional() })
  .strict();

/** Events sent from the store on a resume, per read. */
const RESUME_PAGE = 500;

export interface AgentStreamOptions {
  /** Heartbeat (an SSE comment) interval in ms. */
  heartbeatMs: number;
}

export function agentView(a: AgentRecord): Record<string, unknown> {
  return {
    id: a.id,
    owner: a.owner,
    slug: a.slug,
    home: a.home,
    status: a.status,
    stop_reason: a.stop_reason,
    parent: a.parent,
    depth: a.depth,
    children: a.children,
    spawned_svcond: a.spawned_svcond,
    next_svcond: a.status === 'running' ? a.next_svcond : null,
    ticks: a.ticks,
    state: a.state,
    last: a.last,
    program: a.program,
    last_event: a.last_event,
  };
}

/** Agent streams (server-sent events) one identity may have open at once; beyond it 429. */
export const AGENT_STREAMS_PER_IDENTITY = 16;

/** Open agent streams by owner (the MMIO open_streams register). */
export class StreamCount {
  private readonly open = new Map<string, number>();
  private readonly enders = new Set<() => void>();
  /** Register a stream's way to end; returns its removal. */
  track(end: () => void): () => void {
    this.enders.add(end);
    return () => this.enders.delete(end);
  }
  /** End every open stream (a stopping node: server.close waits for open connections). */
  endAll(): void {
    for (const end of [...this.enders]) end();
  }
  add(zid: string, d: number): void {
    const n = (this.open.get(zid) ?? 0) + d;
    if (n <= 0) this.open.delete(zid);
    else this.open.set(zid, n);
  }
  of(zid: string): number {
    return this.open.get(zid) ?? 0;
  }
  total(): number {
    let n = 0;
    for (const v of this.open.values()) n += v;
    return n;
  }
}

export interface AgentRouteServices {
  agents: AgentRuntime;
  /** The open agent streams, counted per identity (shared with the MMIO registers). */
  streams: StreamCount;
}

export function agentRoutes(s: AgentRouteServices, opts: AgentStreamOptions): RouteGroup {
  return { name: 'agents', register: (router, kit) => registerAgentRoutes(router, kit, s, opts) };
}

function registerAgentRoutes(router: Router, kit: HttpKit, s: AgentRouteServices, opts: AgentStreamOptions): void {
  const { streams } = s;
  const auth = kit.auth;
  const home = forwardToHome(kit);
  const key = requireKey(auth);
  const rt = s.agents;
  const identityOf = (ctx: Context): Extract<Caller, { kind: 'identity' }> => {
    const c = ctx.state.caller as Caller;
    if (c.kind !== 'identity') throw new ServiceError(403, 'SVC_FORBIDDEN', 'agents belong to an identity: use a key of one');
    return c;
  };

  router.post('/api/svc/agent/spawn', responds(agentResponse, { status: 201 }), key, home, body(spawnBody), async (ctx) => {
    const body = validate(spawnBody, ctx.request.body);
    const a = await rt.spawn(identityOf(ctx), body.program, body.slug);
    ctx.status = 201;
    ctx.body = agentView(a);
  });

  router.get('/api/svc/agent/list', responds(agentListResponse), key, home, query(listQuery), async (ctx) => {
    const q = validate(listQuery, ctx.query);
    const page = await rt.list(identityOf(ctx), q.status, q.offset, q.limit);
    ctx.body = { total: page.total, offset: q.offset, limit: q.limit, items: page.items.map(agentView) };
  });

  // The stream is served where the caller's agents run: at its home. A remote home whose URL answers is named (307: an
  // SSE stream does not end, so it is not forwarded like a request); one whose URL is unknown or does not answer (a
  // home behind NAT) is relayed here over libp2p.
  router.get('/api/svc/agent/stream', describes({ contentType: 'text/event-stream', auth: 'key' }), key, query(streamQuery), async (ctx) => {
    const c = identityOf(ctx);
    if (c.home !== kit.nodeId()) {
      const url = kit.homes.peerUrl(c.home);
      // A key in the query string (an EventSource cannot send headers) is not put in a Location for the client to
      // carry to another node: that stream is relayed from the home instead.
      if (url && !('key' in ctx.query) && (await answersHealth(url, kit.config.mesh.forwardTimeoutMs))) {
        ctx.status = 307;
        ctx.set('Location', `${url}${ctx.originalUrl}`);
        ctx.body = { home: c.home, location: `${url}${ctx.originalUrl}` };
        return;
      }
      await relayEventStream(ctx, kit, c.home, [url ? `HTTP at ${url}: no answer to its health probe` : 'HTTP: no URL is known for it']);
      return;
    }
    const q = validate(streamQuery, ctx.query);
    // A HEAD asks for the head only: an SSE session would never send it (and hold one of the identity's streams).
    if (ctx.method === 'HEAD') {
      ctx.status = 200;
      ctx.type = 'text/event-stream';
      return;
    }
    const header = ctx.get('last-event-id');
    const fromHeader = /^\d{1,15}$/.test(header) ? Number(header) : undefined;
    const after = fromHeader ?? q.last_event_id ?? null;
    // Checked and counted in one synchronous turn (parallel opens cannot all pass); uncounted if the session fails.
    if (streams.of(c.zid) >= AGENT_STREAMS_PER_IDENTITY)
      throw new ServiceError(429, 'SVC_RATE_LIMIT', `at most ${AGENT_STREAMS_PER_IDENTITY} agent streams per identity are open at once; close one`, {
        limit: AGENT_STREAMS_PER_IDENTITY,
        open_streams: streams.of(c.zid),
        window_seconds: null,
        retry_after_seconds: 5,
        reset_at: null,
      });
    streams.add(c.zid, 1);
    ctx.respond = false;
    // Koa's default status (404) is on the response already: the stream's head must say 200.
    ctx.res.statusCode = 200;
    let session: Awaited<ReturnType<typeof createSession>>;
    try {
      session = await createSession(ctx.req, ctx.res, { keepAlive: opts.heartbeatMs, retry: 1000, trustClientEventId: false, statusCode: 200 });
    } catch (err) {
      streams.add(c.zid, -1);
      throw err;
    }
    const untrack = streams.track(() => ctx.res.end());
    // The key it was opened with is checked again each heartbeat: revoked or expired, the stream ends.
    const presented = presentedKey(ctx);
    const recheck =
      presented === null
        ? null
        : setInterval(() => {
            void auth.identity.resolveKey(presented).catch(() => ctx.res.end());
          }, opts.heartbeatMs);
    const wanted = (e: AgentEvent) => e.owner === c.zid && (q.agent === undefined || e.agent === q.agent);
    // A client that does not read is let go past the bound (an event carries the agent's whole state).
    const send = (e: AgentEvent) => {
      if (session.isConnected && !droppedWhenBehind(ctx.res)) session.push(e, e.type, String(e.seq));
    };
    // Live events wait in a queue while the stored ones after Last-Event-ID are sent; an event the replay sent is not
    // sent again (live events of different agents may arrive out of sequence order: each is sent once as it comes).
    let replaying = after !== null;
    let replayedUpTo = after ?? 0;
    const queued: AgentEvent[] = [];
    const unsubscribe = rt.events.subscribe((e) => {
      if (!wanted(e)) return;
      if (replaying) queued.push(e);
      else if (e.seq > replayedUpTo) send(e);
    });
    session.on('disconnected', () => {
      if (recheck) clearInterval(recheck);
      unsubscribe();
      untrack();
      streams.add(c.zid, -1);
    });
    if (after !== null) {
      let cursor = after;
      for (;;) {
        const page = await rt.events.since(c.zid, cursor, RESUME_PAGE);
        for (const e of page) {
          cursor = e.seq;
          if (wanted(e)) send(e);
          // The replay goes at the client's pace: it waits for the client to read rather than fill memory.
          await readByClient(ctx.res);
          if (!session.isConnected) return;
        }
        if (page.length < RESUME_PAGE) break;
      }
      replayedUpTo = cursor;
      replaying = false;
      for (const e of queued) if (e.seq > replayedUpTo) send(e);
      queued.length = 0;
    }
  });

  router.get('/api/svc/agent/:id', responds(agentResponse), key, home, async (ctx) => {
    ctx.body = agentView(await rt.get(identityOf(ctx), String(ctx.params.id)));
  });

  router.post('/api/svc/agent/:id/kill', responds(agentResponse), key, home, async (ctx) => {
    ctx.body = agentView(await rt.kill(identityOf(ctx), String(ctx.params.id)));
  });
}
