//go:build testcontainers

package kafkatest

import (
	"context"
	"fmt"

	"github.com/testcontainers/testcontainers-go"
	tckafka "github.com/testcontainers/testcontainers-go/modules/kafka"
)

const testcontainersBuilt = true

// startContainer starts image through testcontainers-go's Kafka module: one
// KRaft node with the JVM broker's test properties (internal topics with
// one partition and replication factor 1, the share coordinator's state
// topic included, and the short share-group and transaction timers), and
// returns its bootstrap address once it logged RUNNING.
func startContainer(ctx context.Context, image string) (*container, error) {
	c, err := tckafka.Run(ctx, image, testcontainers.WithEnv(containerEnv()))
	if err != nil {
		if c != nil {
			_ = testcontainers.TerminateContainer(c)
		}
		return nil, fmt.Errorf("kafkatest: start %s with testcontainers: %w", image, err)
	}
	seeds, err := c.Brokers(ctx)
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return nil, fmt.Errorf("kafkatest: %s: bootstrap address: %w", image, err)
	}
	return &container{seeds: seeds, image: image, stop: func() error { return testcontainers.TerminateContainer(c) }}, nil
}
