/**
 * The mission page's script, sent inline under the page's CSP nonce. It draws the compact task
 * view from the embedded model (a square per task, coloured by status, grouped by depth,
 * capability or status; or a list), filters and searches it, opens a task's detail and
 * neighbourhood (fetched from the server on demand) from `#task=<id>`, and keeps the page live
 * by polling `live.json`, which returns the overview as server-rendered HTML and one status
 * character per task. It never turns task text into markup: names go in through textContent.
 */
export const MISSION_SCRIPT = `
(function () {
  'use strict';
  var root = document.getElementById('mission');
  var modelEl = document.getElementById('mission-model');
  if (!root || !modelEl) return;
  var model = JSON.parse(modelEl.textContent);
  var base = '/missions/' + encodeURIComponent(model.mission);
  var n = model.ids.length;
  var status = new Array(n);
  var indexOf = new Map();
  for (var i = 0; i < n; i++) {
    status[i] = model.statuses[model.s.charCodeAt(i) - 97] || 'pending';
    indexOf.set(model.ids[i], i);
  }
  var critical = new Set(model.cp);
  var state = { statuses: new Set(), text: '', group: 'depth', view: 'grid', selected: null };
  var grid = document.getElementById('grid');
  var list = document.getElementById('task-list');
  var shown = document.getElementById('shown');
  var detail = document.getElementById('detail');
  var overview = document.getElementById('overview');
  var cells = new Array(n);
  var LIST_ROWS = 500;

  function matches(i) {
    if (state.statuses.size && !state.statuses.has(status[i])) return false;
    if (!state.text) return true;
    return model.ids[i].toLowerCase().indexOf(state.text) >= 0 ||
      model.titles[i].toLowerCase().indexOf(state.text) >= 0;
  }

  function groupKey(i) {
    if (state.group === 'capability') return model.caps[model.cap[i]];
    if (state.group === 'status') return status[i];
    if (state.group === 'none') return '';
    return model.depth[i];
  }

  function groupLabel(key) {
    if (state.group === 'depth') return 'depth ' + key;
    if (state.group === 'status') return String(key).replace('_', ' ');
    return String(key);
  }

  function cellClass(i) {
    return 'c s-' + status[i] + (critical.has(i) ? ' cp' : '') + (model.ids[i] === state.selected ? ' sel' : '');
  }

  // Builds the grid for the current grouping; filtering afterwards only hides cells.
  function buildGrid() {
    var groups = new Map();
    for (var i = 0; i < n; i++) {
      var key = groupKey(i);
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(i);
    }
    var keys = Array.from(groups.keys());
    if (state.group === 'status') keys.sort(function (a, b) { return model.statuses.indexOf(a) - model.statuses.indexOf(b); });
    else if (state.group === 'depth') keys.sort(function (a, b) { return a - b; });
    else keys.sort();
    var frag = document.createDocumentFragment();
    keys.forEach(function (key) {
      var members = groups.get(key);
      var row = document.createElement('div');
      row.className = 'group';
      var label = document.createElement('div');
      label.className = 'glabel';
      label.textContent = state.group === 'none' ? 'all tasks' : groupLabel(key);
      var count = document.createElement('span');
      count.className = 'muted gcount';
      label.appendChild(count);
      var box = document.createElement('div');
      box.className = 'cells';
      members.forEach(function (i) {
        var cell = document.createElement('i');
        cell.className = cellClass(i);
        cell.dataset.i = i;
        cells[i] = cell;
        box.appendChild(cell);
      });
      row.appendChild(label);
      row.appendChild(box);
      row._members = members;
      frag.appendChild(row);
    });
    grid.textContent = '';
    grid.appendChild(frag);
    applyFilter();
  }

  function applyFilter() {
    var total = 0;
    var hits = [];
    Array.prototype.forEach.call(grid.children, function (row) {
      var visible = 0;
      row._members.forEach(function (i) {
        var ok = matches(i);
        cells[i].classList.toggle('hide', !ok);
        if (ok) { visible++; hits.push(i); }
      });
      row.classList.toggle('hide', visible === 0);
      row.querySelector('.gcount').textContent = ' ' + visible;
      total += visible;
    });
    shown.textContent = total === n ? n + ' tasks' : total + ' of ' + n + ' tasks shown';
    grid.classList.toggle('hide', state.view !== 'grid');
    list.classList.toggle('hide', state.view !== 'list');
    if (state.view === 'list') buildList(hits);
    Array.prototype.forEach.call(root.querySelectorAll('button.filter[data-filter]'), function (b) {
      b.classList.toggle('on', state.statuses.has(b.dataset.filter));
    });
  }

  function buildList(hits) {
    var body = document.createElement('tbody');
    hits.sort(function (a, b) { return a - b; });
    hits.slice(0, LIST_ROWS).forEach(function (i) {
      var tr = document.createElement('tr');
      tr.dataset.task = model.ids[i];
      var a = document.createElement('a');
      a.href = '#task=' + encodeURIComponent(model.ids[i]);
      a.textContent = model.ids[i];
      var td = document.createElement('td');
      td.appendChild(a);
      tr.appendChild(td);
      [model.titles[i], status[i].replace('_', ' '), model.caps[model.cap[i]], String(model.depth[i])].forEach(function (text, k) {
        var cell = document.createElement('td');
        cell.textContent = text;
        if (k === 1) cell.className = 'st s-' + status[i];
        tr.appendChild(cell);
      });
      if (critical.has(i)) tr.className = 'cp';
      body.appendChild(tr);
    });
    var table = list.querySelector('table');
    table.replaceChild(body, table.tBodies[0]);
    list.querySelector('.list-more').textContent =
      hits.length > LIST_ROWS ? '+ ' + (hits.length - LIST_ROWS) + ' more: search or filter to narrow the list' : '';
  }

  function select(id) {
    var old = state.selected;
    state.selected = id;
    [old, id].forEach(function (t) {
      var i = indexOf.get(t);
      if (i !== undefined && cells[i]) cells[i].className = cellClass(i);
    });
    if (!id) { detail.classList.add('hide'); detail.textContent = ''; return; }
    loadDetail(id, true);
  }

  function loadDetail(id, scroll) {
    var levels = detail.dataset.levels || '2';
    fetch(base + '/tasks/' + encodeURIComponent(id) + '?levels=' + levels, { headers: { accept: 'text/html' } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(new Error(r.status + ' ' + r.statusText)); })
      .then(function (text) {
        if (state.selected !== id) return;
        detail.innerHTML = text;
        detail.classList.remove('hide');
        followLive(id);
        if (scroll) detail.scrollIntoView({ block: 'nearest' });
      })
      .catch(function (e) {
        detail.textContent = 'Could not load ' + id + ': ' + e.message;
        detail.classList.remove('hide');
      });
  }

  // A running task's output, appended as it comes while its detail is open (the last 64 KB kept).
  var liveTimer = null;
  function followLive(id) {
    if (liveTimer) { clearTimeout(liveTimer); liveTimer = null; }
    var pre = detail.querySelector('pre.live-tail');
    if (!pre) return;
    var after = '0';
    var tick = function () {
      if (state.selected !== id || !pre.isConnected) return;
      fetch(base + '/tasks/' + encodeURIComponent(id) + '/live.json?attempt=' + pre.dataset.attempt + '&after=' + after, { headers: { accept: 'application/json' } })
        .then(function (r) { return r.ok ? r.json() : Promise.reject(new Error(String(r.status))); })
        .then(function (live) {
          after = live.last;
          if (live.text) {
            var text = (pre.textContent + live.text).slice(-65536);
            pre.textContent = text;
            pre.scrollTop = pre.scrollHeight;
          }
          if (live.ended) { pre.dataset.ended = live.ended; pre.textContent += '\\n[' + live.ended + ']'; return; }
          liveTimer = setTimeout(tick, 1000);
        })
        .catch(function () { liveTimer = setTimeout(tick, 3000); });
    };
    tick();
  }

  function fromHash() {
    var match = /^#task=(.+)$/.exec(location.hash);
    var id = match ? decodeURIComponent(match[1]) : null;
    if (id !== state.selected) select(id);
  }

  function setStatus(i, next) {
    if (status[i] === next) return false;
    status[i] = next;
    if (cells[i]) {
      cells[i].className = cellClass(i);
      cells[i].removeAttribute('title');
    }
    var node = document.querySelector('svg.graph a.node[data-task="' + CSS.escape(model.ids[i]) + '"]');
    if (node) {
      node.setAttribute('data-status', next);
      var style = model.styles[next];
      var rect = node.querySelector('rect');
      if (rect && style) { rect.setAttribute('fill', style.fill); rect.setAttribute('stroke', style.stroke); }
    }
    return true;
  }

  function poll() {
    fetch(base + '/live.json?since=' + encodeURIComponent(model.event), { headers: { accept: 'application/json' } })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(new Error(String(r.status))); })
      .then(function (live) {
        overview.innerHTML = live.overview;
        applyFilter();
        if (live.s) {
          var changed = false;
          var selectedChanged = false;
          for (var i = 0; i < n; i++) {
            if (setStatus(i, model.statuses[live.s.charCodeAt(i) - 97] || 'pending')) {
              changed = true;
              if (model.ids[i] === state.selected) selectedChanged = true;
            }
          }
          var next = new Set(live.cp);
          var old = critical;
          critical = next;
          old.forEach(function (i) { if (!next.has(i) && cells[i]) cells[i].className = cellClass(i); });
          next.forEach(function (i) { if (!old.has(i) && cells[i]) cells[i].className = cellClass(i); });
          model.event = live.event;
          if (changed) applyFilter();
          if (selectedChanged && state.selected) loadDetail(state.selected, false);
        }
        root.dataset.event = live.event;
        if (live.running) setTimeout(poll, 2000);
        else root.dataset.live = 'done';
      })
      .catch(function () { setTimeout(poll, 5000); });
  }

  // A person's verdict on a held task: posted to the board, which signs and queues it.
  function sendVerdict(button) {
    var box = button.closest('.approval');
    var out = box.querySelector('.verdict-result');
    var reason = box.querySelector('.reason').value.trim();
    var verdict = button.dataset.verdict;
    if (verdict === 'reject' && !reason) { out.textContent = 'Say why first: the next attempt reads it.'; return; }
    box.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
    out.textContent = 'sending…';
    fetch(base + '/tasks/' + encodeURIComponent(box.dataset.task) + '/verdict', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ verdict: verdict, reason: reason }),
    })
      .then(function (r) { return r.json().then(function (j) { return { ok: r.ok, body: j }; }); })
      .then(function (res) {
        out.textContent = res.body.message || res.body.error || '';
        if (!res.ok && !res.body.message) box.querySelectorAll('button').forEach(function (b) { b.disabled = false; });
      })
      .catch(function (e) {
        out.textContent = 'Could not send: ' + e.message;
        box.querySelectorAll('button').forEach(function (b) { b.disabled = false; });
      });
  }

  root.addEventListener('click', function (event) {
    var target = event.target;
    var cell = target.closest && target.closest('i.c');
    if (cell) { location.hash = 'task=' + encodeURIComponent(model.ids[Number(cell.dataset.i)]); return; }
    var button = target.closest && target.closest('button');
    if (!button) return;
    if (button.classList.contains('filter')) {
      var s = button.dataset.filter;
      if (!s) return;
      if (state.statuses.has(s)) state.statuses.delete(s); else state.statuses.add(s);
      applyFilter();
    } else if (button.id === 'clear-filter') {
      state.statuses.clear();
      state.text = '';
      document.getElementById('search').value = '';
      applyFilter();
    } else if (button.classList.contains('zoom')) {
      var box = detail.querySelector('.nbhd-box');
      if (box) box.classList.toggle('actual');
      button.textContent = box && box.classList.contains('actual') ? 'zoom to fit' : 'actual size';
    } else if (button.classList.contains('levels')) {
      detail.dataset.levels = button.dataset.levels;
      if (state.selected) loadDetail(state.selected, false);
    } else if (button.classList.contains('verdict')) {
      sendVerdict(button);
    } else if (button.classList.contains('close')) {
      history.replaceState(null, '', location.pathname + location.search);
      select(null);
    }
  });
  root.addEventListener('mouseover', function (event) {
    var cell = event.target.closest && event.target.closest('i.c');
    if (cell && !cell.title) {
      var i = Number(cell.dataset.i);
      cell.title = model.ids[i] + ': ' + model.titles[i] + ' (' + status[i].replace('_', ' ') +
        (critical.has(i) ? ', critical path' : '') + ')';
    }
  });
  document.getElementById('search').addEventListener('input', function (event) {
    state.text = event.target.value.trim().toLowerCase();
    applyFilter();
  });
  document.getElementById('group').addEventListener('change', function (event) {
    state.group = event.target.value;
    buildGrid();
  });
  document.getElementById('view').addEventListener('change', function (event) {
    state.view = event.target.value;
    applyFilter();
  });
  window.addEventListener('hashchange', fromHash);

  buildGrid();
  fromHash();
  root.dataset.ready = '1';
  if (model.running) setTimeout(poll, 2000);
})();
`;
