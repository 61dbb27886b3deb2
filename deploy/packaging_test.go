package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/config"
)

// metricsPort is where the image and the examples serve /metrics.
const metricsPort = "9464"

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

func readDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur *instruction
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cont := strings.HasSuffix(line, `\`)
		line = strings.TrimSuffix(line, `\`)
		if cur == nil {
			cmd, args, _ := strings.Cut(line, " ")
			cur = &instruction{line: n, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		} else {
			cur.args += " " + strings.TrimSpace(line)
		}
		if !cont {
			out = append(out, *cur)
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: the last instruction ends with a line continuation", path, cur.line)
	}
	return out
}

// stage is one FROM of a Dockerfile and what follows it.
type stage struct {
	image, name string
	line        int
	body        []instruction
}

var secretName = regexp.MustCompile(`(?i)pass|secret|token|credential|(^|_)key($|_)`)

func TestDockerfileBuildsAStaticRelayRunAsNonRoot(t *testing.T) {
	const path = "../Dockerfile"
	ins := readDockerfile(t, path)
	args := map[string]string{} // global ARG defaults, for FROM lines
	var stages []stage
	for _, in := range ins {
		switch {
		case in.cmd == "ARG" && len(stages) == 0:
			for _, a := range strings.Fields(in.args) {
				k, v, _ := strings.Cut(a, "=")
				args[k] = v
			}
		case in.cmd == "FROM":
			f := strings.Fields(os.Expand(in.args, func(k string) string { return args[k] }))
			if len(f) > 0 && strings.HasPrefix(f[0], "--platform=") {
				f = f[1:]
			}
			s := stage{image: f[0], line: in.line}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			} else if len(f) != 1 {
				t.Fatalf("%s:%d: FROM %s: want an image and an optional AS name", path, in.line, in.args)
			}
			stages = append(stages, s)
		case len(stages) == 0:
			t.Fatalf("%s:%d: %s before the first FROM", path, in.line, in.cmd)
		default:
			stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
		}
		if in.cmd == "ENV" || in.cmd == "ARG" {
			for _, a := range strings.Fields(in.args) {
				if k, _, _ := strings.Cut(a, "="); secretName.MatchString(k) {
					t.Errorf("%s:%d: %s %s looks like a secret: pass secrets at run time, never into the image", path, in.line, in.cmd, k)
				}
			}
		}
	}
	if len(stages) != 2 {
		t.Fatalf("%s: %d stages, want 2 (a golang builder and the runtime image)", path, len(stages))
	}
	build, final := stages[0], stages[1]

	// The builder's Go is at least the go directive of go.mod.
	m := regexp.MustCompile(`^golang:(\d+)\.(\d+)`).FindStringSubmatch(build.image)
	if m == nil || build.name == "" {
		t.Fatalf("%s:%d: the first stage is %q named %q; want golang:<version> AS <name>", path, build.line, build.image, build.name)
	}
	if want := goDirective(t); compareVersions(m[1]+"."+m[2], want) < 0 {
		t.Errorf("%s:%d: builder %s is older than go.mod's go %s", path, build.line, build.image, want)
	}
	var buildCmd string
	for _, in := range build.body {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			buildCmd = in.args
		}
		if in.cmd == "COPY" {
			for _, src := range strings.Fields(in.args) {
				if strings.HasPrefix(src, "--") {
					continue
				}
				if _, err := os.Stat(filepath.Join("..", src)); err != nil {
					t.Errorf("%s:%d: COPY %s: %v", path, in.line, src, err)
				}
				break // check the first source; the last field is the destination
			}
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-ldflags", "-s -w", "./cmd/relay"} {
		if !strings.Contains(buildCmd, want) {
			t.Errorf("%s: the go build of stage %s lacks %q: %q", path, build.name, want, buildCmd)
		}
	}

	// The runtime image: distroless static (or scratch), a non-root user,
	// the relay as entry point, the metrics port.
	if !strings.HasPrefix(final.image, "gcr.io/distroless/static") && final.image != "scratch" {
		t.Errorf("%s:%d: runtime image %s; want distroless static or scratch (a static binary needs nothing else)", path, final.line, final.image)
	}
	got := map[string][]instruction{}
	for _, in := range final.body {
		got[in.cmd] = append(got[in.cmd], in)
	}
	for _, in := range got["COPY"] {
		if from, ok := strings.CutPrefix(strings.Fields(in.args)[0], "--from="); ok && from != build.name {
			t.Errorf("%s:%d: COPY --from=%s names no earlier stage", path, in.line, from)
		}
	}
	users := got["USER"]
	if len(users) == 0 {
		t.Errorf("%s: the runtime stage sets no USER", path)
	} else if u, _, _ := strings.Cut(users[len(users)-1].args, ":"); u == "root" || u == "0" {
		t.Errorf("%s:%d: USER %s: run as a non-root user", path, users[len(users)-1].line, u)
	} else if u == "nonroot" && !strings.HasSuffix(final.image, ":nonroot") {
		t.Errorf("%s: USER nonroot needs the :nonroot variant of distroless, not %s", path, final.image)
	}
	var relayBin string
	if eps := got["ENTRYPOINT"]; len(eps) != 1 {
		t.Errorf("%s: want one ENTRYPOINT in the runtime stage, got %d", path, len(eps))
	} else {
		var argv []string
		if err := json.Unmarshal([]byte(eps[0].args), &argv); err != nil || len(argv) == 0 || filepath.Base(argv[0]) != "relay" {
			t.Errorf("%s:%d: ENTRYPOINT %s: want the exec form running relay (no shell in the image)", path, eps[0].line, eps[0].args)
		} else {
			relayBin = argv[0]
		}
	}
	// The health check runs the relay's own `relay health` (the image has
	// no shell or curl), by the path the relay was copied to.
	if hcs := got["HEALTHCHECK"]; len(hcs) != 1 {
		t.Errorf("%s: want one HEALTHCHECK in the runtime stage, got %d", path, len(hcs))
	} else {
		_, form, _ := strings.Cut(hcs[0].args, "CMD ")
		var argv []string
		if err := json.Unmarshal([]byte(strings.TrimSpace(form)), &argv); err != nil || len(argv) < 2 || argv[1] != "health" {
			t.Errorf("%s:%d: HEALTHCHECK %s: want CMD in the exec form running relay health", path, hcs[0].line, hcs[0].args)
		} else if argv[0] != relayBin {
			t.Errorf("%s:%d: HEALTHCHECK runs %s, but the relay is %s", path, hcs[0].line, argv[0], relayBin)
		}
		copied := false
		for _, in := range got["COPY"] {
			f := strings.Fields(in.args)
			copied = copied || f[len(f)-1] == relayBin
		}
		if relayBin != "" && !copied {
			t.Errorf("%s: nothing is copied to %s, the ENTRYPOINT and HEALTHCHECK binary", path, relayBin)
		}
	}
	exposed := false
	for _, in := range got["EXPOSE"] {
		exposed = exposed || slices.Contains(strings.Fields(in.args), metricsPort)
	}
	if !exposed {
		t.Errorf("%s: the runtime stage does not EXPOSE %s, the metrics port", path, metricsPort)
	}
	// RELAY_METRICS_ADDR turns health and metrics on for a pipeline file
	// without metrics.listen, on every interface (so that they can be
	// scraped from outside the container), and tells relay health where
	// to ask.
	metricsEnv := ""
	for _, in := range got["ENV"] {
		if v, ok := strings.CutPrefix(in.args, "RELAY_METRICS_ADDR="); ok {
			metricsEnv = v
		}
	}
	if metricsEnv != ":"+metricsPort && metricsEnv != "0.0.0.0:"+metricsPort {
		t.Errorf("%s: RELAY_METRICS_ADDR=%q; want :%s, every interface on the exposed port", path, metricsEnv, metricsPort)
	}

	// The build context leaves out VCS data and files that may hold secrets.
	ignore, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".git", "**/*.env"} {
		if !slices.Contains(strings.Fields(string(ignore)), want) {
			t.Errorf(".dockerignore does not list %s", want)
		}
	}
}

// goDirective returns the go version go.mod requires, as major.minor.
func goDirective(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1]) + "." + string(m[2])
}

// compareVersions compares two major.minor versions.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range 2 {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x - y
		}
	}
	return 0
}

// unit is a systemd unit file: section → key → values, in order.
type unit map[string]map[string][]string

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		case section == "":
			t.Fatalf("%s:%d: %q outside a section", path, n+1, line)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s:%d: %q is not Key=Value", path, n+1, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// get returns the last value of a key (systemd's rule for single values).
func (u unit) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

var timespanPart = regexp.MustCompile(`^(\d+)(us|ms|s|sec|m|min|h|hr)?$`)

// parseTimespan reads a systemd time span ("30s", "1min 30s", "90").
func parseTimespan(s string) (time.Duration, bool) {
	units := map[string]time.Duration{"": time.Second, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "sec": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour, "hr": time.Hour}
	var d time.Duration
	fields := strings.Fields(s)
	for _, f := range fields {
		m := timespanPart.FindStringSubmatch(f)
		if m == nil {
			return 0, false
		}
		n, _ := strconv.Atoi(m[1])
		d += time.Duration(n) * units[m[2]]
	}
	return d, len(fields) > 0
}

func TestSystemdUnitStopsCleanlyAndRunsConfined(t *testing.T) {
	const path = "systemd/sharerelay@.service"
	u := readUnit(t, path)
	for _, want := range []struct{ section, key, value string }{
		{"Service", "Restart", "on-failure"},
		{"Service", "NoNewPrivileges", "yes"},
		{"Service", "ProtectSystem", "strict"},
		{"Service", "ProtectHome", "yes"},
		{"Service", "DynamicUser", "yes"},
		{"Service", "PrivateTmp", "yes"},
		{"Service", "CapabilityBoundingSet", ""},
		{"Service", "KillSignal", "SIGTERM"},
		{"Install", "WantedBy", "multi-user.target"},
	} {
		if _, ok := u[want.section][want.key]; !ok || u.get(want.section, want.key) != want.value {
			t.Errorf("%s: [%s] %s=%q, want %q", path, want.section, want.key, u.get(want.section, want.key), want.value)
		}
	}
	if d := u.get("Unit", "Description"); !strings.Contains(d, "%i") {
		t.Errorf("%s: Description=%q does not name the instance (%%i)", path, d)
	}
	exec := strings.Fields(u.get("Service", "ExecStart"))
	if len(exec) < 4 || !filepath.IsAbs(exec[0]) || filepath.Base(exec[0]) != "relay" || exec[1] != "run" || !strings.Contains(strings.Join(exec, " "), "-c /etc/sharerelay/%i.yaml") {
		t.Errorf("%s: ExecStart=%q; want /path/to/relay run -c /etc/sharerelay/%%i.yaml ...", path, u.get("Service", "ExecStart"))
	}
	// Secrets come from a file that must exist (no "-" prefix): a relay
	// started without its password would only fail later, at the broker.
	envFiles := u["Service"]["EnvironmentFile"]
	if len(envFiles) == 0 || strings.HasPrefix(envFiles[0], "-") || !strings.Contains(envFiles[0], "%i") {
		t.Errorf("%s: EnvironmentFile=%q; want a required file per instance (%%i)", path, envFiles)
	}
	for _, e := range u["Service"]["Environment"] {
		if k, _, _ := strings.Cut(e, "="); secretName.MatchString(k) {
			t.Errorf("%s: Environment=%s: a secret belongs in the EnvironmentFile", path, e)
		}
	}

	// docs/operations.md promises that a SIGTERM ends the relay within
	// batch.drain_timeout + output.transaction_timeout + 10 s; systemd
	// must not SIGKILL it sooner.
	stop, ok := parseTimespan(u.get("Service", "TimeoutStopSec"))
	bound := config.DefaultDrainTimeout + config.DefaultTransactionTimeout + 10*time.Second
	if !ok || stop < bound {
		t.Errorf("%s: TimeoutStopSec=%q; want at least %s (the default batch.drain_timeout %s + output.transaction_timeout %s + 10 s)", path, u.get("Service", "TimeoutStopSec"), bound, config.DefaultDrainTimeout, config.DefaultTransactionTimeout)
	}
	if stop > 2*bound {
		t.Errorf("%s: TimeoutStopSec=%s is far above the shutdown bound %s: a hung relay would hold a restart that long", path, stop, bound)
	}
}

func TestParseTimespan(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30s": 30 * time.Second, "90": 90 * time.Second, "1min 30s": 90 * time.Second, "2m": 2 * time.Minute,
	} {
		if got, ok := parseTimespan(in); !ok || got != want {
			t.Errorf("parseTimespan(%q) = %s, %v; want %s", in, got, ok, want)
		}
	}
	if _, ok := parseTimespan("soon"); ok {
		t.Error(`parseTimespan("soon") succeeded`)
	}
}
