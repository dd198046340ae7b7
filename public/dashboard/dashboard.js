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

  async function mesh() {
    const m = await get('/api/mesh/status');
    const coherence = m.coherenceScore === null ? '–' : m.coherenceScore.toFixed(3);
    $('mesh-summary').textContent = m.enabled ? `${m.meshSize} nodes · coherence ${coherence}` : 'mesh off (no secret): this node runs alone';
    rows(
      $('peers'),
      m.peers.map((p) => {
        const behind = p.lastTick === null ? null : (tick || m.svcond) - p.lastTick;
        return [
          [short(p.peerId, 16), 'mono', p.peerId],
          [p.lastTick === null ? '–' : String(p.lastTick), 'mono'],
          // Behind once its next tick event is overdue with one to spare: 2·every + 1 of the peer's own interval.
          [behind === null ? '–' : String(behind), behind !== null && behind > 2 * (p.every ?? m.tickEvery) + 1 ? 'warn' : ''],
          [p.connected ? 'connected' : 'heard', p.connected ? 'ok' : 'warn'],
          [p.mode ? `${p.mode}${p.bondId ? ' (bonded)' : ''}` : '–'],
        ];
      }),
      5,
      'no peers',
    );
    const bonded = m.peers.filter((p) => p.bondId);
    $('bonds').textContent = `Bonded peers: ${bonded.length}${bonded.length ? ` (${bonded.map((p) => short(p.bondId, 12)).join(', ')})` : ''}`;
  }

  async function seals() {
    const ev = await get('/api/mesh/events?limit=200');
    const sealed = ev.events
      .filter((e) => e.event && e.event.type === 'result.sealed')
      .slice(-12)
      .reverse();
    rows(
      $('seals'),
      sealed.map((e) => {
        const b = e.event.body || {};
        return [
          [String(b.svcond ?? e.event.svcond), 'mono'],
          [String(b.kind ?? '–')],
          [b.solver ?? (Array.isArray(b.operators) ? b.operators.slice(1).join(' ') : '–')],
          [typeof b.value === 'number' ? `${Number(b.value.toPrecision(6))} ${b.unit ?? ''}` : '–', 'mono'],
          [short(e.event.sender, 12), 'mono', e.event.sender],
        ];
      }),
      5,
      'none heard yet',
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
  every(
    2000,
    async () => {
      await mesh();
      await consensus();
    },
    'peers-card',
  );
  every(3000, seals, 'seals-card');
  every(5000, history, 'history-card');
  every(30000, ownChain, 'chains-card');
})();
