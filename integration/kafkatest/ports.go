package kafkatest

import (
	"fmt"
	"net"
)

// freePort asks the kernel for a free TCP port on 127.0.0.1. The port is
// released before the broker binds it, so a race is possible; StartLocal
// retries with new ports when the broker reports the address in use.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
