// The replay page's script (harness_bt.viz.html): recolours the graph frame by frame.
const FRAMES = JSON.parse(document.getElementById('frames').textContent);
const COLOURS = JSON.parse(document.getElementById('colours').textContent);
const NAMES = JSON.parse(document.getElementById('names').textContent);
let index = 0, timer = null;
function shapes(g){return g ? g.querySelectorAll('polygon,ellipse,path') : [];}
function paint(id, status, note){
  const g = document.getElementById(id); if(!g) return;
  const c = COLOURS[status] || COLOURS['static'];
  g.dataset.status = status || 'static';
  shapes(g).forEach(s => {s.setAttribute('fill', c[0]); s.setAttribute('stroke', c[1]);
    s.setAttribute('stroke-dasharray', status === 'NOT_TICKED' ? '4,2' : '');});
  const t = g.querySelector('title'); if(t) t.textContent = (g.dataset.path||'') +
    (status ? ' — ' + status.toLowerCase() : '') + (note ? ' — ' + note : '');
}
function paintPhase(id, state){
  const g = document.getElementById('phase_' + id); if(!g) return;
  g.dataset.state = state;
  const s = g.querySelector('polygon,path'); if(!s) return;
  if(g.classList.contains('cluster')){
    s.setAttribute('stroke', state === 'active' ? '#1565c0' : '#90a4ae');
    s.setAttribute('stroke-width', state === 'active' ? '3' : '1');
    s.setAttribute('fill', state === 'active' ? '#e3f2fd' : 'white');
  } else {
    const good = id === 'done';
    s.setAttribute('fill', state === 'active' ? (good ? '#c8e6c9' : '#ffcdd2') : '#eeeeee');
  }
}
function row(cells, cls){
  const tr = document.createElement('tr');
  cells.forEach((c, i) => {const td = document.createElement('td'); td.textContent = c;
    if(i === 0 && cls) td.className = cls; tr.appendChild(td);}); return tr;
}
function show(i){
  index = Math.max(0, Math.min(FRAMES.length - 1, i));
  const f = FRAMES[index];
  document.querySelectorAll('g.node[id^="n"]').forEach(g =>
    paint(g.id, f.nodes[g.id] ? f.nodes[g.id][0] : 'NOT_TICKED', f.nodes[g.id] ? f.nodes[g.id][1] : ''));
  document.querySelectorAll('[id^="phase_"]').forEach(g => {
    const id = g.id.slice(6);
    paintPhase(id, f.config.includes(id) ? 'active' : f.visited.includes(id) ? 'visited' : 'idle');
  });
  document.getElementById('where').textContent = 'frame ' + (index + 1) + '/' + FRAMES.length +
    ' · tick ' + f.tick + ' · seq ' + f.seq + ' · t=' + f.t.toFixed(2) + ' s';
  document.getElementById('slider').value = index;
  document.getElementById('config').textContent = f.config.join(', ') || '(none)';
  document.getElementById('visited').textContent = f.visited.join(' → ');
  document.getElementById('outcome').textContent = f.result ? f.result.outcome + ' (' + f.result.reason + ')' : 'running';
  document.getElementById('counters').textContent = Object.entries(f.counters).map(e => e.join(' ')).join(', ') || 'none';
  const ledger = document.getElementById('ledger'); ledger.replaceChildren();
  f.commands.forEach(c => ledger.appendChild(row(c, 'cid')));
  const ev = document.getElementById('events'); ev.replaceChildren();
  f.events.forEach(e => {const d = document.createElement('div');
    d.textContent = String(e[0]).padStart(5) + ' ' + e[1].padEnd(12) + ' ' + e[2]; ev.appendChild(d);});
  document.body.dataset.frame = index; document.body.dataset.seq = f.seq;
  document.body.dataset.tick = f.tick; document.body.dataset.config = f.config.join(',');
}
function chartStep(dir){
  let i = index + dir;
  while(i >= 0 && i < FRAMES.length && !FRAMES[i].events.some(e => e[1] === 'chart')) i += dir;
  show(i);
}
function play(){ if(timer){clearInterval(timer); timer = null; return;}
  timer = setInterval(() => {if(index >= FRAMES.length - 1){clearInterval(timer); timer = null;}
    else show(index + 1);}, 400); }
function onKey(e){
  const k = e.key;
  if(k === 'ArrowRight') show(index + 1); else if(k === 'ArrowLeft') show(index - 1);
  else if(k === 'Home') show(0); else if(k === 'End') show(FRAMES.length - 1);
  else if(k === 'n') chartStep(1); else if(k === 'p') chartStep(-1);
  else if(k === ' ') {play(); e.preventDefault && e.preventDefault();}
}
document.addEventListener('keydown', onKey);
document.getElementById('prev').onclick = () => show(index - 1);
document.getElementById('next').onclick = () => show(index + 1);
document.getElementById('first').onclick = () => show(0);
document.getElementById('last').onclick = () => show(FRAMES.length - 1);
document.getElementById('play').onclick = play;
const slider = document.getElementById('slider');
slider.max = FRAMES.length - 1; slider.oninput = () => show(+slider.value);
document.querySelectorAll('g.node[id^="n"]').forEach(g => {g.dataset.path = NAMES[g.id] || g.id;});
(function start(){
  const args = new URLSearchParams(location.hash.slice(1));
  let i = 0;
  if(args.has('frame')) i = +args.get('frame');
  if(args.has('seq')){ const s = +args.get('seq'); i = 0;
    FRAMES.forEach((f, j) => {if(f.seq <= s) i = j;}); }
  show(i);
  const names = {R: 'ArrowRight', L: 'ArrowLeft', N: 'n', P: 'p', E: 'End', H: 'Home'};
  for(const c of (args.get('keys') || '')) document.dispatchEvent(new KeyboardEvent('keydown', {key: names[c] || c}));
})();
