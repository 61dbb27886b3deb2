//go:build !testcontainers

package kafkatest

import "context"

// testcontainersBuilt reports whether this binary can start a container
// broker: only with -tags testcontainers, so that the default build and CI
// neither compile nor link testcontainers-go and the Docker client.
const testcontainersBuilt = false

func startContainer(context.Context, string) (*container, error) { return nil, ErrNoTestcontainers }
