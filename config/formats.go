package config

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sharerelay/sharerelay/transform"
)

// Formats a value or key can be read and written in.
const (
	FormatJSON       = "json"
	FormatAvro       = "avro"
	FormatProtobuf   = "protobuf"
	FormatJSONSchema = "json_schema"
	FormatString     = "string"
	FormatBytes      = "bytes"
)

// Formats lists the formats in the order messages name them.
var Formats = []string{FormatJSON, FormatAvro, FormatProtobuf, FormatJSONSchema, FormatString, FormatBytes}

// RegistryFormat reports whether format f is written under a schema
// registry (the Confluent wire format: a schema id before the value).
func RegistryFormat(f string) bool {
	return f == FormatAvro || f == FormatProtobuf || f == FormatJSONSchema
}

// StructuredFormat reports whether values of format f decode to a tree
// (JSON and the registry formats) rather than to text or bytes.
func StructuredFormat(f string) bool { return f == FormatJSON || RegistryFormat(f) }

// Subject naming strategies (Schema.SubjectNaming), as Confluent's
// serializers name them: TopicNameStrategy, RecordNameStrategy,
// TopicRecordNameStrategy.
const (
	NamingTopic       = "topic"
	NamingRecord      = "record"
	NamingTopicRecord = "topic_record"
)

// SchemaLatest is the version of a subject's newest schema.
const SchemaLatest = "latest"

// Default values of the formats and the schema registry.
const (
	DefaultValueFormat     = FormatJSON
	DefaultKeyFormat       = FormatString
	DefaultRegistryTimeout = 10 * time.Second
	// DefaultRegistryLatestTTL is how long the relay keeps the answer to
	// "the subject's latest schema" before asking again; schemas by id
	// and by version number never change and are kept for good.
	DefaultRegistryLatestTTL = 5 * time.Minute
	// MaxRegistryTimeout bounds schema_registry.timeout: a request that
	// long already holds its records far past a lock renewal.
	MaxRegistryTimeout = 5 * time.Minute
)

// SchemaRegistry is a schema registry with the Confluent-compatible REST
// API (Confluent Schema Registry, Apicurio's ccompat API, Redpanda,
// Karapace). The relay reads writer schemas by id from it, and looks up
// or registers its outputs' schemas.
type SchemaRegistry struct {
	// URLs are the registry's base URLs (http or https), tried in
	// order; e.g. https://registry:8081, or
	// http://apicurio:8080/apis/ccompat/v7. Required.
	URLs []string `yaml:"urls" json:"urls"`
	// BasicAuth authenticates with a user name and password.
	BasicAuth *BasicAuth `yaml:"basic_auth" json:"basic_auth"`
	// BearerToken authenticates with a bearer token (read it from the
	// environment, ${REGISTRY_TOKEN}); BearerTokenFile reads it from a
	// file instead, again before every request whenever the file
	// changed, for tokens another process rotates. Set at most one of
	// them and BasicAuth.
	BearerToken     Secret `yaml:"bearer_token" json:"bearer_token"`
	BearerTokenFile string `yaml:"bearer_token_file" json:"bearer_token_file"`
	// TLS secures the connections to an https registry, as tls does for
	// the brokers.
	TLS TLS `yaml:"tls" json:"tls"`
	// Timeout bounds one request (default 10s). A registry that does not
	// answer in time is an outage: the records wait, held, for it.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// Cache tunes what the relay keeps of the registry's answers.
	Cache RegistryCache `yaml:"cache" json:"cache"`
}

// BasicAuth is a user name and password for HTTP basic authentication.
type BasicAuth struct {
	Username string `yaml:"username" json:"username"`
	// Password, from the environment (${REGISTRY_PASSWORD}); or
	// PasswordFile, a file holding it. Set one.
	Password     Secret `yaml:"password" json:"password"`
	PasswordFile string `yaml:"password_file" json:"password_file"`
}

// RegistryCache tunes the relay's cache of registry answers. A schema
// found by id or by version number never changes and is kept for good, so
// a steady stream asks the registry nothing.
type RegistryCache struct {
	// LatestTTL is how long "the subject's latest schema" is kept before
	// the relay asks again (default 5m; 0 in the file: ask once, keep
	// for good).
	LatestTTL time.Duration `yaml:"latest_ttl" json:"latest_ttl"`
}

// ReadSchema is an optional schema for reading a source's values or keys
// (source.value_schema, source.key_schema): every record names its writer
// schema by id, so none is needed.
type ReadSchema struct {
	// File is an Avro reader schema the values are resolved to (fields
	// added with their defaults, dropped, promoted), a Protobuf file whose
	// message of the writer's name decodes them, or a JSON Schema that
	// Validate checks them against instead of the writer's; relative to
	// the pipeline file. relay validate checks the fields the steps name
	// against it.
	File string `yaml:"file" json:"file"`
	// Validate (json_schema) checks every value against its schema, even
	// one no step reads; a value that fails is dead-lettered.
	Validate bool `yaml:"validate" json:"validate"`
}

// Schema is the schema an output's values or keys are written with
// (output.value_schema, output.key_schema, and those of output.routes):
// a File kept beside the pipeline, looked up (or with AutoRegister,
// registered) under the subject; or a subject's Version; or an ID. Left
// out, a record is written with its own writer schema (same format and
// registry only).
type Schema struct {
	// File is a schema file (.avsc, .proto, .json), relative to the
	// pipeline file.
	File string `yaml:"file" json:"file"`
	// Message is the full name of the Protobuf message of File to use
	// (default: the file's first message).
	Message string `yaml:"message" json:"message"`
	// Subject is the registry subject. Default: by SubjectNaming.
	Subject string `yaml:"subject" json:"subject"`
	// SubjectNaming derives the subject: topic (default; "<topic>-value"
	// or "<topic>-key"), record ("<record>"), or topic_record
	// ("<topic>-<record>"), where the record is Record or the name of
	// File's record or message.
	SubjectNaming string `yaml:"subject_naming" json:"subject_naming"`
	// Record is the full record (or message) name for record naming
	// without a File.
	Record string `yaml:"record" json:"record"`
	// Version is the subject's version to write with: "latest" (the
	// default) or a number. Not with File or ID.
	Version string `yaml:"version" json:"version"`
	// ID is the schema id to write with. Not with File, Subject or
	// Version.
	ID int `yaml:"id" json:"id"`
	// AutoRegister registers File under the subject when it is not there
	// yet (default false: the relay only looks it up, and holds records
	// until it is registered).
	AutoRegister bool `yaml:"auto_register" json:"auto_register"`
}

// IsZero reports whether s chooses nothing (a block left out).
func (s *Schema) IsZero() bool { return s == nil || *s == Schema{} }

// RouteFormats are the formats and schemas of one topic a route writes
// to, in place of the output's.
type RouteFormats struct {
	ValueFormat string  `yaml:"value_format" json:"value_format"`
	KeyFormat   string  `yaml:"key_format" json:"key_format"`
	ValueSchema *Schema `yaml:"value_schema" json:"value_schema"`
	KeySchema   *Schema `yaml:"key_schema" json:"key_schema"`
}

// SourceRegistry returns the registry the source's writer schemas are
// read from: source.cluster's when it has one, else the pipeline's; nil
// when neither is set.
func (p *Pipeline) SourceRegistry() *SchemaRegistry {
	if c := p.Source.Cluster; c != nil && c.SchemaRegistry != nil {
		return c.SchemaRegistry
	}
	return p.SchemaRegistry
}

// SeparateRegistries reports whether the source's schemas live in a
// registry of their own (source.cluster.schema_registry): a schema id
// then means different schemas on each side.
func (p *Pipeline) SeparateRegistries() bool {
	return p.Source.Cluster != nil && p.Source.Cluster.SchemaRegistry != nil
}

// OutputFormats returns the formats and schemas topic is written with:
// output.routes.<topic>'s where set, else the output's. path is where
// they are set in the file ("output" or "output.routes.<topic>").
func (p *Pipeline) OutputFormats(topic string) (f RouteFormats, path string) {
	f = RouteFormats{ValueFormat: p.Output.ValueFormat, KeyFormat: p.Output.KeyFormat, ValueSchema: p.Output.ValueSchema, KeySchema: p.Output.KeySchema}
	path = "output"
	if r, ok := p.Output.Routes[topic]; ok && r != nil && topic != "" {
		path = "output.routes." + topic
		if r.ValueFormat != "" {
			f.ValueFormat, f.ValueSchema = r.ValueFormat, r.ValueSchema
		} else if r.ValueSchema != nil {
			f.ValueSchema = r.ValueSchema
		}
		if r.KeyFormat != "" {
			f.KeyFormat, f.KeySchema = r.KeyFormat, r.KeySchema
		} else if r.KeySchema != nil {
			f.KeySchema = r.KeySchema
		}
	}
	return f, path
}

// SchemaPath returns the path of a schema file named in p: relative to
// the pipeline file's directory.
func (p *Pipeline) SchemaPath(file string) string {
	if file == "" || filepath.IsAbs(file) {
		return file
	}
	return filepath.Join(p.dir, file)
}

// TransformOptions returns the options the pipeline's transform chain is
// built with, but its Formats (package format adds them): the
// expressions' cost limit, whether keys are values, the outputs'
// timestamps.
func (p *Pipeline) TransformOptions() transform.Options {
	return transform.Options{
		CostLimit:      uint64(max(p.CEL.CostLimit, 0)),
		StructuredKeys: StructuredFormat(p.Source.KeyFormat),
		Timestamp:      p.Output.Timestamp,
	}
}

// setFormatDefaults fills in the formats left out: the source's value
// JSON and key text, each output's the source's, the registry's timeout
// and cache.
func (p *Pipeline) setFormatDefaults(explicit func(string) bool) {
	str := func(path string, v *string, def string) {
		if *v == "" && !explicit(path) {
			*v = def
		}
	}
	str("source.value_format", &p.Source.ValueFormat, DefaultValueFormat)
	str("source.key_format", &p.Source.KeyFormat, DefaultKeyFormat)
	str("output.value_format", &p.Output.ValueFormat, p.Source.ValueFormat)
	str("output.key_format", &p.Output.KeyFormat, p.Source.KeyFormat)
	str("output.timestamp", &p.Output.Timestamp, transform.TimestampSource)
	reg := func(path string, r *SchemaRegistry) {
		if r == nil {
			return
		}
		if r.Timeout == 0 && !explicit(path+".timeout") {
			r.Timeout = DefaultRegistryTimeout
		}
		if r.Cache.LatestTTL == 0 && !explicit(path+".cache.latest_ttl") {
			r.Cache.LatestTTL = DefaultRegistryLatestTTL
		}
	}
	reg("schema_registry", p.SchemaRegistry)
	if c := p.Source.Cluster; c != nil {
		reg(sourceClusterPath+".schema_registry", c.SchemaRegistry)
	}
}

// schemaExts are the file extensions of each registry format's schemas.
var schemaExts = map[string][]string{
	FormatAvro:       {".avsc", ".json"},
	FormatProtobuf:   {".proto"},
	FormatJSONSchema: {".json"},
}

// formats checks the formats and schemas of the source and the outputs,
// and the registries they need.
func (v *validator) formats() {
	p := v.p
	v.registry("schema_registry", p.SchemaRegistry)
	if c := p.Source.Cluster; c != nil {
		v.registry(sourceClusterPath+".schema_registry", c.SchemaRegistry)
	} else if v.explicit(sourceClusterPath + ".schema_registry") {
		v.add(sourceClusterPath+".schema_registry", "needs source.cluster")
	}
	srcReg := "schema_registry"
	if p.SeparateRegistries() {
		srcReg = sourceClusterPath + ".schema_registry"
	}
	src := p.Source
	v.format("source.value_format", src.ValueFormat, p.SourceRegistry() != nil, srcReg)
	v.format("source.key_format", src.KeyFormat, p.SourceRegistry() != nil, srcReg)
	v.sourceSchema("source.value_schema", src.ValueFormat, src.ValueSchema)
	v.sourceSchema("source.key_schema", src.KeyFormat, src.KeySchema)

	out := p.Output
	v.outputFormats("output", out.Topic, RouteFormats{ValueFormat: out.ValueFormat, KeyFormat: out.KeyFormat, ValueSchema: out.ValueSchema, KeySchema: out.KeySchema})
	writes := p.OutputTopics()
	for _, topic := range slices.Sorted(maps.Keys(out.Routes)) {
		path := "output.routes." + topic
		r := out.Routes[topic]
		switch {
		case topic == p.DeadLetter.Topic:
			v.add(path, "is the dead-letter topic: dead letters keep the source's bytes as they came, in no format of the relay's")
			continue
		case !slices.Contains(writes, topic):
			v.add(path, "%s is not a topic the pipeline writes to (output.topic, or a topic a step sends records to)", strconv.Quote(topic))
			continue
		case r == nil:
			v.add(path, "is empty: give value_format, key_format or a schema, or leave the entry out")
			continue
		}
		f, _ := p.OutputFormats(topic)
		v.outputFormats(path, topic, f)
	}
	v.timestamp()
}

// format checks one format field.
func (v *validator) format(path, f string, hasRegistry bool, registryPath string) {
	switch {
	case !slices.Contains(Formats, f):
		v.add(path, "must be one of %s, got %s", strings.Join(Formats, ", "), v.show(path, f))
	case RegistryFormat(f) && !hasRegistry:
		v.add(path, "%s needs a schema registry: add %s with its urls", f, registryPath)
	}
}

// sourceSchema checks a source's schema block.
func (v *validator) sourceSchema(path, format string, s *ReadSchema) {
	if s == nil {
		return
	}
	if !RegistryFormat(format) {
		v.add(path, "a schema is for avro, protobuf and json_schema values; the format is %s", format)
		return
	}
	if s.Validate && format != FormatJSONSchema {
		v.add(path+".validate", "is for json_schema: avro and protobuf values that decode fit their schema")
	}
	v.schemaFile(path+".file", format, s.File)
}

// schemaFile checks a schema file's name and that it can be read.
func (v *validator) schemaFile(path, format, file string) {
	if file == "" {
		return
	}
	ext := strings.ToLower(filepath.Ext(file))
	if exts := schemaExts[format]; !slices.Contains(exts, ext) {
		v.add(path, "%s is not a %s schema file: expected %s", v.show(path, file), format, strings.Join(exts, " or "))
		return
	}
	v.readFile(path, v.p.SchemaPath(file))
}

// outputFormats checks the formats and schemas f of topic (the output's,
// or a route's at path).
func (v *validator) outputFormats(path, topic string, f RouteFormats) {
	p := v.p
	has := p.SchemaRegistry != nil
	v.format(path+".value_format", f.ValueFormat, has, "schema_registry")
	v.format(path+".key_format", f.KeyFormat, has, "schema_registry")
	v.outputSchema(path+".value_schema", f.ValueFormat, p.Source.ValueFormat, f.ValueSchema)
	v.outputSchema(path+".key_schema", f.KeyFormat, p.Source.KeyFormat, f.KeySchema)
}

// outputSchema checks an output's schema block for format out, the
// source's format being in.
func (v *validator) outputSchema(path, out, in string, s *Schema) {
	p := v.p
	if !RegistryFormat(out) {
		if !s.IsZero() {
			v.add(path, "a schema is for avro, protobuf and json_schema; the format is %s", out)
		}
		return
	}
	if s.IsZero() {
		switch {
		case out != in:
			v.add(path, "required: the %s schema the relay writes with (file, subject or id): the source's records are %s", out, in)
		case p.SeparateRegistries():
			v.add(path, "required: the schema the relay writes with (file, subject or id): the source's schema ids belong to source.cluster.schema_registry, not to schema_registry")
		}
		return
	}
	if s.Message != "" && out != FormatProtobuf {
		v.add(path+".message", "is for protobuf")
	}
	if s.Message != "" && s.File == "" {
		v.add(path+".message", "names a message of file; give the file")
	}
	if s.SubjectNaming != "" && !slices.Contains([]string{NamingTopic, NamingRecord, NamingTopicRecord}, s.SubjectNaming) {
		v.add(path+".subject_naming", "must be %s, %s or %s, got %s", NamingTopic, NamingRecord, NamingTopicRecord, v.show(path+".subject_naming", s.SubjectNaming))
	}
	if s.Subject != "" && s.SubjectNaming != "" {
		v.add(path+".subject_naming", "cannot be combined with subject; set only one of them")
	}
	recordNaming := s.SubjectNaming == NamingRecord || s.SubjectNaming == NamingTopicRecord
	if recordNaming && s.Record == "" && s.File == "" {
		v.add(path+".record", "required with subject_naming %s: the record's full name (or give the schema's file)", s.SubjectNaming)
	}
	if s.Record != "" && !recordNaming {
		v.add(path+".record", "is for subject_naming record and topic_record")
	}
	if s.ID < 0 {
		v.add(path+".id", "must be a schema id (1 or more), got %d", s.ID)
	}
	if s.ID != 0 && (s.File != "" || s.Subject != "" || s.SubjectNaming != "" || s.Version != "") {
		v.add(path+".id", "cannot be combined with file, subject, subject_naming or version: an id is one schema")
	}
	if s.Version != "" {
		if n, err := strconv.Atoi(s.Version); s.Version != SchemaLatest && (err != nil || n < 1) {
			v.add(path+".version", "must be latest or a version number (1 or more), got %s", v.show(path+".version", s.Version))
		}
		if s.File != "" {
			v.add(path+".version", "cannot be combined with file: the file is the schema")
		}
	}
	if s.AutoRegister && s.File == "" {
		v.add(path+".auto_register", "needs file: the schema to register")
	}
	v.schemaFile(path+".file", out, s.File)
}

// timestamp checks output.timestamp: source, now, or an expression.
func (v *validator) timestamp() {
	t := v.p.Output.Timestamp
	if t == transform.TimestampSource || t == transform.TimestampNow {
		return
	}
	if t == "" {
		v.add("output.timestamp", "must be source, now or a CEL expression giving a timestamp")
		return
	}
	for _, fe := range transform.CheckTimestamp(t, v.p.TransformOptions()) {
		v.errs = append(v.errs, fieldErr{path: "output.timestamp", msg: fe.Msg, line: fe.Line, col: fe.Col, snippet: fe.Snippet})
	}
}

// registry checks a schema_registry block.
func (v *validator) registry(path string, r *SchemaRegistry) {
	if r == nil {
		if v.explicit(path) {
			v.add(path, "is empty: give the registry's urls, or leave it out")
		}
		return
	}
	if len(r.URLs) == 0 {
		v.add(path+".urls", "required: at least one URL, e.g. http://registry:8081")
	}
	for i, raw := range r.URLs {
		at := fmt.Sprintf("%s.urls[%d]", path, i)
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			v.add(at, "%s is not a URL: %v", v.show(at, raw), err)
		case u.Scheme != "http" && u.Scheme != "https":
			v.add(at, "%s: the scheme must be http or https", v.show(at, raw))
		case u.Host == "":
			v.add(at, "%s has no host", v.show(at, raw))
		case u.User != nil:
			v.add(at, "credentials in the URL are refused: use basic_auth")
		case u.Scheme == "http" && r.TLS.Enabled:
			v.add(at, "is http, but tls is enabled: write https")
		}
	}
	auth := 0
	if b := r.BasicAuth; b != nil {
		auth++
		if b.Username == "" {
			v.add(path+".basic_auth.username", "required")
		}
		switch {
		case b.Password == "" && b.PasswordFile == "":
			v.add(path+".basic_auth.password", "required: the password (from the environment, ${REGISTRY_PASSWORD}), or password_file")
		case b.Password != "" && b.PasswordFile != "":
			v.add(path+".basic_auth.password_file", "cannot be combined with password; set only one of them")
		case b.PasswordFile != "":
			v.readFile(path+".basic_auth.password_file", b.PasswordFile)
		}
	}
	if r.BearerToken != "" || r.BearerTokenFile != "" {
		auth++
		if r.BearerToken != "" && r.BearerTokenFile != "" {
			v.add(path+".bearer_token_file", "cannot be combined with bearer_token; set only one of them")
		}
		if r.BearerTokenFile != "" {
			v.readFile(path+".bearer_token_file", r.BearerTokenFile)
		}
	}
	if auth > 1 {
		v.add(path+".bearer_token", "cannot be combined with basic_auth; set only one way to authenticate")
	}
	if auth > 0 && !r.TLS.Enabled && !strings.HasPrefix(strings.Join(r.URLs, ""), "https") {
		v.warn(path, "credentials go to the registry in clear text over http: use https")
	}
	v.tls(path+".tls", r.TLS)
	if r.Timeout < time.Millisecond*100 || r.Timeout > MaxRegistryTimeout {
		v.add(path+".timeout", "must be between 100ms and %s, got %s", shortDuration(MaxRegistryTimeout), v.showAny(path+".timeout", r.Timeout))
	}
	if r.Cache.LatestTTL < 0 {
		v.add(path+".cache.latest_ttl", "must be 0 or more, got %s", v.showAny(path+".cache.latest_ttl", r.Cache.LatestTTL))
	}
}
