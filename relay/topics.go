package relay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/internal/kafkaerr"
	"github.com/sharerelay/sharerelay/internal/wait"
)

// topicGrace is how long start-up waits for a topic it does not see yet:
// one created just before the relay started may not have reached every
// broker's metadata (a deploy script that creates topics, then starts the
// relay). A topic still missing after it is a clear error. (A variable
// for tests.)
var topicGrace = 10 * time.Second

// checkTopics returns an error naming every topic in names that does not
// exist, after waiting up to grace for missing ones to appear, and every
// topic the principal may not describe (Kafka answers
// TOPIC_AUTHORIZATION_FAILED for those, whether they exist or not).
func checkTopics(ctx context.Context, cl *kgo.Client, names []string, grace time.Duration) (map[string]kadm.TopicDetail, error) {
	deadline := time.Now().Add(grace)
	for {
		td, missing, denied, err := lookUpTopics(ctx, kadm.NewClient(cl), names)
		if err != nil {
			return nil, err
		}
		if len(missing) == 0 && len(denied) == 0 {
			return td, nil
		}
		if len(denied) == 0 && time.Now().Before(deadline) && wait.Sleep(ctx, 250*time.Millisecond) {
			// kadm answers from the client's cached metadata: drop
			// what it cached about the missing topics.
			cl.PurgeTopicsFromClient(missing...)
			continue
		}
		var errs []error
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("topics do not exist (create them first): %v", missing))
		}
		if len(denied) > 0 {
			errs = append(errs, fmt.Errorf("not authorized to describe topics %v (%w): grant READ on sources, WRITE and DESCRIBE_CONFIGS on outputs and dead letters", denied, kerr.TopicAuthorizationFailed))
		}
		return nil, errors.Join(errs...)
	}
}

// lookUpTopics lists names and sorts out the missing and the denied ones.
func lookUpTopics(ctx context.Context, adm *kadm.Client, names []string) (td kadm.TopicDetails, missing, denied []string, err error) {
	td, err = adm.ListTopics(ctx, names...)
	if err != nil && kafkaerr.Authentication(err) {
		// The first request of the relay: say what failed, not what
		// the request was for.
		return nil, nil, nil, fmt.Errorf("authenticating to the cluster: %w", err)
	}
	if errors.Is(err, kerr.TopicAuthorizationFailed) {
		// kadm fails the whole request on one denial; ask per topic
		// to name the denied ones.
		td, err = make(kadm.TopicDetails, len(names)), nil
		for _, n := range names {
			one, oerr := adm.ListTopics(ctx, n)
			switch {
			case errors.Is(oerr, kerr.TopicAuthorizationFailed):
				td[n] = kadm.TopicDetail{Topic: n, Err: oerr}
			case oerr != nil:
				err = oerr
			default:
				maps.Copy(td, one)
			}
		}
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("looking up topics %v: %w", names, err)
	}
	for _, n := range names {
		d, ok := td[n]
		switch {
		case ok && errors.Is(d.Err, kerr.TopicAuthorizationFailed):
			denied = append(denied, n)
		case !ok || d.Err != nil:
			missing = append(missing, n)
		}
	}
	return td, missing, denied, nil
}

// maxMessageBytes returns each topic's max.message.bytes: the largest
// record batch it takes.
func maxMessageBytes(ctx context.Context, adm *kadm.Client, topics []string) (map[string]int, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topics...)
	if errors.Is(err, kerr.TopicAuthorizationFailed) {
		// kadm fails the whole request on one denial; name the topics.
		var denied []string
		for _, t := range topics {
			if _, terr := adm.DescribeTopicConfigs(ctx, t); errors.Is(terr, kerr.TopicAuthorizationFailed) {
				denied = append(denied, t)
			}
		}
		return nil, fmt.Errorf("not authorized to describe the configs of %v (%w): the relay reads their max.message.bytes; grant DESCRIBE_CONFIGS", denied, err)
	}
	if err != nil {
		return nil, fmt.Errorf("describing the configs of %v: %w", topics, err)
	}
	out := make(map[string]int, len(topics))
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("describing the configs of %s: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key != "max.message.bytes" || c.Value == nil {
				continue
			}
			if v, err := strconv.Atoi(*c.Value); err == nil && v > 0 {
				out[rc.Name] = v
			}
		}
	}
	return out, nil
}
