package registrytest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sharerelay/sharerelay/integration/registrytest"
)

// newClient returns a franz-go schema registry client of reg's
// Confluent-compatible API and a context that ends in a minute.
func newClient(t *testing.T, reg *registrytest.Registry) (*sr.Client, context.Context) {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatalf("schema registry client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return cl, ctx
}

var (
	subjectSeq  atomic.Int64
	subjectSalt = strconv.FormatInt(time.Now().UnixNano()%(1<<32), 36)
)

// subject returns a subject name unique in the registry, ending in what.
func subject(what string) string {
	return fmt.Sprintf("t%s-%d-%s", subjectSalt, subjectSeq.Add(1), what)
}

// responseError returns err as the registry's error response, failing the
// test when it is none.
func responseError(t *testing.T, err error) *sr.ResponseError {
	t.Helper()
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("got %v; want an error response of the registry", err)
	}
	return re
}

// wantError checks that err is the registry's answer with the HTTP
// status and error_code given, and returns its message.
func wantError(t *testing.T, err error, status, code int) string {
	t.Helper()
	re := responseError(t, err)
	if re.StatusCode != status || re.ErrorCode != code {
		t.Errorf("got %d with error_code %d (%s); want %d with error_code %d", re.StatusCode, re.ErrorCode, re.Raw, status, code)
	}
	return re.Message
}

// rss returns the resident memory of the process pid, as /proc says it
// ("212345 kB"), or "unknown" off Linux.
func rss(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// itoa is strconv.Itoa, for building paths.
func itoa(i int) string { return strconv.Itoa(i) }
