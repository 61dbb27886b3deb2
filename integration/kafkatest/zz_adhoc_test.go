package kafkatest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

func TestAdhocBusyPort(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	b, err := kafkatest.StartLocal(ctx, kafkatest.Options{Port: l.Addr().(*net.TCPAddr).Port})
	t.Logf("after %s: b=%v err=%v", time.Since(began), b, err)
}
