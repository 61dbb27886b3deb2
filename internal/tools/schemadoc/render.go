package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// envDef is the definition of a value read from the environment. Nearly
// every field allows it beside its own type; the page says so once, in
// its introduction, instead of on every row.
const envDef = "envReference"

// section is one object of the schema with a part of the page of its
// own: the pipeline file itself, each nested object (source,
// client.producer) and each object definition (a transform step).
type section struct {
	title  string  // the field path, e.g. "client.producer", "transforms[]"
	schema *object // resolved
}

// page renders a schema as Markdown.
type page struct {
	d *schemaDoc
	// titles maps an object schema (its definition, or the inline object)
	// to the title of its section: a definition used in several places
	// is described once, where it is first used.
	titles   map[*object]string
	sections []string // titles in page order, for the contents
	body     strings.Builder
}

// render returns the page for the schema d, as docs/configuration.md
// holds it.
func render(d *schemaDoc, source, link, command string) string {
	p := &page{d: d, titles: map[*object]string{}}
	p.record(section{title: "The pipeline file", schema: d.root}, true)
	p.valueTypes()

	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Generated from %s by `%s`. Do not edit: change the schema and run the command again. -->\n\n", source, command)
	title := d.root.str("title")
	if title == "" {
		title = "Configuration"
	}
	fmt.Fprintf(&b, "# Configuration reference: %s\n\n", escapeText(title))
	if desc := d.root.str("description"); desc != "" {
		b.WriteString(escapeText(desc) + "\n\n")
	}
	fmt.Fprintf(&b, "This page is generated from [`%s`](%s), the JSON Schema that editors use to complete and check pipeline files; `go test ./internal/tools/schemadoc` fails when the two differ. ", source, link)
	b.WriteString(intro)
	b.WriteString("\n## Contents\n\n")
	for i, t := range p.sections {
		h := heading(t, i == 0)
		fmt.Fprintf(&b, "- [%s](#%s)\n", h, slug(h))
	}
	b.WriteString("- [Value types](#value-types)\n\n")
	b.WriteString(p.body.String())
	return b.String()
}

// intro is what the schema cannot say about how a file is read.
const intro = `A pipeline file is YAML, decoded strictly: an unknown key is an error, with a did-you-mean. ` + "`relay validate`" + ` reports every problem of a file in one pass as ` + "`file:line:col: path: message`" + `, and settings that work but weaken the pipeline as ` + "`file:line:col: warning: path: message`" + ` (it still exits 0; ` + "`relay run`" + ` logs them at start). A field left out takes its default; ` + "`relay run`" + ` logs the effective configuration, defaults applied and secrets redacted, when it starts.

Any value may be written ` + "`${VAR}`" + ` or ` + "`${VAR:-default}`" + ` to read it from the environment (the default applies when VAR is unset or empty; ` + "`$${`" + ` is a literal ` + "`${`" + `); the types below are those of the value once read. In the tables, **required** marks a field that has no default and must be set; a range of — means any value of the type.
`

// record writes the section of an object schema s, then the sections of
// the objects its fields hold, depth first, so that client.producer
// follows client.
func (p *page) record(sec section, top bool) {
	p.sections = append(p.sections, sec.title)
	p.titles[sec.schema] = sec.title
	fmt.Fprintf(&p.body, "## %s\n\n", heading(sec.title, top))
	s := sec.schema
	if desc := s.str("description"); desc != "" && !top {
		p.body.WriteString(escapeText(desc) + "\n\n")
	}
	var children []section
	disc, vs := p.variants(s)
	if len(vs) == 0 {
		children = p.table(sec.title, s.obj("properties"), s.strings("required"), nil, top)
		p.notes(s)
	} else {
		children = p.variantSections(sec.title, s, disc, vs)
	}
	for _, c := range children {
		p.record(c, false)
	}
}

// heading is a section's heading: the field path as code, or the page's
// first section as it is titled.
func heading(title string, top bool) string {
	if top {
		return title
	}
	return "`" + title + "`"
}

// table writes the fields of properties as a table and returns the
// objects among them that need a section of their own. Fields in skip
// are left out; override holds schemas that replace or refine a
// field's (a variant's own).
func (p *page) table(path string, properties *object, required []string, override map[string]*object, top bool) []section {
	if properties == nil || len(properties.keys) == 0 {
		p.body.WriteString("No fields.\n\n")
		return nil
	}
	p.body.WriteString("| field | type | default | range | description |\n|---|---|---|---|---|\n")
	var children []section
	for _, name := range properties.keys {
		fs, ok := properties.vals[name].(*object)
		if !ok {
			continue // true or false: allows anything, or nothing
		}
		if o := override[name]; o != nil {
			fs = overlay(fs, o)
		}
		fieldPath := name
		if !top {
			fieldPath = path + "." + name
		}
		typ, kids := p.typeText(fs, fieldPath)
		children = append(children, kids...)
		def := defaultText(p.d.resolve(fs))
		if def == "" {
			def = "—"
			if slices.Contains(required, name) {
				def = "**required**"
			}
		}
		rng := p.rangeText(fs)
		if rng == "" {
			rng = "—"
		}
		fmt.Fprintf(&p.body, "| `%s` | %s | %s | %s | %s |\n", name, cell(typ), cell(def), cell(rng), cell(escapeText(p.d.resolve(fs).str("description"))))
	}
	p.body.WriteString("\n")
	return children
}

// overlay returns base with the keys of o written over it: a variant's
// own description or bounds for a field the object declares.
func overlay(base, o *object) *object {
	out := &object{vals: map[string]any{}}
	for _, src := range []*object{base, o} {
		for _, k := range src.keys {
			if !out.has(k) {
				out.keys = append(out.keys, k)
			}
			out.vals[k] = src.vals[k]
		}
	}
	return out
}

// notes writes what an object's schema requires beyond its fields'
// types: fields that need each other, that exclude each other, and
// alternative forms (oneOf/anyOf of required fields).
func (p *page) notes(s *object) {
	var lines []string
	if dr := s.obj("dependentRequired"); dr != nil {
		for _, k := range dr.keys {
			if needs := dr.strings(k); len(needs) > 0 {
				lines = append(lines, fmt.Sprintf("`%s` needs %s.", k, codeList(needs, "and")))
			}
		}
	}
	if not := s.obj("not"); not != nil {
		if req := not.strings("required"); len(req) > 1 {
			lines = append(lines, fmt.Sprintf("%s cannot be set together.", codeList(req, "and")))
		}
	}
	for _, l := range lines {
		p.body.WriteString("- " + l + "\n")
	}
	if len(lines) > 0 {
		p.body.WriteString("\n")
	}
	p.forms(s)
}

// forms writes the alternatives of oneOf and anyOf that select no
// variant: each a set of required fields (a route's field + routes, expr
// + topics, or cases).
func (p *page) forms(s *object) {
	for _, key := range []string{"oneOf", "anyOf"} {
		var items []string
		for _, a := range s.list(key) {
			alt, ok := a.(*object)
			if !ok {
				continue
			}
			alt = p.d.resolve(alt)
			if _, _, isVariant := discriminator(alt); isVariant {
				continue
			}
			req := alt.strings("required")
			if len(req) == 0 {
				continue
			}
			parts := make([]string, len(req))
			for i, r := range req {
				parts[i] = "`" + r + "`"
			}
			items = append(items, "- "+strings.Join(parts, " + "))
		}
		if len(items) == 0 {
			continue
		}
		if key == "oneOf" {
			p.body.WriteString("Exactly one of these forms:\n\n")
		} else {
			p.body.WriteString("One of these forms:\n\n")
		}
		p.body.WriteString(strings.Join(items, "\n") + "\n\n")
	}
}

// variant is one branch of an object whose fields depend on the value of
// one of them (a transform step's type, a SASL mechanism): if/then in
// allOf, or a oneOf/anyOf alternative that fixes that field with const.
type variant struct {
	value    string
	branches []*object // the then schemas, or the alternatives themselves
}

// discriminator returns the field a branch fixes and the values it
// allows it, from properties.<field>.const or .enum (an if that names
// several types applies its then to each).
func discriminator(s *object) (field string, values []string, ok bool) {
	props := s.obj("properties")
	if props == nil {
		return "", nil, false
	}
	for _, k := range props.keys {
		fs, _ := props.vals[k].(*object)
		if fs == nil {
			continue
		}
		if c, has := fs.vals["const"]; has {
			return k, []string{valueText(c)}, true
		}
		if e := fs.list("enum"); len(e) > 0 {
			for _, v := range e {
				values = append(values, valueText(v))
			}
			return k, values, true
		}
	}
	return "", nil, false
}

// variants finds the branches of s by the value of one field: if/then
// (in allOf, or on s itself) and oneOf/anyOf alternatives with a const.
// The values come in the order the field's enum lists them, else in the
// order of the branches.
func (p *page) variants(s *object) (string, []variant) {
	byValue := map[string]*variant{}
	var order []string
	field := ""
	add := func(f, v string, branch *object) {
		if field == "" {
			field = f
		}
		if f != field {
			return // a second discriminator: not a form this page knows
		}
		if byValue[v] == nil {
			byValue[v] = &variant{value: v}
			order = append(order, v)
		}
		if branch != nil {
			byValue[v].branches = append(byValue[v].branches, branch)
		}
	}
	conditional := func(c *object) {
		cond := c.obj("if")
		if cond == nil {
			return
		}
		if f, vs, ok := discriminator(cond); ok {
			then, _ := c.get("then").(*object)
			for _, v := range vs {
				add(f, v, then)
			}
		}
	}
	conditional(s)
	for _, a := range s.list("allOf") {
		if c, ok := a.(*object); ok {
			conditional(c)
		}
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		for _, a := range s.list(key) {
			alt, ok := a.(*object)
			if !ok {
				continue
			}
			alt = p.d.resolve(alt)
			if f, vs, ok := discriminator(alt); ok {
				for _, v := range vs {
					add(f, v, alt)
				}
			}
		}
	}
	if field == "" {
		return "", nil
	}
	if fs, ok := s.obj("properties").get(field).(*object); ok {
		enum := enumValues(p.d, fs)
		var sorted []string
		for _, v := range enum {
			if byValue[v] == nil {
				byValue[v] = &variant{value: v} // no branch: the common fields only
			}
			sorted = append(sorted, v)
		}
		for _, v := range order {
			if !slices.Contains(sorted, v) {
				sorted = append(sorted, v)
			}
		}
		order = sorted
	}
	vs := make([]variant, len(order))
	for i, v := range order {
		vs[i] = *byValue[v]
	}
	return field, vs
}

// enumValues lists the values s allows by enum or const, through $ref
// and anyOf/oneOf.
func enumValues(d *schemaDoc, s *object) []string {
	s = d.resolve(s)
	var out []string
	for _, v := range s.list("enum") {
		out = append(out, valueText(v))
	}
	if c, ok := s.vals["const"]; ok {
		out = append(out, valueText(c))
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		for _, a := range s.list(key) {
			if alt, ok := a.(*object); ok && refName(alt) != envDef {
				out = append(out, enumValues(d, alt)...)
			}
		}
	}
	return out
}

// variantSections writes an object with variants: the discriminating
// field's description, then one subsection per value with the fields
// that value allows (the object's fields, less those a branch forbids
// with false, plus those a branch adds), required ones marked.
func (p *page) variantSections(path string, s *object, disc string, vs []variant) []section {
	lead := p.discriminatorTable(path, s, disc)
	p.notes(s)
	var children []section
	used := map[string]bool{disc: true}
	for _, v := range vs {
		fmt.Fprintf(&p.body, "### `%s: %s`\n\n", disc, v.value)
		p.variantLead(v, lead[v.value])
		fields, required, override := variantFields(s, disc, v, used)
		children = append(children, p.table(path, fields, required, override, false)...)
		for _, b := range v.branches {
			p.notes(b)
		}
	}
	p.unusedFields(s.obj("properties"), disc, used)
	return dedupe(children)
}

// discriminatorTable writes the table of the discriminating field alone
// and returns the text its description gives each value ("- value:
// text" lines), the fallback for a variant with no description of its
// own.
func (p *page) discriminatorTable(path string, s *object, disc string) map[string]string {
	fs, ok := s.obj("properties").get(disc).(*object)
	if !ok {
		return nil
	}
	one := &object{keys: []string{disc}, vals: map[string]any{disc: fs}}
	p.table(path, one, s.strings("required"), nil, false)
	return bulletTexts(p.d.resolve(fs).str("description"))
}

// variantLead writes the paragraph under a variant's heading: the last
// description among its branches, else fallback (the discriminator's
// text for this value), as a sentence; nothing when both are empty.
func (p *page) variantLead(v variant, fallback string) {
	text := ""
	for _, b := range v.branches {
		if d := b.str("description"); d != "" {
			text = d
		}
	}
	if text == "" {
		text = fallback
	}
	if text == "" {
		return
	}
	text = upperFirst(text)
	if !strings.HasSuffix(text, ".") {
		text += "."
	}
	p.body.WriteString(escapeText(text) + "\n\n")
}

// branchRules reads what a variant's branches say about the object's
// fields: those they forbid with false, the schemas they give fields
// (other than the discriminator), and the fields they require.
func branchRules(disc string, branches []*object) (override map[string]*object, forbidden map[string]bool, required []string) {
	override = map[string]*object{}
	forbidden = map[string]bool{}
	for _, b := range branches {
		bp := b.obj("properties")
		for _, k := range bp.keysOrNil() {
			switch x := bp.vals[k].(type) {
			case bool:
				if !x {
					forbidden[k] = true
				}
			case *object:
				if k != disc {
					override[k] = x
				}
			}
		}
		required = append(required, b.strings("required")...)
	}
	return override, forbidden, required
}

// variantFields returns the fields variant v of s allows, in order (the
// object's own, then those only its branches declare), the fields it
// requires and the branches' schemas that replace the object's. A field
// the object declares with no schema of its own (true) is listed only
// when a branch gives it one. It marks each listed field in used.
func variantFields(s *object, disc string, v variant, used map[string]bool) (*object, []string, map[string]*object) {
	props := s.obj("properties")
	override, forbidden, branchRequired := branchRules(disc, v.branches)
	required := append([]string{}, s.strings("required")...)
	required = append(required, branchRequired...)
	fields := &object{vals: map[string]any{}}
	add := func(k string, fs any) {
		if k == disc || forbidden[k] || fields.has(k) {
			return
		}
		if _, isObj := fs.(*object); !isObj {
			if o := override[k]; o != nil {
				fs = o
			} else {
				return
			}
		}
		fields.keys = append(fields.keys, k)
		fields.vals[k] = fs
		used[k] = true
	}
	for _, k := range props.keysOrNil() {
		add(k, props.vals[k])
	}
	for _, b := range v.branches {
		bp := b.obj("properties")
		for _, k := range bp.keysOrNil() {
			if !props.has(k) {
				add(k, bp.vals[k])
			}
		}
	}
	return fields, required, override
}

// unusedFields lists the declared fields no variant allows, which would
// otherwise vanish from the page.
func (p *page) unusedFields(props *object, disc string, used map[string]bool) {
	var rest []string
	for _, k := range props.keysOrNil() {
		if !used[k] {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		fmt.Fprintf(&p.body, "Declared, but allowed with no value of `%s`: %s.\n\n", disc, codeList(rest, "and"))
	}
}

// keysOrNil returns o's keys, nil for a nil object.
func (o *object) keysOrNil() []string {
	if o == nil {
		return nil
	}
	return o.keys
}

// dedupe drops the second section of an object met in several variants
// (every transform type's when is one condition).
func dedupe(secs []section) []section {
	var out []section
	for _, s := range secs {
		if !slices.ContainsFunc(out, func(x section) bool { return x.schema == s.schema }) {
			out = append(out, s)
		}
	}
	return out
}

// bulletTexts reads "- value: text" lines of a description, the form in
// which a discriminating field explains each of its values.
func bulletTexts(desc string) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(desc, "\n") {
		item, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			continue
		}
		if v, text, ok := strings.Cut(item, ": "); ok {
			out[v] = strings.TrimSpace(text)
		}
	}
	return out
}

// typeText names the type of a field's schema s for the table, and
// returns the objects in it that need a section of their own (path is the
// field's path, their title).
func (p *page) typeText(s *object, path string) (string, []section) {
	if name := refName(s); name != "" && p.d.defs[name] != nil {
		def := p.d.defs[name]
		r := p.d.resolve(s)
		if isRecord(p.d, r) {
			return p.link(def, r, path)
		}
		if r.str("type") == "array" || r.has("anyOf") || r.has("oneOf") {
			return p.typeText(withoutRef(r), path)
		}
		return fmt.Sprintf("[%s](#%s)", name, slug(name)), nil
	}
	if isRecord(p.d, s) {
		return p.link(s, s, path)
	}
	var kids []section
	var alts []string
	addAlt := func(t string) {
		if t != "" && !slices.Contains(alts, t) {
			alts = append(alts, t)
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		for _, a := range s.list(key) {
			alt, ok := a.(*object)
			if !ok || refName(alt) == envDef {
				continue
			}
			if s.has("type") && !alt.has("type") && !alt.has("$ref") {
				continue // a bound on the type s names (0, or 512 to 1 GiB)
			}
			t, k := p.typeText(alt, path)
			addAlt(t)
			kids = append(kids, k...)
		}
	}
	for _, t := range typeNames(s) {
		switch t {
		case "array":
			items, _ := s.get("items").(*object)
			if items == nil {
				addAlt("list")
				continue
			}
			it, k := p.typeText(items, path+"[]")
			kids = append(kids, k...)
			addAlt("list of " + it)
		case "object":
			if ap, ok := s.get("additionalProperties").(*object); ok {
				vt, k := p.typeText(ap, path+".*")
				kids = append(kids, k...)
				addAlt("map of string to " + vt)
			} else {
				addAlt("object")
			}
		case "integer", "number", "string", "boolean", "null":
			addAlt(t)
		}
	}
	if len(alts) == 0 {
		switch {
		case s.has("enum"):
			addAlt(jsonKind(s.list("enum")))
		case s.has("const"):
			addAlt(jsonKind([]any{s.get("const")}))
		default:
			addAlt("any")
		}
	}
	return strings.Join(alts, " or "), kids
}

// withoutRef returns s without its $ref, for a definition that is a
// combination rather than a kind of its own.
func withoutRef(s *object) *object {
	out := &object{vals: map[string]any{}}
	for _, k := range s.keys {
		if k != "$ref" {
			out.keys = append(out.keys, k)
			out.vals[k] = s.vals[k]
		}
	}
	return out
}

// link names an object that has (or gets) a section of its own and links
// to it; key identifies it (its definition, or the inline schema).
func (p *page) link(key, resolved *object, path string) (string, []section) {
	title, seen := p.titles[key]
	var kids []section
	if !seen {
		title = path
		p.titles[key] = title
		kids = append(kids, section{title: title, schema: resolved})
	}
	return fmt.Sprintf("object, see [`%s`](#%s)", title, slug("`"+title+"`")), kids
}

// isRecord reports whether s is an object with named fields, which gets a
// section of its own: fields of its own, or only those of its variants (a
// step defined as oneOf one definition per type).
func isRecord(d *schemaDoc, s *object) bool {
	s = d.resolve(s)
	if s.has("type") && s.str("type") != "object" {
		return false
	}
	if s.obj("properties") != nil {
		return true
	}
	_, vs := (&page{d: d}).variants(s)
	return len(vs) > 0
}

// typeNames lists s's "type", a string or a list.
func typeNames(s *object) []string {
	if t := s.str("type"); t != "" {
		return []string{t}
	}
	return s.strings("type")
}

// jsonKind names the JSON type common to values, "any" when they differ.
func jsonKind(values []any) string {
	kind := ""
	for _, v := range values {
		k := "any"
		switch v.(type) {
		case string:
			k = "string"
		case json.Number:
			k = "number"
		case bool:
			k = "boolean"
		case nil:
			k = "null"
		}
		if kind != "" && kind != k {
			return "any"
		}
		kind = k
	}
	return kind
}

// rangeText says which values of its type s allows: bounds, enums,
// patterns, list and map constraints. Bounds of several alternatives are
// joined with "or" (max_batch_bytes: 0, or 512 to 1073741824).
func (p *page) rangeText(s *object) string {
	s, ok := p.rangeSubject(s)
	if !ok {
		return ""
	}
	parts := valueParts(s)
	parts = append(parts, sizeParts(s)...)
	if k := keysText(s.obj("propertyNames")); k != "" {
		parts = append(parts, k)
	}
	if items, ok := s.get("items").(*object); ok {
		if r := p.rangeText(items); r != "" {
			parts = append(parts, "each "+r)
		}
	}
	if alts := p.altsText(s); alts != "" {
		parts = append(parts, alts)
	}
	return strings.Join(parts, "; ")
}

// rangeSubject returns the schema whose constraints the range column
// shows for s: s itself, or the definition it names when that is a list
// or a choice of alternatives. It returns false for a record or a value
// type, whose own section says what they allow.
func (p *page) rangeSubject(s *object) (*object, bool) {
	name := refName(s)
	if name == "" || p.d.defs[name] == nil {
		return s, true
	}
	r := p.d.resolve(s)
	if isRecord(p.d, r) {
		return nil, false
	}
	if !(r.str("type") == "array" || r.has("anyOf") || r.has("oneOf")) {
		return nil, false // a value type: its section says what it allows
	}
	return withoutRef(r), true
}

// valueParts renders the constraints on a single value: enum, const,
// bounds, pattern and the values it excludes.
func valueParts(s *object) []string {
	var parts []string
	if e := s.list("enum"); len(e) > 0 {
		parts = append(parts, "one of "+valueList(e))
	}
	if c, ok := s.vals["const"]; ok {
		parts = append(parts, "`"+valueText(c)+"`")
	}
	if b := bounds(s); b != "" {
		parts = append(parts, b)
	}
	if pat := s.str("pattern"); pat != "" {
		parts = append(parts, "matches `"+pat+"`")
	}
	if n := s.obj("not"); n != nil {
		if e := n.list("enum"); len(e) > 0 {
			parts = append(parts, "not "+valueList(e))
		}
	}
	return parts
}

// sizeParts renders the length of a string, the size and uniqueness of
// a list and the least size of a map. A minimum of zero says nothing and
// is left out.
func sizeParts(s *object) []string {
	var parts []string
	if n, ok := s.vals["minLength"].(json.Number); ok {
		parts = append(parts, "at least "+n.String()+" "+plural(n, "character"))
	}
	if n, ok := s.vals["maxLength"].(json.Number); ok {
		parts = append(parts, "at most "+n.String()+" "+plural(n, "character"))
	}
	if n, ok := s.vals["minItems"].(json.Number); ok && n.String() != "0" {
		parts = append(parts, "at least "+n.String()+" "+plural(n, "item"))
	}
	if n, ok := s.vals["maxItems"].(json.Number); ok {
		parts = append(parts, "at most "+n.String()+" "+plural(n, "item"))
	}
	if u, _ := s.vals["uniqueItems"].(bool); u {
		parts = append(parts, "no duplicates")
	}
	if n, ok := s.vals["minProperties"].(json.Number); ok && n.String() != "0" {
		parts = append(parts, "at least "+n.String()+" "+plural(n, "entry"))
	}
	return parts
}

// keysText renders a map's propertyNames (pn, nil when absent): the
// pattern its keys match and the names they may not take.
func keysText(pn *object) string {
	if pn == nil {
		return ""
	}
	var k []string
	if pat := pn.str("pattern"); pat != "" {
		k = append(k, "match `"+pat+"`")
	}
	if n := pn.obj("not"); n != nil {
		if e := n.list("enum"); len(e) > 0 {
			k = append(k, "are not "+valueList(e))
		}
		if c, ok := n.vals["const"]; ok {
			k = append(k, "are not `"+valueText(c)+"`")
		}
	}
	if len(k) == 0 {
		return ""
	}
	return "keys " + strings.Join(k, " and ")
}

// altsText joins the distinct ranges of s's anyOf/oneOf alternatives
// with "or", skipping the environment-variable form.
func (p *page) altsText(s *object) string {
	var alts []string
	for _, key := range []string{"anyOf", "oneOf"} {
		for _, a := range s.list(key) {
			if alt, ok := a.(*object); ok && refName(alt) != envDef {
				if r := p.rangeText(alt); r != "" && !slices.Contains(alts, r) {
					alts = append(alts, r)
				}
			}
		}
	}
	return strings.Join(alts, ", or ")
}

// bounds renders minimum, maximum and their exclusive forms.
func bounds(s *object) string {
	lo, hasLo := s.vals["minimum"].(json.Number)
	hi, hasHi := s.vals["maximum"].(json.Number)
	xlo, hasXlo := s.vals["exclusiveMinimum"].(json.Number)
	xhi, hasXhi := s.vals["exclusiveMaximum"].(json.Number)
	var parts []string
	switch {
	case hasLo && hasHi:
		parts = append(parts, lo.String()+" to "+hi.String())
	case hasLo:
		parts = append(parts, "at least "+lo.String())
	case hasHi:
		parts = append(parts, "at most "+hi.String())
	}
	if hasXlo {
		parts = append(parts, "above "+xlo.String())
	}
	if hasXhi {
		parts = append(parts, "below "+xhi.String())
	}
	return strings.Join(parts, ", ")
}

// valueTypes writes the definitions that are kinds of values (a topic
// name, a duration, an expression) rather than objects.
func (p *page) valueTypes() {
	p.body.WriteString("## Value types\n\n")
	for _, name := range p.d.order {
		def := p.d.defs[name]
		if isRecord(p.d, def) {
			continue
		}
		fmt.Fprintf(&p.body, "### %s\n\n", name)
		if desc := def.str("description"); desc != "" {
			p.body.WriteString(escapeText(desc) + "\n\n")
		}
		typ, _ := p.typeText(withoutRef(def), name)
		line := "Type: " + typ
		if r := p.rangeText(withoutRef(def)); r != "" {
			line += "; " + r
		}
		p.body.WriteString(escapeText(line) + ".\n\n")
	}
}

// defaultText renders s's default, "" when it has none.
func defaultText(s *object) string {
	v, ok := s.vals["default"]
	if !ok {
		return ""
	}
	if str, ok := v.(string); ok && str == "" {
		return `""`
	}
	return "`" + valueText(v) + "`"
}

// valueText renders a JSON value as a reader writes it in YAML: strings
// bare, everything else as JSON.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	case nil:
		return "null"
	}
	b, err := json.Marshal(plain(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// plain turns parsed values back into what encoding/json marshals.
func plain(v any) any {
	switch x := v.(type) {
	case *object:
		m := map[string]any{}
		for _, k := range x.keys {
			m[k] = plain(x.vals[k])
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// valueList renders values as "`a`, `b` or `c`".
func valueList(values []any) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = valueText(v)
	}
	return codeList(s, "or")
}

// codeList renders names as "`a`, `b` and `c`" (or "or").
func codeList(names []string, conj string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " " + conj + " " + q[len(q)-1]
}

func plural(n json.Number, word string) string {
	if n.String() == "1" {
		return word
	}
	if strings.HasSuffix(word, "y") {
		return strings.TrimSuffix(word, "y") + "ies"
	}
	return word + "s"
}

func upperFirst(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + s[i+len(string(r)):]
	}
	return s
}

// escapeText keeps text from being read as HTML: < and > outside code
// spans become entities (a description's <name>.ledger would otherwise
// vanish as an unknown tag).
func escapeText(s string) string {
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(parts[i])
	}
	return strings.Join(parts, "`")
}

// cell makes text fit one table cell: pipes escaped (GitHub splits cells
// on them even inside code spans), line breaks as <br>.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "<br>")
}

// slug is GitHub's anchor for a heading: lower case, code marks and
// punctuation dropped, spaces as dashes. internal/tools/linkcheck holds
// the page to the same rule.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
