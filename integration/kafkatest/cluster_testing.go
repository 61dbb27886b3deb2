package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// sharedCluster is the three-node cluster of this test binary, started at
// most once by [LocalCluster] and stopped by [Run].
var sharedCluster struct {
	once    sync.Once
	cluster *Cluster
	err     error
	elapsed time.Duration
	logged  bool
}

// LocalCluster returns this test binary's local three-node cluster,
// started on first use (beside the single broker [Bootstrap] returns, which
// it does not replace), for tests that need replication or kill nodes.
// Such tests must not run in parallel with each other. When the test
// ends, every node it left stopped is started again, every paused node
// resumed, and the cluster waited for until every partition is back in
// sync, so that the next test starts on a whole cluster. It is skipped
// under -short (failed with SHARERELAY_REQUIRE_BROKER=1), and when
// KAFKA_BOOTSTRAP_SERVERS points at an external cluster.
func LocalCluster(t testing.TB) *Cluster {
	t.Helper()
	if len(ExternalSeeds()) > 0 {
		t.Skipf("kafkatest: %s is set; the three-node tests start a local cluster of their own, which an external one does not replace", EnvBootstrap)
	}
	if testing.Short() {
		if os.Getenv(EnvRequireBroker) == "1" {
			t.Fatal("kafkatest: a real-cluster test under -short with " + EnvRequireBroker + "=1")
		}
		t.Skip("kafkatest: no local cluster under -short")
	}
	sharedCluster.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sharedStartTimeout)
		defer cancel()
		began := time.Now()
		sharedCluster.cluster, sharedCluster.err = StartCluster(ctx, ClusterOptions{})
		sharedCluster.elapsed = time.Since(began)
	})
	if err := sharedCluster.err; err != nil {
		if errors.Is(err, ErrToolMissing) && os.Getenv(EnvRequireBroker) != "1" {
			t.Skipf("no Kafka cluster (install java and mvn): %v", err)
		}
		t.Fatalf("kafkatest: shared cluster: %v", err)
	}
	c := sharedCluster.cluster
	if !sharedCluster.logged {
		sharedCluster.logged = true
		t.Logf("kafkatest: local cluster %v ready in %s (directory %s)", c.Seeds(), sharedCluster.elapsed.Round(time.Millisecond), c.Dir())
	}
	t.Cleanup(func() {
		if err := c.Heal(context.Background()); err != nil {
			t.Errorf("kafkatest: %v", err)
		}
	})
	return c
}

// Heal starts every stopped node, resumes every paused one, and waits
// until every partition is back in sync. The stopped nodes start together:
// with a majority of them stopped, none is ready before the others run.
func (c *Cluster) Heal(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for _, b := range c.nodes {
		if err := b.Resume(); err != nil {
			return fmt.Errorf("heal the cluster: %w", err)
		}
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, b := range c.nodes {
		if !b.Running() {
			wg.Go(func() {
				if err := b.Start(ctx); err != nil {
					errs[i] = fmt.Errorf("heal the cluster: start node %d: %w", i+1, err)
				}
			})
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := c.WaitInSync(ctx, 2*time.Minute); err != nil {
		return fmt.Errorf("heal the cluster: %w", err)
	}
	return nil
}

// stopSharedCluster stops the binary's cluster, if a test started one,
// keeping its directory when the tests failed.
func stopSharedCluster(failed bool) {
	c := sharedCluster.cluster
	if c == nil {
		return
	}
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: %v\n", err)
	}
	if failed {
		fmt.Fprintf(os.Stderr, "kafkatest: tests failed; cluster logs kept in %s (node-*/broker.log)\n", c.Dir())
	} else if err := c.Remove(); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: remove cluster directory: %v\n", err)
	}
}
