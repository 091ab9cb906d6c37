// The replay page's script (harness_bt.viz.html): shows view frames (harness_bt.viz.view) on
// the graph drawn once: node colours and labels, phases, the transitions and exits taken,
// camera images with the perceived objects, the ledger and the events; zoom and pan.
// ReplayView.push(frame) appends a frame (a page fed while a run goes follows the end).
'use strict';
const NOTE_SPACE = '\u2007';
const SVGNS = 'http://www.w3.org/2000/svg';

const READABLE = 11.5 / 8; // screen px per SVG unit: the smallest text (8 pt) at 11.5 px
const LARGEST = 2.4; // no closer than this when fitting a small phase

class PanZoom {
  // The graph's viewBox: wheel zooms at the pointer, dragging pans, buttons and keys zoom.
  // Until the user zooms or pans, the view follows the active phase (focus): fitted to it,
  // never smaller than READABLE; once they do, their view stays until they ask to follow.
  constructor(box, svg) {
    this.box = box; this.svg = svg;
    const vb = svg.viewBox.baseVal;
    this.full = {x: vb.x, y: vb.y, w: vb.width, h: vb.height};
    svg.removeAttribute('width'); svg.removeAttribute('height');
    svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
    this.view = Object.assign({}, this.full);
    this.drag = null; this.user = false; this.target = null;
    box.addEventListener('wheel', e => {e.preventDefault(); if(!e.deltaY) return;
      this.zoom(e.deltaY < 0 ? 1.25 : 0.8, this.point(e));}, {passive: false});
    box.addEventListener('mousedown', e => {if(e.button !== 0) return;
      this.drag = {x: e.clientX, y: e.clientY, view: Object.assign({}, this.view)};
      box.classList.add('dragging'); e.preventDefault();});
    window.addEventListener('mousemove', e => {if(!this.drag) return;
      const s = this.scale();
      if(e.clientX !== this.drag.x || e.clientY !== this.drag.y) this.mine();
      this.view.x = this.drag.view.x - (e.clientX - this.drag.x) / s;
      this.view.y = this.drag.view.y - (e.clientY - this.drag.y) / s; this.apply();});
    window.addEventListener('mouseup', () => {this.drag = null; box.classList.remove('dragging');});
    window.addEventListener('resize', () => {if(!this.user && this.target) this.focus(this.target);});
    this.apply();
  }
  mine() { this.user = true; document.body.dataset.follow = ''; }
  scale() { // screen pixels per SVG unit
    const r = this.svg.getBoundingClientRect();
    return Math.min(r.width / this.view.w, r.height / this.view.h) || 1;
  }
  point(e) { // the SVG point under the pointer
    const r = this.svg.getBoundingClientRect(), s = this.scale();
    const ox = (r.width - this.view.w * s) / 2, oy = (r.height - this.view.h * s) / 2;
    return {x: this.view.x + (e.clientX - r.left - ox) / s, y: this.view.y + (e.clientY - r.top - oy) / s};
  }
  zoom(factor, at) {
    const z = this.full.w / (this.view.w / factor);
    if(z < 0.5 || z > 40) return;
    this.mine();
    at = at || {x: this.view.x + this.view.w / 2, y: this.view.y + this.view.h / 2};
    this.view = {x: at.x - (at.x - this.view.x) / factor, y: at.y - (at.y - this.view.y) / factor,
                 w: this.view.w / factor, h: this.view.h / factor};
    this.apply();
  }
  fit() { this.mine(); this.view = Object.assign({}, this.full); this.apply(); }
  follow() { this.user = false; if(this.target) this.focus(this.target); }
  bounds(groups) { // the SVG box (viewBox units) around these elements
    const m = this.svg.getScreenCTM(); if(!m || !groups.length) return null;
    const inv = m.inverse();
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    groups.forEach(g => {const r = g.getBoundingClientRect();
      [[r.left, r.top], [r.right, r.bottom]].forEach(([x, y]) => {
        const p = new DOMPoint(x, y).matrixTransform(inv);
        x0 = Math.min(x0, p.x); y0 = Math.min(y0, p.y); x1 = Math.max(x1, p.x); y1 = Math.max(y1, p.y);});});
    return {x: x0, y: y0, w: x1 - x0, h: y1 - y0};
  }
  focus(groups) { // fit these phases, readable; a phase too big for the box shows its top left
    this.target = groups;
    document.body.dataset.follow = this.user ? '' : '1';
    if(this.user) return;
    const b = this.bounds(groups); if(!b) return;
    const r = this.box.getBoundingClientRect(), pad = 12;
    const s = Math.max(READABLE, Math.min(LARGEST, (r.width - 2 * pad) / b.w, (r.height - 2 * pad) / b.h));
    const w = r.width / s, h = r.height / s;
    const x = b.w * s + 2 * pad <= r.width ? b.x + b.w / 2 - w / 2 : b.x - pad / s;
    const y = b.h * s + 2 * pad <= r.height ? b.y + b.h / 2 - h / 2 : b.y - pad / s;
    this.view = {x: x, y: y, w: w, h: h};
    this.apply();
  }
  apply() {
    const v = this.view;
    this.svg.setAttribute('viewBox', [v.x, v.y, v.w, v.h].map(n => n.toFixed(1)).join(' '));
    document.body.dataset.zoom = (this.full.w / v.w).toFixed(2);
    document.body.dataset.view = this.svg.getAttribute('viewBox');
  }
}

function shortId(cid) {
  // A command id (run/phase.activation/node/path#attempt) as phase.activation/…/leaf#attempt
  const parts = String(cid).split('/');
  if(parts.length < 3) return String(cid);
  return parts[1] + '/' + (parts.length > 3 ? '…/' : '') + parts[parts.length - 1];
}

class ReplayView {
  constructor(doc) {
    const json = id => JSON.parse(doc.getElementById(id).textContent);
    this.doc = doc; this.frames = json('frames'); this.colours = json('colours');
    this.images = json('images'); this.config = json('pageconfig');
    this.index = 0; this.timer = null; this.follow = false;
    this.svg = doc.querySelector('#graph svg');
    this.panzoom = new PanZoom(doc.getElementById('graph'), this.svg);
    this.notes = {};
    doc.querySelectorAll('g.node').forEach(g => {
      const t = Array.from(g.querySelectorAll('text')).find(x => x.textContent.length &&
        x.textContent.split('').every(c => c === NOTE_SPACE));
      if(t){ t.textContent = ''; this.notes[g.id] = t; }
      const title = g.querySelector('title'); g.dataset.path = title ? title.textContent : g.id;
    });
    const names = {R: 'ArrowRight', L: 'ArrowLeft', N: 'n', P: 'p', E: 'End', H: 'Home'};
    this.keyNames = names;
  }
  el(id) { return this.doc.getElementById(id); }
  paintNode(g, status, note) {
    const c = this.colours[status] || this.colours['static'];
    g.dataset.status = status || 'static';
    g.querySelectorAll('polygon,ellipse,path').forEach(s => {s.setAttribute('fill', c[0]);
      s.setAttribute('stroke', c[1]); s.setAttribute('stroke-dasharray', status === 'NOT_TICKED' ? '4,2' : '');});
    const t = this.notes[g.id];
    if(t){ t.textContent = note || ''; t.setAttribute('fill', c[2] || c[1]); }
    g.dataset.note = note || '';
  }
  paintPhase(id, state) {
    const g = this.el('phase_' + id); if(!g) return;
    g.dataset.state = state;
    const s = g.querySelector('polygon,path'); if(!s) return;
    if(g.classList.contains('cluster')){
      s.setAttribute('stroke', state === 'active' ? '#1565c0' : state === 'visited' ? '#546e7a' : '#b0bec5');
      s.setAttribute('stroke-width', state === 'active' ? '3' : '1');
      s.setAttribute('fill', state === 'active' ? '#e3f2fd' : 'white');
    } else {
      const good = id === 'done';
      s.setAttribute('fill', state === 'active' ? (good ? '#c8e6c9' : '#ffcdd2') : '#eeeeee');
    }
  }
  cameras(images) {
    const box = this.el('cameras');
    if(this.config.problem && !box.dataset.problem){
      const p = this.doc.createElement('p'); p.className = 'problem';
      p.textContent = 'camera frames: ' + this.config.problem; box.before(p); box.dataset.problem = '1';
    }
    Object.entries(images || {}).forEach(([camera, im]) => {
      let fig = box.querySelector('figure[data-camera="' + camera + '"]');
      if(!fig){
        fig = this.doc.createElement('figure'); fig.dataset.camera = camera;
        const svg = this.doc.createElementNS(SVGNS, 'svg');
        const img = this.doc.createElementNS(SVGNS, 'image');
        const boxes = this.doc.createElementNS(SVGNS, 'g');
        svg.append(img, boxes); fig.append(svg);
        const cap = this.doc.createElement('figcaption'); fig.append(cap); box.append(fig);
      }
      const svg = fig.querySelector('svg'), img = svg.querySelector('image');
      svg.setAttribute('viewBox', '0 0 ' + im.w + ' ' + im.h);
      img.setAttribute('width', im.w); img.setAttribute('height', im.h);
      if(img.getAttribute('href') !== this.images[im.src]) img.setAttribute('href', this.images[im.src]);
      fig.dataset.src = im.src;
      const g = svg.querySelector('g'); g.replaceChildren();
      Object.entries(im.boxes).forEach(([id, b]) => {
        const r = this.doc.createElementNS(SVGNS, 'rect');
        r.setAttribute('x', b[0]); r.setAttribute('y', b[1]);
        r.setAttribute('width', b[2] - b[0]); r.setAttribute('height', b[3] - b[1]);
        const t = this.doc.createElementNS(SVGNS, 'text');
        t.setAttribute('x', b[0]); t.setAttribute('y', Math.max(8, b[1] - 2)); t.textContent = id;
        g.append(r, t);
      });
      fig.querySelector('figcaption').textContent = camera + ' · step ' + im.timestep;
    });
  }
  row(cells, cls) {
    const tr = this.doc.createElement('tr');
    cells.forEach((c, i) => {const td = this.doc.createElement('td');
      if(i === 0 && cls === 'cid') { // the short id, the full one on hover and copied on click
        const code = this.doc.createElement('code'); code.textContent = shortId(c); code.title = c;
        const copy = this.doc.createElement('button'); copy.className = 'copy'; copy.textContent = 'copy';
        copy.title = 'copy ' + c; copy.onclick = e => {e.stopPropagation(); this.copy(c);};
        td.append(code, ' ', copy); td.dataset.id = c;
      } else td.textContent = c;
      if(i === 0 && cls) td.className = cls; if(i === 1) td.className = 'word';
      if(i === 2) td.className = 'state ' + c; tr.appendChild(td);});
    return tr;
  }
  copy(text) {
    const done = () => {this.doc.body.dataset.copied = text;};
    const fallback = () => {const t = this.doc.createElement('textarea'); t.value = text;
      this.doc.body.append(t); t.select(); try { this.doc.execCommand('copy'); } catch(e) {}
      t.remove(); done();};
    if(navigator.clipboard && window.isSecureContext)
      navigator.clipboard.writeText(text).then(done, fallback);
    else fallback();
  }
  active(config) { // the innermost active phases' clusters (or the first phase, before any)
    const groups = config.map(id => this.el('phase_' + id)).filter(g => g);
    const inner = groups.filter(g => !groups.some(o => o !== g && g.contains(o)));
    if(inner.length) return inner;
    const first = this.doc.querySelector('#graph g.cluster[id^="phase_"]');
    return first ? [first] : [];
  }
  show(i) {
    const n = this.frames.length; if(!n) return;
    this.index = Math.max(0, Math.min(n - 1, i));
    this.follow = this.index === n - 1;
    const f = this.frames[this.index], d = this.doc;
    d.querySelectorAll('#graph g.node[id^="n"]').forEach(g => /^n\d+$/.test(g.id) &&
      this.paintNode(g, f.nodes[g.id] ? f.nodes[g.id][0] : 'NOT_TICKED', f.nodes[g.id] ? f.nodes[g.id][1] : ''));
    Object.entries(f.phases).forEach(([id, state]) => this.paintPhase(id, state));
    d.querySelectorAll('#graph g.edge[id^="t_"]').forEach(g => {
      const taken = f.taken.includes(g.id); g.dataset.taken = taken ? '1' : '';
      g.querySelectorAll('path,polygon').forEach(s => {s.setAttribute('stroke-width', taken ? '3' : '1');
        s.setAttribute('opacity', taken ? '1' : '0.45');});
    });
    d.querySelectorAll('#graph g.node[id^="x_"]').forEach(g => {
      const taken = f.exits.includes(g.id); g.dataset.taken = taken ? '1' : '';
      const final = g.querySelector('text:last-of-type');
      const good = final && final.textContent === 'done';
      g.querySelectorAll('polygon').forEach(s => {
        s.setAttribute('fill', taken ? (good ? '#c8e6c9' : '#ffcdd2') : 'white');
        s.setAttribute('stroke-width', taken ? '2.5' : '1');});
    });
    const where = 'frame ' + (this.index + 1) + '/' + n + ' · tick ' + f.tick + ' · seq ' + f.seq +
      ' · t=' + f.t.toFixed(2) + ' s';
    this.el('where').textContent = where;
    this.el('slider').max = n - 1; this.el('slider').value = this.index;
    this.el('config').textContent = f.config.join(', ') || '(none)';
    this.el('visited').textContent = f.visited.join(' → ');
    const outcome = this.el('outcome');
    outcome.textContent = f.result ? f.result.outcome + ' (' + f.result.reason + ')' : 'running';
    outcome.className = f.result ? (f.result.outcome === 'succeeded' ? 'good' : 'bad') : '';
    this.el('counters').textContent = Object.entries(f.counters).map(e => e.join(' ')).join(', ') || 'none';
    const ledger = this.el('ledger'); ledger.replaceChildren();
    f.commands.forEach(c => ledger.appendChild(this.row(c, 'cid')));
    const ev = this.el('events'); ev.replaceChildren();
    f.events.forEach(e => {const div = d.createElement('div');
      div.textContent = String(e[0]).padStart(5) + ' ' + e[1].padEnd(12) + ' ' + e[2]; ev.appendChild(div);});
    this.cameras(f.images);
    const key = f.config.join(',');
    if(key !== this.focused || !this.panzoom.target){ this.focused = key; this.panzoom.focus(this.active(f.config)); }
    const b = d.body.dataset;
    b.frame = this.index; b.seq = f.seq; b.tick = f.tick; b.config = f.config.join(',');
    b.images = Object.keys(f.images || {}).join(',');
  }
  push(frame) { // a new frame at the end (a page fed while the run goes)
    this.frames.push(frame);
    if(this.follow) this.show(this.frames.length - 1); else this.el('slider').max = this.frames.length - 1;
  }
  chartStep(dir) {
    let i = this.index + dir;
    while(i >= 0 && i < this.frames.length && !this.frames[i].events.some(e => e[1] === 'chart')) i += dir;
    this.show(i);
  }
  play() {
    if(this.timer){clearInterval(this.timer); this.timer = null; this.el('play').textContent = 'play'; return;}
    this.el('play').textContent = 'pause';
    this.timer = setInterval(() => {if(this.index >= this.frames.length - 1) this.play();
      else this.show(this.index + 1);}, 400);
  }
  key(e) {
    const k = e.key;
    if(k === 'ArrowRight') this.show(this.index + 1); else if(k === 'ArrowLeft') this.show(this.index - 1);
    else if(k === 'Home') this.show(0); else if(k === 'End') this.show(this.frames.length - 1);
    else if(k === 'n') this.chartStep(1); else if(k === 'p') this.chartStep(-1);
    else if(k === '+' || k === '=') this.panzoom.zoom(1.25); else if(k === '-') this.panzoom.zoom(0.8);
    else if(k === '0') this.panzoom.fit(); else if(k === 'f') this.panzoom.follow();
    else if(k === ' ') {this.play(); if(e.preventDefault) e.preventDefault();}
  }
  start(hash) {
    const d = this.doc;
    d.addEventListener('keydown', e => this.key(e));
    this.el('prev').onclick = () => this.show(this.index - 1);
    this.el('next').onclick = () => this.show(this.index + 1);
    this.el('first').onclick = () => this.show(0);
    this.el('last').onclick = () => this.show(this.frames.length - 1);
    this.el('play').onclick = () => this.play();
    this.el('zoom_in').onclick = () => this.panzoom.zoom(1.25);
    this.el('zoom_out').onclick = () => this.panzoom.zoom(0.8);
    this.el('zoom_fit').onclick = () => this.panzoom.fit();
    this.el('zoom_follow').onclick = () => this.panzoom.follow();
    const slider = this.el('slider'); slider.oninput = () => this.show(+slider.value);
    const args = new URLSearchParams(hash);
    let i = 0;
    if(args.has('frame')) i = +args.get('frame');
    if(args.has('seq')){ const s = +args.get('seq'); i = 0;
      this.frames.forEach((f, j) => {if(f.seq <= s) i = j;}); }
    this.show(i);
    for(const c of (args.get('keys') || ''))
      d.dispatchEvent(new KeyboardEvent('keydown', {key: this.keyNames[c] || c}));
  }
}

const replay = new ReplayView(document);
replay.start(location.hash.slice(1));
window.replay = replay;
