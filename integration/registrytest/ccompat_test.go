package registrytest_test

// These tests pin down how Apicurio's Confluent-compatible API behaves,
// as FINDINGS.md records it: each assertion is an observation, so a new
// Apicurio release that changes one fails here. Where Apicurio differs
// from Confluent Schema Registry, the assertion says so.

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/integration/registrytest"
)

// rawJSON GETs path from the registry and decodes the JSON answer into a
// map, to see which fields it has.
func rawJSON(t *testing.T, ctx context.Context, cl *sr.Client, path string) map[string]any {
	t.Helper()
	var raw []byte
	if err := cl.Do(ctx, http.MethodGet, path, nil, &raw); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, raw)
	}
	return m
}

// register registers s under subject and returns its id, failing the
// test on an error.
func register(t *testing.T, ctx context.Context, cl *sr.Client, subject string, s sr.Schema) int {
	t.Helper()
	id, err := cl.RegisterSchema(ctx, subject, s, -1, -1)
	if err != nil {
		t.Fatalf("register under %s: %v", subject, err)
	}
	return id
}

func protoSchema(text string) sr.Schema { return sr.Schema{Schema: text, Type: sr.TypeProtobuf} }

func TestEachFormatRegistersAndReadsBackByIDWithTheSameTextAndType(t *testing.T) {
	reg := registrytest.Shared(t)
	cl, ctx := newClient(t, reg)
	for _, tc := range []struct {
		name   string
		schema sr.Schema
	}{
		{"AVRO", sr.Schema{Schema: avroOrder}},
		{"PROTOBUF", protoSchema(protoMoney)},
		{"JSON", sr.Schema{Schema: jsonOrder, Type: sr.TypeJSON}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := subject(strings.ToLower(tc.name) + "-value")
			id := register(t, ctx, cl, s, tc.schema)
			got, err := cl.SchemaByID(ctx, id)
			if err != nil {
				t.Fatalf("schema %d: %v", id, err)
			}
			if got.Schema != tc.schema.Schema || got.Type != tc.schema.Type {
				t.Errorf("schema %d reads back as %s %q; want %s %q", id, got.Type, got.Schema, tc.schema.Type, tc.schema.Schema)
			}
			// As Confluent does, the answer names the type except for
			// AVRO, the default.
			_, named := rawJSON(t, ctx, cl, "/schemas/ids/"+itoa(id))["schemaType"]
			if named != (tc.schema.Type != sr.TypeAvro) {
				t.Errorf("GET /schemas/ids/%d has schemaType: %v; want it only for PROTOBUF and JSON", id, named)
			}
			// Registering the same schema again returns the same id and
			// adds no version.
			if again := register(t, ctx, cl, s, tc.schema); again != id {
				t.Errorf("registered again: id %d; want %d", again, id)
			}
			if vs, err := cl.SubjectVersions(ctx, s); err != nil || !slices.Equal(vs, []int{1}) {
				t.Errorf("versions of %s: %v, %v; want [1]", s, vs, err)
			}
		})
	}
}

func TestAnIdenticalSchemaUnderTwoSubjectsHasOneIDTheContentID(t *testing.T) {
	reg := registrytest.Shared(t)
	cl, ctx := newClient(t, reg)
	a, b := subject("a-value"), subject("b-value")
	// A schema of this test alone, so that its id has no other users.
	only := strings.Replace(avroOrder, `"Order"`, `"Order`+strings.ReplaceAll(a, "-", "_")+`"`, 1)
	idA := register(t, ctx, cl, a, sr.Schema{Schema: only})
	other := `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"string"}]}`
	register(t, ctx, cl, a, sr.Schema{Schema: other})

	// franz-go's CreateSchema registers, then reads the id's subjects
	// and versions (GET /schemas/ids/{id}/versions).
	ss, err := cl.CreateSchema(ctx, b, sr.Schema{Schema: only})
	if err != nil {
		t.Fatal(err)
	}
	if ss.ID != idA || ss.Subject != b || ss.Version != 1 {
		t.Errorf("the schema of %s version 1 under %s: id %d, %s version %d; want id %d, %s version 1", a, b, ss.ID, ss.Subject, ss.Version, idA, b)
	}
	usages, err := cl.SchemaVersionsByID(ctx, idA)
	if err != nil {
		t.Fatal(err)
	}
	want := []sr.SubjectVersion{{Subject: a, Version: 1}, {Subject: b, Version: 1}}
	if !slices.Equal(usages, want) {
		t.Errorf("subjects and versions of id %d: %v; want %v", idA, usages, want)
	}
}

func TestInLegacyIDModeTheIDIsPerSubjectVersionNotShared(t *testing.T) {
	reg := registrytest.Dedicated(t, registrytest.Options{Properties: map[string]string{"apicurio.ccompat.legacy-id-mode.enabled": "true"}})
	cl, ctx := newClient(t, reg)
	a, b := subject("a-value"), subject("b-value")
	idA := register(t, ctx, cl, a, sr.Schema{Schema: avroOrder})
	idB := register(t, ctx, cl, b, sr.Schema{Schema: avroOrder})
	if idA == idB {
		t.Fatalf("legacy id mode: the same schema under two subjects has one id %d; want one each (global ids)", idA)
	}
	if again := register(t, ctx, cl, b, sr.Schema{Schema: avroOrder}); again != idB {
		t.Errorf("legacy id mode: registered again under %s: id %d; want %d", b, again, idB)
	}
	for _, id := range []int{idA, idB} {
		if got, err := cl.SchemaByID(ctx, id); err != nil || got.Schema != avroOrder {
			t.Errorf("legacy id mode: schema %d: %q, %v", id, got.Schema, err)
		}
	}
}

func TestAProtobufSchemaImportsAFileOfAnotherSubjectByReference(t *testing.T) {
	reg := registrytest.Shared(t)
	cl, ctx := newClient(t, reg)
	common := subject("common.proto")
	register(t, ctx, cl, common, protoSchema(protoMoney))
	const orders = `syntax = "proto3";
package acme.orders;

import "common.proto";

message Order {
  string id = 1;
  acme.common.Money total = 2;
}
`
	refs := []sr.SchemaReference{{Name: "common.proto", Subject: common, Version: 1}}
	withRefs := sr.Schema{Schema: orders, Type: sr.TypeProtobuf, References: refs}
	s := subject("orders-value")
	id := register(t, ctx, cl, s, withRefs)

	got, err := cl.SchemaByID(ctx, id)
	if err != nil || !slices.Equal(got.References, refs) || got.Schema != orders {
		t.Errorf("schema %d: references %v, %v; want %v", id, got.References, err, refs)
	}
	latest, err := cl.SchemaByVersion(ctx, s, -1)
	if err != nil || !slices.Equal(latest.References, refs) || latest.Type != sr.TypeProtobuf {
		t.Errorf("latest of %s: %s, references %v, %v; want PROTOBUF, %v", s, latest.Type, latest.References, err, refs)
	}
	var by []int
	if err := cl.Do(ctx, http.MethodGet, "/subjects/"+common+"/versions/1/referencedby", nil, &by); err != nil || !slices.Equal(by, []int{id}) {
		t.Errorf("referencedby of %s: %v, %v; want [%d]", common, by, err, id)
	}
	// The references are part of the schema's identity: the same text
	// without them is not the registered schema.
	if found, err := cl.LookupSchema(ctx, s, withRefs); err != nil || found.ID != id {
		t.Errorf("lookup with the references: id %d, %v; want %d", found.ID, err, id)
	}
	_, err = cl.LookupSchema(ctx, s, protoSchema(orders))
	wantError(t, err, 404, 40403)

	// A reference to a subject that does not exist is refused.
	_, err = cl.RegisterSchema(ctx, subject("bad-value"), sr.Schema{Schema: orders, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "common.proto", Subject: subject("missing"), Version: 1}}}, -1, -1)
	t.Logf("a reference to a missing subject: %s", wantError(t, err, 422, 42201))

	// Apicurio deviates: an import with no reference to resolve it is
	// accepted (Confluent checks the schema with its references).
	if _, err := cl.RegisterSchema(ctx, subject("noref-value"), protoSchema(orders), -1, -1); err != nil {
		t.Errorf("an import without references: %v; Apicurio %s accepted it", err, registrytest.Version)
	}
}

func TestAnAvroSchemaUsesANamedTypeOfAnotherSubjectByReference(t *testing.T) {
	reg := registrytest.Shared(t)
	cl, ctx := newClient(t, reg)
	const (
		money = `{"type":"record","name":"Money","namespace":"com.acme","fields":[{"name":"currency","type":"string"},{"name":"units","type":"long"}]}`
		order = `{"type":"record","name":"Invoice","namespace":"com.acme","fields":[{"name":"id","type":"string"},{"name":"total","type":"com.acme.Money"}]}`
	)
	ms := subject("money")
	register(t, ctx, cl, ms, sr.Schema{Schema: money})
	refs := []sr.SchemaReference{{Name: "com.acme.Money", Subject: ms, Version: 1}}
	s := subject("invoice-value")
	id := register(t, ctx, cl, s, sr.Schema{Schema: order, References: refs})

	got, err := cl.SchemaByID(ctx, id)
	if err != nil || !slices.Equal(got.References, refs) || got.Schema != order {
		t.Errorf("schema %d: %q, references %v, %v; want %v", id, got.Schema, got.References, err, refs)
	}
	if latest, err := cl.SchemaByVersion(ctx, s, 1); err != nil || !slices.Equal(latest.References, refs) {
		t.Errorf("version 1 of %s: references %v, %v; want %v", s, latest.References, err, refs)
	}
	// Without the reference the type is unknown: refused as invalid,
	// with Apicurio's one message for every schema it cannot parse.
	_, err = cl.RegisterSchema(ctx, subject("noref-value"), sr.Schema{Schema: order}, -1, -1)
	t.Logf("an undefined named type: %s", wantError(t, err, 422, 42201))
}

func TestLookingUpASchemaUnderASubjectGivesItsIDAndVersionOr404(t *testing.T) {
	reg := registrytest.Shared(t)
	cl, ctx := newClient(t, reg)
	s := subject("lookup-value")
	register(t, ctx, cl, s, sr.Schema{Schema: avroOrder})
	v2 := `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"string"},{"name":"qty","type":"int"},{"name":"note","type":"string","default":""}]}`
	id2 := register(t, ctx, cl, s, sr.Schema{Schema: v2})

	got, err := cl.LookupSchema(ctx, s, sr.Schema{Schema: v2})
	if err != nil || got.ID != id2 || got.Version != 2 || got.Subject != s || got.Schema.Schema != v2 {
		t.Errorf("lookup of version 2: %+v, %v; want id %d version 2 of %s", got, err, id2, s)
	}

	_, err = cl.LookupSchema(ctx, s, sr.Schema{Schema: `{"type":"record","name":"Other","fields":[{"name":"a","type":"int"}]}`})
	wantError(t, err, 404, 40403)
	_, err = cl.LookupSchema(ctx, subject("missing-value"), sr.Schema{Schema: avroOrder})
	wantError(t, err, 404, 40401)

	// Apicurio deviates: the lookup's answer has no schemaType, so a
	// client reads PROTOBUF and JSON schemas as AVRO from it; it also
	// matches whatever schemaType was asked.
	ps := subject("lookup-proto-value")
	pid := register(t, ctx, cl, ps, protoSchema(protoMoney))
	found, err := cl.LookupSchema(ctx, ps, protoSchema(protoMoney))
	if err != nil || found.ID != pid {
		t.Fatalf("lookup of a PROTOBUF schema: id %d, %v; want %d", found.ID, err, pid)
	}
	if found.Type != sr.TypeAvro {
		t.Errorf("the lookup of a PROTOBUF schema says %s; Apicurio %s said nothing (read as AVRO)", found.Type, registrytest.Version)
	}
	if asJSON, err := cl.LookupSchema(ctx, ps, sr.Schema{Schema: protoMoney, Type: sr.TypeJSON}); err != nil || asJSON.ID != pid {
		t.Errorf("lookup of the PROTOBUF text as JSON: id %d, %v; Apicurio %s found id %d", asJSON.ID, err, registrytest.Version, pid)
	}
}

func TestReadingVersionsAndWhatIsMissingAnswersWithConfluentsErrorCodes(t *testing.T) {
	reg := registrytest.Shared(t)
	cl, ctx := newClient(t, reg)
	s := subject("versions-value")
	id1 := register(t, ctx, cl, s, sr.Schema{Schema: avroOrder})
	v2 := `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"id","type":"string"}]}`
	id2 := register(t, ctx, cl, s, sr.Schema{Schema: v2})

	for _, tc := range []struct {
		version, id int
		text        string
	}{{-1, id2, v2}, {1, id1, avroOrder}, {2, id2, v2}} {
		got, err := cl.SchemaByVersion(ctx, s, tc.version)
		if err != nil || got.ID != tc.id || got.Schema.Schema != tc.text || got.Subject != s {
			t.Errorf("version %d of %s: %+v, %v; want id %d", tc.version, s, got, err, tc.id)
		}
	}
	if got := rawJSON(t, ctx, cl, "/subjects/"+s+"/versions/latest"); got["version"] != 2.0 {
		t.Errorf("versions/latest: %v; want version 2", got)
	}

	_, err := cl.SchemaByVersion(ctx, subject("missing-value"), -1)
	wantError(t, err, 404, 40401)
	_, err = cl.SchemaByVersion(ctx, s, 7)
	wantError(t, err, 404, 40402)
	_, err = cl.SchemaByID(ctx, 1<<30)
	wantError(t, err, 404, 40403)
	// Apicurio deviates: a version that is not one (0, a word) is "not
	// found", 40402, where Confluent answers 422 with 42202.
	for _, v := range []string{"0", "abc"} {
		err := cl.Do(ctx, http.MethodGet, "/subjects/"+s+"/versions/"+v, nil, nil)
		wantError(t, err, 404, 40402)
	}
}

func TestBackwardCompatibilityIsCheckedForEachFormatAndEnforcedWith409(t *testing.T) {
	reg := registrytest.Shared(t)
	cl, ctx := newClient(t, reg)
	for _, tc := range []struct {
		name                                    string
		typ                                     sr.SchemaType
		base, compatible, incompatible, because string
	}{
		{
			name:         "AVRO",
			typ:          sr.TypeAvro,
			base:         `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`,
			compatible:   `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":""}]}`,
			incompatible: `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}`,
			because:      "a field without a default added",
		},
		{
			name:         "PROTOBUF",
			typ:          sr.TypeProtobuf,
			base:         "syntax = \"proto3\";\npackage p;\n\nmessage M {\n  string id = 1;\n  string gone = 2;\n}\n",
			compatible:   "syntax = \"proto3\";\npackage p;\n\nmessage M {\n  string id = 1;\n  reserved 2;\n  reserved \"gone\";\n  int64 n = 3;\n}\n",
			incompatible: "syntax = \"proto3\";\npackage p;\n\nmessage M {\n  int64 id = 1;\n  string gone = 2;\n}\n",
			because:      "a field's type changed",
		},
		{
			name:         "JSON",
			typ:          sr.TypeJSON,
			base:         `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`,
			compatible:   `{"type":"object","properties":{"id":{"type":"string"}}}`,
			incompatible: `{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`,
			because:      "a property's type changed",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := subject("compat-" + strings.ToLower(tc.name) + "-value")
			register(t, ctx, cl, s, sr.Schema{Schema: tc.base, Type: tc.typ})
			set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackward}, s)
			if err := set[0].Err; err != nil || set[0].Level != sr.CompatBackward {
				t.Fatalf("PUT /config/%s BACKWARD: %+v", s, set[0])
			}
			if got := cl.Compatibility(ctx, s); got[0].Err != nil || got[0].Level != sr.CompatBackward {
				t.Errorf("GET /config/%s: %s, %v; want BACKWARD", s, got[0].Level, got[0].Err)
			}

			ok, err := cl.CheckCompatibility(ctx, s, -1, sr.Schema{Schema: tc.compatible, Type: tc.typ})
			if err != nil || !ok.Is {
				t.Errorf("the compatible schema: is_compatible %v, %v; want true", ok.Is, err)
			}
			// verbose=true asks for the reasons: Apicurio gives none.
			bad, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), s, -1, sr.Schema{Schema: tc.incompatible, Type: tc.typ})
			if err != nil || bad.Is {
				t.Errorf("the incompatible schema (%s): is_compatible %v, %v; want false", tc.because, bad.Is, err)
			}
			if len(bad.Messages) != 0 {
				t.Logf("reasons given: %q", bad.Messages)
			}

			_, err = cl.RegisterSchema(ctx, s, sr.Schema{Schema: tc.incompatible, Type: tc.typ}, -1, -1)
			t.Logf("registering it: %s", wantError(t, err, 409, 409))
			register(t, ctx, cl, s, sr.Schema{Schema: tc.compatible, Type: tc.typ})
			if vs, err := cl.SubjectVersions(ctx, s); err != nil || !slices.Equal(vs, []int{1, 2}) {
				t.Errorf("versions of %s: %v, %v; want [1 2]", s, vs, err)
			}
		})
	}
}

func TestTheCompatibilityDefaultIsNoneAndASubjectWithoutALevelReadsTheGlobalOne(t *testing.T) {
	reg := registrytest.Shared(t)
	cl, ctx := newClient(t, reg)
	// Apicurio deviates: the global level is NONE (Confluent: BACKWARD),
	// so nothing is checked unless a level is set.
	if got := cl.Compatibility(ctx); got[0].Err != nil || got[0].Level != sr.CompatNone {
		t.Errorf("GET /config: %s, %v; want NONE", got[0].Level, got[0].Err)
	}
	s := subject("nolevel-value")
	register(t, ctx, cl, s, sr.Schema{Schema: `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`})
	register(t, ctx, cl, s, sr.Schema{Schema: `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`})

	// Apicurio deviates: a subject with no level of its own answers the
	// global one, where Confluent answers 404 with 40408 unless asked
	// defaultToGlobal=true; a subject that does not exist is 40401.
	if got := cl.Compatibility(ctx, s); got[0].Err != nil || got[0].Level != sr.CompatNone {
		t.Errorf("GET /config/%s (no level of its own): %s, %v; want NONE, the global level", s, got[0].Level, got[0].Err)
	}
	wantError(t, cl.Compatibility(ctx, subject("missing-value"))[0].Err, 404, 40401)

	err := cl.Do(ctx, http.MethodPut, "/config/"+s, map[string]string{"compatibility": "SIDEWAYS"}, nil)
	wantError(t, err, 422, 42203)

	// As current Confluent: a check against a subject with no versions
	// is compatible.
	if res, err := cl.CheckCompatibility(ctx, subject("missing-value"), -1, sr.Schema{Schema: avroOrder}); err != nil || !res.Is {
		t.Errorf("a check against a missing subject: %v, %v; want compatible", res.Is, err)
	}
}

func TestASchemaTheRegistryCannotParseIsRefusedWith42201(t *testing.T) {
	reg := registrytest.Shared(t)
	cl, ctx := newClient(t, reg)
	for _, tc := range []struct {
		name   string
		schema sr.Schema
	}{
		{"text that is not JSON, as AVRO", sr.Schema{Schema: "not a schema"}},
		{"an unknown Avro type", sr.Schema{Schema: `{"type":"recrd","name":"X","fields":[]}`}},
		{"an Avro record without fields", sr.Schema{Schema: `{"type":"record","name":"X"}`}},
		{"an Avro field of an undefined type", sr.Schema{Schema: `{"type":"record","name":"X","fields":[{"name":"a","type":"nosuch"}]}`}},
		{"broken Protobuf", protoSchema(`syntax = "proto3"; message { broken`)},
		{"broken JSON Schema", sr.Schema{Schema: `{"type": `, Type: sr.TypeJSON}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cl.RegisterSchema(ctx, subject("invalid-value"), tc.schema, -1, -1)
			msg := wantError(t, err, 422, 42201)
			t.Logf("message: %q", msg)
		})
	}

	// Apicurio deviates: a schemaType it does not know is stored, where
	// Confluent refuses it (42201, invalid schema type); such a subject
	// is then missing from GET /subjects.
	var out struct {
		ID int `json:"id"`
	}
	s := subject("xml-value")
	body := map[string]string{"schema": "<a/>", "schemaType": "XML"}
	if err := cl.Do(ctx, http.MethodPost, "/subjects/"+s+"/versions", body, &out); err != nil {
		t.Errorf("schemaType XML: %v; Apicurio %s stored it", err, registrytest.Version)
	} else if got := rawJSON(t, ctx, cl, "/schemas/ids/"+itoa(out.ID)); got["schemaType"] != "XML" {
		t.Errorf("schema %d: %v; want schemaType XML", out.ID, got)
	}
	if subjects, err := cl.Subjects(ctx); err != nil || slices.Contains(subjects, s) {
		t.Errorf("GET /subjects lists %s: %v (%v); Apicurio %s left it out", s, slices.Contains(subjects, s), err, registrytest.Version)
	}
}
