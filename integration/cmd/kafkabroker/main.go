// Command kafkabroker runs the local Apache Kafka test broker of
// integration/kafkatest in the background, so that many test runs (and
// every package of `go test ./...`) can share one broker:
//
//	export $(go run ./integration/cmd/kafkabroker up)   # prints KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:PORT
//	go test ./...
//	go run ./integration/cmd/kafkabroker down
//
// up starts the broker detached from the command (in its own session, so
// it survives the command exiting), waits until it is ready, writes
// DIR/state.json and prints the bootstrap address. If the broker recorded
// there is still running, up only prints its address again. The data and
// the ports are kept across down and up.
//
// down stops the broker (SIGTERM, then SIGKILL after 20s) and removes
// DIR/state.json; -purge also removes DIR.
//
// DIR defaults to .kafka-local in the repository root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sharerelay/sharerelay/integration/kafkatest"
)

const usage = `usage:
  kafkabroker up [-dir D] [-port P]   start the broker in the background, print KAFKA_BOOTSTRAP_SERVERS=...
  kafkabroker down [-dir D] [-purge]  stop it (and with -purge delete D)
D defaults to .kafka-local in the repository root.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kafkabroker: %v\n", err)
		os.Exit(1)
	}
}

// up implements `kafkabroker up`.
func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dirFlag := fs.String("dir", "", "broker directory (default .kafka-local in the repo root)")
	port := fs.Int("port", 0, "broker port on 127.0.0.1 (default: the previous one, else a free one)")
	fs.Parse(args)
	dir, err := brokerDir(*dirFlag)
	if err != nil {
		return err
	}

	if st, err := readState(dir); err == nil && brokerAlive(st.Pid) {
		if *port != 0 && *port != st.Port {
			return fmt.Errorf("broker already running at %s (pid %d); run down first to change the port", st.Addr, st.Pid)
		}
		fmt.Fprintf(os.Stderr, "kafkabroker: already running (pid %d), log %s\n", st.Pid, st.Log)
		fmt.Printf("KAFKA_BOOTSTRAP_SERVERS=%s\n", st.Addr)
		return nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}

	// Reuse the previous ports: the data directory stays with the node.
	prevPort, prevCPort := previousPorts(dir)
	userPort := *port
	if userPort == 0 {
		*port = prevPort
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	began := time.Now()
	opts := kafkatest.Options{Dir: dir, Port: *port, ControllerPort: prevCPort, Detached: true}
	b, err := kafkatest.StartLocal(ctx, opts)
	if err != nil && userPort == 0 && (prevPort != 0 || prevCPort != 0) {
		// The previous ports may be taken now; try free ones.
		fmt.Fprintf(os.Stderr, "kafkabroker: start on the previous ports failed, retrying on free ports: %v\n", err)
		opts.Port, opts.ControllerPort = 0, 0
		b, err = kafkatest.StartLocal(ctx, opts)
	}
	if err != nil {
		return err
	}
	st := state{Pid: b.Pid(), Addr: b.Addr(), Port: portOf(b.Addr()), ControllerAddr: b.ControllerAddr(), Log: b.LogPath()}
	if err := writeState(dir, st); err != nil {
		b.Stop()
		return err
	}
	fmt.Fprintf(os.Stderr, "kafkabroker: broker pid %d ready in %s, log %s\n", st.Pid, time.Since(began).Round(time.Millisecond), st.Log)
	fmt.Printf("KAFKA_BOOTSTRAP_SERVERS=%s\n", st.Addr)
	return nil
}

// down implements `kafkabroker down`.
func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dirFlag := fs.String("dir", "", "broker directory (default .kafka-local in the repo root)")
	purge := fs.Bool("purge", false, "also delete the broker directory (data and log)")
	fs.Parse(args)
	dir, err := brokerDir(*dirFlag)
	if err != nil {
		return err
	}
	st, err := readState(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintln(os.Stderr, "kafkabroker: not running")
	case err != nil:
		return err
	case brokerAlive(st.Pid):
		if err := stopPid(st.Pid, 20*time.Second); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "kafkabroker: stopped pid %d\n", st.Pid)
	default:
		fmt.Fprintf(os.Stderr, "kafkabroker: pid %d was not running\n", st.Pid)
	}
	if err := os.Remove(statePath(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove state: %w", err)
	}
	if *purge {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("purge %s: %w", dir, err)
		}
	}
	return nil
}

// brokerDir resolves -dir, defaulting to .kafka-local in the repo root.
func brokerDir(flagDir string) (string, error) {
	if flagDir != "" {
		d, err := filepath.Abs(flagDir)
		if err != nil {
			return "", fmt.Errorf("broker directory: %w", err)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, ".kafka-local"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s; pass -dir", wd)
		}
	}
}
