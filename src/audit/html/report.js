/* sandcap audit report --html: renders the data block into the page.
 * Everything from the log reaches the DOM as text nodes (never innerHTML),
 * and the page loads nothing: the CSP of the page allows no fetch at all. */
'use strict';
(function () {
	const D = JSON.parse(document.getElementById('sc-data').textContent);
	const ROWS = D.rows;
	const PAGE = 50;

	/* Control and bidirectional-formatting characters are shown as \u{..}:
	 * a path or argv cannot reorder or hide what is printed around it. */
	const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g;
	function safe(s) {
		return String(s).replace(UNSAFE, (c) => '\\u{' + c.charCodeAt(0).toString(16) + '}');
	}
	/* In a <pre>, line ends are the text's own. */
	function safeLines(s) {
		return String(s).split('\n').map(safe).join('\n');
	}
	const ATTRS = new Set(['id', 'title', 'type', 'value', 'placeholder', 'colSpan', 'open', 'disabled', 'selected']);
	function el(tag, attrs, ...kids) {
		const e = document.createElement(tag);
		for (const k in attrs || {}) {
			if (k === 'class')
				e.className = attrs[k];
			else if (k.startsWith('data-'))
				e.setAttribute(k, String(attrs[k]));
			else if (ATTRS.has(k))
				e[k] = typeof attrs[k] === 'string' ? safe(attrs[k]) : attrs[k];
		}
		add(e, kids);
		return e;
	}
	function add(e, c) {
		if (c === null || c === undefined || c === false)
			return;
		if (Array.isArray(c))
			c.forEach((x) => add(e, x));
		else
			e.appendChild(c instanceof Node ? c : document.createTextNode(e.tagName === 'PRE' ? safeLines(c) : safe(c)));
	}
	const SVG = 'http://www.w3.org/2000/svg'; /* a namespace name, never fetched */
	function svg(tag, attrs, ...kids) {
		const e = document.createElementNS(SVG, tag);
		for (const k in attrs || {})
			e.setAttribute(k, String(attrs[k]));
		add(e, kids);
		return e;
	}

	/* Units */
	const BIG = 9e18; /* the log's "unlimited" (2^63-1, or larger reals) */
	function size(b) {
		if (typeof b !== 'number')
			return b === null || b === undefined ? '-' : String(b);
		if (b >= BIG)
			return 'unlimited';
		const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let i = 0;
		while (b >= 1024 && i + 1 < u.length) {
			b /= 1024;
			i++;
		}
		return i ? b.toFixed(1) + ' ' + u[i] : b + ' B';
	}
	function secs(ns) {
		return typeof ns === 'number' ? (ns / 1e9).toFixed(2) + ' s' : '-';
	}
	function ms(us) {
		return typeof us === 'number' ? '+' + (us / 1e6).toFixed(3) + ' s' : '';
	}
	function words(a) {
		return Array.isArray(a) ? a.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(' ') : a === undefined || a === null ? '' : String(a);
	}
	function num(n) {
		return typeof n === 'number' ? n.toLocaleString('en-US') : n === undefined || n === null ? '0' : String(n);
	}
	function scalar(v) {
		if (v === null || v === undefined)
			return '-';
		if (Array.isArray(v))
			return words(v);
		if (typeof v === 'object')
			return JSON.stringify(v);
		return String(v);
	}
	const SIZE_KEYS = new Set(['memory', 'fsize', 'tmp_size', 'size', 'bandwidth', 'egress_budget', 'max_request_body',
		'max_response_body', 'max_bytes', 'quota']);
	function planValue(k, v) {
		if (v === null || v === undefined)
			return 'not set';
		if (typeof v === 'number' && v >= BIG)
			return 'unlimited';
		if (typeof v === 'number' && SIZE_KEYS.has(k))
			return size(v);
		if (typeof v === 'number' && k === 'cpu')
			return v + ' CPU' + (v === 1 ? '' : 's');
		if (typeof v === 'number' && k.endsWith('_ns'))
			return secs(v);
		return scalar(v);
	}

	/* The rows: sorted by seq, each with its text for the search box. */
	function text(v, out) {
		if (v === null || v === undefined)
			return;
		if (typeof v === 'object') {
			for (const k in v)
				text(v[k], out);
		} else
			out.push(String(v).toLowerCase());
	}
	ROWS.sort((a, b) => a.s - b.s);
	for (const r of ROWS) {
		const t = [];
		text(r, t);
		r._q = t.join(' ');
	}
	const rowHost = (r) => r.host || (r.k === 'dns' ? r.name : undefined);

	/* Filters: from the URL's hash (#q=..&kind=..&host=..&proc=..), so that
	 * a link keeps them; every table follows them. */
	const F = { q: '', kind: '', host: '', proc: '' };
	function readHash() {
		const p = new URLSearchParams(location.hash.replace(/^#/, ''));
		for (const k in F)
			F[k] = p.get(k) || '';
	}
	function writeHash() {
		const p = new URLSearchParams();
		for (const k in F)
			if (F[k])
				p.set(k, F[k]);
		const h = p.toString();
		history.replaceState(null, '', h ? '#' + h : location.pathname + location.search);
	}
	function match(r) {
		if (F.kind && r.k !== F.kind)
			return false;
		if (F.host && rowHost(r) !== F.host)
			return false;
		if (F.proc) {
			if (F.proc.startsWith('c:') ? (r.c || r.child || '') !== F.proc.slice(2) : String(r.pid) !== F.proc)
				return false;
		}
		return !F.q || r._q.includes(F.q.toLowerCase());
	}

	const tables = [];
	const renderers = [];
	function kindCount(kinds) {
		let n = 0, kept = 0;
		for (const k of kinds) {
			n += (D.kinds[k] || {}).count || 0;
			kept += (D.kinds[k] || {}).kept || 0;
		}
		return [n, kept];
	}
	/* A paged table of the kept rows of kinds, narrowed by pred. */
	function table(parent, id, kinds, cols, pred) {
		const t = { id, kinds: new Set(kinds), cols, pred, page: 0, box: el('div', { class: 'tbl', id }) };
		parent.appendChild(t.box);
		tables.push(t);
		return t;
	}
	function renderTable(t) {
		const rows = ROWS.filter((r) => t.kinds.has(r.k) && (!t.pred || t.pred(r)) && match(r));
		const pages = Math.max(1, Math.ceil(rows.length / PAGE));
		t.page = Math.min(t.page, pages - 1);
		const [n, kept] = kindCount(t.kinds);
		const body = rows.slice(t.page * PAGE, (t.page + 1) * PAGE).map((r) =>
			el('tr', { 'data-seq': r.s }, t.cols.map((c) => el('td', c.n ? { class: 'n' } : null, c.f(r)))));
		const head = el('tr', null, t.cols.map((c) => el('th', null, c.h)));
		const left = n - kept;
		const prev = el('button', { type: 'button', disabled: t.page === 0 }, 'previous');
		const next = el('button', { type: 'button', disabled: t.page + 1 >= pages }, 'next');
		prev.addEventListener('click', () => { t.page--; renderTable(t); });
		next.addEventListener('click', () => { t.page++; renderTable(t); });
		const info = el('div', { class: 'pager' },
			el('span', null, rows.length + ' shown of ' + num(kept) + ' kept' +
				(left > 0 ? '; ' + num(left) + ' more recorded, not in this page (the log has them)' : '')),
			pages > 1 ? [prev, el('span', null, 'page ' + (t.page + 1) + ' of ' + pages), next] : null);
		t.box.setAttribute('data-matching', rows.length);
		t.box.replaceChildren(rows.length ? el('table', null, el('thead', null, head), el('tbody', null, body)) :
			el('p', { class: 'mute' }, kept ? 'No kept record matches the filters.' : 'None recorded.'), info);
	}
	function renderAll() {
		tables.forEach(renderTable);
		renderers.forEach((f) => f());
		document.documentElement.setAttribute('data-matching', ROWS.filter(match).length);
	}

	const col = (h, f, n) => ({ h, f, n });
	const T = col('time', (r) => ms(r.t), true);
	const WHO = col('sandbox', (r) => r.c || '');
	const hasChild = ROWS.some((r) => r.c);

	/* Sections */
	const main = document.getElementById('sc-main');
	function section(id, title) {
		const s = el('section', { id }, el('h2', null, title));
		main.appendChild(s);
		return s;
	}
	function grid(pairs) {
		return el('div', { class: 'grid' }, pairs.filter((p) => p).map(([k, v]) => [el('div', null, k), el('div', null, v)]));
	}
	function card(title, value, sub, frac) {
		const c = el('div', { class: 'card' }, el('div', { class: 's' }, title), el('div', { class: 'v' }, value), sub ? el('div', { class: 's' }, sub) : null);
		if (typeof frac === 'number' && isFinite(frac)) {
			const bar = el('div');
			bar.style.width = Math.min(100, Math.max(0, frac * 100)).toFixed(1) + '%';
			c.appendChild(el('div', { class: 'meter' + (frac >= 0.999 ? ' full' : '') }, bar));
		}
		return c;
	}

	/* The run at a glance */
	const plan = D.plan || {};
	const limits = plan.limits || {};
	const exit = D.exit || {};
	const start = D.start || {};
	main.appendChild(grid([
		['sandbox', D.sandbox || '(unknown)'],
		['command', start.command && start.command.length ? words(start.command) : D.commands ? 'none of its own: a session (its commands are below)' : '(unknown)'],
		['policy', (start.policy_source || '?') + (start.policy_digest ? ' (sha256 ' + start.policy_digest + ')' : '')],
		['started', D.first_ts || '-'],
		['last record', D.last_ts || '-'],
		['wall time', secs(exit.wall_ns)],
		['exit', D.exit_text],
		exit.stopped_by ? ['stopped by', scalar(exit.stopped_by.signal) + (exit.stopped_by.forced_kill ? ', killed after the grace period' : '')] : null,
		['records', num(D.records) + (D.unreadable ? ', ' + num(D.unreadable) + ' unreadable lines' : '')],
	]));

	/* Filters */
	const bar = el('div', { id: 'filters' });
	main.appendChild(bar);
	const q = el('input', { type: 'search', id: 'f-q', placeholder: 'search argv, paths, hosts...' });
	const kindSel = el('select', { id: 'f-kind' }, el('option', { value: '' }, 'every kind'),
		Object.keys(D.kinds).filter((k) => D.kinds[k].count).map((k) => el('option', { value: k }, k + ' (' + num(D.kinds[k].count) + ')')));
	const hostCount = new Map();
	for (const r of ROWS) {
		const h = rowHost(r);
		if (h)
			hostCount.set(h, (hostCount.get(h) || 0) + 1);
	}
	const hostSel = el('select', { id: 'f-host' }, el('option', { value: '' }, 'every host'),
		[...hostCount].sort((a, b) => b[1] - a[1]).slice(0, 300).map(([h, n]) => el('option', { value: h }, h + ' (' + n + ')')));
	const procs = new Map();
	for (const r of ROWS) {
		if (r.k === 'spawn' && r.child && !procs.has('c:' + r.child))
			procs.set('c:' + r.child, 'sub-sandbox ' + r.child);
		if (r.pid !== undefined && !procs.has(String(r.pid)))
			procs.set(String(r.pid), 'pid ' + r.pid + (r.k === 'exec' ? ' ' + (r.path || words(r.argv)) : ''));
	}
	const procSel = el('select', { id: 'f-proc' }, el('option', { value: '' }, 'every process'),
		[...procs].slice(0, 500).map(([v, l]) => el('option', { value: v }, l.slice(0, 80))));
	bar.append(el('b', null, 'Filter'), q, kindSel, hostSel, procSel, el('span', { id: 'f-count', class: 'mute' }));
	function fromControls() {
		F.q = q.value;
		F.kind = kindSel.value;
		F.host = hostSel.value;
		F.proc = procSel.value;
		writeHash();
		tables.forEach((t) => (t.page = 0));
		renderAll();
	}
	function toControls() {
		q.value = F.q;
		for (const [s, v] of [[kindSel, F.kind], [hostSel, F.host], [procSel, F.proc]]) {
			if (v && ![...s.options].some((o) => o.value === v))
				s.appendChild(el('option', { value: v }, v));
			s.value = v;
		}
	}
	q.addEventListener('input', fromControls);
	[kindSel, hostSel, procSel].forEach((s) => s.addEventListener('change', fromControls));
	window.addEventListener('hashchange', () => { readHash(); toControls(); renderAll(); });
	renderers.push(() => {
		const n = ROWS.filter(match).length;
		document.getElementById('f-count').textContent = n + ' of ' + ROWS.length + ' kept records match';
	});

	/* What it could access */
	{
		const s = section('access', 'What it could access');
		s.appendChild(el('h3', null, 'The policy in plain words (as sandcap check prints it)'));
		s.appendChild(D.policy_text ? el('pre', { id: 'policy-text' }, D.policy_text) : el('p', { class: 'warn' }, D.policy_error || 'No sandbox.start record: the capability set is unknown.'));
		const fs = plan.fs || {};
		s.appendChild(el('h3', null, 'Grants'));
		const grants = fs.grants || [];
		s.appendChild(grants.length ? el('table', { id: 'grants' }, el('tr', null, el('th', null, 'mode'), el('th', null, 'host path'), el('th', null, 'inside'), el('th', null, 'quota')),
			grants.map((g) => el('tr', null, el('td', null, g.mode), el('td', null, g.path), el('td', null, g.at || g.path), el('td', null, planValue('quota', g.quota))))) :
			el('p', null, 'No grants: the runtime (' + scalar(fs.runtime) + ') read-only and a private /tmp only.'));
		const net = plan.net || {};
		s.appendChild(el('h3', null, 'Hosts it could reach'));
		const eg = net.egress || [];
		s.appendChild(eg.length ? el('table', { id: 'egress' }, el('tr', null, el('th', null, 'host'), el('th', null, 'ports'), el('th', null, 'methods'), el('th', null, 'more')),
			eg.map((r) => {
				const o = typeof r === 'string' ? { host: r } : r;
				const rest = Object.keys(o).filter((k) => !['host', 'ports', 'methods'].includes(k) && o[k] !== null && !(Array.isArray(o[k]) && !o[k].length) && o[k] !== false);
				return el('tr', null, el('td', null, o.host), el('td', null, words(o.ports)), el('td', null, words(o.methods) || 'any'),
					el('td', null, rest.map((k) => k + '=' + scalar(o[k])).join(', ')));
			})) : el('p', null, 'None: no network.'));
		const other = ['allow_private', 'rate', 'egress_budget', 'bandwidth', 'dns', 'max_request_body', 'max_response_body']
			.filter((k) => net[k] !== undefined && net[k] !== null && !(Array.isArray(net[k]) && !net[k].length));
		if (other.length)
			s.appendChild(grid(other.map((k) => [k, planValue(k, net[k])])));
		s.appendChild(el('h3', null, 'Credentials (names only; the values never enter the sandbox or the log)'));
		const creds = (D.bound && D.bound.credentials) || [];
		s.appendChild(creds.length ? el('table', { id: 'credentials' }, el('tr', null, ['name', 'host', 'header', 'format', 'max requests', 'max bytes', 'expires'].map((h) => el('th', null, h))),
			creds.map((c) => el('tr', null, el('td', null, c.name), el('td', null, c.host), el('td', null, c.header || 'placeholder'), el('td', null, scalar(c.format)),
				el('td', null, planValue('max_requests', c.max_requests)), el('td', null, planValue('max_bytes', c.max_bytes)), el('td', null, scalar(c.expires))))) :
			el('p', null, 'None.'));
		s.appendChild(el('h3', null, 'Limits'));
		s.appendChild(grid(Object.keys(limits).map((k) => [k, planValue(k, limits[k])])));
		s.appendChild(el('h3', null, 'Enforcement layers in place (from sandbox.start)'));
		const layers = start.layers || {};
		s.appendChild(grid(Object.keys(layers).map((k) => [k, scalar(layers[k])])));
		if (start.transparent)
			s.appendChild(grid([['transparent', start.transparent]]));
		if (start.not_enforced && start.not_enforced.length)
			s.appendChild(el('p', { class: 'bad', id: 'not-enforced' }, 'NOT ENFORCED (best effort): ' + words(start.not_enforced)));
	}

	/* What it consumed */
	{
		const s = section('consumed', 'What it consumed');
		const cards = el('div', { class: 'cards' });
		const cpuLim = typeof limits.cpu === 'number' && limits.cpu < BIG ? limits.cpu : null;
		const wall = exit.wall_ns;
		const SP = (D.samples && D.samples.points) || [];
		const SK = (D.samples && D.samples.keys) || [];
		const sv = (p, k) => p[SK.indexOf(k) + 1];
		const pidsSeen = SP.map((p) => sv(p, 'pids')).filter((v) => typeof v === 'number');
		const pidsPeak = pidsSeen.length ? Math.max(...pidsSeen) : null;
		cards.append(
			card('CPU time', secs(exit.cpu_ns), (exit.throttled_ns ? 'throttled ' + secs(exit.throttled_ns) + '; ' : '') +
				(cpuLim ? 'limit ' + cpuLim + ' CPU' + (cpuLim === 1 ? '' : 's') : 'no CPU limit'),
				cpuLim && wall ? exit.cpu_ns / (cpuLim * wall) : undefined),
			card('memory peak', size(exit.memory_peak), 'limit ' + planValue('memory', limits.memory) + (exit.oom_kills ? '; ' + exit.oom_kills + ' OOM kill' + (exit.oom_kills === 1 ? '' : 's') : ''),
				typeof limits.memory === 'number' && limits.memory < BIG ? exit.memory_peak / limits.memory : undefined),
			card('processes', num(D.tally.execs) + ' execs', 'pids limit ' + planValue('pids', limits.pids) + (pidsPeak !== null ? '; most at once (sampled) ' + num(pidsPeak) : '; no samples of the count')),
			card('wall time', secs(wall), 'limit ' + planValue('wall', limits.wall)),
			card('network', size(exit.bytes_out !== undefined ? exit.bytes_out : D.net_bytes_out) + ' out', size(exit.bytes_in !== undefined ? exit.bytes_in : D.net_bytes_in) + ' in; ' +
				num(exit.requests_allowed !== undefined ? exit.requests_allowed : D.kinds.request.count) + ' allowed, ' + num(exit.requests_denied !== undefined ? exit.requests_denied : D.tally.net_denied) + ' denied'));
		s.appendChild(cards);
		s.appendChild(el('h3', null, 'Bytes per host (allowed traffic)'));
		s.appendChild(D.hosts.length ? el('table', { id: 'hosts' }, el('tr', null, el('th', null, 'host'), el('th', null, 'requests'), el('th', null, 'bytes out'), el('th', null, 'bytes in')),
			D.hosts.map((h) => el('tr', null, el('td', null, h.host), el('td', { class: 'n' }, num(h.count)), el('td', { class: 'n' }, size(h.bytes_out)), el('td', { class: 'n' }, size(h.bytes_in)))),
			D.hosts_other ? el('tr', null, el('td', { colSpan: 4, class: 'mute' }, 'and up to ' + D.hosts_other + ' more hosts')) : null) : el('p', null, 'None.'));
		const creds = (D.bound && D.bound.credentials) || [];
		if (creds.length) {
			s.appendChild(el('h3', null, 'Credential use against its limits'));
			s.appendChild(el('table', { id: 'credential-use' }, el('tr', null, ['name', 'requests', 'bytes out', 'bytes in', 'refused'].map((h) => el('th', null, h))),
				creds.map((c) => el('tr', null, el('td', null, c.name),
					el('td', { class: 'n' }, num(c.requests) + (typeof c.max_requests === 'number' ? ' of ' + num(c.max_requests) : '')),
					el('td', { class: 'n' }, size(c.bytes_out) + (typeof c.max_bytes === 'number' ? ' of ' + size(c.max_bytes) : '')),
					el('td', { class: 'n' }, size(c.bytes_in)), el('td', { class: 'n' + (c.refused ? ' bad' : '') }, num(c.refused))))));
		}
		const marks = ROWS.filter((r) => r.k === 'limit');
		s.appendChild(el('h3', null, 'Resource use over time'));
		s.appendChild(resourceCharts(SP, sv, cpuLim, marks));
		s.appendChild(el('h3', null, 'Activity over time'));
		s.appendChild(el('p', { class: 'mute' }, 'Each bar is ' + (D.series.width_us / 1e6).toFixed(3) + ' s of the run: what the records themselves time. ' +
			'Red lines mark limits hit (hover for which).'));
		const n = Math.max(1, D.series.n);
		const W = 1000, H = 100;
		function chart(id, title, values, opts) {
			const vals = values.slice(0, n);
			let max = Math.max(1, ...vals);
			if (opts && opts.budget)
				max = Math.max(max, opts.budget);
			const g = svg('svg', { class: 'chart', id, viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none' });
			const bw = W / n;
			if (opts && opts.line) {
				g.appendChild(svg('polyline', { class: 'line', points: vals.map((v, i) => ((i + 1) * bw).toFixed(1) + ',' + (H - (v / max) * (H - 4)).toFixed(1)).join(' ') }));
			} else {
				vals.forEach((v, i) => {
					if (v)
						g.appendChild(svg('rect', { class: 'bar', x: (i * bw).toFixed(2), y: (H - (v / max) * (H - 4)).toFixed(2), width: Math.max(0.5, bw - 0.5).toFixed(2), height: ((v / max) * (H - 4)).toFixed(2) },
							svg('title', null, ms(i * D.series.width_us) + ': ' + num(v))));
				});
			}
			if (opts && opts.budget) {
				const y = (H - (opts.budget / max) * (H - 4)).toFixed(1);
				g.appendChild(svg('line', { class: 'budget', x1: 0, x2: W, y1: y, y2: y }, svg('title', null, opts.budgetTitle)));
			}
			for (const m of marks) {
				const x = ((m.t / D.series.width_us / n) * W).toFixed(1);
				g.appendChild(svg('line', { class: 'mark', x1: x, x2: x, y1: 0, y2: H, 'data-limit': m.limit || '' },
					svg('title', null, 'limit ' + (m.limit || '?') + ' at ' + ms(m.t) + (m.detail ? ': ' + m.detail : '') + (m.suppressed ? ' (' + m.suppressed + ' folded)' : ''))));
			}
			const total = vals.reduce((a, b) => a + b, 0);
			return el('div', { class: 'chartbox' }, el('div', { class: 'lbl' }, el('b', null, title), el('span', null, opts && opts.line ? 'last ' + (opts.fmt || num)(vals[vals.length - 1] || 0) : 'total ' + (opts && opts.fmt || num)(total) + ', most in one bar ' + (opts && opts.fmt || num)(Math.max(0, ...vals)))),
				g, el('div', { class: 'lbl' }, el('span', null, '+0 s'), el('span', null, ms(n * D.series.width_us))));
		}
		const S = D.series;
		let acc = 0;
		const cum = S.bytes_out.slice(0, n).map((v) => (acc += v));
		const budget = typeof (plan.net || {}).egress_budget === 'number' ? plan.net.egress_budget : 0;
		s.append(chart('chart-exec', 'programs executed', S.exec), chart('chart-request', 'requests allowed', S.request),
			chart('chart-refused', 'refusals (requests, connections, DNS, files, syscalls, spawns; folded counts included)', S.refused),
			chart('chart-dns', 'DNS queries answered by the sandbox resolver', S.dns), chart('chart-write', 'file writes recorded', S.write),
			chart('chart-bytes', 'bytes out, cumulative' + (budget ? ' (dashed: net.egress_budget ' + size(budget) + ')' : ''), cum, { line: true, budget, budgetTitle: 'egress budget', fmt: size }),
			chart('chart-bytes-in', 'bytes in per bar', S.bytes_in, { fmt: size }));
	}

	/* What it did */
	{
		const s = section('did', 'What it did');
		s.appendChild(el('h3', null, 'Processes, as a tree'));
		s.appendChild(el('p', { class: 'mute' }, 'Each exec is recorded with its pid and its parent\'s (ppid, host pids): a process sits under the process that forked it ' +
			'(a parent that never exec\'d itself is shown by its pid), sub-sandboxes under the sandbox that started them, and successive execs of one pid nested. ' +
			'A duration is shown where the log has one: the run\'s wall time, a sub-sandbox\'s, or the time until the pid\'s next exec.'));
		const treeBox = el('div', { id: 'proc-tree' });
		s.appendChild(treeBox);
		renderers.push(() => treeBox.replaceChildren(procTree()));
		s.appendChild(el('h3', null, 'Network requests'));
		table(s, 'requests', ['request'], [T, col('method', (r) => (r.tunnel ? 'tunnel' : r.method || '')), col('host', (r) => (r.host || '') + (r.port ? ':' + r.port : '')),
			col('path', (r) => r.path || ''), col('status', (r) => (r.completed === false ? 'sent; worker ended (' + (r.reason || '') + ')' : scalar(r.status)), true),
			col('out', (r) => size(r.bytes_out), true), col('in', (r) => size(r.bytes_in), true), col('ms', (r) => scalar(r.duration_ms), true),
			col('credential', (r) => r.credential || ''), col('body sha256', (r) => el('code', null, r.body_sha256 ? r.body_sha256 + ' (' + num(r.body_bytes) + ' B)' : ''))].concat(hasChild ? [WHO] : []));
		s.appendChild(el('h3', null, 'DNS queries to the sandbox resolver'));
		table(s, 'dns', ['dns'], [T, col('name', (r) => r.name), col('type', (r) => r.type), col('answer', (r) => r.rcode + (r.answer ? ' ' + r.answer : '')), col('reason', (r) => r.reason || '')]);
		s.appendChild(el('h3', null, 'Files written (' + num(D.tally.files_written) + (D.tally.files_approx ? '+' : '') + ' distinct paths)'));
		table(s, 'writes', ['write'], [T, col('op', (r) => r.op), col('path', (r) => (r.op === 'truncated' ? num(r.count) + ' writes not recorded: ' + (r.reason || '') : r.path)),
			col('type', (r) => r.type || ''), col('mode', (r) => r.mode || ''), col('sha256', (r) => el('code', null, r.sha256 || ''))].concat(hasChild ? [WHO] : []));
		s.appendChild(el('h3', null, 'Files read'));
		table(s, 'reads', ['read'], [T, col('path', (r) => (r.op === 'truncated' ? num(r.count) + ' reads not recorded: ' + (r.reason || '') : r.path)), col('size', (r) => size(r.size), true),
			col('sha256', (r) => el('code', null, r.sha256 || (r.hash_skipped ? 'not hashed: ' + r.hash_skipped : '')))]);
		if (D.kinds.command.count || D.kinds.transfer.count) {
			s.appendChild(el('h3', null, 'Session commands'));
			const ends = new Map(ROWS.filter((r) => r.k === 'command' && r.e === 'exec.exit').map((r) => [r.id, r]));
			table(s, 'commands', ['command'], [T, col('id', (r) => scalar(r.id)), col('argv', (r) => words(r.argv)), col('cwd', (r) => r.cwd || ''),
				col('result', (r) => {
					const x = ends.get(r.id);
					if (!x)
						return 'no end recorded';
					return 'exit ' + scalar(x.status) + (x.signal ? ' (signal ' + x.signal + ')' : '') + (x.limits_hit && x.limits_hit.length ? ', limit ' + words(x.limits_hit) : '');
				}), col('duration', (r) => (ends.get(r.id) ? scalar(ends.get(r.id).duration_ms) + ' ms' : ''), true)], (r) => r.e === 'exec.start');
			s.appendChild(el('h3', null, 'Transfers through the walls'));
			table(s, 'transfers', ['transfer'], [T, col('op', (r) => r.e), col('path', (r) => r.path), col('bytes', (r) => scalar(r.bytes), true), col('result', (r) => r.result || '')]);
		}
		s.appendChild(el('h3', null, 'Workspaces'));
		const ws = exit.workspaces || [];
		s.appendChild(ws.length ? el('table', { id: 'workspaces' }, el('tr', null, ['workspace', 'entries', 'bytes', 'kept'].map((h) => el('th', null, h))),
			ws.map((w) => el('tr', null, el('td', null, w.id), el('td', { class: 'n' }, num(w.files)), el('td', { class: 'n' }, size(w.bytes)), el('td', null, w.kept === false ? 'no (nothing written)' : 'yes: sandcap workspace diff / apply')))) :
			el('p', null, 'No cow workspace kept.'));
		if (D.kinds.workspace.count)
			table(s, 'workspace-apply', ['workspace'], [T, col('record', (r) => r.e), col('workspace', (r) => r.workspace), col('outcome', (r) => r.outcome || ''), col('files', (r) => (r.files || r.changes || []).map((f) => (f.op || '') + ' ' + (f.path || '')).join(', '))]);
		s.appendChild(el('h3', null, 'Sub-sandboxes (delegation) and their receipts'));
		if (D.receipts)
			s.appendChild(el('p', { id: 'receipts', class: D.receipts.error ? 'bad' : D.receipts.checked < D.receipts.spawns ? 'warn' : '' },
				D.receipts.error ? 'Receipts do NOT check: line ' + D.receipts.line + ': ' + D.receipts.error :
				'Receipts of ' + D.receipts.checked + ' of ' + D.receipts.spawns + ' sub-sandboxes recomputed from the log (as audit verify --receipts): each child within its parent (depth ' + D.receipts.max_depth + ')'));
		table(s, 'spawns', ['spawn'], [T, col('record', (r) => r.e), col('child', (r) => r.child || ''), col('parent', (r) => r.parent || ''),
			col('what', (r) => r.e === 'spawn.start' ? words(r.command) : r.e === 'spawn.exit' ? 'status ' + scalar(r.status) + (r.signal ? ' signal ' + r.signal : '') + ', wall ' + secs(r.wall_ns) : r.reason || ''),
			col('receipt', (r) => (r.receipt ? el('code', null, 'parent ' + scalar(r.receipt.parent_digest) + '\nchild ' + scalar(r.receipt.child_digest) + '\ncaveats ' + JSON.stringify(r.receipt.caveats)) : ''))]);
		s.appendChild(el('h3', null, 'Grants mounted, and other records'));
		table(s, 'other', ['other', 'grant'], [T, col('event', (r) => r.e || r.k), col('data', (r) => Object.keys(r).filter((k) => !['k', 's', 't', 'e', '_q'].includes(k)).map((k) => k + '=' + scalar(r[k])).join(' '))]);
	}

	/* res.sample (audit.sample_interval): CPU as a share of one CPU between
	 * two samples, memory and pids now, bytes through the proxy so far;
	 * dashed: the limit; red: the moment a limit was hit (an OOM kill seen
	 * between two samples, throttled CPU time, a limit.hit record). */
	function resourceCharts(SP, sv, cpuLim, marks) {
		const box = el('div', { id: 'resources' });
		if (!SP.length) {
			box.appendChild(el('p', { class: 'mute', id: 'no-samples' }, 'No res.sample records: the run was shorter than audit.sample_interval, or the policy turned sampling off ' +
				'(audit.sample_interval 0). The totals and peaks are above.'));
			return box;
		}
		const W = 1000, H = 100;
		const lim = (v) => (typeof v === 'number' && v < BIG ? v : null);
		const tEnd = Math.max(1, SP[SP.length - 1][0], ...marks.map((m) => m.t));
		const X = (t) => ((t / tEnd) * W).toFixed(1);
		const cpu = SP.map((p, i) => {
			if (!i)
				return sv(p, 'cpu_ns') !== null ? (sv(p, 'cpu_ns') / 1e3 / Math.max(1, p[0])) * 100 : null;
			const q = SP[i - 1], dt = p[0] - q[0];
			return sv(p, 'cpu_ns') !== null && sv(q, 'cpu_ns') !== null && dt > 0 ? ((sv(p, 'cpu_ns') - sv(q, 'cpu_ns')) / 1e3 / dt) * 100 : null;
		});
		const spans = (k) => SP.map((p, i) => (i && sv(p, k) !== null && sv(SP[i - 1], k) !== null && sv(p, k) > sv(SP[i - 1], k) ? [SP[i - 1][0], p[0], sv(p, k) - sv(SP[i - 1], k)] : null)).filter(Boolean);
		const throttled = spans('throttled_ns');
		const ooms = spans('oom_kills');
		function chart(id, title, vals, o) {
			const known = vals.filter((v) => typeof v === 'number');
			let max = Math.max(1, ...known, o.limit || 0);
			max *= 1.05;
			const Y = (v) => (H - (v / max) * (H - 4)).toFixed(1);
			const g = svg('svg', { class: 'chart', id, viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none' });
			for (const [a, b, d] of o.spans || [])
				g.appendChild(svg('rect', { class: 'hit', x: X(a), y: 0, width: Math.max(1, X(b) - X(a)).toFixed(1), height: H, 'data-limit': o.spanLimit },
					svg('title', null, o.spanTitle(a, b, d))));
			const pts = [];
			vals.forEach((v, i) => {
				if (typeof v === 'number')
					pts.push(X(SP[i][0]) + ',' + Y(v));
			});
			g.appendChild(svg('polyline', { class: 'line', points: pts.join(' ') }));
			vals.forEach((v, i) => {
				if (typeof v === 'number' && vals.length <= 300)
					g.appendChild(svg('circle', { class: 'pt', cx: X(SP[i][0]), cy: Y(v), r: 1.5 }, svg('title', null, ms(SP[i][0]) + ': ' + o.fmt(v))));
			});
			if (o.limit) {
				const y = Y(o.limit);
				g.appendChild(svg('line', { class: 'budget limit', x1: 0, x2: W, y1: y, y2: y }, svg('title', null, 'limit ' + o.fmt(o.limit))));
			}
			for (const m of marks.filter((m) => !o.only || o.only.includes(m.limit)))
				g.appendChild(svg('line', { class: 'mark', x1: X(m.t), x2: X(m.t), y1: 0, y2: H, 'data-limit': m.limit || '' },
					svg('title', null, 'limit.hit ' + (m.limit || '?') + ' recorded at ' + ms(m.t) + (m.detail ? ': ' + m.detail : ''))));
			const peak = known.length ? Math.max(...known) : null;
			return el('div', { class: 'chartbox' }, el('div', { class: 'lbl' }, el('b', null, title),
				el('span', null, (peak !== null ? 'highest ' + o.fmt(peak) : 'not measured') + (o.limit ? ', limit ' + o.fmt(o.limit) : ', no limit'))),
				g, el('div', { class: 'lbl' }, el('span', null, '+0 s'), el('span', null, ms(tEnd))));
		}
		const pct = (v) => v.toFixed(0) + '%';
		const cpuL = lim(limits.cpu);
		box.append(
			chart('chart-cpu', 'CPU, % of one CPU' + (throttled.length ? ' (red: throttled by the quota)' : ''), cpu,
				{ limit: cpuL ? cpuL * 100 : null, fmt: pct, spans: throttled, spanLimit: 'cpu_throttled', only: ['cpu_throttled', 'cpu'],
					spanTitle: (a, b, d) => 'throttled ' + secs(d) + ' between ' + ms(a) + ' and ' + ms(b) }),
			chart('chart-memory', 'memory in use' + (ooms.length ? ' (red: OOM kill)' : ''), SP.map((p) => sv(p, 'memory')),
				{ limit: lim(limits.memory), fmt: size, spans: ooms, spanLimit: 'memory', only: ['memory'],
					spanTitle: (a, b, d) => d + ' OOM kill' + (d === 1 ? '' : 's') + ' between ' + ms(a) + ' and ' + ms(b) }),
			chart('chart-pids', 'processes and threads (pids)', SP.map((p) => sv(p, 'pids')), { limit: lim(limits.pids), fmt: num, only: ['pids'] }),
			chart('chart-net', 'bytes out through the proxy, so far', SP.map((p) => sv(p, 'bytes_out')), { fmt: size, only: ['egress_budget', 'bandwidth', 'rate'] }),
			chart('chart-net-in', 'bytes in through the proxy, so far', SP.map((p) => sv(p, 'bytes_in')), { fmt: size, only: [] }));
		box.appendChild(el('p', { class: 'mute' }, num(D.samples.count) + ' res.sample records' + (D.samples.stride > 1 ? ', every ' + D.samples.stride + 'th drawn' : '') +
			'; limit.hit records of OOM kills and throttling are written when the run ends, so the moment is the interval between two samples in which the kernel\'s counter rose.'));
		return box;
	}

	function procTree() {
		const execs = ROWS.filter((r) => (r.k === 'exec' || r.k === 'exec_failed') && match(r));
		const root = D.sandbox || '(root)';
		const sbs = new Map([[root, { id: root, pids: new Map(), kids: [], start: null, exit: D.exit }]]);
		const sb = (id) => {
			if (!sbs.has(id))
				sbs.set(id, { id, pids: new Map(), kids: [], start: null, exit: null });
			return sbs.get(id);
		};
		for (const r of ROWS)
			if (r.k === 'spawn' && r.child) {
				const c = sb(r.child);
				if (r.e === 'spawn.start') {
					c.start = r;
					c.parent = r.parent || root;
				} else if (r.e === 'spawn.exit')
					c.exit = r;
			}
		for (const c of sbs.values())
			if (c.id !== root)
				sb(c.parent || root).kids.push(c);
		for (const r of execs) {
			const p = sb(r.c || root).pids;
			const k = String(r.pid);
			if (!p.has(k))
				p.set(k, []);
			p.get(k).push(r);
		}
		let shown = 0;
		const LIMIT = 400;
		function execLine(r, next, whole) {
			const dur = whole ? ', ran ' + secs(whole) : next ? ', ' + ((next.t - r.t) / 1e6).toFixed(3) + ' s until its next exec' : '';
			return [el('code', null, (r.path || (r.dirfd_path ? '(fd) ' + r.dirfd_path : '')) + (r.argv ? ': ' + words(r.argv) : '')), ' ',
				el('span', { class: r.k === 'exec' ? 'mute' : 'warn' }, '(' + ms(r.t) + (r.k === 'exec' ? '' : ', did not run: ' + (r.result || 'failed')) + dur + ')')];
		}
		function node(c, depth) {
			const li = el('li', { 'data-sandbox': c.id }, el('span', { class: 'sb' }, (depth ? 'sub-sandbox ' : 'sandbox ') + c.id),
				c.start ? el('span', { class: 'mute' }, ' started ' + ms(c.start.t) + (c.exit ? ', ended with status ' + scalar(c.exit.status) + ' after ' + secs(c.exit.wall_ns) : '')) : null);
			const ul = el('ul');
			/* Children by parent: a pid whose parent exec'd in this
			 * sandbox goes under it; the others are roots. */
			const kids = new Map();
			const roots = [];
			for (const [pid, list] of c.pids) {
				const pp = list[0].ppid !== undefined ? String(list[0].ppid) : null;
				if (pp && pp !== pid && c.pids.has(pp)) {
					if (!kids.has(pp))
						kids.set(pp, []);
					kids.get(pp).push(pid);
				} else
					roots.push(pid);
			}
			let first = depth === 0;
			function procNode(pid, level) {
				if (shown++ >= LIMIT)
					return null;
				const list = c.pids.get(pid);
				const whole = first && c.exit ? c.exit.wall_ns : null;
				first = false;
				const p = el('li', { 'data-pid': pid, 'data-ppid': list[0].ppid !== undefined ? String(list[0].ppid) : '' }, 'pid ' + pid + ' ',
					execLine(list[0], list[1], list.length === 1 ? whole : null));
				if (list.length > 1)
					p.appendChild(el('ul', null, list.slice(1).map((r, i) => el('li', null, 'then ', execLine(r, list[i + 2])))));
				const ks = (kids.get(pid) || []).map((k) => (level < 64 ? procNode(k, level + 1) : null)).filter(Boolean);
				if (ks.length)
					p.appendChild(el('ul', { class: 'children' }, ks));
				return p;
			}
			for (const pid of roots) {
				const n = procNode(pid, 0);
				if (n)
					ul.appendChild(n);
			}
			for (const k of c.kids)
				if (depth < 16)
					ul.appendChild(node(k, depth + 1));
			li.appendChild(ul);
			return li;
		}
		const tree = el('ul', { class: 'tree' }, node(sbs.get(root), 0));
		const [n, kept] = kindCount(['exec', 'exec_failed']);
		return el('div', null, tree, el('p', { class: 'mute' }, execs.length + ' execs shown of ' + num(kept) + ' kept' + (n > kept ? ', ' + num(n - kept) + ' more recorded' : '') +
			(shown > LIMIT ? '; the first ' + LIMIT + ' process ids are drawn (narrow with the filters)' : '')));
	}

	/* Where it was stopped */
	{
		const s = section('stopped', 'Where it was stopped');
		const t = D.tally;
		s.appendChild(grid([
			['requests denied', num(t.net_denied) + (t.requests_over_rate ? ' (' + num(t.requests_over_rate) + ' over net.rate, folded)' : '')],
			['direct attempts', num(D.direct_attempts) + ' around the proxy (connects, datagrams, raw sockets)'],
			['DNS queries refused', num(t.dns_refused) + ' of ' + num(t.dns_queries)],
			['file writes refused', num(t.files_denied)],
			['syscalls denied', num(t.syscalls_denied) + (t.syscalls.length ? ': ' + t.syscalls.map((x) => x.syscall + ' x' + x.count).join(', ') : '')],
			['exec attempts that did not run', num(t.execs_failed)],
			['spawns refused', num(D.spawn_denied)],
			['limits hit', num(t.limits_hit) + (t.limits.length ? ': ' + t.limits.map((x) => x.limit + ' x' + x.count).join(', ') : '')],
		]));
		if (D.folded.length) {
			s.appendChild(el('h3', null, 'Folded refusals (counted, not recorded one by one)'));
			s.appendChild(el('table', { id: 'folded' }, el('tr', null, ['limit', 'kind', 'refusals counted'].map((h) => el('th', null, h))),
				D.folded.map((f) => el('tr', null, el('td', null, f.limit), el('td', null, f.kind || ''), el('td', { class: 'n' }, num(f.suppressed))))));
		}
		s.appendChild(el('h3', null, 'Requests and connections refused'));
		table(s, 'denied', ['denied'], [T, col('what', (r) => (r.protocol ? 'direct ' + r.protocol : r.method || '')), col('host', (r) => (r.host || '') + (r.port ? ':' + r.port : '')),
			col('path', (r) => r.path || ''), col('reason', (r) => el('b', null, r.reason || '')), col('detail', (r) => [r.detail, r.credential ? 'credential ' + r.credential : '', r.sni ? 'sni ' + r.sni : ''].filter(Boolean).join('; '))].concat(hasChild ? [WHO] : []));
		if (t.denied_hosts.length) {
			s.appendChild(el('p', { class: 'mute' }, 'By host (all recorded): ' + t.denied_hosts.map((h) => h.host + ' x' + h.count + (h.detail ? ' (' + h.detail + ')' : '')).join(', ')));
		}
		s.appendChild(el('h3', null, 'DNS queries refused'));
		table(s, 'dns-refused', ['dns'], [T, col('name', (r) => r.name), col('type', (r) => r.type), col('rcode', (r) => r.rcode), col('reason', (r) => el('b', null, r.reason || ''))], (r) => r.rcode !== 'NOERROR');
		s.appendChild(el('h3', null, 'File writes refused'));
		table(s, 'fs-denied', ['fs_denied'], [T, col('pid', (r) => scalar(r.pid), true), col('op', (r) => r.op), col('path', (r) => (r.path === null ? '(unreadable)' : r.path)),
			col('errno', (r) => r.errno), col('reason', (r) => el('b', null, r.reason || '')), col('mode', (r) => r.mode || '')].concat(hasChild ? [WHO] : []));
		s.appendChild(el('h3', null, 'System calls denied'));
		table(s, 'syscalls', ['syscall'], [T, col('pid', (r) => scalar(r.pid), true), col('syscall', (r) => r.syscall), col('nr', (r) => scalar(r.nr), true)].concat(hasChild ? [WHO] : []));
		s.appendChild(el('h3', null, 'Exec attempts that did not run'));
		table(s, 'exec-failed', ['exec_failed'], [T, col('pid', (r) => scalar(r.pid), true), col('path', (r) => r.path), col('argv', (r) => words(r.argv)), col('result', (r) => el('b', null, r.result || r.error || 'failed'))]);
		s.appendChild(el('h3', null, 'Spawns refused'));
		table(s, 'spawn-denied', ['spawn'], [T, col('record', (r) => r.e), col('reason', (r) => el('b', null, r.reason || '')), col('argv', (r) => words(r.argv))], (r) => r.e === 'spawn.denied' || r.e === 'spawn.error');
		s.appendChild(el('h3', null, 'Limits hit'));
		table(s, 'limits', ['limit'], [T, col('limit', (r) => el('b', null, r.limit || '')), col('kind', (r) => r.kind || ''), col('detail', (r) => r.detail || ''), col('folded', (r) => (r.suppressed !== undefined ? num(r.suppressed) : ''), true)]);
	}

	/* The bound, and every kept record */
	{
		const s = section('bound', 'The bound (what was enforced)');
		s.appendChild(D.bound_text ? el('pre', { id: 'bound-text' }, D.bound_text.replace(/^\n?The bound[^\n]*\n/, '')) : el('p', null, 'Unknown: no sandbox.start record.'));
		const all = section('records', 'Every kept record');
		all.appendChild(el('p', { class: 'mute' }, 'Per kind, the page keeps the first ' + D.caps.head + ' and the last ' + D.caps.tail + ' records (strings cut at ' + D.caps.str +
			' bytes); the counts above are of every record.'));
		table(all, 'all', Object.keys(D.kinds), [T, col('kind', (r) => el('span', { class: 'tag' }, r.e || r.k)), col('pid', (r) => (r.pid !== undefined ? scalar(r.pid) : ''), true),
			col('summary', (r) => Object.keys(r).filter((k) => !['k', 's', 't', 'e', '_q', 'pid'].includes(k)).map((k) => k + '=' + scalar(r[k])).join(' ').slice(0, 600))]);
		const txt = section('text', 'The text report');
		txt.appendChild(el('details', null, el('summary', null, 'sandcap audit report, as text'), el('pre', { id: 'text-report' }, D.text)));
	}

	readHash();
	toControls();
	renderAll();
	document.documentElement.setAttribute('data-ready', '1');
})();
