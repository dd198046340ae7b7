// The node's dashboard: plain browser script, no build step. Every figure comes from the node's own keyless API;
// text from the network is set with textContent only (a peer id or a result id is never parsed as HTML).
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const short = (s, n = 10) => (typeof s === 'string' && s.length > n + 2 ? `${s.slice(0, n)}…` : String(s ?? '–'));
  let tick = 0;

  async function get(path, headers) {
    const res = await fetch(path, { headers: headers || {} });
    if (!res.ok) throw new Error(`${path}: ${res.status}`);
    return res.json();
  }

  /** Replace a table body's rows; each row is a list of [text, className?] cells. */
  function rows(tbody, list, cols, empty) {
    tbody.replaceChildren();
    if (list.length === 0) {
      const td = document.createElement('td');
      td.colSpan = cols;
      td.className = 'muted';
      td.textContent = empty;
      tbody.append(document.createElement('tr'));
      tbody.firstChild.append(td);
      return;
    }
    for (const cells of list) {
      const tr = document.createElement('tr');
      for (const [text, cls, title] of cells) {
        const td = document.createElement('td');
        td.textContent = text;
        if (cls) td.className = cls;
        if (title) td.title = title;
        tr.append(td);
      }
      tbody.append(tr);
    }
  }

  // Pulse: one SSE event per tick.
  function pulse() {
    const es = new EventSource('/api/svc/pulse/stream');
    es.addEventListener('tick', (e) => {
      const p = JSON.parse(e.data);
      tick = p.svcond;
      $('tick').textContent = String(p.svcond);
      $('phase').textContent = p.phase.toFixed(4);
      $('rt').textContent = p.R_t.toFixed(6);
      $('phase-bar').style.width = `${(p.phase * 100).toFixed(1)}%`;
      $('live').textContent = 'live';
      $('live').className = 'badge ok';
    });
    es.onerror = () => {
      $('live').textContent = 'reconnecting';
      $('live').className = 'badge bad';
    };
  }

  async function health() {
    const h = await get('/api/health');
    $('node').textContent = h.node;
    $('node').title = h.node;
    $('kernel').textContent = h.kernel_version;
    const s = h.uptime_s;
    $('uptime').textContent = s < 3600 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  }

  const bytes = (n) => {
    if (n === null || n === undefined) return '–';
    const units = ['B', 'KB', 'MB', 'GB', 'TB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i++;
    }
    return `${n >= 100 || i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
  };
  const ms = (x) => (x === null || x === undefined ? '–' : x < 10 ? `${x.toFixed(2)} ms` : `${Math.round(x)} ms`);
  const num = (x) => (x >= 100 ? String(Math.round(x)) : String(Number(x.toFixed(1))));

  /** A sparkline of the values into a tile's <svg class="spark">. */
  function spark(tile, values) {
    const svg = $(tile).querySelector('svg.spark');
    if (!svg) return;
    svg.replaceChildren();
    const vs = values.filter((v) => typeof v === 'number');
    if (vs.length < 2) return;
    const hi = Math.max(...vs);
    const lo = Math.min(0, ...vs);
    const pts = vs.map((v, i) => `${((i / (vs.length - 1)) * 100).toFixed(2)},${(22 - ((v - lo) / Math.max(1e-9, hi - lo)) * 20).toFixed(2)}`);
    const pl = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
    pl.setAttribute('points', pts.join(' '));
    pl.setAttribute('fill', 'none');
    pl.setAttribute('stroke', '#58a6ff');
    pl.setAttribute('stroke-width', '1.5');
    pl.setAttribute('vector-effect', 'non-scaling-stroke');
    svg.append(pl);
  }

  let ownNode = null;
  let ownSeals = [];
  let sealedHere = null;

  const HEALTH_CLASS = { live: 'ok', late: 'warn', silent: 'warn', dead: 'bad', misconfigured: 'bad' };

  async function stats() {
    const st = await get('/api/system/stats');
    const m = st.machine;
    const w = m.requests.window;
    $('rpm').textContent = num(w.per_minute);
    $('epm').textContent = num(w.errors_per_minute);
    $('epm').className = w.errors_per_minute > 0 ? 'warn' : '';
    const msNumber = (x) => (x === null ? '–' : x < 10 ? x.toFixed(2) : String(Math.round(x)));
    $('p50').textContent = msNumber(m.requests.latency_ms.p50);
    $('p99').textContent = msNumber(m.requests.latency_ms.p99);
    $('cpu').textContent = `${num(m.cpu.percent)} %`;
    $('rss').textContent = bytes(m.memory.rss_bytes);
    $('heap').textContent = `heap ${bytes(m.memory.heap_used_bytes)}`;
    $('heap').title = `heap used ${bytes(m.memory.heap_used_bytes)} of ${bytes(m.memory.heap_total_bytes)}`;
    $('eld').textContent = ms(m.event_loop_ms.p99);
    $('eld').title = `max ${ms(m.event_loop_ms.max)}`;
    $('disk-data').textContent = bytes(m.disk.data_dir_bytes);
    $('disk-free').textContent = m.disk.free_bytes === null ? '' : bytes(m.disk.free_bytes);
    $('disk-free').title = m.disk.free_bytes === null ? '' : `${bytes(m.disk.free_bytes)} free of ${bytes(m.disk.total_bytes)}`;
    const used = m.disk.total_bytes ? 1 - m.disk.free_bytes / m.disk.total_bytes : 0;
    $('disk-bar').style.width = `${(used * 100).toFixed(1)}%`;
    $('disk-bar').className = used > 0.9 ? 'full' : '';
    const q = m.queues;
    const backlog = q.webhooks + q.transfers + q.settlements + q.consensus_deliveries;
    $('backlog').textContent = `${q.solver_waiting + q.sealing + q.store_commits} · ${backlog}`;
    $('backlog').title = 'runs, seals and commits waiting · webhook deliveries, transfers, settlements and consensus events owed';
    $('machine-summary').textContent = `sampled ${new Date(m.sampled_at_ms).toLocaleTimeString()} · rates over ${Math.round(m.window_s)} s`;
    const h = st.history;
    spark(
      'tile-requests',
      h.map((p) => p.requests_per_minute),
    );
    spark(
      'tile-latency',
      h.map((p) => p.p99_ms),
    );
    spark(
      'tile-cpu',
      h.map((p) => p.cpu_percent),
    );
    spark(
      'tile-memory',
      h.map((p) => p.rss_bytes),
    );
    spark(
      'tile-loop',
      h.map((p) => p.event_loop_p99_ms),
    );
    spark(
      'tile-backlog',
      h.map((p) => p.backlog),
    );

    // Mode and own bond.
    $('mode').textContent = st.mode;
    $('mode').className = `badge ${st.mode === 'contributing' ? 'ok' : ''}`;
    const b = st.bond;
    if (b === null) {
      $('own-bond').textContent = 'none';
      $('own-bond').className = 'figure muted';
      $('own-bond-detail').textContent = st.mesh ? 'this node holds no bond' : 'standalone: no mesh to bond in';
    } else {
      $('own-bond').textContent = b.state;
      $('own-bond').className = `figure ${b.state === 'active' ? 'ok' : b.slashed ? 'bad' : 'muted'}`;
      $('own-bond').title = b.bond_id;
      $('own-bond-detail').textContent =
        `${b.envelopes} envelope${b.envelopes === 1 ? '' : 's'} · since tick ${b.svcond}${b.slashed ? ` · slashed (${b.slash_state})` : ''}`;
    }

    // Alarms: the node's health warnings.
    const alarms = $('alarms');
    alarms.replaceChildren();
    if (st.warnings.length === 0) {
      const none = document.createElement('span');
      none.className = 'muted small';
      none.textContent = 'No alarms.';
      alarms.append(none);
      alarms.classList.remove('on');
    } else {
      alarms.classList.add('on');
      for (const wn of st.warnings) {
        const el = document.createElement('span');
        el.className = 'alarm';
        el.title = `since ${wn.since} · ${wn.count}×`;
        el.textContent = `${wn.code}: ${wn.message}`;
        alarms.append(el);
      }
    }

    // Requests by group, busiest first; queues.
    const groups = Object.entries(m.requests.by_group).sort((a, b) => b[1].window.requests - a[1].window.requests || b[1].total - a[1].total);
    rows(
      $('groups'),
      groups.map(([g, v]) => [
        [g],
        [num(v.window.per_minute), 'num mono'],
        [num(v.window.errors_per_minute), `num mono ${v.window.errors_per_minute > 0 ? 'warn' : ''}`],
        [String(v.total), 'num mono'],
        [String(v.by_class['4xx']), 'num mono'],
        [String(v.by_class['5xx']), `num mono ${v.by_class['5xx'] > 0 ? 'bad' : ''}`],
      ]),
      6,
      'no requests yet',
    );
    $('requests-window').textContent = `${m.requests.total} since start`;
    const queueNames = {
      solver_waiting: 'solver runs waiting',
      sealing: 'seals in the worker',
      store_commits: 'store commits pending',
      webhooks: 'webhook deliveries owed',
      transfers: 'transfers owed',
      settlements: 'settlements owed',
      consensus_deliveries: 'consensus deliveries owed',
    };
    rows(
      $('queues'),
      Object.entries(queueNames)
        .map(([k, label]) => [
          [label, 'muted'],
          [String(q[k]), `num mono ${q[k] > 0 ? 'warn' : ''}`],
        ])
        .concat([
          [
            ['seal batch write, mean', 'muted'],
            [ms(m.seal_batch_ms), 'num mono'],
          ],
        ]),
      2,
      '',
    );

    // Peers with their health.
    rows(
      $('peers'),
      m.peers.map((p) => [
        [short(p.peer_id, 16), 'mono', p.peer_id],
        [p.health, HEALTH_CLASS[p.health] || ''],
        [p.last_heard_s === null ? 'never' : `${num(p.last_heard_s)} s`, 'num mono'],
        [`${num(p.interval_s)} s`, 'num mono'],
        [String(p.handshake_failures), `num mono ${p.handshake_failures > 0 ? 'bad' : ''}`],
        [p.mode ? `${p.mode}${p.bond_id ? ' (bonded)' : ''}` : '–'],
      ]),
      6,
      st.mesh ? 'no peers' : 'no mesh: this node runs alone',
    );

    ownSeals = st.seals.recent;
    sealedHere = st.seals.sealed_here;
  }

  async function mesh() {
    const m = await get('/api/mesh/status');
    ownNode = m.nodeId;
    const coherence = m.coherenceScore === null ? '–' : m.coherenceScore.toFixed(3);
    $('mesh-summary').textContent = m.enabled
      ? `${m.meshSize} node${m.meshSize === 1 ? '' : 's'} · coherence ${coherence}`
      : 'mesh off (no secret): this node runs alone';
    const bonded = m.peers.filter((p) => p.bondId);
    $('bonds').textContent = `Bonded peers: ${bonded.length}${bonded.length ? ` (${bonded.map((p) => short(p.bondId, 12)).join(', ')})` : ''}`;
  }

  /** This node's own seals (from its stats) and those heard from the mesh, newest first. */
  async function seals() {
    const ev = await get('/api/mesh/events?limit=200');
    // A node announces the seals of a tick interval together (results.sealed); older nodes, each alone (result.sealed).
    const heard = ev.events.flatMap((e) => {
      const body = (e.event && e.event.body) || {};
      if (e.event && e.event.type === 'results.sealed' && Array.isArray(body.results)) return body.results.map((r) => ({ ...r, node: e.event.sender }));
      if (e.event && e.event.type === 'result.sealed') return [{ ...body, svcond: body.svcond ?? e.event.svcond, node: e.event.sender }];
      return [];
    });
    const own = ownSeals.map((x) => ({ ...x, node: ownNode || 'this node' }));
    const seen = new Set(own.map((x) => x.result_id));
    const all = own
      .concat(heard.filter((x) => !x.result_id || !seen.has(x.result_id)))
      .sort((a, b) => b.svcond - a.svcond)
      .slice(0, 12);
    $('sealed-here').textContent = sealedHere === null ? '' : `${sealedHere} sealed here`;
    rows(
      $('seals'),
      all.map((b) => [
        [String(b.svcond), 'mono'],
        [String(b.kind ?? '–')],
        [b.solver ?? (Array.isArray(b.operators) ? b.operators.slice(1).join(' ') : '–')],
        [typeof b.value === 'number' ? `${Number(b.value.toPrecision(6))} ${b.unit ?? ''}` : '–', 'mono'],
        [b.node === ownNode ? 'this node' : short(b.node, 12), 'mono', b.node],
      ]),
      5,
      'none yet',
    );
  }

  function plot(snapshots) {
    const svg = $('plot');
    svg.replaceChildren();
    if (snapshots.length < 2) return;
    const xs = snapshots.map((s) => s.svcond);
    const x0 = Math.min(...xs);
    const x1 = Math.max(...xs);
    const line = (values, color) => {
      const lo = Math.min(0, ...values);
      const hi = Math.max(...values);
      const pts = snapshots.map((s, i) => {
        const x = ((s.svcond - x0) / Math.max(1, x1 - x0)) * 590 + 5;
        const y = 170 - ((values[i] - lo) / Math.max(1, hi - lo)) * 160;
        return `${x.toFixed(1)},${y.toFixed(1)}`;
      });
      const pl = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
      pl.setAttribute('points', pts.join(' '));
      pl.setAttribute('fill', 'none');
      pl.setAttribute('stroke', color);
      pl.setAttribute('stroke-width', '2');
      pl.setAttribute('vector-effect', 'non-scaling-stroke');
      svg.append(pl);
    };
    line(
      snapshots.map((s) => s.sealedCount),
      '#58a6ff',
    );
    line(
      snapshots.map((s) => s.peers.length),
      '#3fb950',
    );
    const last = snapshots[snapshots.length - 1];
    $('history-range').textContent = `ticks ${x0}–${x1} · ${last.sealedCount} sealed · ${last.peers.length} peers`;
  }

  async function history() {
    const h = await get('/api/transparency/history?n=100');
    const snaps = h.snapshots.slice().sort((a, b) => a.svcond - b.svcond);
    plot(snaps);
    const now = snaps[snaps.length - 1];
    if (!now) {
      $('chains').textContent = 'No network snapshot yet (one every 4 ticks with the mesh on).';
      return;
    }
    const same = now.peers.filter((p) => p.chainHeadsDigest === now.chainHeadsDigest).length;
    $('chains').textContent =
      `${now.sealedCount} results sealed here · chain heads digest ${short(now.chainHeadsDigest, 16)} · ${same} of ${now.peers.length} peers report the same heads`;
  }

  async function ownChain() {
    const key = localStorage.getItem('svc-key');
    if (!key) return;
    const auth = { authorization: `Bearer ${key}` };
    try {
      const me = await get('/api/auth/whoami', auth);
      const slug = me.machine;
      if (!slug) throw new Error('this key has no state machine');
      const v = await get(`/api/chain/${encodeURIComponent(slug)}/pohc/validate`, auth);
      const el = $('chain-own');
      el.textContent = `${v.slug}: ${v.valid ? 'valid' : 'INVALID'} · ${v.rows} rows · head ${short(v.head, 16)}${v.first_bad ? ` · first bad row ${v.first_bad.seq}: ${v.first_bad.reason}` : ''}`;
      el.className = `small ${v.valid ? 'ok' : 'bad'}`;
    } catch (err) {
      $('chain-own').textContent = `could not validate: ${err.message}`;
      $('chain-own').className = 'small bad';
    }
  }

  async function consensus() {
    const c = await get('/api/tally/consensus?limit=10');
    rows(
      $('challenges'),
      c.items.map((i) => [
        [short(i.challenge_id, 14), 'mono', i.challenge_id],
        [i.state, i.state === 'upheld' ? 'bad' : ''],
        [String(i.votes)],
        [String(i.svcond), 'mono'],
      ]),
      4,
      'no challenges',
    );
    const counts = Object.entries(c.counts || {})
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(' · ');
    if (counts) $('bonds').textContent += ` · ${counts}`;
  }

  /** Run a refresher now and every `ms`, never two at once; a failure shows in the card, not the console. */
  function every(ms, fn, card) {
    let busy = false;
    const run = async () => {
      if (busy) return;
      busy = true;
      try {
        await fn();
        $(card).classList.remove('stale');
      } catch {
        $(card).classList.add('stale');
      } finally {
        busy = false;
      }
    };
    void run();
    setInterval(run, ms);
  }

  $('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const key = $('key').value.trim();
    if (key) localStorage.setItem('svc-key', key);
    else localStorage.removeItem('svc-key');
    $('key').value = '';
    void ownChain();
  });

  pulse();
  every(10000, health, 'pulse-card');
  every(2000, stats, 'machine-card');
  every(
    2000,
    async () => {
      await mesh();
      await consensus();
    },
    'peers-card',
  );
  every(2000, seals, 'seals-card');
  every(5000, history, 'history-card');
  every(30000, ownChain, 'chains-card');
})();
