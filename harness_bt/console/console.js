// The live console's script (harness_bt.console): feeds the replay view (replay.js) from the
// run's WebSocket. States arrive as deltas (only what changed) and are kept as a timeline
// (a full copy every KEY states, deltas between), so the slider scrubs back through the run
// so far; camera images arrive as binary messages (header + JPEG). The controls send the
// run's token, taken from the page's address (?token=...).
'use strict';
(function () {
  const KEY = 32, KEYED = ['nodes', 'phases', 'ledger', 'verdicts'], MAX_IMAGES = 2000;
  const view = window.replay, doc = document, body = doc.body.dataset;
  const token = new URLSearchParams(location.search).get('token') || '';
  const el = id => doc.getElementById(id);
  const entries = []; // {d: delta, key: full state or null, images: {camera: image}}
  let latest = null, images = {}, ws = null, nextId = 0, ids = {}, cache = {i: -1, s: null};
  const stages = [];

  const clone = o => JSON.parse(JSON.stringify(o));
  function apply(s, d) {
    if (d.full) { const out = clone(d); delete out.full; return out; }
    Object.entries(d).forEach(([k, v]) => {
      if (k[0] === '-') { v.forEach(x => { delete s[k.slice(1)][x]; }); }
      else if (KEYED.includes(k) && s[k]) Object.assign(s[k], v);
      else s[k] = v;
    });
    return s;
  }
  function stateAt(i) {
    if (cache.i === i) return cache.s;
    const k = i - (i % KEY);
    let s = clone(entries[k].key);
    for (let j = k + 1; j <= i; j++) s = apply(s, entries[j].d);
    cache = {i: i, s: s};
    return s;
  }
  function timing(r) {
    return 't=' + r[3].toFixed(2) + '→' + r[4].toFixed(2) + ' s (' + r[5].toFixed(2) + ' s)';
  }
  function frameOf(i) {
    const s = stateAt(i);
    return {seq: s.seq, tick: s.tick, t: s.t, config: s.config, visited: s.visited,
      nodes: s.nodes, phases: s.phases, taken: s.taken, exits: s.exits,
      commands: Object.entries(s.ledger).map(([cid, r]) => [cid, r[0], r[1], r[2], timing(r)]),
      counters: s.counters, events: s.events, result: s.result, images: entries[i].images,
      state: s};
  }
  view.frames = new Proxy([], {get(_, p) {
    if (p === 'length') return entries.length;
    if (typeof p === 'string' && /^\d+$/.test(p)) return +p < entries.length ? frameOf(+p) : undefined;
    return undefined;
  }});
  const show = view.show.bind(view);
  view.show = function (i) { show(i); if (entries.length) extras(this.frames[this.index].state); };

  function log(text, cls) {
    const div = doc.createElement('div'); div.textContent = text; if (cls) div.className = cls;
    const box = el('c_log'); box.prepend(div); while (box.children.length > 40) box.lastChild.remove();
  }
  function extras(s) {
    const b = s.budget || {}, parts = [];
    if (b.max_retries != null) parts.push('retries ' + (b.retries_left != null ? b.retries_left :
      b.max_retries - (b.retries_used || 0)) + '/' + b.max_retries);
    if (b.max_time_s != null) parts.push('time ' + (b.time_left_s != null ? b.time_left_s : b.max_time_s) + ' s');
    el('c_budget').textContent = parts.join(', ') || 'unlimited';
    const l = s.latency || {};
    el('c_latency').textContent = l.n ? 'last ' + l.last_ms + ' ms, p50 ' + l.p50_ms + ' ms, p99 ' +
      l.p99_ms + ' ms (' + l.n + ' decisions, ' + (l.clock === 'wall' ? 'wall time' : "the run's clock") + ')' : '-';
    body.latency = l.n ? l.clock + ' ' + l.p50_ms : '';
    const v = el('verdicts'); v.replaceChildren();
    Object.entries(s.verdicts || {}).slice(-8).forEach(([cid, rows]) => rows.forEach(r => {
      const div = doc.createElement('div'); div.className = r[0];
      div.textContent = r[0] + (r[2] ? '' : ' (look)') + ' · ' + (r[4] || cid) + ' · t=' + r[3] + ' s';
      const ev = doc.createElement('small'); ev.textContent = ' — ' + r[1].join('; ');
      div.append(ev); v.append(div);
    }));
  }
  function controls(c) {
    if (!c) return;
    body.paused = c.paused ? '1' : '';
    body.held = c.held ? c.held.node : '';
    el('c_tick').textContent = 'tick ' + c.tick;
    body.tick = c.tick; body.ticks = c.tick;
    el('c_state').textContent = c.phase === 'finished' ? 'finished' : c.stop ? 'stopping' :
      c.held ? 'held at ' + c.held.node + ' (' + c.held.when + ')' : c.paused ? 'paused' :
      c.phase === 'draining' ? 'ending' : 'running';
    el('c_held').textContent = c.held ? 'held ' + c.held.when + ' ' + c.held.node +
      ' (' + c.held.status + ')' : '';
    const list = el('breakpoints'); list.replaceChildren();
    (c.breakpoints || []).forEach(k => {
      const li = doc.createElement('li'); li.textContent = k + ' ';
      const x = doc.createElement('button'); x.textContent = 'clear';
      x.onclick = () => send({op: 'clear', node: k}); li.append(x); list.append(li);
    });
    body.breakpoints = (c.breakpoints || []).join(',');
    doc.querySelectorAll('#graph g.node').forEach(g => {
      const key = ids[g.id];
      g.classList.toggle('bp', !!key && (c.breakpoints || []).includes(key));
      g.classList.toggle('heldnode', !!key && !!c.held && c.held.node === key);
    });
  }
  function stage(m) {
    if (!stages.length) el('stages').replaceChildren();
    stages.push(m.stage);
    const li = doc.createElement('li'); li.className = m.stage; li.dataset.stage = m.stage;
    li.textContent = m.text + (m.tick != null ? ' (tick ' + m.tick + ')' : '');
    el('stages').append(li);
    body.stages = stages.join(',');
  }
  function onState(d) {
    latest = latest === null || d.full ? apply({}, d) : apply(latest, d);
    const i = entries.length;
    entries.push({d: d, key: i % KEY === 0 ? clone(latest) : null, images: Object.assign({}, images)});
    if (i % KEY === 0 && !d.full) entries[i].d = Object.assign({full: true}, clone(latest));
    if (d.control) controls(d.control);
    if (latest.result) body.result = latest.result.outcome + ' (' + latest.result.reason + ')';
    body.updates = entries.length;
    if (view.follow || i === 0) view.show(i); else el('slider').max = entries.length - 1;
  }
  function onImage(buf) {
    const n = new DataView(buf).getUint32(0);
    const h = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 4, n)));
    const url = URL.createObjectURL(new Blob([buf.slice(4 + n)], {type: h.mime}));
    view.images.push(url);
    if (view.images.length > MAX_IMAGES) { const old = view.images.length - MAX_IMAGES - 1;
      URL.revokeObjectURL(view.images[old]); view.images[old] = ''; }
    images[h.camera] = {src: view.images.length - 1, w: h.w, h: h.h, boxes: h.boxes, timestep: h.timestep};
    if (entries.length) {
      entries[entries.length - 1].images = Object.assign({}, images);
      if (view.follow) view.cameras(images);
    }
    body.images = Object.keys(images).join(',');
    body.imagecount = view.images.length;
  }
  function onMessage(m) {
    if (m.type === 'state') onState(m.d);
    else if (m.type === 'hello') {
      ids = m.nodes; body.client = m.client;
      const list = el('bp_nodes'); list.replaceChildren();
      Object.values(ids).forEach(k => { const o = doc.createElement('option'); o.value = k; list.append(o); });
    } else if (m.type === 'stage') stage(m);
    else if (m.type === 'error') { log('refused: ' + m.code + ': ' + m.message, 'error'); body.error = m.code; }
    else if (m.type === 'ack') {
      if (m.ok === false) { log(m.op + ' refused: ' + m.error + ': ' + m.message, 'error'); body.error = m.error; }
      else if (m.stage !== 'received') log(m.op + ' done at tick ' + m.tick);
      if (m.stage === 'received') body.received = m.op + ' ' + m.id; else body.acked = m.op + ' ' + m.id;
    } else if (m.type === 'alert') {
      if (m.kind === 'control') log(m.op + (m.node ? ' ' + m.node + (m.when ? ' (' + m.when + ')' : '') : '') +
        ' by ' + ((m.who || {}).client || '?') + ' at tick ' + m.tick);
      else if (m.kind === 'stop') log(m.by && m.by.source === 'console' ? 'stopped from the console (' +
        (m.by.control || 'stop') + ' by ' + (m.by.client || '?') + ')' : 'stopped by the runner (' + m.reason + ')');
      else if (m.kind === 'run_end') log('the run ended ' + m.outcome + ' (' + m.reason + ')');
      else if (m.kind === 'episode') log('episode ' + (m.episode + 1) + ' (' + m.run_id + ')');
    }
  }
  function send(m) {
    if (!ws || ws.readyState !== 1) { log('not connected', 'error'); return; }
    m.token = token; m.id = ++nextId; ws.send(JSON.stringify(m));
    if (m.op === 'stop') stage({stage: 'sent', text: 'stop request sent'});
  }
  function connect() {
    ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws'
      + (token ? '?token=' + encodeURIComponent(token) : ''));
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => { el('link').textContent = 'connected'; el('link').className = 'on'; body.link = 'on'; };
    ws.onclose = () => { el('link').textContent = 'disconnected'; el('link').className = 'off';
      body.link = 'off'; setTimeout(connect, 2000); };
    ws.onmessage = e => { if (typeof e.data === 'string') onMessage(JSON.parse(e.data)); else onImage(e.data); };
  }
  el('c_pause').onclick = () => send({op: 'pause'});
  el('c_resume').onclick = () => send({op: 'resume'});
  el('c_step').onclick = () => send({op: 'step'});
  el('c_stop').onclick = () => send({op: 'stop'});
  el('bp_add').onclick = () => send({op: 'break', node: el('bp_node').value, when: el('bp_when').value});
  doc.querySelectorAll('#graph g.node').forEach(g => g.addEventListener('dblclick', () => {
    const key = ids[g.id]; if (!key) return;
    send({op: (body.breakpoints || '').split(',').includes(key) ? 'clear' : 'break', node: key, when: 'before'});
  }));
  window.consoleSend = send;
  connect();
})();
