package config

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sharerelay/sharerelay/transform"
)

// Limits enforced by Validate.
const (
	MaxWorkers            = 256
	MaxMaxRecords         = 10000
	MinTransactionTimeout = time.Second
	MaxTransactionTimeout = 15 * time.Minute
	// MaxDeadLetterAttempts is the largest dead_letter.max_attempts: the
	// broker's upper bound for share.delivery.count.limit.
	MaxDeadLetterAttempts = 10
	// MaxTopicLength is Kafka's limit on a topic name's length.
	MaxTopicLength = 249
)

var (
	nameRE  = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
	topicRE = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
)

// Validate checks every field of p and every transform step, reporting all
// problems at once as an Errors value (nil when p is valid). It does not
// apply defaults: call SetDefaults first for a Pipeline built in Go. The
// errors carry the YAML path of each field but no file position.
func (p *Pipeline) Validate() error {
	v := validator{p: p, explicit: func(string) bool { return false }}
	v.validate()
	if len(v.errs) == 0 {
		return nil
	}
	errs := make(Errors, len(v.errs))
	for i, e := range v.errs {
		errs[i] = Error{Path: e.path, Msg: e.msg}
	}
	return errs.sort()
}

// fieldErr is one problem at a YAML path. line and col, when not 0, locate
// it within the text of the scalar at path (1-based): where an expression
// fails to compile.
type fieldErr struct {
	path, msg string
	line, col int
}

type validator struct {
	p *Pipeline
	// explicit reports whether the file set a path (Validate: never).
	explicit func(path string) bool
	// brokerIndex maps p.Brokers indexes to YAML list indexes (nil:
	// identity).
	brokerIndex []int
	errs        []fieldErr
}

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, fieldErr{path: path, msg: fmt.Sprintf(format, args...)})
}

func (v *validator) validate() {
	p := v.p

	switch {
	case p.Name == "":
		v.add("name", "required: the pipeline's name, of letters, digits and . _ -")
	case !nameRE.MatchString(p.Name):
		v.add("name", "%q may only hold letters, digits and . _ -", p.Name)
	}

	if len(p.Brokers) == 0 {
		v.add("brokers", "required: at least one host:port")
	}
	for i, b := range p.Brokers {
		path := "brokers[" + strconv.Itoa(i) + "]"
		if v.brokerIndex != nil {
			path = "brokers[" + strconv.Itoa(v.brokerIndex[i]) + "]"
		}
		if msg := checkHostPort(b, true); msg != "" {
			v.add(path, "%s", msg)
		}
	}

	if p.Delivery != AtLeastOnce && p.Delivery != ExactlyOnce {
		v.add("delivery", "must be %s or %s, got %q", ExactlyOnce, AtLeastOnce, p.Delivery)
	}
	if p.Workers < 1 || p.Workers > MaxWorkers {
		v.add("workers", "must be between 1 and %d, got %d", MaxWorkers, p.Workers)
	}

	v.source()
	v.outputs()

	if b := p.Batch; b.MaxRecords < 1 || b.MaxRecords > MaxMaxRecords {
		v.add("batch.max_records", "must be between 1 and %d, got %d", MaxMaxRecords, b.MaxRecords)
	}
	if p.Batch.PollTimeout <= 0 {
		v.add("batch.poll_timeout", "must be greater than 0, got %s", p.Batch.PollTimeout)
	}
	if p.Metrics.Listen != "" {
		if msg := checkHostPort(p.Metrics.Listen, false); msg != "" {
			v.add("metrics.listen", "%s", msg)
		}
	}
	if p.Ledger.Generation < 0 {
		v.add("ledger.generation", "must be 0 or more, got %d", p.Ledger.Generation)
	}
	if n := p.CEL.CostLimit; n < 0 || n > transform.MaxCostLimit || n == 0 && v.explicit("cel.cost_limit") {
		v.add("cel.cost_limit", "must be between 1 and %d, got %d (leave it out for the default, %d)", transform.MaxCostLimit, n, transform.DefaultCostLimit)
	}
	v.transforms()
}

func (v *validator) source() {
	s := v.p.Source
	if len(s.Topics) == 0 {
		v.add("source.topics", "required: at least one topic to read")
	}
	first := map[string]int{}
	for i, t := range s.Topics {
		path := fmt.Sprintf("source.topics[%d]", i)
		if msg := checkTopic(t); msg != "" {
			v.add(path, "%s", msg)
			continue
		}
		if j, dup := first[t]; dup {
			v.add(path, "duplicate topic %q (also source.topics[%d])", t, j)
			continue
		}
		first[t] = i
	}
	// source.group defaults to the name; if the name is missing, that is
	// the error to report.
	if s.Group == "" && (v.p.Name != "" || v.explicit("source.group")) {
		v.add("source.group", "must not be empty")
	}
	for _, key := range slices.Sorted(maps.Keys(s.GroupConfigs)) {
		path := "source.group_configs." + key
		switch {
		case !strings.HasPrefix(key, "share.") || key == "share.":
			v.add(path, "not a share group config: the key must start with \"share.\"")
		case key == "share.auto.offset.reset":
			v.add(path, "set it with source.auto_offset_reset")
		case key == "share.isolation.level":
			v.add(path, "set it with source.isolation_level")
		case s.GroupConfigs[key] == "":
			v.add(path, "needs a value")
		}
	}
	if s.AutoOffsetReset != "earliest" && s.AutoOffsetReset != "latest" {
		v.add("source.auto_offset_reset", "must be earliest or latest, got %q", s.AutoOffsetReset)
	}
	if s.IsolationLevel != "read_committed" && s.IsolationLevel != "read_uncommitted" {
		v.add("source.isolation_level", "must be read_committed or read_uncommitted, got %q", s.IsolationLevel)
	}
}

// outputs checks the output, dead-letter and ledger topics, and that none
// of them feeds a source topic or another of them.
func (v *validator) outputs() {
	p := v.p
	isSource := func(t string) bool { return slices.Contains(p.Source.Topics, t) }

	out := p.Output.Topic
	switch msg := checkTopic(out); {
	case out == "":
		v.add("output.topic", "required: the topic transformed records are written to")
	case msg != "":
		v.add("output.topic", "%s", msg)
	case isSource(out):
		v.add("output.topic", "%q is also a source topic: the pipeline would consume its own output", out)
	}
	if t := p.Output.TransactionTimeout; t < MinTransactionTimeout || t > MaxTransactionTimeout {
		v.add("output.transaction_timeout", "must be between %s and %s, got %s", MinTransactionTimeout, shortDuration(MaxTransactionTimeout), t)
	}

	dlq := p.DeadLetter.Topic
	switch msg := checkTopic(dlq); {
	case dlq == "":
		v.add("dead_letter.topic", "required: the topic failed records are written to")
	case msg != "":
		v.add("dead_letter.topic", "%s", msg)
	case isSource(dlq):
		v.add("dead_letter.topic", "%q is also a source topic: failed records would be consumed again", dlq)
	case dlq == out:
		v.add("dead_letter.topic", "%q is also output.topic: failed records must not mix with good ones", dlq)
	}
	if n := p.DeadLetter.MaxAttempts; n < 0 || n > MaxDeadLetterAttempts {
		v.add("dead_letter.max_attempts", "must be between 0 (use the group's delivery count limit) and %d (the broker's maximum), got %d", MaxDeadLetterAttempts, n)
	}

	// The default ledger topic is only checked when the name it is built
	// from is valid: a bad name is reported once, at name.
	led := p.Ledger.Topic
	if !v.explicit("ledger.topic") && !nameRE.MatchString(p.Name) {
		return
	}
	switch msg := checkTopic(led); {
	case led == "":
		v.add("ledger.topic", "must not be empty")
	case msg != "":
		v.add("ledger.topic", "%s", msg)
	case isSource(led) || led == out || led == dlq:
		v.add("ledger.topic", "%q is also a source, output or dead-letter topic; the ledger needs a topic of its own", led)
	}
}

func (v *validator) transforms() {
	p := v.p
	for i, s := range p.Transforms {
		prefix := fmt.Sprintf("transforms[%d]", i)
		for _, fe := range s.Validate() {
			path := prefix
			if fe.Path != "" {
				path += "." + fe.Path
			}
			v.errs = append(v.errs, fieldErr{path: path, msg: fe.Msg, line: fe.Line, col: fe.Col})
		}
		// The topics a step sends records to are topics the pipeline
		// writes to, like output.topic.
		routeTopic := func(path, t string) {
			switch msg := checkTopic(t); {
			case msg != "":
				v.add(path, "%s", msg)
			case slices.Contains(p.Source.Topics, t):
				v.add(path, "%q is also a source topic: the pipeline would consume its own output", t)
			case t == p.DeadLetter.Topic:
				v.add(path, "%q is the dead-letter topic: failed records must not mix with good ones", t)
			}
		}
		for _, t := range s.Targets() {
			routeTopic(prefix+"."+t.Path, t.Topic)
		}
	}
}

// checkTopic returns why t is not a legal Kafka topic name, or "".
func checkTopic(t string) string {
	switch {
	case t == "":
		return "a topic name must not be empty"
	case t == "." || t == "..":
		return fmt.Sprintf("%q is not a legal topic name", t)
	case len(t) > MaxTopicLength:
		return fmt.Sprintf("topic name is %d characters long; Kafka allows at most %d", len(t), MaxTopicLength)
	case !topicRE.MatchString(t):
		return fmt.Sprintf("topic %q may only hold letters, digits and . _ -", t)
	}
	return ""
}

// checkHostPort returns why s is not host:port, or "". The host may be
// empty (all interfaces) unless needHost.
func checkHostPort(s string, needHost bool) string {
	if s == "" {
		return "must not be empty: want host:port"
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Sprintf("%q is not host:port", s)
	}
	if needHost && host == "" {
		return fmt.Sprintf("%q has no host: want host:port", s)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Sprintf("%q has an invalid host", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("%q has an invalid port: want 1 to 65535", s)
	}
	return ""
}

// shortDuration formats d without zero units: 15m rather than 15m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
