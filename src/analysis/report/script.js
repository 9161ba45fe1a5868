// The question table of a react-docstore report: filtered, sorted and virtualised (only the rows in
// view are in the document), and a question's trajectories on a click. Every string from the data
// reaches the page through textContent or a text node, never as markup.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var files = data.files;
  var questions = data.questions;
  var ROW = 30;
  var OVERSCAN = 8;
  var body = document.getElementById('table-body');
  var spacer = document.getElementById('table-spacer');
  var head = document.getElementById('table-head');
  var detail = document.getElementById('detail');
  var countLabel = document.getElementById('count');
  var controls = {
    status: document.getElementById('status'),
    stop: document.getElementById('stop'),
    file: document.getElementById('file'),
    search: document.getElementById('search')
  };
  var letters = files.map(function (_, idx) { return idx < 26 ? String.fromCharCode(65 + idx) : 'F' + (idx + 1); });

  // Lower-cased text a search matches, per question, built once.
  questions.forEach(function (q) {
    var parts = [q.id, q.question, q.gold];
    q.runs.forEach(function (run) { if (run && run.answer) parts.push(run.answer); });
    q.haystack = parts.join('\n').toLowerCase();
  });

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function status(run) {
    if (!run) return 'missing';
    if (run.stop === 'error') return 'error';
    return run.em === 1 ? 'right' : 'wrong';
  }

  // Columns: id, question, gold, then per file: answer, EM, F1, steps, stop. Each is at least
  // `min` pixels wide; a share (`fr`) of what is left widens it. When the window is narrower than
  // the columns' minimums, the table scrolls sideways inside its box, its head with it.
  var columns = [
    { key: 'id', title: 'id', min: 96, value: function (q) { return q.id; } },
    { key: 'question', title: 'question', min: 190, fr: 3, value: function (q) { return q.question; } },
    { key: 'gold', title: 'gold', min: 90, fr: 1, value: function (q) { return q.gold; } }
  ];
  files.forEach(function (file, idx) {
    var prefix = files.length > 1 ? letters[idx] + ' ' : '';
    var run = function (q) { return q.runs[idx]; };
    columns.push(
      { key: 'answer' + idx, title: prefix + 'answer', min: 136, fr: 1.2, value: function (q) { var r = run(q); return r ? (r.answer || '') : ''; }, cls: function (q) { return status(run(q)); } },
      { key: 'em' + idx, title: prefix + 'EM', min: 48, numeric: true, value: function (q) { var r = run(q); return r ? r.em : -1; }, show: function (q) { var r = run(q); return r ? String(r.em) : '—'; } },
      { key: 'f1' + idx, title: prefix + 'F1', min: 48, numeric: true, value: function (q) { var r = run(q); return r ? r.f1 : -1; }, show: function (q) { var r = run(q); return r ? r.f1.toFixed(2) : '—'; } },
      { key: 'steps' + idx, title: prefix + 'steps', min: 64, numeric: true, value: function (q) { var r = run(q); return r ? r.steps.length : -1; }, show: function (q) { var r = run(q); return r ? String(r.steps.length) : '—'; } },
      { key: 'stop' + idx, title: prefix + 'stop', min: 112, value: function (q) { var r = run(q); return r ? r.stop : ''; } }
    );
  });
  var template = columns.map(function (c) { return c.fr ? 'minmax(' + c.min + 'px, ' + c.fr + 'fr)' : c.min + 'px'; }).join(' ');
  var minWidth = columns.reduce(function (sum, c) { return sum + c.min; }, 0) + 'px';
  head.style.gridTemplateColumns = template;
  head.style.minWidth = minWidth;
  spacer.style.minWidth = minWidth;

  var sort = { key: null, dir: 1 };
  var view = [];
  var selected = null;

  columns.forEach(function (column) {
    var button = el('button', null, column.title);
    button.type = 'button';
    button.setAttribute('role', 'columnheader');
    button.dataset.key = column.key;
    button.addEventListener('click', function () {
      sort.dir = sort.key === column.key ? -sort.dir : 1;
      sort.key = column.key;
      head.querySelectorAll('button').forEach(function (b) { b.removeAttribute('aria-sort'); });
      button.setAttribute('aria-sort', sort.dir > 0 ? 'ascending' : 'descending');
      apply();
    });
    head.appendChild(button);
  });

  function matches(q) {
    var fileIdx = controls.file ? Number(controls.file.value) : 0;
    var run = q.runs[fileIdx];
    var wanted = controls.status.value;
    if (wanted === 'flipped') { if (!q.flipped) return false; }
    else if (wanted !== 'all' && status(run) !== wanted) return false;
    var stop = controls.stop.value;
    if (stop && (!run || run.stop !== stop)) return false;
    var text = controls.search.value.trim().toLowerCase();
    return !text || q.haystack.indexOf(text) !== -1;
  }

  function apply() {
    view = [];
    for (var i = 0; i < questions.length; i++) if (matches(questions[i])) view.push(i);
    if (sort.key) {
      var column = columns.filter(function (c) { return c.key === sort.key; })[0];
      view.sort(function (x, y) {
        var a = column.value(questions[x]), b = column.value(questions[y]);
        var order = column.numeric ? a - b : String(a).localeCompare(String(b));
        return order * sort.dir || x - y;
      });
    } else if (files.length > 1) {
      // Flipped questions first, each group in file order.
      view.sort(function (x, y) { return (questions[y].flipped - questions[x].flipped) || x - y; });
    }
    spacer.style.height = view.length * ROW + 'px';
    countLabel.textContent = view.length + ' of ' + questions.length + ' questions';
    draw();
  }

  var drawn = { first: -1, last: -1, length: -1 };
  function draw(force) {
    // The head sits above the rows inside the scrolled box.
    var top = body.scrollTop - head.offsetHeight;
    var first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    var last = Math.min(view.length, Math.ceil((top + body.clientHeight) / ROW) + OVERSCAN);
    if (!force && first === drawn.first && last === drawn.last && view.length === drawn.length && drawn.view === view) return;
    drawn = { first: first, last: last, length: view.length, view: view };
    var rows = document.createDocumentFragment();
    for (var pos = first; pos < last; pos++) rows.appendChild(row(view[pos], pos));
    spacer.replaceChildren(rows);
  }

  function row(qIdx, pos) {
    var q = questions[qIdx];
    var node = el('div', 'row');
    node.setAttribute('role', 'row');
    node.tabIndex = 0;
    node.dataset.index = qIdx;
    node.style.top = pos * ROW + 'px';
    node.style.gridTemplateColumns = template;
    if (q.flipped) node.classList.add('flip');
    if (qIdx === selected) node.classList.add('selected');
    columns.forEach(function (column) {
      var text = column.show ? column.show(q) : column.value(q);
      var cell = el('span', column.cls ? column.cls(q) : null, text);
      cell.title = text;
      node.appendChild(cell);
    });
    return node;
  }

  function open(qIdx) {
    selected = qIdx;
    draw(true);
    var q = questions[qIdx];
    var box = document.createDocumentFragment();
    var top = el('div', 'detail-head');
    top.appendChild(el('div', 'detail-id', q.id));
    var question = el('div', 'detail-question');
    question.appendChild(el('b', null, 'Question: '));
    question.appendChild(document.createTextNode(q.question));
    top.appendChild(question);
    var gold = el('div', 'detail-gold');
    gold.appendChild(el('b', null, 'Gold: '));
    gold.appendChild(el('mark', null, q.gold));
    if (q.kind || q.level) gold.appendChild(document.createTextNode('  (' + [q.kind, q.level].filter(Boolean).join(', ') + ')'));
    top.appendChild(gold);
    box.appendChild(top);
    var runs = el('div', 'runs');
    // Side by side while each has 360 pixels; beyond, they wrap onto more lines.
    runs.style.gridTemplateColumns = 'repeat(auto-fit, minmax(min(100%, 360px), 1fr))';
    q.runs.forEach(function (run, idx) { runs.appendChild(trajectory(run, idx, q.gold)); });
    box.appendChild(runs);
    detail.replaceChildren(box);
  }

  function trajectory(run, idx, gold) {
    var box = el('div', 'run');
    box.dataset.file = idx;
    var title = el('h4');
    title.appendChild(el('span', 'letter', letters[idx]));
    title.appendChild(document.createTextNode(' ' + files[idx].name));
    box.appendChild(title);
    if (!run) { box.appendChild(el('p', 'hint', 'Not in this file.')); return box; }
    var verdict = el('p', status(run));
    verdict.textContent = 'Answer: ' + (run.answer === null ? '(none)' : run.answer) + ' — EM ' + run.em + ', F1 ' + run.f1.toFixed(2) +
      ', stopped: ' + run.stop + ', ' + run.calls + ' LLM calls' + (run.tokens > 0 ? ', ' + run.tokens + ' tokens' : ', tokens not recorded');
    box.appendChild(verdict);
    if (run.error) box.appendChild(el('p', 'error', 'Error: ' + run.error));
    if (run.backoff) {
      box.appendChild(el('p', 'backoff', 'Backed off from ' + run.backoff[0] + ' to ' + run.backoff[1] + ' (' + run.backoff[2] + '): both phases below, in order.'));
    }
    if (run.attempts && run.attempts.length > 1) {
      attempts(run, box, gold);
      return box;
    }
    var phases = [steps, samples];
    if (run.samples_first) phases.reverse();
    phases.forEach(function (phase) { phase(run, box, gold); });
    return box;
  }

  // Every attempt at the question side by side, each with what its prompt showed of the failed
  // trials before it (the last trial, the reflections), then its steps.
  function attempts(run, box, gold) {
    box.appendChild(el('p', 'hint', run.attempts.length + ' attempts, side by side; the answer above counts for the question.'));
    var grid = el('div', 'attempts');
    grid.style.gridTemplateColumns = 'repeat(' + run.attempts.length + ', minmax(0, 1fr))';
    run.attempts.forEach(function (attempt) {
      var column = el('div', 'attempt');
      column.appendChild(el('h5', null, attempt.label));
      column.appendChild(el('p', attempt.em ? 'right' : 'wrong',
        'Answer: ' + (attempt.answer === null ? '(none)' : attempt.answer) + ' — EM ' + attempt.em + ', stopped: ' + attempt.stop));
      if (attempt.last_trial) {
        var last = el('details', 'last-trial');
        last.appendChild(el('summary', null, 'Last trial shown'));
        last.appendChild(el('pre', null, attempt.last_trial));
        column.appendChild(last);
      }
      (attempt.reflections || []).forEach(function (reflection, idx) {
        var line = el('div', 'step reflection');
        line.appendChild(el('span', 'label', 'Reflection ' + (idx + 1) + ': '));
        line.appendChild(el('span', 'text', reflection));
        column.appendChild(line);
      });
      steps(attempt, column, gold);
      grid.appendChild(column);
    });
    box.appendChild(grid);
  }

  // A ReAct or Act phase: each step's thought, action and observation.
  function steps(run, box, gold) {
    run.steps.forEach(function (step, stepIdx) {
      var n = stepIdx + 1;
      [['thought', 'Thought'], ['action', 'Action'], ['observation', 'Observation']].forEach(function (kind, k) {
        if (step[k] === null || step[k] === undefined) return;
        var line = el('div', 'step ' + kind[0]);
        line.appendChild(el('span', 'label', kind[1] + ' ' + n + ': '));
        var text = el('span', 'text');
        if (k === 2) appendMarked(text, step[k], gold); else text.textContent = step[k];
        line.appendChild(text);
        box.appendChild(line);
      });
      // The model's thinking before the step, folded: long, and not what it acted on.
      if (typeof step[3] === 'string') {
        var details = el('details', 'step reasoning');
        details.appendChild(el('summary', 'label', 'Reasoning ' + n));
        details.appendChild(el('div', 'text', step[3]));
        box.appendChild(details);
      }
    });
  }

  // A CoT, Standard or CoT-SC phase: each sample and its answer, then the vote.
  function samples(run, box) {
    (run.samples || []).forEach(function (sample, idx) {
      var line = el('div', 'step thought');
      line.appendChild(el('span', 'label', 'Sample ' + (idx + 1) + ': '));
      line.appendChild(el('span', 'text', sample[0]));
      box.appendChild(line);
      var answer = el('div', 'step action');
      answer.appendChild(el('span', 'label', 'Answer ' + (idx + 1) + ': '));
      answer.appendChild(el('span', 'text', sample[1] === null ? '(none)' : sample[1]));
      box.appendChild(answer);
    });
    if (run.vote) {
      box.appendChild(el('p', 'vote', 'Majority: ' + (run.vote[0] === null ? '(no answer)' : run.vote[0]) +
        ' — ' + run.vote[1] + ' of ' + run.vote[2] + ' samples'));
    }
  }

  // `text` as text nodes, with each case-insensitive occurrence of `gold` in a <mark>.
  function appendMarked(parent, text, gold) {
    var needle = (gold || '').trim().toLowerCase();
    if (!needle) { parent.textContent = text; return; }
    var lower = text.toLowerCase();
    // Lower-casing can change lengths outside ASCII; mark only when it did not.
    if (lower.length !== text.length) { parent.textContent = text; return; }
    var from = 0, at;
    while ((at = lower.indexOf(needle, from)) !== -1) {
      parent.appendChild(document.createTextNode(text.slice(from, at)));
      parent.appendChild(el('mark', 'gold', text.slice(at, at + needle.length)));
      from = at + needle.length;
    }
    parent.appendChild(document.createTextNode(text.slice(from)));
  }

  body.addEventListener('scroll', function () { window.requestAnimationFrame(function () { draw(); }); }, { passive: true });
  window.addEventListener('resize', function () { draw(true); });
  spacer.addEventListener('click', function (event) {
    var target = event.target.closest('.row');
    if (target) open(Number(target.dataset.index));
  });
  spacer.addEventListener('keydown', function (event) {
    var target = event.target.closest('.row');
    if (target && (event.key === 'Enter' || event.key === ' ')) { event.preventDefault(); open(Number(target.dataset.index)); }
  });
  var pending = null;
  controls.search.addEventListener('input', function () {
    window.clearTimeout(pending);
    pending = window.setTimeout(function () { body.scrollTop = 0; apply(); }, 80);
  });
  [controls.status, controls.stop, controls.file].forEach(function (control) {
    if (control) control.addEventListener('change', function () { body.scrollTop = 0; apply(); });
  });
  apply();
})();
