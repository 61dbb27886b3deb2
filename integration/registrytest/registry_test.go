package registrytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/integration/registrytest"
)

// Schemas of each format, reused by the tests.
const (
	avroOrder  = `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"string"},{"name":"qty","type":"int"}]}`
	protoMoney = `syntax = "proto3";
package acme.common;

message Money {
  string currency = 1;
  int64 units = 2;
}
`
	jsonOrder = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"id":{"type":"string"},"qty":{"type":"integer"}},"required":["id"]}`
)

func TestARegistryKilledAndStartedAgainServesTheSameSchemasUnderTheSameIDs(t *testing.T) {
	reg := registrytest.Dedicated(t, registrytest.Options{})
	cl, ctx := newClient(t, reg)
	schemas := []struct {
		subject string
		schema  sr.Schema
		id      int
	}{
		{subject: subject("orders-value"), schema: sr.Schema{Schema: avroOrder}},
		{subject: subject("money-value"), schema: sr.Schema{Schema: protoMoney, Type: sr.TypeProtobuf}},
		{subject: subject("orders-json-value"), schema: sr.Schema{Schema: jsonOrder, Type: sr.TypeJSON}},
	}
	maxID := 0
	for i := range schemas {
		s := &schemas[i]
		id, err := cl.RegisterSchema(ctx, s.subject, s.schema, -1, -1)
		if err != nil {
			t.Fatalf("register %s: %v", s.subject, err)
		}
		s.id, maxID = id, max(maxID, id)
	}
	t.Logf("registry pid %d: resident memory %s after %d registrations", reg.Pid(), rss(reg.Pid()), len(schemas))

	// At once, as a crash would: the last registration was acknowledged
	// a moment ago.
	if err := reg.Kill(); err != nil {
		t.Fatal(err)
	}
	if reg.Running() {
		t.Fatal("the registry runs after Kill")
	}
	began := time.Now()
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("started again in %s", time.Since(began).Round(time.Millisecond))

	for _, s := range schemas {
		got, err := cl.SchemaByID(ctx, s.id)
		if err != nil {
			t.Errorf("after the restart, schema %d (%s): %v", s.id, s.subject, err)
			continue
		}
		if got.Schema != s.schema.Schema || got.Type != s.schema.Type {
			t.Errorf("after the restart, schema %d is %s %q; want %s %q", s.id, got.Type, got.Schema, s.schema.Type, s.schema.Schema)
		}
		ss, err := cl.SchemaByVersion(ctx, s.subject, -1)
		if err != nil || ss.ID != s.id || ss.Version != 1 {
			t.Errorf("after the restart, the latest of %s is id %d version %d (%v); want id %d version 1", s.subject, ss.ID, ss.Version, err, s.id)
		}
	}
	// The id sequence survived too: a new schema does not take an old id.
	id, err := cl.RegisterSchema(ctx, subject("new-value"), sr.Schema{Schema: `{"type":"record","name":"New","fields":[{"name":"a","type":"long"}]}`}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if id <= maxID {
		t.Errorf("a schema registered after the restart got id %d, not above the %d of before", id, maxID)
	}
}

func TestTheSharedRegistryIsStartedAgainForTheNextTestAfterOneKilledIt(t *testing.T) {
	var (
		id  int
		url string
	)
	t.Run("a test registers a schema and kills the shared registry", func(t *testing.T) {
		reg := registrytest.Shared(t)
		cl, ctx := newClient(t, reg)
		var err error
		if id, err = cl.RegisterSchema(ctx, subject("heal-value"), sr.Schema{Schema: avroOrder}, -1, -1); err != nil {
			t.Fatal(err)
		}
		url = reg.URL()
		if err := reg.Kill(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the next test finds it running, at the same URL, with the schema", func(t *testing.T) {
		if id == 0 {
			t.Skip("the first step did not register")
		}
		reg := registrytest.Shared(t)
		if !reg.Running() || reg.URL() != url {
			t.Fatalf("shared registry running %v at %s; want running at %s", reg.Running(), reg.URL(), url)
		}
		cl, ctx := newClient(t, reg)
		if got, err := cl.SchemaByID(ctx, id); err != nil || got.Schema != avroOrder {
			t.Errorf("schema %d after the restart: %q, %v; want %q", id, got.Schema, err, avroOrder)
		}
	})
}

func TestARegistryStopsCleanlyAndKeepsItsSchemas(t *testing.T) {
	reg := registrytest.Dedicated(t, registrytest.Options{})
	cl, ctx := newClient(t, reg)
	s := subject("stop-value")
	id, err := cl.RegisterSchema(ctx, s, sr.Schema{Schema: avroOrder}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := reg.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %s", time.Since(began).Round(time.Millisecond))
	if reg.Running() {
		t.Fatal("the registry runs after Stop")
	}
	sctx, cancel := context.WithTimeout(ctx, registrytest.DefaultStartTimeout)
	defer cancel()
	if err := reg.Start(sctx); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.LookupSchema(ctx, s, sr.Schema{Schema: avroOrder}); err != nil || got.ID != id {
		t.Errorf("lookup after the restart: id %d, %v; want %d", got.ID, err, id)
	}
}
