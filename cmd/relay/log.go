package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/sharerelay/sharerelay/config"
)

// newLogger returns a logger writing to w at level, as logfmt text or as
// one JSON object a line (format "text" or "json").
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", format)
}

// logWarnings logs the configuration's warnings, one line each.
func logWarnings(log *slog.Logger, p *config.Pipeline) {
	for _, w := range p.Warnings {
		log.Warn("pipeline config warning", "path", w.Path, "at", fmt.Sprintf("%s:%d:%d", w.File, w.Line, w.Col), "warning", w.Msg)
	}
}
