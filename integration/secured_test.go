package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sharerelay/sharerelay/integration/harness"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// Credentials of the secured broker's users. The passwords are made up
// for the test run; a test that checks an error for secrets looks for them.
const (
	scramUser = "relay"
	plainUser = "alice"
	mtlsCN    = "relay-mtls"
	oauthSub  = "relay-oauth" // the sub claims of the OAUTHBEARER tokens start so
)

var (
	scramPassword = "scram-" + topicSalt()
	plainPassword = "plain-" + topicSalt()
)

func topicSalt() string { return fmt.Sprintf("%x", time.Now().UnixNano()) }

// securedBroker is this test binary's secured broker: a broker of its own,
// so the shared one stays PLAINTEXT and fast. It has a SASL_SSL listener
// (SCRAM-SHA-512 user relay, PLAIN user alice), an SSL listener requiring
// a client certificate (CN=relay-mtls), and ACLs enforced for both; the
// PLAINTEXT listener, the harness's, is a super user. It is a cluster of
// its own (kafkatest.SharedBroker), so a test may pair it with another.
var securedBroker = &kafkatest.SharedBroker{
	Name: "secured",
	Options: func(dir string) (kafkatest.Options, error) {
		opts, s, err := kafkatest.Secure(kafkatest.Options{}, kafkatest.Security{
			Dir:         dir,
			PlainUsers:  map[string]string{plainUser: plainPassword},
			ClientCNs:   []string{mtlsCN},
			OAuthBearer: true,
			ACLs:        true,
		})
		securedListeners = s
		return opts, err
	},
	Ready: func(ctx context.Context, b *kafkatest.Broker) error {
		return securedListeners.AddSCRAMUsers(ctx, []string{b.Addr()}, map[string]string{scramUser: scramPassword})
	},
}

// securedListeners are the secured broker's listeners and files, set when
// it starts.
var securedListeners *kafkatest.Secured

// securedBrokerFor starts the secured broker on first use and returns it.
// KAFKA_BOOTSTRAP_SERVERS does not apply: an external cluster cannot be
// given these listeners, so the test is skipped then.
func securedBrokerFor(t *testing.T) (*kafkatest.Broker, *kafkatest.Secured) {
	t.Helper()
	b := securedBroker.Broker(t)
	return b, securedListeners
}

// permission is one ACL of the relay's principal; Prefixed for the
// transactional ids.
type permission struct {
	kind     string // topic, group, transactional-id, cluster
	name     string
	op       kadm.ACLOperation
	prefixed bool
}

func (a permission) String() string {
	if a.prefixed {
		return fmt.Sprintf("%s %s on %s %s*", a.op, a.kind, a.kind, a.name)
	}
	return fmt.Sprintf("%s on %s %s", a.op, a.kind, a.name)
}

// relayPermissions is the smallest set of ACLs an exactly-once relay runs
// with, as docs/operations.md's table gives it: the secured tests run the
// pipelines with exactly these (no cluster permission at all, no
// IDEMPOTENT_WRITE), and remove one at a time to see it named.
func relayPermissions(p *harness.Pipeline) []permission {
	return []permission{
		{"topic", p.Source, kadm.OpRead, false},
		{"group", p.Group, kadm.OpRead, false},
		{"group", p.Group, kadm.OpAlterConfigs, false}, // implies DESCRIBE_CONFIGS
		{"topic", p.Output, kadm.OpWrite, false},
		{"topic", p.Output, kadm.OpDescribeConfigs, false},
		{"topic", p.DeadLetter, kadm.OpWrite, false},
		{"topic", p.DeadLetter, kadm.OpDescribeConfigs, false},
		{"topic", p.Ledger, kadm.OpRead, false},
		{"topic", p.Ledger, kadm.OpWrite, false},
		{"topic", p.Ledger, kadm.OpCreate, false},
		{"topic", p.Ledger + ".snapshots", kadm.OpRead, false},
		{"topic", p.Ledger + ".snapshots", kadm.OpWrite, false},
		{"topic", p.Ledger + ".snapshots", kadm.OpCreate, false},
		{"transactional-id", "sharerelay-" + p.Name + "-", kadm.OpWrite, true},
	}
}

// setPermissions replaces every ACL of principal with perms, through the
// PLAINTEXT listener (a super user), and waits until the broker's
// authorizer has them all.
func setPermissions(t *testing.T, seeds []string, principal string, perms []permission) {
	t.Helper()
	adm, ctx := kafkatest.Admin(t, seeds)
	all := kadm.NewACLs().Allow(principal).AllowHosts().AnyResource().Clusters().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny)
	if _, err := adm.DeleteACLs(ctx, all); err != nil {
		t.Fatalf("deleting the ACLs of %s: %v", principal, err)
	}
	for _, a := range perms {
		b := kadm.NewACLs().Allow(principal).AllowHosts().Operations(a.op)
		switch a.kind {
		case "topic":
			b.Topics(a.name)
		case "group":
			b.Groups(a.name)
		case "transactional-id":
			b.TransactionalIDs(a.name)
		case "cluster":
			b.Clusters()
		}
		if a.prefixed {
			b.ResourcePatternType(kadm.ACLPatternPrefixed)
		}
		res, err := adm.CreateACLs(ctx, b)
		if err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			t.Fatalf("granting %v to %s: %v", a, principal, err)
		}
	}
	for {
		res, err := adm.DescribeACLs(ctx, all)
		n := 0
		if err == nil {
			for _, r := range res {
				n += len(r.Described)
			}
		}
		if n == len(perms) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the broker shows %d ACLs of %s, want %d (%v)", n, principal, len(perms), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// without returns perms less drop, plus add.
func without(perms []permission, drop permission, add ...permission) []permission {
	var out []permission
	for _, a := range perms {
		if a != drop {
			out = append(out, a)
		}
	}
	return append(out, add...)
}

// scramSecurity is the tls and sasl sections of a pipeline on the SASL_SSL
// listener.
func scramSecurity(caFile, mechanism, user, password string) string {
	return fmt.Sprintf("tls:\n  enabled: true\n  ca_file: %q\nsasl:\n  mechanism: %s\n  username: %s\n  password: %q\n",
		caFile, mechanism, user, password)
}

// mtlsSecurity is the tls section of a pipeline on the SSL listener, which
// requires the client certificate.
func mtlsSecurity(s *kafkatest.Secured) string {
	c := s.Clients[mtlsCN]
	return fmt.Sprintf("tls:\n  enabled: true\n  ca_file: %q\n  cert_file: %q\n  key_file: %q\n", s.CAFile, c.Cert, c.Key)
}

// relayCheck runs `relay check` on the pipeline and returns its exit code
// and output.
func relayCheck(t *testing.T, p *harness.Pipeline) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, relayBin, "check", "-c", p.Path, "--timeout", "60s").CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("relay check: %v\n%s", err, out)
	return -1, ""
}

// waitLog waits up to d for the process's log to match re, and returns the
// matching line. It fails the test if the process exits first when alive is
// true.
func waitLog(t *testing.T, pr *harness.Proc, re *regexp.Regexp, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		for _, l := range strings.Split(pr.LogTail(1<<20), "\n") {
			if re.MatchString(l) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no log line matching %q within %s", pr.Name(), re, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// securedTransforms dead-letter every 50th order and release every 7th on
// its first delivery: the dead-letter topic and redeliveries are used.
const securedTransforms = `
  - {type: fail, kind: permanent, reason: bad address, when: {field: order_id, modulo: 50, remainder: 0}}
  - {type: fail, kind: retry, reason: printer jam, when: {field: order_id, modulo: 7, remainder: 0, max_delivery_count: 1}}
  - {type: set, field: status, value: packing}`

// Exactly-once pipelines run as relay processes on each secured listener,
// with no more than the documented ACLs, and relay check passes them first.
func TestRealBrokerSecuredExactlyOnceWithMinimalACLs(t *testing.T) {
	b, s := securedBrokerFor(t)
	seeds := []string{b.Addr()}
	const n = 400
	for _, tc := range []struct {
		name, principal, addr, security string
	}{
		{"SASL_SSL with SCRAM-SHA-512", "User:" + scramUser, s.SASLSSLAddr(), scramSecurity(s.CAFile, "SCRAM-SHA-512", scramUser, scramPassword)},
		{"mutual TLS", "User:CN=" + mtlsCN, s.SSLAddr(), mtlsSecurity(s)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			p := newPipe(t, seeds, harness.PipelineOptions{Brokers: []string{tc.addr}, Security: tc.security, Workers: 2, Transforms: securedTransforms})
			setPermissions(t, seeds, tc.principal, relayPermissions(p))
			code, out := relayCheck(t, p)
			t.Logf("relay check (exit %d):\n%s", code, out)
			if code != 0 {
				t.Fatalf("relay check exit %d, want 0", code)
			}
			seedOrders(t, p, 1, n)
			a := startRelayWith(t, p, "a", []string{"--log-format", "json"})
			o := settled(t, p, n, 2*time.Minute)
			exactlyOnce(t, o, n, n/50)
			_ = a.Signal(syscall.SIGTERM)
			if code, err := a.Wait(30 * time.Second); err != nil || code != 0 {
				t.Fatalf("relay after SIGTERM: exit %d, %v; want 0", code, err)
			}
			checkJSONLog(t, a.LogPath(), scramPassword)
			t.Logf("%s: %v in %s", tc.name, o, time.Since(began).Round(time.Millisecond))
		})
	}
}

// OAUTHBEARER with a token file another process rotates: the broker makes
// the client authenticate again every few seconds, and the relay must read
// the file again when it changes. The first token expires while the relay
// runs; with the file rotated in time the relay goes on, exactly once.
// Without the rotation (the control) the relay cannot authenticate once
// the token expired, which shows the broker really checks it.
func TestRealBrokerSecuredOAuthBearerTokenFileIsReadAgain(t *testing.T) {
	b, s := securedBrokerFor(t)
	seeds := []string{b.Addr()}
	const n = 200
	const ttl = 15 * time.Second
	for _, rotate := range []bool{true, false} {
		t.Run(map[bool]string{true: "rotated", false: "not rotated"}[rotate], func(t *testing.T) {
			// Both wait out a token's lifetime: side by side, not one
			// after the other.
			t.Parallel()
			sub := oauthSub + map[bool]string{true: "-rotated", false: "-expiring"}[rotate] // ACLs of its own
			token := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(token, []byte(kafkatest.UnsecuredJWT(sub, ttl)), 0o600); err != nil {
				t.Fatal(err)
			}
			written := time.Now()
			sec := fmt.Sprintf("tls:\n  enabled: true\n  ca_file: %q\nsasl:\n  mechanism: OAUTHBEARER\n  token_file: %q\n", s.CAFile, token)
			p := newPipe(t, seeds, harness.PipelineOptions{Brokers: []string{s.SASLSSLAddr()}, Security: sec, Workers: 1, Transforms: securedTransforms})
			setPermissions(t, seeds, "User:"+sub, relayPermissions(p))
			if code, out := relayCheck(t, p); code != 0 {
				t.Fatalf("relay check exit %d:\n%s", code, out)
			}
			seedOrders(t, p, 1, n)
			startRelay(t, p, "a")
			settled(t, p, n, 2*time.Minute)
			if rotate {
				// A sidecar writes the next token before the first expires.
				next := filepath.Join(filepath.Dir(token), "token.next")
				if err := os.WriteFile(next, []byte(kafkatest.UnsecuredJWT(sub, time.Hour)), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(next, token); err != nil {
					t.Fatal(err)
				}
			}
			// Past the first token's expiry and a re-authentication.
			time.Sleep(time.Until(written.Add(ttl + 2*kafkatest.OAuthReauth)))
			seedOrders(t, p, n+1, 2*n)
			if !rotate {
				time.Sleep(20 * time.Second)
				o, err := measure(t, p)
				if err != nil {
					t.Fatal(err)
				}
				if len(o.Jobs.BySource)+len(o.DLQ.BySource) >= 2*n {
					t.Fatalf("every order relayed with an expired token and no new one: %v; the broker did not check the token", o)
				}
				t.Logf("token expired, not rotated: %v", o)
				return
			}
			o := settled(t, p, 2*n, 2*time.Minute)
			exactlyOnce(t, o, 2*n, 2*n/50)
			t.Logf("token rotated while running: %v", o)
		})
	}
}

// checkJSONLog fails the test unless every line of a relay's log (run with
// --log-format json) is a JSON object with time, level and msg, the first
// is "relay starting" with the effective configuration, and secret appears
// nowhere.
func checkJSONLog(t *testing.T, path, secret string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(secret)) {
		t.Fatalf("the relay's log shows the password")
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["time"] == nil || m["level"] == nil || m["msg"] == nil {
			t.Fatalf("log line %d is not a JSON record with time, level and msg (%v): %s", i+1, err, l)
		}
		if i == 0 && (m["msg"] != "relay starting" || m["config"] == nil) {
			t.Fatalf("first log line is not the start with the configuration: %s", l)
		}
	}
	t.Logf("%d JSON log lines, the password in none", len(lines))
}

// A relay that cannot authenticate at start stops at once (exit 1) with an
// error naming the cause and not the secret: waiting cannot cure a wrong
// password or an untrusted CA, and a deploy should fail visibly. relay
// check reports the same cause.
func TestRealBrokerSecuredAuthenticationFailuresStopTheRelay(t *testing.T) {
	b, s := securedBrokerFor(t)
	seeds := []string{b.Addr()}
	other, err := kafkatest.NewCA("not the broker's CA")
	if err != nil {
		t.Fatal(err)
	}
	otherCA := filepath.Join(t.TempDir(), "other-ca.pem")
	if err := os.WriteFile(otherCA, other.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	const wrong = "wrong-password-0451"
	for _, tc := range []struct {
		name, addr, security, secret string
		cause                        *regexp.Regexp
	}{
		{"a wrong SCRAM password", s.SASLSSLAddr(), scramSecurity(s.CAFile, "SCRAM-SHA-512", scramUser, wrong), wrong,
			regexp.MustCompile(`SASL_AUTHENTICATION_FAILED.*invalid credentials with SASL mechanism SCRAM-SHA-512`)},
		{"a wrong PLAIN password", s.SASLSSLAddr(), scramSecurity(s.CAFile, "PLAIN", plainUser, wrong), wrong,
			regexp.MustCompile(`SASL_AUTHENTICATION_FAILED.*Invalid username or password`)},
		{"an untrusted CA", s.SASLSSLAddr(), scramSecurity(otherCA, "SCRAM-SHA-512", scramUser, scramPassword), scramPassword,
			regexp.MustCompile(`x509: certificate signed by unknown authority`)},
		{"no client certificate on the mutual-TLS listener", s.SSLAddr(), fmt.Sprintf("tls:\n  enabled: true\n  ca_file: %q\n", s.CAFile), scramPassword,
			regexp.MustCompile(`remote error: tls: (bad certificate|certificate required)`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipe(t, seeds, harness.PipelineOptions{Brokers: []string{tc.addr}, Security: tc.security, Workers: 1})
			pr := startRelay(t, p, "a")
			code, err := pr.Wait(30 * time.Second)
			if err != nil || code != 1 {
				t.Fatalf("relay exit %d, %v; want exit 1 at start", code, err)
			}
			log := pr.LogTail(1 << 20)
			line := waitLog(t, pr, regexp.MustCompile(`level=ERROR msg="relay failed"`), time.Second)
			if !tc.cause.MatchString(line) {
				t.Errorf("relay error %q does not name the cause %q", line, tc.cause)
			}
			if strings.Contains(log, tc.secret) {
				t.Errorf("the relay's log shows the secret")
			}
			t.Logf("relay: %s", line)

			code, out := relayCheck(t, p)
			if code != 1 || !strings.HasPrefix(out, "FAIL: brokers: ") || !tc.cause.MatchString(out) {
				t.Errorf("relay check exit %d:\n%s\nwant exit 1 and a first line FAIL: brokers: naming %q", code, out, tc.cause)
			}
			if strings.Contains(out, tc.secret) {
				t.Errorf("relay check shows the secret")
			}
			t.Logf("relay check: %s", strings.SplitN(out, "\n", 2)[0])
		})
	}

	// The right PLAIN password authenticates (alice has no ACL: the
	// check goes on to fail on permissions, not on the login).
	p := newPipe(t, seeds, harness.PipelineOptions{Brokers: []string{s.SASLSSLAddr()}, Security: scramSecurity(s.CAFile, "PLAIN", plainUser, plainPassword), Workers: 1})
	if _, out := relayCheck(t, p); !strings.HasPrefix(out, "ok: brokers: ") {
		t.Errorf("relay check with alice's PLAIN password:\n%s\nwant ok: brokers: first", out)
	}
}

// The relay's principal lacks one permission of the documented set: the
// relay's error names it (at start, a stop; while running, a paused
// worker that says why), and relay check fails with a line naming it.
func TestRealBrokerSecuredMissingPermissionIsNamed(t *testing.T) {
	b, s := securedBrokerFor(t)
	seeds := []string{b.Addr()}
	principal := "User:" + scramUser
	sec := scramSecurity(s.CAFile, "SCRAM-SHA-512", scramUser, scramPassword)
	type want struct {
		exits bool   // the relay stops at start; else it keeps running, paused
		relay string // regexp of the relay's log line, with %[1]s the pipeline name
		check string // the relay check line starts so, %[1]s the pipeline name
	}
	for _, tc := range []struct {
		name        string
		perms       func(p *harness.Pipeline) []permission
		leaveGroup  bool
		ledgerFirst bool // create the ledger topics before, as an operator would
		want        want
	}{
		{"topic DESCRIBE: nothing on the source topic", func(p *harness.Pipeline) []permission {
			return without(relayPermissions(p), permission{"topic", p.Source, kadm.OpRead, false})
		}, false, false, want{true,
			`relay failed.*not authorized to describe topics \[%[1]s\.orders\] \(TOPIC_AUTHORIZATION_FAILED`,
			"FAIL: source topic %[1]s.orders: not authorized to describe it (TOPIC_AUTHORIZATION_FAILED): the relay needs READ"}},
		{"topic READ on the source", func(p *harness.Pipeline) []permission {
			return without(relayPermissions(p), permission{"topic", p.Source, kadm.OpRead, false}, permission{"topic", p.Source, kadm.OpDescribe, false})
		}, false, false, want{false,
			`worker paused.*polling %[1]s\.orders\[\d+\]: not authorized to READ topic %[1]s\.orders: TOPIC_AUTHORIZATION_FAILED`,
			"FAIL: source topic %[1]s.orders: 3 partitions; not authorized to READ"}},
		{"topic WRITE on the output", func(p *harness.Pipeline) []permission {
			return without(relayPermissions(p), permission{"topic", p.Output, kadm.OpWrite, false}, permission{"topic", p.Output, kadm.OpDescribe, false})
		}, false, false, want{false,
			`worker paused.*producing to %[1]s\.jobs: not authorized to WRITE topic %[1]s\.jobs: TOPIC_AUTHORIZATION_FAILED`,
			"FAIL: output topic %[1]s.jobs: 3 partitions; not authorized to WRITE"}},
		{"topic DESCRIBE_CONFIGS on the dead-letter topic", func(p *harness.Pipeline) []permission {
			return without(relayPermissions(p), permission{"topic", p.DeadLetter, kadm.OpDescribeConfigs, false})
		}, false, false, want{true,
			`relay failed.*not authorized to describe the configs of \[%[1]s\.dlq\]`,
			"FAIL: dead-letter topic %[1]s.dlq: 1 partition; not authorized to DESCRIBE_CONFIGS"}},
		{"topic WRITE on the ledger", func(p *harness.Pipeline) []permission {
			return without(relayPermissions(p), permission{"topic", p.Ledger, kadm.OpWrite, false})
		}, false, true, want{false,
			`worker paused.*producing to %[1]s\.ledger: not authorized to WRITE topic %[1]s\.ledger: TOPIC_AUTHORIZATION_FAILED`,
			"FAIL: ledger topic %[1]s.ledger: 1 partition; not authorized to WRITE"}},
		{"topic CREATE on the ledger the relay would create", func(p *harness.Pipeline) []permission {
			return without(relayPermissions(p), permission{"topic", p.Ledger, kadm.OpCreate, false})
		}, false, false, want{true,
			`relay failed.*creating %[1]s\.ledger: TOPIC_AUTHORIZATION_FAILED`,
			"FAIL: ledger topic %[1]s.ledger: does not exist and this principal may not create it"}},
		{"group READ", func(p *harness.Pipeline) []permission {
			return without(relayPermissions(p), permission{"group", p.Group, kadm.OpRead, false})
		}, false, false, want{false,
			`worker paused.*not authorized to READ group %[1]s\.group: .*GROUP_AUTHORIZATION_FAILED`,
			"FAIL: share group %[1]s.group: not authorized to READ it (GROUP_AUTHORIZATION_FAILED)"}},
		{"group ALTER_CONFIGS when the relay sets the group's configs", func(p *harness.Pipeline) []permission {
			return without(relayPermissions(p), permission{"group", p.Group, kadm.OpAlterConfigs, false}, permission{"group", p.Group, kadm.OpDescribeConfigs, false})
		}, false, false, want{true,
			`relay failed.*setting configs of share group %[1]s\.group: GROUP_AUTHORIZATION_FAILED`,
			"FAIL: share group %[1]s.group configs: not authorized to set them (needs ALTER_CONFIGS"}},
		{"group DESCRIBE_CONFIGS when it leaves them alone", func(p *harness.Pipeline) []permission {
			return without(relayPermissions(p), permission{"group", p.Group, kadm.OpAlterConfigs, false})
		}, true, false, want{false,
			`could not read the share group's delivery limit.*describing configs of share group %[1]s\.group: GROUP_AUTHORIZATION_FAILED`,
			"FAIL: share group %[1]s.group configs: not authorized to read them (needs DESCRIBE_CONFIGS"}},
		{"TransactionalId WRITE", func(p *harness.Pipeline) []permission {
			return without(relayPermissions(p), permission{"transactional-id", "sharerelay-" + p.Name + "-", kadm.OpWrite, true})
		}, false, false, want{true,
			`relay failed.*initialising producer id for sharerelay-%[1]s-a-0: .*TRANSACTIONAL_ID_AUTHORIZATION_FAILED`,
			"FAIL: transactional ids sharerelay-%[1]s-*: not authorized to WRITE them (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipe(t, seeds, harness.PipelineOptions{Brokers: []string{s.SASLSSLAddr()}, Security: sec,
				Workers: 1, LeaveGroupConfig: tc.leaveGroup, Transforms: securedTransforms})
			if tc.ledgerFirst {
				createTopics(t, seeds, harness.Topic{Name: p.Ledger, Partitions: 1}, harness.Topic{Name: p.Ledger + ".snapshots", Partitions: 1})
			}
			setPermissions(t, seeds, principal, tc.perms(p))
			seedOrders(t, p, 1, 20)

			code, out := relayCheck(t, p)
			wantLine := fmt.Sprintf(tc.want.check, p.Name)
			var fails []string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "FAIL") {
					fails = append(fails, l)
				}
			}
			if code != 1 || len(fails) != 1 || !strings.HasPrefix(fails[0], wantLine) {
				t.Errorf("relay check exit %d:\n%s\nwant exit 1 and one FAIL line starting %q", code, out, wantLine)
			}

			pr := startRelay(t, p, "a")
			re := regexp.MustCompile(fmt.Sprintf(tc.want.relay, regexp.QuoteMeta(p.Name)))
			line := waitLog(t, pr, re, 30*time.Second)
			if tc.want.exits {
				if code, err := pr.Wait(10 * time.Second); err != nil || code != 1 {
					t.Errorf("relay exit %d, %v; want 1 at start", code, err)
				}
			} else if pr.Exited() {
				t.Errorf("relay exited %d; want it running, not ready, until the permission is granted", pr.ExitCode())
			}
			if strings.Contains(pr.LogTail(1<<20), scramPassword) {
				t.Error("the relay's log shows the password")
			}
			t.Logf("relay: %s", line)
			t.Logf("relay check: %s", fails)
		})
	}
}
