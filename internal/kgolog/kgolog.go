// Package kgolog forwards franz-go's own warnings and errors to the relay's
// log, at most one line a window for each message.
//
// franz-go reports some things only through its logger: a share fetch
// answer it could not decode (it releases the affected offsets), acquired
// ranges it had to drop, a transaction it aborted on its own. Without a
// logger those never reach the operator. It also warns on every failed
// connection attempt while a broker is down, many times a second over all
// of a relay's clients, so each distinct message is written once, then at
// most once a window with the count of the repeats it held back.
package kgolog

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxKeys bounds the messages remembered; franz-go's messages are
// constant strings (what varies is in the key-value pairs), so this is
// only a guard: past it the memory starts over.
const maxKeys = 512

// Logger is a kgo.Logger that writes franz-go's warnings and errors to a
// slog.Logger, one line a window for each (level, message). One Logger is
// meant to be shared by all of a process's clients, so that the window
// holds across them. It is safe for concurrent use.
type Logger struct {
	log    *slog.Logger
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	seen map[key]*entry
}

type key struct {
	level kgo.LogLevel
	msg   string
}

type entry struct {
	last time.Time // when a line was last written
	held int       // repeats held back since
}

// New returns a Logger writing to log at most one line a window for each
// franz-go message (a window of 0 writes every one).
func New(log *slog.Logger, window time.Duration) *Logger {
	return &Logger{log: log, window: window, now: time.Now, seen: make(map[key]*entry)}
}

// Level is kgo.LogLevelWarn: franz-go then does not even format its info
// and debug lines, which it writes for every request in normal operation.
func (l *Logger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

// Log writes msg with keyvals unless the same message was written less
// than a window ago; the next line written for it says how many were held
// back (repeated).
func (l *Logger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var sl slog.Level
	switch level {
	case kgo.LogLevelError:
		sl = slog.LevelError
	case kgo.LogLevelWarn:
		sl = slog.LevelWarn
	default:
		return
	}
	held, ok := l.admit(key{level, msg})
	if !ok {
		return
	}
	if held > 0 {
		keyvals = append(keyvals, "repeated", held)
	}
	l.log.Log(context.Background(), sl, "franz-go: "+msg, keyvals...)
}

// admit says whether a line for k is written now, and how many were held
// back since the last one.
func (l *Logger) admit(k key) (held int, ok bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.seen[k]
	if e == nil {
		if len(l.seen) >= maxKeys {
			clear(l.seen)
		}
		l.seen[k] = &entry{last: now}
		return 0, true
	}
	if now.Sub(e.last) < l.window {
		e.held++
		return 0, false
	}
	held, e.held, e.last = e.held, 0, now
	return held, true
}
