package preflight

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
)

// registry is one schema registry the checks ask, and what they learn
// of it.
type registry struct {
	cfg *config.SchemaRegistry
	// path is where it is set: schema_registry, or
	// source.cluster.schema_registry.
	path string
	reg  *format.Registry
	// up: it answered the first request.
	up bool
}

// name is how the registry's lines name it: "schema registry <urls>".
func (r *registry) name() string { return "schema registry " + strings.Join(r.cfg.URLs, ",") }

// addRegistry adds a result of a check of the registry r, named with
// it.
func (c *checker) addRegistry(r *registry, st Status, check, msg string, args ...any) {
	c.rep.add(st, check+" ("+r.name()+")", msg, args...)
}

// registries checks the pipeline's schema registries, asking them
// only what the relay will ask, and registering nothing: each answers
// (with the relay's credentials); the source's schemas are read from the
// registry that holds them; each output schema the pipeline names is in
// the registry under the subject the relay derives, or will be
// registered (auto_register) and then accepted by the subject's
// compatibility rule. A registry that does not answer skips its other
// checks.
func (c *checker) registries(ctx context.Context) {
	p := c.p
	var sink, src *registry
	if p.SchemaRegistry != nil {
		sink = c.openRegistry(p.SchemaRegistry, "schema_registry")
	}
	src = sink
	if p.SeparateRegistries() {
		src = c.openRegistry(p.Source.Cluster.SchemaRegistry, "source.cluster.schema_registry")
	}
	if src != nil && src.reg != nil {
		c.reachable(ctx, src)
	}
	c.sourceSchemas(src)
	if sink != nil && sink != src && sink.reg != nil {
		c.reachable(ctx, sink)
	}
	c.outputSchemas(ctx, sink)
}

// openRegistry makes the relay's client of the registry cfg (its URLs,
// credentials, TLS, timeout), or fails the registry's line.
func (c *checker) openRegistry(cfg *config.SchemaRegistry, path string) *registry {
	r := &registry{cfg: cfg, path: path}
	reg, err := format.NewRegistry(cfg)
	if err != nil {
		c.rep.add(Fail, r.name(), "%s: %v", path, err)
		return r
	}
	r.reg = reg
	return r
}

// reachable asks the registry its default compatibility (GET /config),
// the cheapest request that needs the relay's credentials.
func (c *checker) reachable(ctx context.Context, r *registry) {
	level, err := r.reg.Compatibility(ctx, "")
	switch {
	case err == nil:
		r.up = true
		c.rep.add(OK, r.name(), "reachable (%s; default compatibility %s)", r.auth(), level)
	case credentialsRefused(err):
		c.rep.add(Fail, r.name(), "%s: %s", unavailable(err), r.authAdvice())
	case errors.Is(err, format.ErrNotFound):
		c.rep.add(Fail, r.name(), "answers GET /config with 404 (%v): is this the base URL of its Confluent-compatible API (for Apicurio, http://host:8080/apis/ccompat/v7)?", err)
	default:
		c.rep.add(Fail, r.name(), "unavailable: %s (the relay would hold every record that needs it)", unavailable(err))
	}
}

// credentialsRefused reports whether err is the registry's 401 or 403
// (format.ErrCredentials, which format sorts with the outages).
func credentialsRefused(err error) bool {
	return errors.Is(err, format.ErrCredentials)
}

// unavailable is err without format's "schema registry unavailable: ",
// which the line's name says already.
func unavailable(err error) string {
	return strings.TrimPrefix(err.Error(), format.ErrUnavailable.Error()+": ")
}

// auth says how the relay authenticates to the registry.
func (r *registry) auth() string {
	var parts []string
	if r.cfg.TLS.Enabled && r.cfg.TLS.CertFile != "" {
		parts = append(parts, "client certificate")
	}
	switch {
	case r.cfg.BasicAuth != nil:
		parts = append(parts, "basic auth as "+r.cfg.BasicAuth.Username)
	case r.cfg.BearerToken != "":
		parts = append(parts, "bearer token")
	case r.cfg.BearerTokenFile != "":
		parts = append(parts, "bearer token from "+r.cfg.BearerTokenFile)
	}
	if len(parts) == 0 {
		return "no authentication"
	}
	return strings.Join(parts, ", ")
}

// authAdvice says which credentials the registry refused and where they
// are set.
func (r *registry) authAdvice() string {
	switch {
	case r.cfg.BasicAuth != nil:
		return fmt.Sprintf("the registry refuses basic auth as %s: check %s.basic_auth (username and password)", r.cfg.BasicAuth.Username, r.path)
	case r.cfg.BearerToken != "":
		return fmt.Sprintf("the registry refuses the bearer token: check %s.bearer_token, and whether it expired", r.path)
	case r.cfg.BearerTokenFile != "":
		return fmt.Sprintf("the registry refuses the bearer token in %s: check %s.bearer_token_file, and whether the token expired", r.cfg.BearerTokenFile, r.path)
	}
	return fmt.Sprintf("the registry wants credentials and the relay sends none: add %s.basic_auth or bearer_token", r.path)
}

// sourceSchemas says where the source's writer schemas are read from
// when a source format needs them.
func (c *checker) sourceSchemas(r *registry) {
	src := c.p.Source
	var sides []string
	if config.RegistryFormat(src.ValueFormat) {
		sides = append(sides, src.ValueFormat+" values")
	}
	if config.RegistryFormat(src.KeyFormat) {
		sides = append(sides, src.KeyFormat+" keys")
	}
	if len(sides) == 0 || r == nil || r.reg == nil {
		return
	}
	const check = "source schemas"
	if !r.up {
		c.addRegistry(r, Skipped, check, "the registry is unavailable")
		return
	}
	c.addRegistry(r, OK, check, "%s: each record's writer schema is read by its id from this registry, which answers", strings.Join(sides, " and "))
}

// outputSchemas checks the schema of each value and key the pipeline
// writes in a registry format.
func (c *checker) outputSchemas(ctx context.Context, r *registry) {
	if r == nil || r.reg == nil {
		return
	}
	outs, err := format.OutputSchemas(c.p)
	if err != nil {
		c.addRegistry(r, Fail, "output schemas", "%v", err)
		return
	}
	if len(outs) == 0 {
		return
	}
	if !r.up {
		c.addRegistry(r, Skipped, "output schemas", "the registry is unavailable")
		return
	}
	for _, o := range outs {
		check := fmt.Sprintf("output topic %s %s schema", o.Topic, o.Which)
		switch s := o.Schema; {
		case s.IsZero():
			c.addRegistry(r, OK, check, "%s written with each record's own writer schema (no %s): nothing to look up", o.Format, o.Path)
		case s.ID != 0:
			c.schemaID(ctx, r, check, o)
		case s.File != "":
			c.schemaFile(ctx, r, check, o)
		default:
			c.schemaVersion(ctx, r, check, o)
		}
	}
}

// schemaID checks that the schema of the id the output names exists, in
// the output's format.
func (c *checker) schemaID(ctx context.Context, r *registry, check string, o format.OutputSchema) {
	id := o.Schema.ID
	s, err := r.reg.SchemaByID(ctx, id)
	switch {
	case errors.Is(err, format.ErrUnknownSchema):
		c.addRegistry(r, Fail, check, "no schema of id %d in the registry: set %s.id to a registered schema's id", id, o.Path)
	case err != nil:
		c.addRegistry(r, Fail, check, "schema id %d: %s", id, unavailable(err))
	case s.Type != formatType(o.Format):
		c.addRegistry(r, Fail, check, "schema id %d is a %s schema, and the output writes %s: set %s.id to the id of a schema in %s", id, s.Type, o.Format, o.Path, o.Format)
	default:
		c.addRegistry(r, OK, check, "schema id %d exists (%s)", id, s.Type)
	}
}

// schemaVersion checks that the subject's version the output names (or
// its latest) exists.
func (c *checker) schemaVersion(ctx context.Context, r *registry, check string, o format.OutputSchema) {
	version := -1
	if v := o.Schema.Version; v != "" && v != config.SchemaLatest {
		fmt.Sscan(v, &version)
	}
	ss, err := r.reg.SchemaByVersion(ctx, o.Subject, version)
	switch {
	case errors.Is(err, format.ErrNotFound) && version == -1:
		c.addRegistry(r, Fail, check, "subject %s does not exist: register the schema under it first, or name another subject in %s", o.Subject, o.Path)
	case errors.Is(err, format.ErrNotFound):
		c.addRegistry(r, Fail, check, "subject %s has no version %d: register it first, or name another version in %s", o.Subject, version, o.Path)
	case err != nil:
		c.addRegistry(r, Fail, check, "subject %s: %s", o.Subject, unavailable(err))
	case ss.Type != formatType(o.Format):
		c.addRegistry(r, Fail, check, "subject %s, version %d, is a %s schema (id %d), and the output writes %s", o.Subject, ss.Version, ss.Type, ss.ID, o.Format)
	case version == -1:
		c.addRegistry(r, OK, check, "subject %s exists; the relay writes with its latest version, now %d (id %d)", o.Subject, ss.Version, ss.ID)
	default:
		c.addRegistry(r, OK, check, "subject %s has version %d (id %d)", o.Subject, ss.Version, ss.ID)
	}
}

// schemaFile checks an output's schema file: registered under its
// subject, or to be registered (auto_register) and accepted by the
// subject's compatibility rule. It registers nothing.
func (c *checker) schemaFile(ctx context.Context, r *registry, check string, o format.OutputSchema) {
	file := filepath.Base(o.Schema.File)
	auto := o.Schema.AutoRegister
	fs, err := o.FileSchema(ctx, r.reg)
	switch {
	case errors.Is(err, format.ErrNotFound) && auto:
		c.addRegistry(r, OK, check, "%v: the relay will register it at the first record (auto_register), and %s under subject %s", err, file, o.Subject)
		return
	case errors.Is(err, format.ErrNotFound):
		c.addRegistry(r, Fail, check, "%v: register it, or set %s.auto_register: true", err, o.Path)
		return
	case err != nil:
		c.addRegistry(r, Fail, check, "%s: %s", file, unavailable(err))
		return
	}

	latest, err := r.reg.SchemaByVersion(ctx, o.Subject, -1)
	switch {
	case errors.Is(err, format.ErrNotFound) && auto:
		c.addRegistry(r, OK, check, "subject %s does not exist yet: %s will be registered under it at the first record (auto_register)", o.Subject, file)
		c.addRegistry(r, OK, check+" compatibility", "a new subject: nothing to be compatible with")
		return
	case errors.Is(err, format.ErrNotFound):
		c.addRegistry(r, Fail, check, "subject %s does not exist: register %s under it, or set %s.auto_register: true", o.Subject, file, o.Path)
		c.addRegistry(r, OK, check+" compatibility", "a new subject: nothing to be compatible with")
		return
	case err != nil:
		c.addRegistry(r, Fail, check, "subject %s: %s", o.Subject, unavailable(err))
		return
	}

	ss, err := r.reg.Lookup(ctx, o.Subject, fs)
	switch {
	case err == nil:
		c.addRegistry(r, OK, check, "%s is registered under subject %s: version %d (of %d), id %d", file, o.Subject, ss.Version, latest.Version, ss.ID)
		return
	case errors.Is(err, format.ErrNotFound) && auto:
		c.addRegistry(r, OK, check, "%s is not registered under subject %s (latest: version %d): it will be registered at the first record (auto_register)", file, o.Subject, latest.Version)
	case errors.Is(err, format.ErrNotFound):
		c.addRegistry(r, Fail, check, "%s is not registered under subject %s (latest: version %d): register it, or set %s.auto_register: true", file, o.Subject, latest.Version, o.Path)
	default:
		c.addRegistry(r, Fail, check, "subject %s: %s", o.Subject, unavailable(err))
		return
	}
	c.compatible(ctx, r, check+" compatibility", o, file, fs, latest)
}

// compatible asks the registry whether the file's schema may be
// registered under the subject, by the subject's compatibility rule
// against its latest version.
func (c *checker) compatible(ctx context.Context, r *registry, check string, o format.OutputSchema, file string, fs sr.Schema, latest sr.SubjectSchema) {
	rule, err := r.reg.Compatibility(ctx, o.Subject)
	if err != nil {
		rule = "the subject's rule"
	}
	is, msgs, err := r.reg.Compatible(ctx, o.Subject, fs)
	against := fmt.Sprintf("version %d of %s", latest.Version, o.Subject)
	switch {
	case err != nil:
		c.addRegistry(r, Fail, check, "%s against %s: %s", file, against, unavailable(err))
	case !is:
		why := " (no reasons given)"
		if len(msgs) > 0 {
			why = ": " + strings.Join(msgs, "; ")
		}
		c.addRegistry(r, Fail, check, "incompatible under %s with %s%s; the registry would refuse to register %s: change the schema, or the subject's compatibility", rule, against, why, file)
	case rule == "NONE":
		c.addRegistry(r, Warn, check, "compatible under NONE with %s: the registry checks nothing on this subject, so any schema registers; set a compatibility on %s if its readers rely on one", against, o.Subject)
	default:
		c.addRegistry(r, OK, check, "compatible under %s with %s", rule, against)
	}
}

// formatType is the registry's schema type of a format.
func formatType(f string) sr.SchemaType {
	switch f {
	case config.FormatProtobuf:
		return sr.TypeProtobuf
	case config.FormatJSONSchema:
		return sr.TypeJSON
	}
	return sr.TypeAvro
}
