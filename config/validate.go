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
	MaxWorkers              = 256
	MaxMaxRecords           = 10000
	MaxConsumers            = 16
	MaxTransformConcurrency = 256
	MaxDrainTimeout         = 5 * time.Minute
	MinTransactionTimeout   = time.Second
	MaxTransactionTimeout   = 15 * time.Minute
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
//
// Validate also sets p.Warnings to the warnings found, when there is no
// error.
func (p *Pipeline) Validate() error {
	v := validator{p: p, explicit: func(string) bool { return false }}
	v.validate()
	toErrors := func(fs []fieldErr) Errors {
		es := make(Errors, len(fs))
		for i, e := range fs {
			es[i] = Error{Path: e.path, Msg: e.msg, Snippet: e.snippet}
		}
		return hideSecrets(es, p.secrets()).sort()
	}
	if len(v.errs) > 0 {
		return toErrors(v.errs)
	}
	p.Warnings = warnings(toErrors(v.warns))
	return nil
}

// fieldErr is one problem at a YAML path. line and col, when not 0, locate
// it within the text of the scalar at path (1-based): where an expression
// fails to compile; snippet is then the expression's line with a caret.
type fieldErr struct {
	path, msg string
	line, col int
	snippet   string
}

type validator struct {
	p *Pipeline
	// explicit reports whether the file set a path (Validate: never).
	explicit func(path string) bool
	// brokerIndex maps the indexes of a broker list, after splitting
	// comma-separated entries, to YAML list indexes, by the list's path
	// ("brokers", "source.cluster.brokers"); a list it lacks maps each
	// index to itself.
	brokerIndex map[string][]int
	// envRef returns the text as written and the value of a scalar read
	// from the environment (nil: none was).
	envRef func(path string) (ref, val string, ok bool)
	errs   []fieldErr
	warns  []fieldErr
}

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, fieldErr{path: path, msg: fmt.Sprintf(format, args...)})
}

func (v *validator) warn(path, format string, args ...any) {
	v.warns = append(v.warns, fieldErr{path: path, msg: fmt.Sprintf(format, args...)})
}

// show is how a message names the value s found at path: quoted, with
// credentials it embeds masked ("[redacted]@host:9092"), or — when the
// value was read from the environment — by the reference it was read
// through, never the value itself: an environment variable may hold a
// secret, and errors end up in CI logs and tickets.
func (v *validator) show(path, s string) string {
	if v.envRef != nil {
		if ref, _, ok := v.envRef(path); ok {
			return envValue(ref)
		}
	}
	return strconv.Quote(maskCredentials(s))
}

// showAny is show for a value of any type, printed with %v.
func (v *validator) showAny(path string, x any) string {
	if v.envRef != nil {
		if ref, _, ok := v.envRef(path); ok {
			return envValue(ref)
		}
	}
	if d, ok := x.(time.Duration); ok {
		return d.String()
	}
	return fmt.Sprint(x)
}

// envValue names the value of a scalar written as ref and read from the
// environment: "the value of ${KAFKA_BOOTSTRAP_SERVERS}", or "the value of
// "${USER}@${HOST}"" when there is more to it than one reference.
func envValue(ref string) string {
	if strings.HasPrefix(ref, "${") && strings.Index(ref, "}") == len(ref)-1 {
		return "the value of " + ref
	}
	return "the value of " + strconv.Quote(ref)
}

func (v *validator) validate() {
	p := v.p

	switch {
	case p.Name == "":
		v.add("name", "required: the pipeline's name, of letters, digits and . _ -")
	case !nameRE.MatchString(p.Name):
		v.add("name", "%s may only hold letters, digits and . _ -", v.show("name", p.Name))
	}

	v.brokers("brokers", p.Brokers)

	if p.Delivery != AtLeastOnce && p.Delivery != ExactlyOnce {
		v.add("delivery", "must be %s or %s, got %s", ExactlyOnce, AtLeastOnce, v.show("delivery", p.Delivery))
	}
	if p.Workers < 1 || p.Workers > MaxWorkers {
		v.add("workers", "must be between 1 and %d, got %s", MaxWorkers, v.showAny("workers", p.Workers))
	}

	v.source()
	v.outputs()

	if b := p.Batch; b.MaxRecords < 1 || b.MaxRecords > MaxMaxRecords {
		v.add("batch.max_records", "must be between 1 and %d, got %s", MaxMaxRecords, v.showAny("batch.max_records", b.MaxRecords))
	}
	if m := p.Batch.AcquireMode; m != AcquireAuto && m != AcquireBatchOptimized && m != AcquireRecordLimit {
		v.add("batch.acquire_mode", "must be %s, %s or %s, got %s", AcquireAuto, AcquireBatchOptimized, AcquireRecordLimit, v.show("batch.acquire_mode", m))
	}
	switch p.Batch.AcquireMode {
	case AcquireAuto:
		v.warn("batch.acquire_mode", "auto acquires by record limit, as record_limit does; write record_limit")
	case AcquireBatchOptimized:
		v.warn("batch.acquire_mode", "batch_optimized can lose records to repeated crashes: %s; write record_limit unless the fetch work of large source batches matters more to you than that risk", WholeBatchesLost)
	}
	if p.Batch.PollTimeout <= 0 {
		v.add("batch.poll_timeout", "must be greater than 0, got %s", v.showAny("batch.poll_timeout", p.Batch.PollTimeout))
	}
	if b := p.Batch; b.Consumers < 1 || b.Consumers > MaxConsumers {
		v.add("batch.consumers", "must be between 1 and %d, got %s", MaxConsumers, v.showAny("batch.consumers", b.Consumers))
	}
	if b := p.Batch; b.Linger < 0 || b.Linger > MaxLinger {
		v.add("batch.linger", "must be between 0 and %s, got %s", MaxLinger, v.showAny("batch.linger", b.Linger))
	}
	if b := p.Batch; b.TransformConcurrency < 1 || b.TransformConcurrency > MaxTransformConcurrency {
		v.add("batch.transform_concurrency", "must be between 1 and %d, got %s", MaxTransformConcurrency, v.showAny("batch.transform_concurrency", b.TransformConcurrency))
	}
	if b := p.Batch; b.DrainTimeout < 0 || b.DrainTimeout > MaxDrainTimeout {
		v.add("batch.drain_timeout", "must be between 0 and %s, got %s", MaxDrainTimeout, v.showAny("batch.drain_timeout", b.DrainTimeout))
	}
	if b := p.Batch.BackgroundCommit; b != nil && *b && p.Delivery == AtLeastOnce {
		v.add("batch.background_commit", "needs delivery %s: at-least-once writes without transactions, so there is no commit to overlap", ExactlyOnce)
	}
	if p.Metrics.Listen != "" {
		if msg := checkHostPort(p.Metrics.Listen, v.show("metrics.listen", p.Metrics.Listen), false); msg != "" {
			v.add("metrics.listen", "%s", msg)
		}
	}
	if p.Ledger.Generation < 0 {
		v.add("ledger.generation", "must be 0 or more, got %s", v.showAny("ledger.generation", p.Ledger.Generation))
	}
	if n := p.CEL.CostLimit; n < 0 || n > transform.MaxCostLimit || n == 0 && v.explicit("cel.cost_limit") {
		v.add("cel.cost_limit", "must be between 1 and %d, got %d (leave it out for the default, %d)", transform.MaxCostLimit, n, transform.DefaultCostLimit)
	}
	v.transforms()
	v.tls("tls", p.TLS)
	v.sasl("sasl", p.SASL, p.TLS.Enabled)
	v.client("client", p.Client)
	v.sourceCluster()
	v.formats()
}

// brokers checks the seed brokers of a cluster, the list at path.
func (v *validator) brokers(path string, brokers []string) {
	if len(brokers) == 0 {
		v.add(path, "required: at least one host:port")
	}
	for i, b := range brokers {
		at := i
		if idx, ok := v.brokerIndex[path]; ok && i < len(idx) {
			at = idx[i]
		}
		p := path + "[" + strconv.Itoa(at) + "]"
		if msg := checkHostPort(b, v.show(p, b), true); msg != "" {
			v.add(p, "%s", msg)
		}
	}
}

func (v *validator) source() {
	s := v.p.Source
	if len(s.Topics) == 0 {
		v.add("source.topics", "required: at least one topic to read")
	}
	first := map[string]int{}
	for i, t := range s.Topics {
		path := fmt.Sprintf("source.topics[%d]", i)
		if msg := checkTopic(t, v.show(path, t)); msg != "" {
			v.add(path, "%s", msg)
			continue
		}
		if j, dup := first[t]; dup {
			v.add(path, "duplicate topic %s (also source.topics[%d])", v.show(path, t), j)
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
		v.add("source.auto_offset_reset", "must be earliest or latest, got %s", v.show("source.auto_offset_reset", s.AutoOffsetReset))
	}
	if s.IsolationLevel != "read_committed" && s.IsolationLevel != "read_uncommitted" {
		v.add("source.isolation_level", "must be read_committed or read_uncommitted, got %s", v.show("source.isolation_level", s.IsolationLevel))
	}
}

// outputs checks the output, dead-letter and ledger topics, and that none
// of them feeds a source topic or another of them.
func (v *validator) outputs() {
	p := v.p
	// Across clusters a topic name means a different topic on each side:
	// an output may carry its source's name.
	isSource := func(t string) bool { return !p.CrossCluster() && slices.Contains(p.Source.Topics, t) }

	out := p.Output.Topic
	switch msg := checkTopic(out, v.show("output.topic", out)); {
	case out == "":
		v.add("output.topic", "required: the topic transformed records are written to")
	case msg != "":
		v.add("output.topic", "%s", msg)
	case isSource(out):
		v.add("output.topic", "%s is also a source topic: the pipeline would consume its own output", v.show("output.topic", out))
	}
	if t := p.Output.TransactionTimeout; t < MinTransactionTimeout || t > MaxTransactionTimeout {
		v.add("output.transaction_timeout", "must be between %s and %s, got %s", MinTransactionTimeout, shortDuration(MaxTransactionTimeout), v.showAny("output.transaction_timeout", t))
	}

	dlq := p.DeadLetter.Topic
	switch msg := checkTopic(dlq, v.show("dead_letter.topic", dlq)); {
	case dlq == "":
		v.add("dead_letter.topic", "required: the topic failed records are written to")
	case msg != "":
		v.add("dead_letter.topic", "%s", msg)
	case isSource(dlq):
		v.add("dead_letter.topic", "%s is also a source topic: failed records would be consumed again", v.show("dead_letter.topic", dlq))
	case dlq == out:
		v.add("dead_letter.topic", "%s is also output.topic: failed records must not mix with good ones", v.show("dead_letter.topic", dlq))
	}
	if n := p.DeadLetter.MaxAttempts; n < 0 || n > MaxDeadLetterAttempts {
		v.add("dead_letter.max_attempts", "must be between 0 (use the group's delivery count limit) and %d (the broker's maximum), got %s", MaxDeadLetterAttempts, v.showAny("dead_letter.max_attempts", n))
	}
	if a := p.DeadLetter.Ack; a != DeadLetterAccept && a != DeadLetterReject {
		v.add("dead_letter.ack", "must be %s or %s, got %s", DeadLetterAccept, DeadLetterReject, v.show("dead_letter.ack", a))
	}

	// The default ledger topic is only checked when the name it is built
	// from is valid: a bad name is reported once, at name.
	led := p.Ledger.Topic
	if !v.explicit("ledger.topic") && !nameRE.MatchString(p.Name) {
		return
	}
	switch msg := checkTopic(led, v.show("ledger.topic", led)); {
	case led == "":
		v.add("ledger.topic", "must not be empty")
	case msg != "":
		v.add("ledger.topic", "%s", msg)
	case isSource(led) || led == out || led == dlq:
		v.add("ledger.topic", "%s is also a source, output or dead-letter topic; the ledger needs a topic of its own", v.show("ledger.topic", led))
	}
}

func (v *validator) transforms() {
	p := v.p
	for i, s := range p.Transforms {
		prefix := fmt.Sprintf("transforms[%d]", i)
		for _, fe := range s.ValidateWith(p.TransformOptions()) {
			path := prefix
			if fe.Path != "" {
				path += "." + fe.Path
			}
			v.errs = append(v.errs, fieldErr{path: path, msg: v.hideEnvValue(path, fe.Msg), line: fe.Line, col: fe.Col, snippet: v.hideEnvSnippet(path, fe.Snippet)})
		}
		// The topics a step sends records to are topics the pipeline
		// writes to, like output.topic.
		routeTopic := func(path, t string) {
			switch msg := checkTopic(t, v.show(path, t)); {
			case msg != "":
				v.add(path, "%s", msg)
			case !p.CrossCluster() && slices.Contains(p.Source.Topics, t):
				v.add(path, "%s is also a source topic: the pipeline would consume its own output", v.show(path, t))
			case t == p.DeadLetter.Topic:
				v.add(path, "%s is the dead-letter topic: failed records must not mix with good ones", v.show(path, t))
			}
		}
		for _, t := range s.Targets() {
			routeTopic(prefix+"."+t.Path, t.Topic)
		}
	}
}

// hideEnvValue keeps the value at path out of msg, a message written by
// another package about that value, when the value was read from the
// environment: its quoted form, then any occurrence of it standing alone,
// is replaced by its reference.
func (v *validator) hideEnvValue(path, msg string) string {
	if v.envRef == nil {
		return msg
	}
	ref, val, ok := v.envRef(path)
	if !ok || val == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, strconv.Quote(val), envValue(ref))
	return replaceWord(msg, val, envValue(ref))
}

// hideEnvSnippet returns snippet, the line of the expression at path
// under which a caret points, unless the expression was read from the
// environment: the error names it by its reference, and shows none of it.
func (v *validator) hideEnvSnippet(path, snippet string) string {
	if v.envRef != nil {
		if _, _, ok := v.envRef(path); ok {
			return ""
		}
	}
	return snippet
}

// replaceWord replaces each occurrence of old in s that is not part of a
// longer word or number.
func replaceWord(s, old, new string) string {
	isWord := func(b byte) bool {
		return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
	}
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(old)
		if (i > 0 && isWord(s[i-1])) || (end < len(s) && isWord(s[end])) {
			b.WriteString(s[:end])
		} else {
			b.WriteString(s[:i])
			b.WriteString(new)
		}
		s = s[end:]
	}
}

// checkTopic returns why t is not a legal Kafka topic name, or "". shown
// is how to name t (see validator.show).
func checkTopic(t, shown string) string {
	switch {
	case t == "":
		return "a topic name must not be empty"
	case t == "." || t == "..":
		return fmt.Sprintf("%s is not a legal topic name", shown)
	case len(t) > MaxTopicLength:
		return fmt.Sprintf("topic name is %d characters long; Kafka allows at most %d", len(t), MaxTopicLength)
	case !topicRE.MatchString(t):
		return fmt.Sprintf("topic %s may only hold letters, digits and . _ -", shown)
	}
	return ""
}

// checkHostPort returns why s is not host:port, or "". The host may be
// empty (all interfaces) unless needHost. shown is how to name s (see
// validator.show).
func checkHostPort(s, shown string, needHost bool) string {
	if s == "" {
		return "must not be empty: want host:port"
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Sprintf("%s is not host:port", shown)
	}
	if needHost && host == "" {
		return fmt.Sprintf("%s has no host: want host:port", shown)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Sprintf("%s has an invalid host", shown)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("%s has an invalid port: want 1 to 65535", shown)
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
