package interoptest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/integration/internal/jvmproc"
	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

// interopRelDir is where interop.py, requirements.txt and schemas/ live,
// relative to the repository root.
const interopRelDir = "integration/interop"

// EnvPython names, when set, the Python interpreter the venv is made from
// (default python3 in PATH).
const EnvPython = "SHARERELAY_PYTHON"

// MinPython is the oldest Python the pinned requirements resolve for
// (confluent-kafka takes httpx2 from 3.10 on).
var MinPython = [2]int{3, 10}

// installTimeout bounds making the venv: pip downloads some 40 MB on the
// first run.
const installTimeout = 10 * time.Minute

// readyMark is the file written last into a finished venv.
const readyMark = ".sharerelay-ready"

// ErrToolMissing reports that python3, its venv module or pip is not
// there. [Ensure] skips on it unless SHARERELAY_REQUIRE_BROKER=1.
var ErrToolMissing = errors.New("interoptest: required tool missing")

// Tool runs interop.py with the venv's Python. Its methods may be called
// from parallel tests: each call is a process of its own.
type Tool struct {
	python  string // the venv's bin/python
	dir     string // integration/interop
	venv    string
	elapsed time.Duration // making the venv; 0 when it was cached
}

// Venv returns the directory of the tool's virtual environment.
func (t *Tool) Venv() string { return t.venv }

// SchemaPath returns the path of a schema the tool ships
// (integration/interop/schemas/<name>), such as "order.avsc".
func (t *Tool) SchemaPath(name string) string { return filepath.Join(t.dir, "schemas", name) }

// schemaArg is name as a path: a bare file name is one of the shipped
// schemas, anything else a path as given.
func (t *Tool) schemaArg(name string) string {
	if name == "" || filepath.IsAbs(name) || strings.ContainsRune(name, filepath.Separator) {
		return name
	}
	return t.SchemaPath(name)
}

// shared is the tool of this test binary, made at most once.
var shared struct {
	once   sync.Once
	tool   *Tool
	err    error
	logged sync.Once
}

// Ensure returns the tool, making its venv on first use (a few minutes at
// most; seconds once cached). It skips the test under -short and when
// python3, venv or pip is missing (fails instead with
// SHARERELAY_REQUIRE_BROKER=1), and fails it when the install fails.
func Ensure(t testing.TB) *Tool {
	t.Helper()
	required := os.Getenv(kafkatest.EnvRequireBroker) == "1"
	if testing.Short() {
		if required {
			t.Fatal("interoptest: an interop test under -short with " + kafkatest.EnvRequireBroker + "=1")
		}
		t.Skip("interoptest: no interop tool under -short")
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
		defer cancel()
		shared.tool, shared.err = New(ctx)
	})
	if err := shared.err; err != nil {
		if errors.Is(err, ErrToolMissing) && !required {
			t.Skipf("no interop tool (install python3 with venv and pip, or set %s): %v", EnvPython, err)
		}
		t.Fatal(err)
	}
	shared.logged.Do(func() {
		if d := shared.tool.elapsed; d > 0 {
			t.Logf("interoptest: venv %s made in %s", shared.tool.venv, d.Round(time.Millisecond))
		} else {
			t.Logf("interoptest: venv %s (cached)", shared.tool.venv)
		}
	})
	return shared.tool
}

// New returns the tool, making its venv when the cache has none for the
// current requirements.txt and Python. Errors wrap [ErrToolMissing] when
// python3, venv or pip is not there.
func New(ctx context.Context) (*Tool, error) {
	dir, err := findInterop()
	if err != nil {
		return nil, err
	}
	py, version, err := findPython(ctx)
	if err != nil {
		return nil, err
	}
	reqs, err := os.ReadFile(filepath.Join(dir, "requirements.txt"))
	if err != nil {
		return nil, fmt.Errorf("interoptest: read requirements: %w", err)
	}
	root, err := kafkatest.CacheRoot()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append(append([]byte(version), 0), reqs...))
	venv := filepath.Join(root, "interop-venv-"+hex.EncodeToString(sum[:6]))
	t := &Tool{python: filepath.Join(venv, "bin", "python"), dir: dir, venv: venv}
	if ready(venv) {
		return t, nil
	}
	began := time.Now()
	if err := makeVenv(ctx, py, venv, filepath.Join(dir, "requirements.txt")); err != nil {
		return nil, err
	}
	t.elapsed = time.Since(began)
	return t, nil
}

// ready reports whether venv is a finished venv.
func ready(venv string) bool {
	_, err := os.Stat(filepath.Join(venv, readyMark))
	return err == nil
}

// makeVenv makes a venv with the requirements installed in a private
// directory beside venv and renames it into place; when another process
// got there first, its venv is kept. Only bin/python is run from the
// venv, which still works after the rename (pip's own scripts would not:
// their first lines name the private directory).
func makeVenv(ctx context.Context, python, venv, requirements string) error {
	if err := os.MkdirAll(filepath.Dir(venv), 0o755); err != nil {
		return fmt.Errorf("interoptest: create venv cache: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(venv), filepath.Base(venv)+".tmp-")
	if err != nil {
		return fmt.Errorf("interoptest: create venv cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.CommandContext(ctx, python, "-m", "venv", tmp).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s -m venv: %v\n%s", ErrToolMissing, python, err, out)
	}
	pip := exec.CommandContext(ctx, filepath.Join(tmp, "bin", "python"), "-m", "pip", "install",
		"--disable-pip-version-check", "-q", "--no-input", "--only-binary=:all:", "-r", requirements)
	if out, err := pip.CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("No module named pip")) {
			return fmt.Errorf("%w: the venv has no pip (install python3-venv or ensurepip)\n%s", ErrToolMissing, out)
		}
		return fmt.Errorf("interoptest: pip install -r %s: %v\n%s", requirements, err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, readyMark), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return fmt.Errorf("interoptest: mark venv ready: %w", err)
	}
	if err := os.Rename(tmp, venv); err != nil && !ready(venv) {
		// A directory left by an interrupted run without the mark.
		if err := os.RemoveAll(venv); err != nil {
			return fmt.Errorf("interoptest: replace incomplete venv: %w", err)
		}
		if err := os.Rename(tmp, venv); err != nil && !ready(venv) {
			return fmt.Errorf("interoptest: move venv into cache: %w", err)
		}
	}
	return nil
}

// findPython returns the interpreter to make the venv from and its
// version text, refusing one older than MinPython.
func findPython(ctx context.Context) (string, string, error) {
	name := os.Getenv(EnvPython)
	if name == "" {
		name = "python3"
	}
	py, err := exec.LookPath(name)
	if err != nil {
		return "", "", fmt.Errorf("%w: %s not in PATH", ErrToolMissing, name)
	}
	out, err := exec.CommandContext(ctx, py, "-c", "import sys; print('%d %d' % sys.version_info[:2]); print(sys.version)").Output()
	if err != nil {
		return "", "", fmt.Errorf("%w: %s does not run: %v", ErrToolMissing, py, err)
	}
	first, rest, _ := strings.Cut(string(out), "\n")
	var v [2]int
	for i, f := range strings.Fields(first) {
		if i < 2 {
			v[i], _ = strconv.Atoi(f)
		}
	}
	if v[0] < MinPython[0] || v[0] == MinPython[0] && v[1] < MinPython[1] {
		return "", "", fmt.Errorf("%w: %s is Python %d.%d; the interop tool needs %d.%d or newer", ErrToolMissing, py, v[0], v[1], MinPython[0], MinPython[1])
	}
	return py, strings.TrimSpace(rest), nil
}

// findInterop locates integration/interop by walking up from the working
// directory and, failing that, from the harness's sources.
func findInterop() (string, error) {
	if p, ok := jvmproc.FindInRepo(filepath.Join(interopRelDir, "interop.py")); ok {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("interoptest: find %s/interop.py from the working directory or the interoptest sources: not found", interopRelDir)
}
