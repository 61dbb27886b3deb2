package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
	"github.com/sharerelay/sharerelay/pipetest"
)

// javaPartitioner is Java's producer's choice for a keyed record, run
// with Kafka's own jars: the partition BuiltInPartitioner takes for a
// key, Utils.toPositive(Utils.murmur2(key)) % partitions.
const javaPartitioner = `import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
public class Partition {
  public static void main(String[] a) throws Exception {
    int n = Integer.parseInt(a[0]);
    java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, "UTF-8"));
    for (String k; (k = in.readLine()) != null; ) {
      System.out.println(BuiltInPartitioner.partitionForKey(k.getBytes("UTF-8"), n));
    }
  }
}
`

// javaPartitions returns the partition Java's producer puts each of keys
// on, of n.
func javaPartitions(t *testing.T, keys []string, n int) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lib, err := kafkatest.Jars(ctx)
	if err != nil {
		t.Fatal(err)
	}
	java, err := kafkatest.Java()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "Partition.java")
	if err := os.WriteFile(src, []byte(javaPartitioner), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, java, "-cp", filepath.Join(lib, "*"), src, strconv.Itoa(n))
	cmd.Stdin = strings.NewReader(strings.Join(keys, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java: %v", err)
	}
	var ps []int
	for _, l := range strings.Fields(string(out)) {
		p, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("java printed %q", l)
		}
		ps = append(ps, p)
	}
	if len(ps) != len(keys) {
		t.Fatalf("java gave %d partitions for %d keys", len(ps), len(keys))
	}
	return ps
}

// A key step's outputs land on the partition Java's producer would put
// them on (murmur2 of the key), so that the relay's records and a Java
// or Kafka Streams producer's meet by key; relay test predicts the same.
func TestRealBrokerKeyedOutputsLandOnThePartitionJavasProducerChooses(t *testing.T) {
	seeds := seedsFor(t)
	p := newPipe(t, seeds, harness.PipelineOptions{
		Transforms: `[{type: key, expr: '"order-" + string(int(value.order_id))'}]`,
	})
	const n = 300
	seedOrders(t, p, 1, n)
	startRelay(t, p, "a")
	settled(t, p, n, 2*time.Minute)

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(p.Output),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]int32{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for len(got) < n && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Key)] = r.Partition })
	}
	if len(got) != n {
		t.Fatalf("read %d keyed outputs, want %d", len(got), n)
	}
	keys := make([]string, 0, n)
	for k := range got {
		keys = append(keys, k)
	}
	java := javaPartitions(t, keys, harness.OutputPartitions)
	differ := 0
	for i, k := range keys {
		if int(got[k]) != java[i] {
			differ++
			if differ <= 5 {
				t.Errorf("key %q: on partition %d, Java's producer chooses %d", k, got[k], java[i])
			}
		}
		if pt := pipetest.Partition([]byte(k), harness.OutputPartitions); pt != java[i] {
			t.Errorf("key %q: relay test predicts partition %d, Java's producer chooses %d", k, pt, java[i])
		}
	}
	if differ > 0 {
		t.Fatalf("%d of %d outputs off Java's partition", differ, n)
	}
	t.Logf("%d keyed outputs, each on Java's partition: %s", n, fmt.Sprint(counts(got)))
}

// counts is how many outputs each partition got.
func counts(m map[string]int32) map[int32]int {
	c := map[int32]int{}
	for _, p := range m {
		c[p]++
	}
	return c
}
