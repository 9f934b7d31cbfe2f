# Reading the HTML audit report in a real browser, for the test-*html*.sh
# suites: sourced after lib.sh (uses $T).

# chrome OUT URL: the DOM after the page's script ran (OUT), the console
# (OUT.log) and every network event (OUT.net); at most 60 s.
chrome() {
	rm -rf "$T/chrome-profile"
	timeout 60 chromium --headless --disable-gpu --no-sandbox --user-data-dir="$T/chrome-profile" \
		--disable-background-networking --disable-component-update --no-first-run \
		--enable-logging=stderr --v=0 --log-net-log="$1.net" \
		--run-all-compositor-stages-before-draw --virtual-time-budget=5000 \
		--dump-dom "$2" >"$1" 2>"$1.log"
}
# attr FILE ID NAME: the attribute NAME of the element with id ID in FILE
attr() {
	python3 - "$@" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
m = re.search(r'<[a-z]+ [^>]*id="%s"[^>]*>' % re.escape(sys.argv[2]), s)
a = m and re.search(r'\b%s="([^"]*)"' % re.escape(sys.argv[3]), m.group(0))
print(a.group(1) if a else "")
PY
}
# text FILE ID: the text of the element with id ID (tags dropped, entities kept)
text() {
	python3 - "$@" <<'PY'
import html.parser, sys
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True); self.depth = 0; self.out = []
    def handle_starttag(self, tag, attrs):
        if self.depth: self.depth += tag not in ("br", "img", "input", "meta", "link")
        elif dict(attrs).get("id") == sys.argv[2]: self.depth = 1
    def handle_endtag(self, tag):
        if self.depth: self.depth -= 1
    def handle_data(self, d):
        if self.depth: self.out.append(d)
p = P(); p.feed(open(sys.argv[1]).read()); print(" ".join(p.out))
PY
}
