// Package srtest is a schema registry for unit tests: the part of the
// Confluent-compatible REST API the relay uses, in memory, over HTTP on
// loopback, with switches for the outages a test needs (down, refusing
// credentials, slow). The real-component tests use a real registry
// (integration/registrytest); this one makes the fast tests possible.
package srtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Schema is a schema as the registry holds it.
type Schema struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
}

// Reference is a schema reference.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// Registry is a running fake registry. Its zero value is not usable: call
// New.
type Registry struct {
	srv *httptest.Server

	mu       sync.Mutex
	byID     map[int]Schema
	ids      map[string]int
	subjects map[string][]int // ids by version

	// Requests counts the requests served (outages included).
	Requests atomic.Int64
	down     atomic.Bool
	refuse   atomic.Bool
	delay    atomic.Int64 // nanoseconds
	// incompatible, when set, is the reason the compatibility endpoint
	// gives for answering false.
	incompatible atomic.Pointer[string]
	// Auth, when set before the first request, is the Authorization
	// header every request must carry (401 otherwise).
	Auth string
	// CompatibilityLevel, when set before the first request, is the
	// level GET /config answers, for every subject (default BACKWARD).
	CompatibilityLevel string
}

// New starts a registry; Close stops it.
func New() *Registry {
	r := &Registry{byID: map[int]Schema{}, ids: map[string]int{}, subjects: map[string][]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// URL is the registry's base URL.
func (r *Registry) URL() string { return r.srv.URL }

// Close stops the server.
func (r *Registry) Close() { r.srv.Close() }

// Down makes every request fail with 503 while on.
func (r *Registry) Down(on bool) { r.down.Store(on) }

// RefuseCredentials makes every request fail with 401 while on.
func (r *Registry) RefuseCredentials(on bool) { r.refuse.Store(on) }

// Delay makes every request wait d first.
func (r *Registry) Delay(d time.Duration) { r.delay.Store(int64(d)) }

// Incompatible makes the compatibility endpoint answer false, with msg as
// its reason, while msg is not empty (it answers true otherwise: the
// registry checks nothing itself).
func (r *Registry) Incompatible(msg string) {
	if msg == "" {
		r.incompatible.Store(nil)
		return
	}
	r.incompatible.Store(&msg)
}

// Register registers s under subject (as POST /subjects/{s}/versions
// does) and returns its id and version.
func (r *Registry) Register(subject string, s Schema) (id, version int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.register(subject, s)
}

func key(s Schema) string {
	t := s.SchemaType
	if t == "" {
		t = "AVRO"
	}
	b, _ := json.Marshal(s.References)
	return t + "\x00" + s.Schema + "\x00" + string(b)
}

func (r *Registry) register(subject string, s Schema) (int, int) {
	k := key(s)
	for v, id := range r.subjects[subject] {
		if key(r.byID[id]) == k {
			return id, v + 1
		}
	}
	id, ok := r.ids[k]
	if !ok {
		id = len(r.byID) + 1
		r.ids[k] = id
		r.byID[id] = s
	}
	r.subjects[subject] = append(r.subjects[subject], id)
	return id, len(r.subjects[subject])
}

type apiError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func fail(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiError{Code: code, Message: msg})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	_ = json.NewEncoder(w).Encode(v)
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.Requests.Add(1)
	if d := time.Duration(r.delay.Load()); d > 0 {
		time.Sleep(d)
	}
	switch {
	case r.down.Load():
		fail(w, http.StatusServiceUnavailable, 50300, "down")
		return
	case r.refuse.Load(), r.Auth != "" && req.Header.Get("Authorization") != r.Auth:
		fail(w, http.StatusUnauthorized, 40101, "unauthorized")
		return
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case len(parts) == 3 && parts[0] == "schemas" && parts[1] == "ids" && req.Method == http.MethodGet:
		id, _ := strconv.Atoi(parts[2])
		s, ok := r.byID[id]
		if !ok {
			fail(w, http.StatusNotFound, 40403, fmt.Sprintf("Schema %d not found", id))
			return
		}
		reply(w, s)
	case len(parts) == 4 && parts[0] == "schemas" && parts[1] == "ids" && parts[3] == "versions" && req.Method == http.MethodGet:
		id, _ := strconv.Atoi(parts[2])
		var out []map[string]any
		for subject, ids := range r.subjects {
			for v, x := range ids {
				if x == id {
					out = append(out, map[string]any{"subject": subject, "version": v + 1})
				}
			}
		}
		if len(out) == 0 {
			fail(w, http.StatusNotFound, 40403, fmt.Sprintf("Schema %d not found", id))
			return
		}
		reply(w, out)
	case len(parts) == 4 && parts[0] == "subjects" && parts[2] == "versions" && req.Method == http.MethodGet:
		vs := r.subjects[parts[1]]
		if len(vs) == 0 {
			fail(w, http.StatusNotFound, 40401, "Subject not found")
			return
		}
		v := len(vs)
		if parts[3] != "latest" {
			v, _ = strconv.Atoi(parts[3])
		}
		if v < 1 || v > len(vs) {
			fail(w, http.StatusNotFound, 40402, "Version not found")
			return
		}
		s := r.byID[vs[v-1]]
		reply(w, map[string]any{"subject": parts[1], "version": v, "id": vs[v-1], "schema": s.Schema, "schemaType": s.SchemaType, "references": s.References})
	case len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions" && req.Method == http.MethodPost:
		var s Schema
		if err := json.NewDecoder(req.Body).Decode(&s); err != nil {
			fail(w, http.StatusUnprocessableEntity, 42201, err.Error())
			return
		}
		id, _ := r.register(parts[1], s)
		reply(w, map[string]any{"id": id})
	case len(parts) == 2 && parts[0] == "subjects" && req.Method == http.MethodPost:
		var s Schema
		if err := json.NewDecoder(req.Body).Decode(&s); err != nil {
			fail(w, http.StatusUnprocessableEntity, 42201, err.Error())
			return
		}
		k := key(s)
		for v, id := range r.subjects[parts[1]] {
			if key(r.byID[id]) == k {
				reply(w, map[string]any{"subject": parts[1], "version": v + 1, "id": id, "schema": s.Schema, "schemaType": s.SchemaType})
				return
			}
		}
		if len(r.subjects[parts[1]]) == 0 {
			fail(w, http.StatusNotFound, 40401, "Subject not found")
			return
		}
		fail(w, http.StatusNotFound, 40403, "Schema not found")
	case len(parts) >= 1 && parts[0] == "config":
		level := r.CompatibilityLevel
		if level == "" {
			level = "BACKWARD"
		}
		reply(w, map[string]any{"compatibilityLevel": level})
	case len(parts) >= 1 && parts[0] == "compatibility":
		if msg := r.incompatible.Load(); msg != nil {
			reply(w, map[string]any{"is_compatible": false, "messages": []string{*msg}})
			return
		}
		reply(w, map[string]any{"is_compatible": true})
	default:
		fail(w, http.StatusNotFound, 404, "no such endpoint: "+req.Method+" "+req.URL.Path)
	}
}
