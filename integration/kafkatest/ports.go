package kafkatest

import (
	"fmt"
	"net"
)

// FreePort asks the kernel for a free TCP port on 127.0.0.1 and returns it.
// The port is released before the caller binds it, so another process may
// take it in between: StartLocal retries with new ports when the broker
// reports the address in use, and other callers (a proxy, a metrics
// listener) should be ready to pick again.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
