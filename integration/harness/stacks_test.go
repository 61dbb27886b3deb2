package harness

import (
	"strings"
	"testing"
)

func TestFilterStacksKeepsMatchingGoroutinesOnceWithTheirCount(t *testing.T) {
	dump := `SIGQUIT: quit
PC=0x4711 m=0 sigcode=0

goroutine 1 [select, 3 minutes]:
example.com/x/relay.(*worker).pause(0xc000123456, {0x1, 0x2})
	/src/relay/worker.go:1020 +0x1a5
main.main()
	/src/main.go:10 +0x20

goroutine 7 gp=0x2680fcc7c1e0 m=nil [select, 4 minutes]:
example.com/x/relay.(*worker).pause(0xc000999999, {0x3, 0x4})
	/src/relay/worker.go:1020 +0x1a5
main.main()
	/src/main.go:10 +0x20

goroutine 8 [IO wait]:
net.(*conn).Read(0xc0000)
	/go/net.go:1 +0x1

goroutine 9 [chan receive]:
example.com/x/relay.(*worker).harvest(0xc0001)
	/src/relay/worker.go:433 +0x10
`
	got := FilterStacks(dump, "relay.(*worker)")
	if strings.Contains(got, "net.(*conn)") {
		t.Errorf("kept a goroutine without a matching frame:\n%s", got)
	}
	if !strings.Contains(got, "2 goroutine(s) [select]\nexample.com/x/relay.(*worker).pause\n") {
		t.Errorf("the two goroutines waiting in pause are not grouped:\n%s", got)
	}
	if !strings.Contains(got, "1 goroutine(s) [chan receive]") || !strings.Contains(got, "worker.go:433") {
		t.Errorf("the goroutine in harvest is missing:\n%s", got)
	}
}
