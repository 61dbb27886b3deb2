package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sharerelay/sharerelay/internal/didyoumean"
)

// Load reads the pipeline file at path and returns it parsed, defaulted and
// validated (see Parse), interpolating from the process environment.
// checks run last, on a pipeline found valid (see Check).
func Load(path string, checks ...Check) (*Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, os.LookupEnv, checks...)
}

// Check is a check of a pipeline that config cannot make itself, made by
// a package above it (package format compiles the schema files a
// pipeline names, and checks the fields its steps read against the
// source's schema). It runs on a pipeline Validate found valid, and
// returns what it finds at YAML paths, which Parse places in the file as
// it places its own findings.
type Check func(p *Pipeline) []Finding

// Finding is a problem (or with Warning, a warning) a Check found at a
// YAML path ("source.value_schema.file", "transforms[2].when.expr").
// Line and Col, when not 0, locate it within the text of the scalar at
// Path, Snippet showing that line with a caret (as for an expression).
type Finding struct {
	Path, Msg string
	Line, Col int
	Snippet   string
	Warning   bool
}

// Parse parses the YAML pipeline in data, interpolates ${VAR} references
// from env (nil means an empty environment), applies defaults and validates
// the result. name is the file name used in error positions.
//
// On failure the error is an Errors value listing every problem found, each
// as "<name>:<line>:<col>: <path>: <message>".
func Parse(name string, data []byte, env func(string) (string, bool), checks ...Check) (*Pipeline, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	l := newLoader(name, "pipeline file", data, env)
	root, errs := l.parse(data)
	if len(errs) > 0 {
		return nil, errs
	}
	var p Pipeline
	if root != nil {
		l.nodes[""] = nodePos{val: root}
		l.interpolate(root, "")
		l.walk(root, reflect.TypeFor[Pipeline](), "")
		if err := root.Decode(&p); err != nil && len(l.errs) == 0 {
			// The walk should have caught whatever Decode rejects; if it
			// did not, report Decode's own words rather than nothing.
			l.decodeError(err)
		}
	} else {
		l.nodes[""] = nodePos{}
	}
	splitBrokers(&p, l)
	p.dir = filepath.Dir(name)
	p.setDefaults(l.explicit)
	v := validator{p: &p, explicit: l.explicit, brokerIndex: l.brokerIndex, envRef: l.envRef}
	v.validate()
	if len(v.errs) == 0 && len(l.errs) == 0 {
		for _, c := range checks {
			for _, f := range c(&p) {
				fe := fieldErr{path: f.Path, msg: f.Msg, line: f.Line, col: f.Col, snippet: f.Snippet}
				if f.Warning {
					v.warns = append(v.warns, fe)
				} else {
					v.errs = append(v.errs, fe)
				}
			}
		}
	}
	for _, e := range v.errs {
		if l.suppressed(e.path) {
			continue // a consequence of an error already reported there
		}
		l.errs = append(l.errs, l.at(e))
	}
	if len(l.errs) > 0 {
		return nil, l.hideSecrets(l.errs).sort()
	}
	for _, w := range v.warns {
		p.Warnings = append(p.Warnings, Warning(l.at(w)))
	}
	p.Warnings = warnings(l.hideSecrets(errorsOf(p.Warnings)).sort())
	return &p, nil
}

// at places a validation finding in the file.
func (l *loader) at(e fieldErr) Error {
	line, col := l.position(e.path)
	if e.line > 0 {
		line, col = l.within(e.path, e.line, e.col)
	}
	return Error{File: l.file, Line: line, Col: col, Path: e.path, Msg: e.msg, Snippet: e.snippet}
}

// envUse records a scalar whose value was read, at least in part, from
// the environment.
type envUse struct {
	template string   // the scalar as written, "${KAFKA_USER}"
	values   []string // what the environment gave for it
}

// envRef returns the text as written of the value at path, if that value
// was read from the environment — what an error shows instead of the
// value — and the value. A value reached through an alias is the
// anchored one.
func (l *loader) envRef(path string) (ref, val string, ok bool) {
	n := l.nodes[path].val
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil {
		return "", "", false
	}
	u, ok := l.fromEnv[n]
	return u.template, n.Value, ok
}

// hideSecrets replaces, in every message, each secret the file holds —
// the values of Secret fields, and what the environment gave for them —
// with "[redacted]": the last line of defence, for a secret the user also
// wrote into another field, or a message that quotes more than its value.
// Secrets shorter than minHiddenSecret are left alone: hiding them would
// garble every message, and they protect nothing.
func (l *loader) hideSecrets(es Errors) Errors {
	return hideSecrets(es, l.secrets)
}

// hideSecrets replaces each of secrets in the messages of es.
func hideSecrets(es Errors, secrets []string) Errors {
	// Longest first, so that a secret containing another is hidden whole.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for i := range es {
		for _, s := range secrets {
			if len(s) >= minHiddenSecret {
				es[i].Msg = strings.ReplaceAll(es[i].Msg, s, redacted)
				es[i].Snippet = strings.ReplaceAll(es[i].Snippet, s, redacted)
			}
		}
	}
	return es
}

const minHiddenSecret = 4

// nodePos remembers where a path is in the file: the mapping key that
// names it (nil for a list element or the root) and its value.
type nodePos struct{ key, val *yaml.Node }

type loader struct {
	file string
	// kind names the file in messages about it as a whole: "pipeline
	// file", "test file".
	kind  string
	env   func(string) (string, bool)
	errs  Errors
	nodes map[string]nodePos
	// bad holds paths whose value was already reported as wrong (an
	// interpolation or type error); validation errors at or below them
	// are dropped as consequences.
	bad map[string]bool
	// brokerIndex maps an index into Pipeline.Brokers, after splitting
	// comma-separated entries, to the index of the YAML list element.
	brokerIndex map[string][]int
	// lines are the file's lines, to locate a position within a scalar.
	lines []string
	// fromEnv holds the scalars interpolated from the environment;
	// errors name their references instead of their values.
	fromEnv map[*yaml.Node]envUse
	// secrets holds the values of the Secret fields, and what the
	// environment gave for them.
	secrets []string
}

// newLoader returns a loader of the file name, of the given kind, holding
// data, that interpolates from env.
func newLoader(name, kind string, data []byte, env func(string) (string, bool)) *loader {
	return &loader{file: name, kind: kind, env: env, nodes: map[string]nodePos{}, bad: map[string]bool{},
		lines: strings.Split(string(data), "\n"), fromEnv: map[*yaml.Node]envUse{}}
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// parse parses data into the root mapping node of its single document; nil
// for an empty document.
func (l *loader) parse(data []byte) (*yaml.Node, Errors) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, Errors{l.syntaxError(data, err)}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, Errors{l.syntaxError(data, err)}
	default:
		return nil, Errors{{File: l.file, Line: extra.Line, Col: extra.Column,
			Msg: "a " + l.kind + " holds one YAML document; found a second one"}}
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil // only comments, or "---" alone
	}
	if root.Kind != yaml.MappingNode {
		return nil, Errors{{File: l.file, Line: root.Line, Col: root.Column,
			Msg: "a " + l.kind + " must be a mapping of fields, got " + describe(root)}}
	}
	return root, nil
}

// decodeError reports the errors of root.Decode, which carry a line only.
func (l *loader) decodeError(err error) {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		l.errs = append(l.errs, Error{File: l.file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")})
		return
	}
	for _, s := range te.Errors {
		e := Error{File: l.file, Msg: s}
		if m := yamlLineRE.FindStringSubmatch(s); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		l.errs = append(l.errs, e)
	}
}

// errorAt reports msg about path at n's position, and marks path bad.
func (l *loader) errorAt(n *yaml.Node, path, msg string) {
	l.errs = append(l.errs, Error{File: l.file, Line: n.Line, Col: n.Column, Path: path, Msg: msg})
	l.bad[path] = true
}

// interpolate expands ${VAR} references in every scalar value below n
// (mapping keys are left alone). Alias nodes are skipped: the anchored node
// is expanded where it is defined, and only once.
func (l *loader) interpolate(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			l.interpolate(n.Content[i+1], joinKey(path, n.Content[i].Value))
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			l.interpolate(c, joinIndex(path, i))
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		val, used, errs := expand(n.Value, l.env)
		for _, msg := range errs {
			l.errorAt(n, path, msg)
		}
		if len(errs) > 0 {
			return
		}
		if len(used) > 0 {
			l.fromEnv[n] = envUse{template: n.Value, values: used}
		}
		n.Value = val
		if n.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			// A plain scalar's type comes from its text: let the
			// decoder resolve the interpolated text afresh, so that
			// "${WORKERS:-4}" is an integer.
			n.Tag = ""
		}
	}
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	// timeType is a struct that YAML reads from a scalar (a timestamp),
	// like a duration: a leaf, not a mapping of fields.
	timeType = reflect.TypeFor[time.Time]()
)

// walk checks the node n against the Go type t: mappings must name known
// fields (once each), lists must be lists, scalars must decode into their
// field's type. It records where every path is, for later errors.
func (l *loader) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(n) || t.Kind() == reflect.Interface || l.bad[path] {
		// null leaves the zero value; an any field takes anything; a
		// value whose interpolation failed was reported already.
		return
	}
	switch {
	case t == durationType || t == timeType:
		l.leaf(n, t, path)
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			l.errorAt(n, path, "expected a mapping, got "+l.describe(n))
			return
		}
		l.walkStruct(n, t, path, map[string]*yaml.Node{})
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			l.errorAt(n, path, "expected a list, got "+l.describe(n))
			return
		}
		for i, c := range n.Content {
			p := joinIndex(path, i)
			l.nodes[p] = nodePos{val: c}
			l.walk(c, t.Elem(), p)
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			l.errorAt(n, path, "expected a mapping, got "+l.describe(n))
			return
		}
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				l.errorAt(k, path, "a key must be a string, got "+describe(k))
				continue
			}
			p := joinKey(path, k.Value)
			if first, dup := seen[k.Value]; dup {
				l.errorAt(k, p, fmt.Sprintf("duplicate key (first at line %d)", first.Line))
				l.bad[path] = true // the decoder drops the whole mapping
				continue
			}
			seen[k.Value] = k
			l.nodes[p] = nodePos{key: k, val: v}
			l.walk(v, t.Elem(), p)
		}
	default:
		if t == secretType && n.Kind == yaml.ScalarNode {
			l.secrets = append(append(l.secrets, n.Value), l.fromEnv[n].values...)
		}
		l.leaf(n, t, path)
	}
}

// walkStruct checks the key/value pairs of mapping n against struct type t.
// seen holds the keys already set. As in YAML, keys written in the mapping
// override those merged in through "<<", so those are walked last and a
// key they repeat is no error.
func (l *loader) walkStruct(n *yaml.Node, t reflect.Type, path string, seen map[string]*yaml.Node) {
	l.walkPairs(n, t, path, seen, false)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			l.walkMerge(n.Content[i+1], t, path, seen)
		}
	}
}

// walkPairs walks the pairs of mapping n other than merges. In a merged
// mapping (merged), a key already seen is overridden, not duplicated.
func (l *loader) walkPairs(n *yaml.Node, t reflect.Type, path string, seen map[string]*yaml.Node, merged bool) {
	fields := yamlFields(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			l.errorAt(k, path, "a key must be a field name, got "+describe(k))
			continue
		}
		p := joinKey(path, k.Value)
		f, ok := fields[k.Value]
		if !ok {
			l.errorAt(k, p, "unknown field"+suggest(k.Value, t))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			if !merged {
				l.errorAt(k, p, fmt.Sprintf("duplicate field (first set at line %d)", first.Line))
				// The YAML decoder drops the whole mapping: what is
				// wrong with its other fields would be noise.
				l.bad[path] = true
			}
			continue
		}
		seen[k.Value] = k
		l.nodes[p] = nodePos{key: k, val: v}
		l.walk(v, f.Type, p)
	}
}

// walkMerge walks the value of a "<<" merge key: a mapping (usually an
// alias to one) or a list of them, the earlier taking precedence.
func (l *loader) walkMerge(v *yaml.Node, t reflect.Type, path string, seen map[string]*yaml.Node) {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		l.walkPairs(v, t, path, seen, true)
		for i := 0; i+1 < len(v.Content); i += 2 {
			if k := v.Content[i]; k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				l.walkMerge(v.Content[i+1], t, path, seen)
			}
		}
	case yaml.SequenceNode:
		for _, c := range v.Content {
			l.walkMerge(c, t, path, seen)
		}
	default:
		l.errorAt(v, path, "a merge (<<) needs a mapping, got "+describe(v))
	}
}

// leaf checks that scalar n decodes into a value of type t.
func (l *loader) leaf(n *yaml.Node, t reflect.Type, path string) {
	want := describeType(t)
	if n.Kind != yaml.ScalarNode {
		l.errorAt(n, path, "expected "+want+", got "+l.describe(n))
		return
	}
	if t.Kind() == reflect.String {
		return // any scalar reads as its text
	}
	err := n.Decode(reflect.New(t).Interface())
	if err == nil && isInt(t) && n.ShortTag() == "!!float" {
		// The YAML decoder truncates 1.5 into an int; refuse it.
		var f float64
		if n.Decode(&f) != nil || f != float64(int64(f)) {
			err = errors.New("not an integer")
		}
	}
	if err == nil {
		return
	}
	msg := "expected " + want + ", got " + l.describe(n)
	switch tag := n.ShortTag(); {
	case t == durationType && (tag == "!!int" || tag == "!!float"):
		msg += " (a duration needs a unit)"
	case t != durationType && tag == "!!int":
		msg = fmt.Sprintf("%s is out of range for a %d-bit integer", l.describe(n), t.Bits())
	}
	l.errorAt(n, path, msg)
}

// explicit reports whether the file sets path to something other than
// null; defaults apply only to paths it does not.
func (l *loader) explicit(path string) bool {
	np, ok := l.nodes[path]
	return ok && np.val != nil && !isNull(np.val)
}

// suppressed reports whether path or one of its ancestors was already
// reported as wrong.
func (l *loader) suppressed(path string) bool {
	for {
		if l.bad[path] {
			return true
		}
		if path == "" {
			return false
		}
		path = parentPath(path)
	}
}

// position returns where to report an error about path: at its value if
// the file has it (at its key if the value is null), otherwise at the key
// of its nearest ancestor that the file has, the mapping where it is
// missing.
func (l *loader) position(path string) (line, col int) {
	if np, ok := l.nodes[path]; ok {
		return nodeLine(np, np.val == nil || isNull(np.val))
	}
	for path != "" {
		path = parentPath(path)
		if np, ok := l.nodes[path]; ok {
			return nodeLine(np, true)
		}
	}
	return 1, 1
}

// within returns the file position of the given line and column (1-based)
// of the text of the scalar at path — where an expression fails to
// compile. It follows the scalar's lines in the file: a literal block
// (|) keeps them, a folded block (>) and a plain or quoted scalar spread
// over several lines fold them into spaces. Escapes in a double-quoted
// scalar and ${VAR} references are counted as their text, so the column
// is off after them. Without the scalar it returns position(path).
func (l *loader) within(path string, line, col int) (int, int) {
	np, ok := l.nodes[path]
	if !ok || np.val == nil || np.val.Kind != yaml.ScalarNode {
		return l.position(path)
	}
	n := np.val
	// The offset, in runes, of the position in the scalar's value.
	off := 0
	for i, ln := range strings.Split(n.Value, "\n") {
		if i == line-1 {
			off += col - 1
			break
		}
		off += len([]rune(ln)) + 1
	}
	// Walk the scalar's lines in the file, each followed by one joining
	// character (a newline or a folding space) in the value.
	for _, sg := range l.scalarSegments(n) {
		if off <= sg.length {
			return sg.line, sg.col + off
		}
		off -= sg.length + 1
	}
	return n.Line, n.Column
}

// segment is one file line of a scalar's text: where the text starts and
// how many runes of it the line holds.
type segment struct{ line, col, length int }

// scalarSegments lists the file lines holding scalar n's text.
func (l *loader) scalarSegments(n *yaml.Node) []segment {
	rawLine := func(ln int) []rune {
		if ln < 1 || ln > len(l.lines) {
			return nil
		}
		return []rune(strings.TrimRight(l.lines[ln-1], "\r"))
	}
	leading := func(r []rune) int {
		i := 0
		for i < len(r) && (r[i] == ' ' || r[i] == '\t') {
			i++
		}
		return i
	}
	var segs []segment
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		indent := -1
		for ln := n.Line + 1; ln <= len(l.lines); ln++ {
			r := rawLine(ln)
			ind := leading(r)
			if ind == len(r) { // blank line
				segs = append(segs, segment{line: ln, col: 1})
				continue
			}
			if indent < 0 {
				indent = ind
			}
			if ind < indent {
				break // the block has ended
			}
			segs = append(segs, segment{line: ln, col: indent + 1, length: len(r) - indent})
		}
	default:
		total := len([]rune(n.Value))
		start := n.Column - 1
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			start++ // after the opening quote
		}
		seen := 0
		for ln := n.Line; ln <= len(l.lines) && seen < total; ln++ {
			r := rawLine(ln)
			from := start
			if ln != n.Line {
				from = leading(r)
			}
			if from > len(r) {
				from = len(r)
			}
			length := min(len(r)-from, total-seen)
			segs = append(segs, segment{line: ln, col: from + 1, length: length})
			seen += length + 1
		}
	}
	return segs
}

func nodeLine(np nodePos, preferKey bool) (line, col int) {
	n := np.val
	if (preferKey || n == nil) && np.key != nil {
		n = np.key
	}
	if n == nil {
		return 1, 1
	}
	return n.Line, n.Column
}

// parentPath strips the last element off a path: "a.b[2]" → "a.b" → "a" → "".
func parentPath(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func joinIndex(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// yamlFields maps the yaml names of t's fields to the fields.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	m := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(t) {
		if name, ok := yamlName(f); ok {
			m[name] = f
		}
	}
	return m
}

// yamlName is the key of field f in YAML, as go.yaml.in/yaml/v3 sees it.
func yamlName(f reflect.StructField) (string, bool) {
	if !f.IsExported() || f.Anonymous {
		return "", false
	}
	tag := f.Tag.Get("yaml")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, true
}

// suggest returns ` (did you mean "x"?)` for the field of t closest to an
// unknown key, or the list of t's fields when none is close.
func suggest(key string, t reflect.Type) string {
	var names []string
	for _, f := range reflect.VisibleFields(t) {
		if name, ok := yamlName(f); ok {
			names = append(names, name)
		}
	}
	if best, ok := didyoumean.Closest(key, names); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return " (known fields: " + strings.Join(names, ", ") + ")"
}

// describe names what the node n holds, for "expected X, got Y"
// messages: as describe does, but a scalar read from the environment is
// named by its reference, never shown.
func (l *loader) describe(n *yaml.Node) string {
	if u, ok := l.fromEnv[n]; ok {
		ref := u.template
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			return envValue(ref) + " in quotes (a string)"
		}
		return envValue(ref)
	}
	return describe(n)
}

// describe names what a node holds, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 || n.ShortTag() == "!!str" {
		return strconv.Quote(maskCredentials(n.Value))
	}
	return maskCredentials(n.Value)
}

func describeType(t reflect.Type) string {
	switch t {
	case durationType:
		return "a duration such as 500ms, 10s or 1m30s"
	case timeType:
		return "an RFC 3339 timestamp (YYYY-MM-DDThh:mm:ssZ)"
	}
	if isInt(t) {
		return "an integer"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return t.String()
}

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return t != durationType
	}
	return false
}
