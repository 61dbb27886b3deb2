package format

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/internal/kafkaopts"
)

// Why a registry request failed, for the caller to act on.
var (
	// ErrUnavailable: the registry cannot answer now — unreachable,
	// timing out, answering with a server error, or refusing the relay's
	// credentials. Not the record's fault: its records are held.
	ErrUnavailable = errors.New("schema registry unavailable")
	// ErrUnknownSchema: the registry holds no schema of that id. A
	// record that names it is dead-lettered: a registry keeps its ids
	// for good, so a record naming one it never had was written wrong.
	ErrUnknownSchema = errors.New("schema not found")
	// ErrNotFound: a subject, or a version of it, or a schema under a
	// subject, is not in the registry. A pipeline's output schema that
	// is not there is a setup to fix, not the record's fault: records
	// wait for it, held.
	ErrNotFound = errors.New("not found in the schema registry")
	// ErrCredentials: the registry refuses the relay's credentials (HTTP
	// 401 or 403). It comes wrapped with ErrUnavailable: for the records
	// it is an outage like any other.
	ErrCredentials = errors.New("credentials refused")
	// ErrRefused: the registry refuses a schema (invalid, or
	// incompatible with the subject's versions): the pipeline's schema
	// needs changing.
	ErrRefused = errors.New("refused by the schema registry")
)

// Registry is a schema registry with the relay's cache in front of it.
// Schemas by id and by version number never change and are kept for
// good; a subject's latest schema is kept for the configured time; a
// request is made once however many records wait for its answer, so a
// steady stream asks the registry nothing. A Registry is safe for
// concurrent use.
type Registry struct {
	store     store
	latestTTL time.Duration
	now       func() time.Time

	mu      sync.Mutex
	byID    map[int]*call[sr.Schema]
	byVer   map[subjectVersion]*call[sr.SubjectSchema]
	latest  map[string]*call[sr.SubjectSchema]
	lookups map[string]*call[sr.SubjectSchema]
	comp    map[int]*call[*compiled]

	requests atomic.Int64
	// onRequest, when set (CountRequests), is called for each request.
	onRequest func()

	// downUntil and downErr: a request failed as an outage (ErrUnavailable)
	// at most failFast ago; requests until downUntil fail at once with
	// downErr rather than each waiting for the registry's timeout.
	downUntil time.Time
	downErr   error
	failFast  time.Duration
}

// failFast is how long, after a request the registry did not answer,
// further requests fail at once with its error: so that a batch's
// records learn of an outage from one request's timeout rather than each
// from its own (a registry that accepts connections and never answers
// would otherwise hold each record a timeout), and a relay holding
// records does not flood a registry coming back.
const failFast = time.Second

type subjectVersion struct {
	subject string
	version int
}

// call is one request's answer, shared by every caller that asks the same
// while it runs (done closes when it ends). Failures are not kept: the
// next caller asks again.
type call[T any] struct {
	done chan struct{}
	val  T
	err  error
	at   time.Time
}

// store is what a Registry asks: the registry's REST API (httpStore), or
// a registry in memory (MemoryRegistry) for relay test and unit tests.
type store interface {
	schemaByID(ctx context.Context, id int) (sr.Schema, error)
	schemaByVersion(ctx context.Context, subject string, version int) (sr.SubjectSchema, error)
	lookup(ctx context.Context, subject string, s sr.Schema) (sr.SubjectSchema, error)
	register(ctx context.Context, subject string, s sr.Schema) (sr.SubjectSchema, error)
	compatible(ctx context.Context, subject string, s sr.Schema) (bool, []string, error)
	compatibility(ctx context.Context, subject string) (string, error)
}

// latestVersion asks for a subject's newest schema.
const latestVersion = -1

// NewRegistry returns the registry c describes, with its cache.
func NewRegistry(c *config.SchemaRegistry) (*Registry, error) {
	st, err := newHTTPStore(c)
	if err != nil {
		return nil, err
	}
	return newRegistry(st, c.Cache.LatestTTL), nil
}

func newRegistry(st store, latestTTL time.Duration) *Registry {
	return &Registry{
		store: st, latestTTL: latestTTL, now: time.Now,
		byID: map[int]*call[sr.Schema]{}, byVer: map[subjectVersion]*call[sr.SubjectSchema]{},
		latest: map[string]*call[sr.SubjectSchema]{}, lookups: map[string]*call[sr.SubjectSchema]{},
		comp: map[int]*call[*compiled]{}, failFast: failFast,
	}
}

// Requests returns how many requests the registry has been sent: flat
// under a steady stream once every schema is cached.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// CountRequests calls f for each request sent from now on (the relay
// counts them in a metric). Call it before the registry is used.
func (r *Registry) CountRequests(f func()) { r.onRequest = f }

// request counts one request.
func (r *Registry) request() {
	r.requests.Add(1)
	if r.onRequest != nil {
		r.onRequest()
	}
}

// SchemaByID returns the schema of id: ErrUnknownSchema when the registry
// has none, ErrUnavailable when it cannot answer.
func (r *Registry) SchemaByID(ctx context.Context, id int) (sr.Schema, error) {
	return cached(ctx, r, r.byID, id, 0, true, func(ctx context.Context) (sr.Schema, error) {
		s, err := r.store.schemaByID(ctx, id)
		if err != nil {
			return s, fmt.Errorf("schema id %d: %w", id, err)
		}
		return s, nil
	})
}

// SchemaByVersion returns the subject's schema of version (latestVersion:
// the newest, kept for the cache's latest TTL).
func (r *Registry) SchemaByVersion(ctx context.Context, subject string, version int) (sr.SubjectSchema, error) {
	get := func(ctx context.Context) (sr.SubjectSchema, error) {
		s, err := r.store.schemaByVersion(ctx, subject, version)
		if err != nil {
			v := "the latest version"
			if version != latestVersion {
				v = fmt.Sprintf("version %d", version)
			}
			return s, fmt.Errorf("subject %s, %s: %w", subject, v, err)
		}
		return s, nil
	}
	if version == latestVersion {
		return cached(ctx, r, r.latest, subject, r.latestTTL, true, get)
	}
	return cached(ctx, r, r.byVer, subjectVersion{subject, version}, 0, true, get)
}

// Lookup returns the id and version s has under subject (ErrNotFound
// when it is not registered there).
func (r *Registry) Lookup(ctx context.Context, subject string, s sr.Schema) (sr.SubjectSchema, error) {
	return cached(ctx, r, r.lookups, subject+"\x00"+s.Schema, 0, true, func(ctx context.Context) (sr.SubjectSchema, error) {
		ss, err := r.store.lookup(ctx, subject, s)
		if err != nil {
			return ss, fmt.Errorf("looking up the schema under subject %s: %w", subject, err)
		}
		return ss, nil
	})
}

// Register registers s under subject, or finds it there, and returns its
// id and version.
func (r *Registry) Register(ctx context.Context, subject string, s sr.Schema) (sr.SubjectSchema, error) {
	return cached(ctx, r, r.lookups, subject+"\x00"+s.Schema, 0, true, func(ctx context.Context) (sr.SubjectSchema, error) {
		ss, err := r.store.register(ctx, subject, s)
		if err != nil {
			return ss, fmt.Errorf("registering the schema under subject %s: %w", subject, err)
		}
		return ss, nil
	})
}

// Compatible asks the registry whether s may be written under subject by
// the subject's compatibility rule (checked against its latest version),
// with the registry's reasons when not. Not cached.
func (r *Registry) Compatible(ctx context.Context, subject string, s sr.Schema) (bool, []string, error) {
	r.request()
	return r.store.compatible(ctx, subject, s)
}

// Compatibility returns the subject's compatibility rule (or the
// registry's default). Not cached.
func (r *Registry) Compatibility(ctx context.Context, subject string) (string, error) {
	r.request()
	return r.store.compatibility(ctx, subject)
}

// cached returns m[k]'s answer: kept (for ttl, or for good when ttl is 0),
// being asked by another caller (waited for), or asked now with get. A
// caller whose ctx ends stops waiting; the request itself runs on to its
// timeout for the others that wait for it. counted: get sends a request
// (Requests counts it).
func cached[K comparable, T any](ctx context.Context, r *Registry, m map[K]*call[T], k K, ttl time.Duration, counted bool, get func(context.Context) (T, error)) (T, error) {
	var zero T
	r.mu.Lock()
	c, ok := m[k]
	if ok {
		select {
		case <-c.done:
			if c.err != nil || ttl > 0 && r.now().Sub(c.at) > ttl {
				ok = false // failed, or expired: ask again
			}
		default:
		}
	}
	if !ok {
		if counted && r.now().Before(r.downUntil) {
			err := r.downErr
			r.mu.Unlock()
			return zero, err
		}
		c = &call[T]{done: make(chan struct{})}
		m[k] = c
		r.mu.Unlock()
		if counted {
			r.request()
		}
		// The request outlives a caller that gives up: the others
		// waiting for it still want the answer. It ends within the
		// registry's timeout.
		go func() {
			v, err := get(context.WithoutCancel(ctx))
			at := r.now()
			if counted && errors.Is(err, ErrUnavailable) {
				r.mu.Lock()
				r.downUntil, r.downErr = at.Add(r.failFast), err
				r.mu.Unlock()
			}
			c.val, c.err, c.at = v, err, at
			close(c.done)
		}()
	} else {
		r.mu.Unlock()
	}
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// httpStore is a registry's REST API, through franz-go's client.
type httpStore struct {
	cl *sr.Client
}

// newHTTPStore makes the client of c: its URLs, authentication, TLS and
// timeout.
func newHTTPStore(c *config.SchemaRegistry) (*httpStore, error) {
	hc := &http.Client{Timeout: c.Timeout}
	opts := []sr.ClientOpt{sr.URLs(c.URLs...), sr.HTTPClient(hc), sr.UserAgent("sharerelay")}
	if c.TLS.Enabled {
		tc, err := kafkaopts.TLSConfig(c.TLS)
		if err != nil {
			return nil, fmt.Errorf("schema registry tls: %w", err)
		}
		opts = append(opts, sr.DialTLSConfig(tc))
	}
	switch {
	case c.BasicAuth != nil:
		pass := c.BasicAuth.Password.Reveal()
		if f := c.BasicAuth.PasswordFile; f != "" {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("schema registry password_file: %w", err)
			}
			pass = string(bytes.TrimSpace(b))
		}
		opts = append(opts, sr.BasicAuth(c.BasicAuth.Username, pass))
	case c.BearerToken != "":
		opts = append(opts, sr.BearerToken(c.BearerToken.Reveal()))
	case c.BearerTokenFile != "":
		tf := &tokenFile{path: c.BearerTokenFile}
		if _, err := tf.token(); err != nil {
			return nil, fmt.Errorf("schema registry bearer_token_file: %w", err)
		}
		opts = append(opts, sr.PreReq(func(req *http.Request) error {
			t, err := tf.token()
			if err != nil {
				return fmt.Errorf("%w: bearer_token_file: %w", ErrUnavailable, err)
			}
			req.Header.Set("Authorization", "Bearer "+t)
			return nil
		}))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema registry client: %w", err)
	}
	return &httpStore{cl: cl}, nil
}

// tokenFile is a bearer token kept in a file, read again whenever the
// file changes.
type tokenFile struct {
	path string
	mu   sync.Mutex
	mod  time.Time
	size int64
	tok  string
}

func (f *tokenFile) token() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.path)
	if err != nil {
		return "", err
	}
	if f.tok != "" && st.ModTime().Equal(f.mod) && st.Size() == f.size {
		return f.tok, nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return "", err
	}
	t := string(bytes.TrimSpace(b))
	if t == "" {
		return "", fmt.Errorf("%s is empty", f.path)
	}
	f.tok, f.mod, f.size = t, st.ModTime(), st.Size()
	return t, nil
}

func (h *httpStore) schemaByID(ctx context.Context, id int) (sr.Schema, error) {
	s, err := h.cl.SchemaByID(ctx, id)
	return s, classify(err, true)
}

func (h *httpStore) schemaByVersion(ctx context.Context, subject string, version int) (sr.SubjectSchema, error) {
	s, err := h.cl.SchemaByVersion(ctx, subject, version)
	return s, classify(err, false)
}

func (h *httpStore) lookup(ctx context.Context, subject string, s sr.Schema) (sr.SubjectSchema, error) {
	ss, err := h.cl.LookupSchema(ctx, subject, s)
	return ss, classify(err, false)
}

// register registers s and then looks it up for its version: the one
// call that gives both (CreateSchema) asks an endpoint not every
// Confluent-compatible registry serves.
func (h *httpStore) register(ctx context.Context, subject string, s sr.Schema) (sr.SubjectSchema, error) {
	if _, err := h.cl.RegisterSchema(ctx, subject, s, -1, -1); err != nil {
		return sr.SubjectSchema{}, classify(err, false)
	}
	return h.lookup(ctx, subject, s)
}

func (h *httpStore) compatible(ctx context.Context, subject string, s sr.Schema) (bool, []string, error) {
	res, err := h.cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), subject, latestVersion, s)
	if err != nil {
		return false, nil, classify(err, false)
	}
	return res.Is, res.Messages, nil
}

func (h *httpStore) compatibility(ctx context.Context, subject string) (string, error) {
	rs := h.cl.Compatibility(sr.WithParams(ctx, sr.DefaultToGlobal), subject)
	if len(rs) == 0 {
		return "", fmt.Errorf("%w: no answer", ErrUnavailable)
	}
	if err := rs[0].Err; err != nil {
		return "", classify(err, false)
	}
	return rs[0].Level.String(), nil
}

// classify sorts a registry client's error: ErrUnknownSchema for an id
// the registry does not have (byID), ErrNotFound for a subject, version
// or schema it does not have, ErrRefused for a schema it refuses, and
// ErrUnavailable for everything that is not the request's fault — no
// connection, a timeout, a server error, credentials refused.
func classify(err error, byID bool) error {
	if err == nil {
		return nil
	}
	var re *sr.ResponseError
	if errors.As(err, &re) {
		switch {
		case re.StatusCode == http.StatusNotFound && byID:
			return fmt.Errorf("%w (%s)", ErrUnknownSchema, re.Message)
		case re.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%w (%s)", ErrNotFound, responseText(re))
		case re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden:
			return fmt.Errorf("%w: %w (HTTP %d: %s)", ErrUnavailable, ErrCredentials, re.StatusCode, responseText(re))
		case re.StatusCode == http.StatusConflict || re.StatusCode == http.StatusUnprocessableEntity:
			return fmt.Errorf("%w (HTTP %d: %s)", ErrRefused, re.StatusCode, responseText(re))
		}
		return fmt.Errorf("%w: HTTP %d: %s", ErrUnavailable, re.StatusCode, responseText(re))
	}
	if errors.Is(err, ErrUnavailable) {
		return err
	}
	// No connection, a timeout, a TLS handshake that failed: the
	// registry cannot be asked now.
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// responseText is a registry error's message, or its body.
func responseText(re *sr.ResponseError) string {
	if re.Message != "" {
		return re.Message
	}
	if len(re.Raw) > 200 {
		return string(re.Raw[:200]) + "…"
	}
	return string(re.Raw)
}
