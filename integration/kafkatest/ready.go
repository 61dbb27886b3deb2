package kafkatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readyLine is logged by BrokerLifecycleManager once the broker is
// unfenced ("The broker has been unfenced. Transitioning from RECOVERY to
// RUNNING."); testcontainers waits for the same line.
const readyLine = "Transitioning from RECOVERY to RUNNING"

// fatalLines in the log mean the start has failed even though the JVM
// may take many seconds to exit.
var fatalLines = []string{
	"Exiting Kafka due to fatal exception",
	"Address already in use",
}

// errPortInUse marks a start that failed because a port was taken.
var errPortInUse = errors.New("port already in use")

// containsAddrInUse reports whether a broker log shows a failed bind.
func containsAddrInUse(log string) bool {
	return strings.Contains(log, "Address already in use")
}

// waitReady waits until the log written since offset contains readyLine
// and a probe topic can be created and deleted through the broker.
func (b *Broker) waitReady(ctx context.Context, timeout time.Duration, offset int64, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()

	var (
		running bool
		cl      *kgo.Client
		lastErr error
	)
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for {
		select {
		case <-done:
			return fmt.Errorf("broker process exited before it was ready (%s)", b.exitStatus())
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("broker not ready after %s (last probe: %v): %w", timeout, lastErr, ctx.Err())
			}
			return fmt.Errorf("broker not ready after %s (no %q in the log): %w", timeout, readyLine, ctx.Err())
		case <-tick.C:
		}
		if !running {
			log, err := readFrom(b.LogPath(), offset, -1)
			if err != nil {
				return err
			}
			for _, l := range fatalLines {
				if bytes.Contains(log, []byte(l)) {
					return fmt.Errorf("broker failed to start (%q in the log)", l)
				}
			}
			if running = bytes.Contains(log, []byte(readyLine)); !running {
				continue
			}
		}
		if cl == nil {
			var err error
			cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DialTimeout(2*time.Second))
			if err != nil {
				return fmt.Errorf("create probe client: %w", err)
			}
		}
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		lastErr = probe(pctx, cl)
		pcancel()
		if lastErr == nil {
			return nil
		}
	}
}

// exitStatus describes how the current process ended.
func (b *Broker) exitStatus() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil || b.cmd.ProcessState == nil {
		return "unknown status"
	}
	return b.cmd.ProcessState.String()
}

// probe creates and deletes a one-partition topic through the seed broker
// itself, so it works even when the advertised address (a proxy) is not
// reachable yet: a KRaft broker forwards both requests to the controller.
func probe(ctx context.Context, cl *kgo.Client) error {
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return errors.New("probe: no seed broker")
	}
	seed := seeds[0]
	name := "kafkatest-probe-" + strconv.FormatInt(time.Now().UnixNano(), 36)

	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 1, 1
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 5000
	resp, err := seed.Request(ctx, create)
	if err != nil {
		return fmt.Errorf("probe: create topic: %w", err)
	}
	for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("probe: create topic %s: %w", name, err)
		}
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(name)
	del.Topics = append(del.Topics, dt)
	del.TopicNames = append(del.TopicNames, name) // for versions before 6
	del.TimeoutMillis = 5000
	resp, err = seed.Request(ctx, del)
	if err != nil {
		return fmt.Errorf("probe: delete topic: %w", err)
	}
	for _, t := range resp.(*kmsg.DeleteTopicsResponse).Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("probe: delete topic %s: %w", name, err)
		}
	}
	return nil
}

// logTail returns the last lines written to the file at path after offset.
func logTail(path string, offset int64) string {
	const maxBytes, maxLines = 16 << 10, 60
	b, err := readFrom(path, offset, maxBytes)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// readFrom reads the file at path from offset, keeping at most the last
// max bytes when max >= 0.
func readFrom(path string, offset, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	if max >= 0 {
		if fi, err := f.Stat(); err == nil && fi.Size()-max > offset {
			offset = fi.Size() - max
		}
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seek log: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	return b, nil
}
